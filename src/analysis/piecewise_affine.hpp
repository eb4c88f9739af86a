#pragma once

// Piecewise affine expressions: a subscript or index as a list of cases, each an affine expression
// valid where its constraints hold, and the arithmetic the extraction applies to them (sums,
// products with a variable-free factor, min / max, floor and truncating division by a constant).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/access_class.hpp"
#include "analysis/access_pattern.hpp"
#include "analysis/affine_expr.hpp"
#include "analysis/condition_dnf.hpp"

namespace unimem {

/// One case of a piecewise affine expression: expr where every constraint holds.
struct AffineCase {
  AffineExpr expr;
  Conjunction constraints;
};
using PiecewiseAffine = std::vector<AffineCase>;

/// Bound on the cases of one expression (select / min / max splits): beyond it the reference is
/// reported as non-affine.
inline constexpr std::size_t kMaxCases = 32;

/// The single unconstrained case e.
[[nodiscard]] inline PiecewiseAffine single_case(AffineExpr e) {
  return PiecewiseAffine{AffineCase{std::move(e), {}}};
}

/// Sum or product of two piecewise expressions (every pair of cases). A product needs one factor
/// free of variables.
/// Empty, with why set, on failure.
[[nodiscard]] PiecewiseAffine combine_cases(const PiecewiseAffine& a, const PiecewiseAffine& b,
                                            bool multiply, ExtractionFailure& why);

/// max(a, b, ...) as cases: operand k where it is >= every other (> for earlier ones, so the
/// cases partition the domain); min likewise.
[[nodiscard]] std::optional<PiecewiseAffine> min_max_cases(const std::vector<PiecewiseAffine>& ops,
                                                           bool is_max, ExtractionFailure& why);

enum class DivisionKind { floor_non_negative, floor, toward_zero };

/// x / c (or x mod c) for a constant c > 0, exactly: a fresh existential variable q with
/// c*q <= x <= c*q + c - 1 (floor) is the quotient. Loop-kind variables are >= 0, so a quotient
/// that may be negative is written -q' in a second case where x < 0. The fresh variables are loop
/// variables named qN, appended to loop_names (indexed by Var::index).
[[nodiscard]] PiecewiseAffine divide_cases(const PiecewiseAffine& xs, std::int64_t c,
                                           DivisionKind kind, bool remainder,
                                           std::vector<std::string>& loop_names);

/// Projects out the loop variables of an access piece that only need to exist (absent from the
/// subscript), where the coefficient signs are known constants: only lower bounds (drop them: a
/// large value satisfies all) or only upper bounds (substitute 0). Loop exit tests guarding a
/// reference after the loop vanish this way. The range generator takes the same step with launch
/// values.
void eliminate_one_sided_existentials(AccessPiece& piece);

}  // namespace unimem
