#pragma once

#include <string>

#include "analysis/access_pattern.hpp"
#include "analysis/range_generator.hpp"

namespace unimem {

/// isl's own version string as the linked library reports it (e.g. "isl-0.25-GMP"). DESIGN.md
/// pitfall: libLLVM-15.so exports Polly's isl 0.24, and a wrong link order silently binds to it.
[[nodiscard]] std::string isl_runtime_version();

/// Matz et al. section 4.1 (002_aa84334820ddd8b5.txt): a kernel can be partitioned only if its
/// write maps are injective over thread blocks. Builds, with isl, each buffer argument's map from
/// work-group id to written byte (local ids, loop counters and bytes within an element projected
/// out as existential variables, all launch parameters substituted) and checks that no byte is
/// written by two work-groups. reason names the argument otherwise.
[[nodiscard]] bool writes_injective_over_groups(const KernelAccessInfo& kernel,
                                                const NDRange& range, const ParamValues& values,
                                                std::string* reason);

namespace detail {
/// The isl map text of one argument's write pieces (exposed for tests).
[[nodiscard]] std::string write_map_text(const ArgumentAccess& arg, const NDRange& range,
                                         const ParamValues& values);
}  // namespace detail

}  // namespace unimem
