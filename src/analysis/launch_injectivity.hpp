#pragma once

// Whether the writes of one launch are injective over work-groups, decided for its concrete
// parameters (the launch-time check of analysis/kernel_ranges.hpp). Declared in the LLVM/isl-free
// core; defined with isl by analysis/isl/write_injectivity.cpp when unimem is built with the
// analysis, otherwise by analysis/analysis_disabled.cpp (which answers "not injective": such a
// launch is never split).

#include <string>

#include <unimem/nd_range.hpp>
#include "analysis/access_pattern.hpp"
#include "analysis/affine_expr.hpp"

namespace unimem {

/// Matz et al. section 4.1 (002_aa84334820ddd8b5.txt): a kernel can be partitioned only if its
/// write maps are injective over thread blocks. Builds, with isl, each buffer argument's map from
/// work-group id to written byte (local ids, loop counters and bytes within an element projected
/// out as existential variables, all launch parameters substituted) and checks that no byte is
/// written by two work-groups. reason names the argument otherwise.
[[nodiscard]] bool writes_injective_over_groups(const KernelAccessInfo& kernel,
                                                const NDRange& range, const ParamValues& values,
                                                std::string* reason);

/// Everything of a launch that writes_injective_over_groups reads: two launches of one kernel
/// with equal keys get the same answer and reason, so the answer is cached per key
/// (KernelRangeGenerator::splittable). With isl, the write maps' texts after substitution: a
/// scalar argument that no write subscript or guard uses (floyd-warshall's pivot k) does not
/// change the key, so one check serves all its values. The key reads of values only what the
/// range gives and the scalar arguments of the write pieces' byte offsets and guards
/// (KernelRangeGenerator relies on this to answer a launch like the last without the key).
[[nodiscard]] std::string injectivity_key(const KernelAccessInfo& kernel, const NDRange& range,
                                          const ParamValues& values);

}  // namespace unimem
