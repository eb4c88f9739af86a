#include "analysis/llvm/kernel_arguments.hpp"

#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Metadata.h>

#include <string>

namespace unimem {

namespace {

std::string metadata_string(const llvm::MDNode* node, unsigned index) {
  if (node == nullptr || index >= node->getNumOperands()) return "";
  if (auto* s = llvm::dyn_cast<llvm::MDString>(node->getOperand(index)))
    return s->getString().str();
  return "";
}

}  // namespace

std::vector<ArgumentAccess> describe_kernel_arguments(const llvm::Function& kernel) {
  std::vector<ArgumentAccess> out;
  const llvm::MDNode* names = kernel.getMetadata("kernel_arg_name");
  const llvm::MDNode* types = kernel.getMetadata("kernel_arg_type");
  const llvm::MDNode* base_types = kernel.getMetadata("kernel_arg_base_type");
  for (const llvm::Argument& a : kernel.args()) {
    ArgumentAccess arg;
    arg.index = a.getArgNo();
    arg.name = metadata_string(names, arg.index);
    if (arg.name.empty())
      arg.name = a.hasName() ? a.getName().str() : "arg" + std::to_string(arg.index);
    arg.type_name = metadata_string(types, arg.index);
    arg.base_type_name = metadata_string(base_types, arg.index);
    if (arg.base_type_name.empty()) arg.base_type_name = arg.type_name;
    if (auto* pt = llvm::dyn_cast<llvm::PointerType>(a.getType())) {
      const unsigned as = pt->getAddressSpace();
      arg.kind = as == kGlobalAddressSpace     ? ArgKind::global_buffer
                 : as == kConstantAddressSpace ? ArgKind::constant_buffer
                 : as == kLocalAddressSpace    ? ArgKind::local_buffer
                                               : ArgKind::other;
    } else if (a.getType()->isIntegerTy() || a.getType()->isFloatingPointTy()) {
      arg.kind = ArgKind::scalar;
      arg.scalar_bits = static_cast<std::uint32_t>(a.getType()->getPrimitiveSizeInBits());
      arg.scalar_floating = a.getType()->isFloatingPointTy();
    } else {
      arg.kind = ArgKind::other;
    }
    out.push_back(std::move(arg));
  }
  return out;
}

bool is_global_pointer(const llvm::Value* v) {
  auto* pt = llvm::dyn_cast<llvm::PointerType>(v->getType());
  return pt != nullptr && (pt->getAddressSpace() == kGlobalAddressSpace ||
                           pt->getAddressSpace() == kConstantAddressSpace);
}

}  // namespace unimem
