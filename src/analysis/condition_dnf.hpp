#pragma once

// Conditions as disjunctive normal forms of affine constraints: how the guards of a reference and
// the cases of a piecewise subscript are written, with the bounded algebra the extraction needs
// (conjunction, disjunction, removal of constant and duplicate constraints).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/access_class.hpp"
#include "analysis/affine_expr.hpp"

namespace unimem {

using Conjunction = std::vector<Constraint>;
/// A disjunction of conjunctions: empty = false; {{}} = true.
using Dnf = std::vector<Conjunction>;

/// Bound on the disjuncts of a condition: beyond it the condition is not expressed (a guard is
/// then dropped, an over-approximation; a subscript case split makes the reference non-affine).
inline constexpr std::size_t kMaxDisjuncts = 32;

[[nodiscard]] inline Constraint ge0(AffineExpr e) {
  return {std::move(e), Constraint::Relation::greater_equal_zero};
}
[[nodiscard]] inline Constraint eq0(AffineExpr e) {
  return {std::move(e), Constraint::Relation::equal_zero};
}
[[nodiscard]] inline Constraint ne0(AffineExpr e) {
  return {std::move(e), Constraint::Relation::not_equal_zero};
}
[[nodiscard]] inline AffineExpr constant_expr(std::int64_t c) {
  return AffineExpr::of_constant(ParamPoly::constant(c));
}

/// Evaluates a variable-free constraint whose expression is a plain constant; nullopt otherwise.
[[nodiscard]] std::optional<bool> constant_truth(const Constraint& c);

/// Removes constant-true constraints and duplicates; false if some constraint is constant-false.
bool simplify(Conjunction& c);

/// a && b (conjunction) or a || b into out, each conjunction simplified and the false ones
/// removed. False, with why set, when the result would have more than kMaxDisjuncts disjuncts.
bool merge_dnf(const Dnf& a, const Dnf& b, bool conjunction, Dnf& out, ExtractionFailure& why);

}  // namespace unimem
