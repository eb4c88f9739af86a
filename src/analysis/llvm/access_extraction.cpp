#include "analysis/llvm/access_extraction.hpp"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Module.h>

#include <string>

#include "analysis/llvm/guard_conditions.hpp"
#include "analysis/llvm/kernel_arguments.hpp"
#include "analysis/llvm/kernel_scope.hpp"
#include "analysis/llvm/memory_references.hpp"
#include "analysis/llvm/pass_managers.hpp"
#include "analysis/llvm/scev_to_affine.hpp"

namespace unimem {

namespace {

/// The steps of one kernel's extraction, wired together. Subscripts and conditions refer to each
/// other: a select's arms need its condition, a comparison needs its operands' subscripts.
class KernelExtraction {
 public:
  explicit KernelExtraction(KernelScope& scope)
      : scope_(scope),
        subscripts_(scope, conditions_),
        conditions_(scope, subscripts_),
        references_(scope, subscripts_, conditions_) {}

  void run() {
    KernelAccessInfo& info = scope_.info;
    info.name = scope_.kernel.getName().str();
    info.args = describe_kernel_arguments(scope_.kernel);
    for (llvm::Loop* l : scope_.loops.getLoopsInPreorder()) {
      scope_.loop_ids[l] = static_cast<std::uint32_t>(info.loop_names.size());
      info.loop_names.push_back("i" + std::to_string(info.loop_names.size() + 1));
    }
    for (llvm::Instruction& inst : llvm::instructions(scope_.kernel)) references_.visit(inst);
    mark_unsplittable_writes(info);
  }

 private:
  /// A write that is not affine can never be bounded: such a kernel is never split.
  static void mark_unsplittable_writes(KernelAccessInfo& info) {
    for (const ArgumentAccess& a : info.args) {
      for (const AccessPiece& p : a.writes) {
        if (!is_affine(p.access_class) && info.statically_splittable) {
          info.statically_splittable = false;
          info.unsplittable_reason = "argument '" + a.name + "' is written through a " +
                                     std::string(to_string(p.access_class)) + " reference (" +
                                     p.reason + ")";
        }
      }
    }
  }

  KernelScope& scope_;
  ScevToAffine subscripts_;
  GuardConditions conditions_;
  MemoryReferences references_;
};

}  // namespace

std::vector<KernelAccessInfo> extract_kernel_accesses(llvm::Module& module) {
  PassManagers managers;
  llvm::FunctionAnalysisManager& fam = managers.functions;

  std::vector<KernelAccessInfo> kernels;
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL) continue;
    auto& se = fam.getResult<llvm::ScalarEvolutionAnalysis>(f);
    auto& li = fam.getResult<llvm::LoopAnalysis>(f);
    auto& dt = fam.getResult<llvm::DominatorTreeAnalysis>(f);
    KernelAccessInfo info;
    KernelScope scope{f, se, li, dt, module.getDataLayout(), info, {}};
    KernelExtraction(scope).run();
    kernels.push_back(std::move(info));
  }
  return kernels;
}

}  // namespace unimem
