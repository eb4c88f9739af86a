#include "analysis/llvm/memory_references.hpp"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "analysis/condition_dnf.hpp"
#include "analysis/llvm/guard_conditions.hpp"
#include "analysis/llvm/ir_text.hpp"
#include "analysis/llvm/kernel_arguments.hpp"
#include "analysis/llvm/scev_to_affine.hpp"

namespace unimem {

void MemoryReferences::visit(llvm::Instruction& inst) {
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
    record(inst, load->getPointerOperand(), size_of(load->getType()), true, false, false, nullptr,
           "load");
  } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
    record(inst, store->getPointerOperand(), size_of(store->getValueOperand()->getType()), false,
           true, false, nullptr, "store");
  } else if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&inst)) {
    record(inst, rmw->getPointerOperand(), size_of(rmw->getValOperand()->getType()), true, true,
           true, nullptr, "atomicrmw");
  } else if (auto* cx = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&inst)) {
    record(inst, cx->getPointerOperand(), size_of(cx->getNewValOperand()->getType()), true, true,
           true, nullptr, "cmpxchg");
  } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
    visit_call(*call);
  }
}

std::uint32_t MemoryReferences::size_of(llvm::Type* t) const {
  return static_cast<std::uint32_t>(scope_.layout.getTypeStoreSize(t).getFixedSize());
}

std::uint32_t MemoryReferences::pointee_size(const llvm::Value* ptr, std::uint32_t fallback) const {
  auto* pt = llvm::cast<llvm::PointerType>(ptr->getType());
  if (!pt->isOpaque()) {
    llvm::Type* elem = pt->getNonOpaquePointerElementType();
    if (elem->isSized()) return size_of(elem);
  }
  return fallback;
}

void MemoryReferences::visit_call(llvm::CallInst& call) {
  if (auto* mi = llvm::dyn_cast<llvm::MemIntrinsic>(&call)) {
    llvm::Value* len = mi->getLength();
    if (auto* mt = llvm::dyn_cast<llvm::MemTransferInst>(mi)) {
      if (is_global_pointer(mt->getSource())) {
        record(call, mt->getSource(), 1, true, false, false, len, "memcpy source");
      }
    }
    if (is_global_pointer(mi->getDest())) {
      record(call, mi->getDest(), 1, false, true, false, len, "memcpy destination");
    }
    return;
  }
  const llvm::Function* callee = call.getCalledFunction();
  if (callee != nullptr && callee->isIntrinsic()) return;  // lifetime, fmuladd, ...
  const std::string name = callee != nullptr ? builtin_name(callee->getName()) : "";
  bool any_global = false;
  for (llvm::Value* a : call.args()) any_global = any_global || is_global_pointer(a);
  if (!any_global) return;
  // vloadN(offset, p) / vstoreN(data, offset, p): N elements at p + offset * N.
  auto vector_width = [&](const char* prefix) -> std::uint32_t {
    const std::string p = prefix;
    if (name.rfind(p, 0) != 0) return 0;
    const std::string rest = name.substr(p.size());
    if (rest == "2" || rest == "3" || rest == "4" || rest == "8" || rest == "16") {
      return static_cast<std::uint32_t>(std::stoul(rest));
    }
    return 0;
  };
  if (const std::uint32_t n = vector_width("vload"); n != 0 && call.arg_size() == 2) {
    llvm::Value* p = call.getArgOperand(1);
    const std::uint32_t elem = pointee_size(p, 4);
    record_vector(call, p, call.getArgOperand(0), n, elem, true, "vload");
    return;
  }
  if (const std::uint32_t n = vector_width("vstore"); n != 0 && call.arg_size() == 3) {
    llvm::Value* p = call.getArgOperand(2);
    const std::uint32_t elem = pointee_size(p, 4);
    record_vector(call, p, call.getArgOperand(1), n, elem, false, "vstore");
    return;
  }
  const bool atomic = name.find("atom") != std::string::npos;
  if (atomic && call.arg_size() >= 1 && is_global_pointer(call.getArgOperand(0))) {
    llvm::Value* p = call.getArgOperand(0);
    record(call, p, pointee_size(p, 4), true, true, true, nullptr, name);
    return;
  }
  if ((name == "async_work_group_copy") && call.arg_size() == 4) {
    llvm::Value* dst = call.getArgOperand(0);
    llvm::Value* src = call.getArgOperand(1);
    if (is_global_pointer(src)) {
      record(call, src, pointee_size(src, 4), true, false, false, call.getArgOperand(2), name);
    }
    if (is_global_pointer(dst)) {
      record(call, dst, pointee_size(dst, 4), false, true, false, call.getArgOperand(2), name);
    }
    return;
  }
  if (name == "prefetch") return;  // a hint, no access
  for (llvm::Value* a : call.args()) {
    if (!is_global_pointer(a)) continue;
    const bool constant =
        llvm::cast<llvm::PointerType>(a->getType())->getAddressSpace() == kConstantAddressSpace;
    record_unknown(call, a, !constant, AccessClass::unknown_call,
                   "passed to " + (name.empty() ? std::string("an indirect call") : name));
  }
}

