#pragma once

// One access piece evaluated for a launch partition (DSOM section 4.3.3): parameters substituted,
// variable bounds tightened from single-variable constraints, group and local id merged into a
// global id where the piece allows, coupled variables enumerated, and the resulting boxes handed
// to the region layer's box union (region/affine_box_union.hpp).

#include <cstdint>
#include <vector>

#include <unimem/nd_range.hpp>
#include "analysis/access_pattern.hpp"
#include "analysis/affine_expr.hpp"
#include "region/affine_box_union.hpp"
#include "region/box.hpp"

namespace unimem {

namespace detail {

/// A piece with parameters substituted: dense coefficient vectors over the piece's variables.
struct IntExpr {
  std::int64_t constant = 0;
  std::vector<std::int64_t> coef;
};

struct IntConstraint {
  IntExpr e;
  Constraint::Relation rel = Constraint::Relation::greater_equal_zero;
};

/// One variable of a piece and its range.
struct Slot {
  Var var;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

}  // namespace detail

/// The storage evaluate_piece works in. A caller that evaluates many pieces keeps one and passes
/// it to every call, which then allocates only while it grows; it holds nothing between calls.
struct PieceScratch {
  std::vector<detail::Slot> slots;
  detail::IntExpr subscript;
  std::vector<detail::IntConstraint> constraints;
  std::vector<BoxTerm> box_terms;
};

enum class PieceStatus : std::uint8_t {
  exact,        // out holds exactly the piece's bytes
  approximate,  // out holds a superset (too many coupled points to enumerate)
  unbounded,    // a variable the bytes depend on has no upper bound: nothing was added
};

/// Adds the bytes piece (affine) touches for the work-groups in groups of range to out. Throws
/// PreconditionError when a scalar argument it needs has no value, or a bound overflows 64 bits.
[[nodiscard]] PieceStatus evaluate_piece(const AccessPiece& piece, const ParamValues& values,
                                         const NDRange& range, const Box<3>& groups,
                                         AffineBoxUnion& out);
/// The same, working in scratch.
[[nodiscard]] PieceStatus evaluate_piece(const AccessPiece& piece, const ParamValues& values,
                                         const NDRange& range, const Box<3>& groups,
                                         AffineBoxUnion& out, PieceScratch& scratch);

}  // namespace unimem
