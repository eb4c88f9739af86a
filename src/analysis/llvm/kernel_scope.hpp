#pragma once

// What the extraction steps of one kernel share (scev_to_affine, guard_conditions,
// memory_references): the kernel's function, LLVM's analyses of it, its loop variables and the
// access information built so far.

#include <cstdint>
#include <map>

#include "analysis/access_pattern.hpp"

namespace llvm {
class DataLayout;
class DominatorTree;
class Function;
class Loop;
class LoopInfo;
class ScalarEvolution;
}  // namespace llvm

namespace unimem {

struct KernelScope {
  llvm::Function& kernel;
  llvm::ScalarEvolution& se;
  llvm::LoopInfo& loops;
  llvm::DominatorTree& dominators;
  const llvm::DataLayout& layout;
  /// The kernel's access information as extracted so far. Fresh variables (division quotients,
  /// implicit ranges) are loop variables appended to info.loop_names.
  KernelAccessInfo& info;
  /// The loop variable (Var::index of Kind::loop) counting each loop's iterations.
  std::map<const llvm::Loop*, std::uint32_t> loop_ids;
};

}  // namespace unimem
