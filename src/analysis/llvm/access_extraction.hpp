#pragma once

// The access extraction: every kernel of a canonicalized module read into access patterns.

#include <vector>

#include "analysis/access_pattern.hpp"

namespace llvm {
class Module;
}  // namespace llvm

namespace unimem {

/// Reads every global-memory reference of every kernel of a canonicalized module (see
/// canonicalize_for_analysis) and expresses it, with ScalarEvolution, as byte-offset pieces over
/// work-group ids, local ids, loop iteration counters and launch parameters, guarded by the affine
/// conditions of the branches that dominate it (DSOM section 4.3.2, Eq. 1).
[[nodiscard]] std::vector<KernelAccessInfo> extract_kernel_accesses(llvm::Module& module);

}  // namespace unimem