void MemoryReferences::record_vector(llvm::Instruction& inst, llvm::Value* ptr, llvm::Value* offset,
                                     std::uint32_t n, std::uint32_t elem, bool is_read,
                                     const std::string& what) {
  // Bytes [ptr + offset * n * elem, + n * elem): the offset term is added to the subscript.
  ExtractionFailure why;
  std::optional<PiecewiseAffine> off = subscripts_.convert_value(offset, why);
  const std::uint32_t width = n * elem;
  if (!off) {
    record_unknown(inst, ptr, !is_read, why.access_class, why.reason);
    return;
  }
  PiecewiseAffine scaled;
  for (const AffineCase& p : *off) {
    scaled.push_back(AffineCase{
        p.expr.scaled(ParamPoly::constant(static_cast<std::int64_t>(width))), p.constraints});
  }
  record_with_extra(inst, ptr, width, is_read, !is_read, false, scaled, what);
}

void MemoryReferences::record(llvm::Instruction& inst, llvm::Value* ptr, std::uint32_t width,
                              bool is_read, bool is_write, bool atomic, llvm::Value* extent,
                              const std::string& what) {
  PiecewiseAffine extra = single_case(constant_expr(0));
  if (extent != nullptr) {
    // An implicit range t in [0, extent): a fresh variable, bounded by a constraint.
    ExtractionFailure why;
    std::optional<PiecewiseAffine> len = subscripts_.convert_value(extent, why);
    if (!len) {
      record_unknown(inst, ptr, is_write, why.access_class, "length: " + why.reason);
      return;
    }
    const Var t{Var::Kind::loop, static_cast<std::uint32_t>(scope_.info.loop_names.size())};
    scope_.info.loop_names.push_back("t" + std::to_string(scope_.info.loop_names.size() + 1));
    extra.clear();
    for (const AffineCase& l : *len) {
      AffineCase p{AffineExpr::of_var(t, ParamPoly::constant(width)), l.constraints};
      p.constraints.push_back(ge0(l.expr - AffineExpr::of_var(t) - constant_expr(1)));
      extra.push_back(std::move(p));
    }
  }
  record_with_extra(inst, ptr, width, is_read, is_write, atomic, extra, what);
}

