#pragma once

// Injectivity of a kernel's write maps over work-groups with isl (Matz et al. section 4.1): decided
// once per kernel at analysis time for every launch (parametric), or per launch for its concrete
// parameters.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <unimem/nd_range.hpp>
#include "analysis/access_pattern.hpp"
#include "analysis/affine_expr.hpp"
#include "analysis/launch_injectivity.hpp"

namespace unimem {

/// isl's own version string as the linked library reports it (e.g. "isl-0.25-GMP"). DESIGN.md
/// pitfall: libLLVM-15.so exports Polly's isl 0.24, and a wrong link order silently binds to it.
[[nodiscard]] std::string isl_runtime_version();

// The launch-time check for concrete parameters, writes_injective_over_groups, is declared in the
// core (analysis/launch_injectivity.hpp) and defined in write_injectivity.cpp.

/// Whether two work-groups may write a common byte (Matz et al. section 4.1, 002_aa84334820ddd8b5
/// .txt), decided once, at analysis time, for every launch (issue 5: isl represents
/// the patterns as parametric sets and maps): scalar arguments and NDRange sizes are isl
/// parameters. Per buffer argument, the map from work-group id to written byte is built with
/// variable coefficients that must be integers (group ids whose coefficient is the local size
/// times that of the local id are merged with it into a global id: injective over work-items
/// implies injective over work-groups), and isl computes the parameter values for which two
/// different work-groups (work-items) write a common byte:
/// - none: injective, no launch-time check;
/// - all values with two or more work-groups (group-level map only): not_injective, reason names
///   the argument;
/// - otherwise, or when a coefficient depends on a parameter (a[i * s], row * w), a product of
///   parameters is needed or isl gives up: parametric, the launch-time check decides.
/// Global offsets are >= 0. The verdict covers launches with one work-group in every dimension
/// from *dims on (the dimensions the writes use come before it; beyond them every work-group
/// would write the same bytes); other launches are checked concretely.
/// Statically unsplittable kernels (non-affine writes) give parametric: they are never split.
[[nodiscard]] WriteInjectivity parametric_write_injectivity(const KernelAccessInfo& kernel,
                                                            std::string* reason,
                                                            std::uint32_t* dims = nullptr);

namespace detail {
/// One argument's write map with parameters: isl text of the map (domain: one group id, or
/// global id where merged, per dimension below dims) and of the parameter context.
struct ParametricWriteMap {
  std::string map;
  std::string context;
  std::array<bool, 3> merged{};  // per dimension: group id merged with the local id
};
/// nullopt if some piece needs more than Presburger arithmetic (exposed for tests).
[[nodiscard]] std::optional<ParametricWriteMap> parametric_write_map(const ArgumentAccess& arg,
                                                                     std::uint32_t dims);

/// The isl map text of one argument's write pieces (exposed for tests).
[[nodiscard]] std::string write_map_text(const ArgumentAccess& arg, const NDRange& range,
                                         const ParamValues& values);
}  // namespace detail

}  // namespace unimem