std::vector<const llvm::Argument*> MemoryReferences::targets(llvm::Value* ptr) {
  llvm::SmallVector<const llvm::Value*, 4> objects;
  llvm::getUnderlyingObjects(ptr, objects, &scope_.loops, 0);
  std::vector<const llvm::Argument*> out;
  for (const llvm::Value* o : objects) {
    auto* a = llvm::dyn_cast<llvm::Argument>(o);
    if (a == nullptr || a->getParent() != &scope_.kernel) return {};
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

void MemoryReferences::record_unknown(llvm::Instruction& inst, llvm::Value* ptr, bool is_write,
                                      AccessClass cls, const std::string& reason) {
  if (!is_global_pointer(ptr)) return;
  std::vector<const llvm::Argument*> args = targets(ptr);
  const unsigned as = llvm::cast<llvm::PointerType>(ptr->getType())->getAddressSpace();
  if (args.empty()) {
    for (llvm::Argument& a : scope_.kernel.args()) {
      auto* pt = llvm::dyn_cast<llvm::PointerType>(a.getType());
      if (pt != nullptr && pt->getAddressSpace() == as) args.push_back(&a);
    }
  }
  scope_.info.stats.add(cls);
  for (const llvm::Argument* a : args) {
    AccessPiece piece;
    piece.access_class = cls;
    piece.reason = reason;
    piece.origin = value_text(&inst);
    piece.conditions_dropped = true;
    ArgumentAccess& arg = scope_.info.args[a->getArgNo()];
    arg.reads.push_back(piece);
    if (is_write) arg.writes.push_back(piece);
  }
}

void MemoryReferences::record_with_extra(llvm::Instruction& inst, llvm::Value* ptr,
                                         std::uint32_t width, bool is_read, bool is_write,
                                         bool atomic, const PiecewiseAffine& extra,
                                         const std::string& what) {
  // Private and __local memory (allocas, __local arrays and arguments) is not shared memory.
  if (!is_global_pointer(ptr)) return;
  const std::vector<const llvm::Argument*> args = targets(ptr);
  if (args.empty()) {
    record_unknown(inst, ptr, is_write, AccessClass::unknown_call, "pointer of unknown origin");
    return;
  }
  bool dropped = false;
  const Dnf guard = conditions_.guards(inst.getParent(), dropped);
  AccessClass worst = AccessClass::affine;
  std::vector<std::pair<std::uint32_t, std::vector<AccessPiece>>> per_arg;
  std::optional<ExtractionFailure> failure;
  for (const llvm::Argument* a : args) {
    ExtractionFailure why;
    const llvm::SCEV* offset = scope_.se.getMinusSCEV(
        scope_.se.getSCEV(ptr), scope_.se.getSCEV(const_cast<llvm::Argument*>(a)));
    offset = scope_.se.getSCEVAtScope(offset, scope_.loops.getLoopFor(inst.getParent()));
    std::optional<PiecewiseAffine> subscript;
    if (!llvm::isa<llvm::SCEVCouldNotCompute>(offset)) subscript = subscripts_.convert(offset, why);
    if (subscript) {
      PiecewiseAffine with_extra = combine_cases(*subscript, extra, /*multiply=*/false, why);
      if (with_extra.empty()) {
        subscript.reset();
      } else {
        subscript = std::move(with_extra);
      }
    } else if (why.reason.empty()) {
      why = {AccessClass::non_affine, "pointer offset not computable"};
    }
    if (!subscript) {
      failure = why;
      break;
    }
    std::vector<AccessPiece> pieces;
    for (const AffineCase& p : *subscript) {
      for (const Conjunction& g : guard) {
        AccessPiece piece;
        piece.byte_offset = p.expr;
        piece.width = width;
        piece.constraints = p.constraints;
        piece.constraints.insert(piece.constraints.end(), g.begin(), g.end());
        eliminate_one_sided_existentials(piece);
        if (!simplify(piece.constraints)) continue;
        piece.conditions_dropped = dropped;
        piece.atomic = atomic;
        piece.origin = what + ": " + value_text(&inst);
        piece.access_class = affine_access_class(piece.constraints);
        worst = std::max(worst, piece.access_class);
        pieces.push_back(std::move(piece));
      }
    }
    per_arg.emplace_back(a->getArgNo(), std::move(pieces));
  }
  if (failure) {
    record_unknown(inst, ptr, is_write, failure->access_class, failure->reason);
    return;
  }
  scope_.info.stats.add(worst);
  for (auto& [index, pieces] : per_arg) {
    ArgumentAccess& arg = scope_.info.args[index];
    for (AccessPiece& p : pieces) {
      if (is_read) arg.reads.push_back(p);
      if (is_write) arg.writes.push_back(p);
    }
  }
}

}  // namespace unimem
