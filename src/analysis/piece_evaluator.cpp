#include "analysis/piece_evaluator.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "common/check.hpp"

namespace unimem {

namespace {

// 128-bit intermediates keep products of 64-bit bounds and coefficients exact.
__extension__ typedef __int128 Int128;

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();
// Work bound per piece: points of the coupled variables enumerated. Beyond it the piece is
// over-approximated (and flagged inexact).
constexpr std::uint64_t kMaxEnumeratedPoints = std::uint64_t{1} << 16;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

std::int64_t to_i64(std::uint64_t v, const char* what) {
  UNIMEM_REQUIRE(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), what);
  return static_cast<std::int64_t>(v);
}

using detail::IntConstraint;
using detail::IntExpr;
using detail::Slot;

class PieceEvaluator {
 public:
  PieceEvaluator(const AccessPiece& piece, const ParamValues& values, const NDRange& range,
                 const Box<3>& groups, PieceScratch& scratch)
      : piece_(piece),
        values_(values),
        range_(range),
        groups_(groups),
        slots_(scratch.slots),
        subscript_(scratch.subscript),
        constraints_(scratch.constraints),
        box_terms_(scratch.box_terms) {}

  PieceStatus run(AffineBoxUnion& out) {
    collect_slots();
    to_int(piece_.byte_offset, subscript_);
    // Elements assigned in place (not cleared and pushed): their coefficient storage is reused.
    constraints_.resize(piece_.constraints.size());
    for (std::size_t i = 0; i < constraints_.size(); ++i) {
      to_int(piece_.constraints[i].expr, constraints_[i].e);
      constraints_[i].rel = piece_.constraints[i].relation;
    }
    merge_global_ids();
    eliminate_one_sided_existentials();
    if (!tighten(slots_, constraints_)) return PieceStatus::exact;  // empty domain
    std::vector<IntConstraint> general;
    for (const IntConstraint& c : constraints_) {
      if (!is_settled(c, slots_)) general.push_back(c);
    }
    // Unbounded variables that matter make the piece unbounded.
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      bool used = subscript_.coef[i] != 0;
      for (const IntConstraint& c : general) used = used || c.e.coef[i] != 0;
      if (used && (slots_[i].hi == kUnbounded)) return PieceStatus::unbounded;
    }
    if (general.empty()) {
      add_box(out, slots_, subscript_);
      return PieceStatus::exact;
    }
    return enumerate(general, out);
  }

 private:
  void collect_slots() {
    slots_.clear();
    auto add = [&](Var v) {
      for (const Slot& s : slots_) {
        if (s.var == v) return;
      }
      Slot s{v, 0, 0};
      switch (v.kind) {
        case Var::Kind::group_id:
          s.lo = groups_.min()[v.index];
          s.hi = groups_.max()[v.index] - 1;
          break;
        case Var::Kind::local_id:
          s.lo = 0;
          s.hi = to_i64(range_.local[v.index], "local size too large") - 1;
          break;
        case Var::Kind::loop:
          s.lo = 0;
          s.hi = kUnbounded;
          break;
      }
      slots_.push_back(s);
    };
    for (const auto& [v, c] : piece_.byte_offset.coefficients) add(v);
    for (const Constraint& k : piece_.constraints) {
      for (const auto& [v, c] : k.expr.coefficients) add(v);
    }
  }

  void to_int(const AffineExpr& e, IntExpr& r) const {
    r.constant = evaluate(e.constant, values_);
    r.coef.assign(slots_.size(), 0);
    for (const auto& [v, c] : e.coefficients) {
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == v) r.coef[i] = evaluate(c, values_);
      }
    }
  }

  /// Where group id and local id of a dimension only occur as global id (coefficient of w is the
  /// local size times that of l), replace the pair by one variable over the global index range:
  /// a boundary test on the global id then becomes a bound of one variable (rectangular).
  void merge_global_ids() {
    for (std::uint32_t d = 0; d < 3; ++d) {
      int w = -1;
      int l = -1;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == Var{Var::Kind::group_id, d}) w = static_cast<int>(i);
        if (slots_[i].var == Var{Var::Kind::local_id, d}) l = static_cast<int>(i);
      }
      if (w < 0 || l < 0) continue;
      const std::int64_t ls = static_cast<std::int64_t>(range_.local[d]);
      auto mergeable = [&](const IntExpr& e) {
        Int128 expect = static_cast<Int128>(e.coef[l]) * ls;
        return expect == e.coef[w];
      };
      bool ok = mergeable(subscript_);
      for (const IntConstraint& c : constraints_) ok = ok && mergeable(c.e);
      if (!ok) continue;
      const Int128 lo = static_cast<Int128>(slots_[w].lo) * ls;
      const Int128 hi = static_cast<Int128>(slots_[w].hi) * ls + (ls - 1);
      UNIMEM_REQUIRE(hi < std::numeric_limits<std::int64_t>::max(), "global index too large");
      slots_[l].lo = static_cast<std::int64_t>(lo);
      slots_[l].hi = static_cast<std::int64_t>(hi);
      slots_[w].lo = 0;
      slots_[w].hi = 0;
      subscript_.coef[w] = 0;
      for (IntConstraint& c : constraints_) c.e.coef[w] = 0;
    }
  }

  /// A loop variable absent from the subscript only needs to exist. If every constraint on it is
  /// a lower bound (and it has no upper one), a large enough value satisfies them all: drop them.
  /// If every one is an upper bound, its smallest value (0) is the best witness: substitute it.
  /// (Typical: the exit test of a loop guarding a reference after the loop.)
  void eliminate_one_sided_existentials() {
    for (std::size_t v = 0; v < slots_.size(); ++v) {
      if (slots_[v].var.kind != Var::Kind::loop || subscript_.coef[v] != 0) continue;
      bool lower_only = slots_[v].hi == kUnbounded;
      bool upper_only = true;
      bool any = false;
      for (const IntConstraint& c : constraints_) {
        const std::int64_t a = c.e.coef[v];
        if (a == 0) continue;
        any = true;
        if (c.rel != Constraint::Relation::greater_equal_zero) {
          lower_only = upper_only = false;
          break;
        }
        lower_only = lower_only && a > 0;
        upper_only = upper_only && a < 0;
      }
      if (!any) continue;
      if (lower_only) {
        std::erase_if(constraints_, [v](const IntConstraint& c) { return c.e.coef[v] != 0; });
      } else if (upper_only) {
        for (IntConstraint& c : constraints_) {
          c.e.constant += c.e.coef[v] * slots_[v].lo;
          c.e.coef[v] = 0;
        }
      }
    }
  }

  static int single_var(const IntExpr& e) {
    int v = -1;
    for (std::size_t i = 0; i < e.coef.size(); ++i) {
      if (e.coef[i] == 0) continue;
      if (v >= 0) return -2;
      v = static_cast<int>(i);
    }
    return v;
  }

  /// A constraint that tightening has fully absorbed into bounds.
  static bool is_settled(const IntConstraint& c, const std::vector<Slot>& slots) {
    const int v = single_var(c.e);
    if (v == -1) return true;
    if (v == -2) return false;
    if (c.rel != Constraint::Relation::not_equal_zero) return true;
    // x != k with k strictly inside the range still splits it.
    const std::int64_t a = c.e.coef[v];
    if ((-c.e.constant) % a != 0) return true;
    const std::int64_t k = -c.e.constant / a;
    return k < slots[v].lo || k > slots[v].hi;
  }

  /// Tightens bounds with every single-variable constraint until nothing changes; false if the
  /// domain is empty.
  static bool tighten(std::vector<Slot>& slots, const std::vector<IntConstraint>& constraints) {
    for (std::size_t round = 0; round <= 2 * constraints.size() + 2; ++round) {
      bool changed = false;
      for (const IntConstraint& c : constraints) {
        const int v = single_var(c.e);
        if (v == -2) {
          changed = propagate(slots, c) || changed;
          if (!feasible(slots)) return false;
          continue;
        }
        if (v == -1) {
          const std::int64_t k = c.e.constant;
          const bool truth = c.rel == Constraint::Relation::greater_equal_zero ? k >= 0
                             : c.rel == Constraint::Relation::equal_zero       ? k == 0
                                                                               : k != 0;
          if (!truth) return false;
          continue;
        }
        Slot& s = slots[v];
        const std::int64_t a = c.e.coef[v];
        const std::int64_t k = c.e.constant;
        std::int64_t lo = s.lo;
        std::int64_t hi = s.hi;
        if (c.rel == Constraint::Relation::greater_equal_zero) {
          if (a > 0) {
            lo = std::max(lo, ceil_div(-k, a));
          } else {
            hi = std::min(hi, floor_div(k, -a));
          }
        } else if (c.rel == Constraint::Relation::equal_zero) {
          if ((-k) % a != 0) return false;
          lo = std::max(lo, -k / a);
          hi = std::min(hi, -k / a);
        } else {
          if ((-k) % a == 0) {
            const std::int64_t x = -k / a;
            if (x == lo) ++lo;
            if (x == hi && hi != kUnbounded) --hi;
          }
        }
        if (lo > hi) return false;
        if (lo != s.lo || hi != s.hi) {
          s.lo = lo;
          s.hi = hi;
          changed = true;
        }
      }
      if (!changed) return true;
    }
    return true;
  }

  static bool feasible(const std::vector<Slot>& slots) {
    for (const Slot& s : slots) {
      if (s.lo > s.hi) return false;
    }
    return true;
  }

  /// Interval bound propagation through a constraint over several variables: each variable is
  /// bounded by the extreme values of the others (a sound bounding box of the coupled domain).
  static bool propagate(std::vector<Slot>& slots, const IntConstraint& c) {
    if (c.rel == Constraint::Relation::not_equal_zero) return false;
    bool changed = false;
    for (int sign : {1, -1}) {
      if (sign == -1 && c.rel != Constraint::Relation::equal_zero) break;
      // sign * e >= 0
      for (std::size_t v = 0; v < slots.size(); ++v) {
        const Int128 av = static_cast<Int128>(sign) * c.e.coef[v];
        if (av == 0) continue;
        Int128 rest_max = static_cast<Int128>(sign) * c.e.constant;
        bool finite = true;
        for (std::size_t i = 0; i < slots.size() && finite; ++i) {
          const Int128 ai = static_cast<Int128>(sign) * c.e.coef[i];
          if (i == v || ai == 0) continue;
          const std::int64_t x = ai > 0 ? slots[i].hi : slots[i].lo;
          if (x == kUnbounded) {
            finite = false;
            break;
          }
          rest_max += ai * x;
        }
        if (!finite) continue;
        if (rest_max > std::numeric_limits<std::int64_t>::max() / 2 ||
            rest_max < std::numeric_limits<std::int64_t>::min() / 2) {
          continue;
        }
        const std::int64_t r = static_cast<std::int64_t>(rest_max);
        // av * x + r >= 0
        if (av > 0) {
          const std::int64_t lo = ceil_div(-r, static_cast<std::int64_t>(av));
          if (lo > slots[v].lo) {
            slots[v].lo = lo;
            changed = true;
          }
        } else {
          const std::int64_t hi = floor_div(r, static_cast<std::int64_t>(-av));
          if (hi < slots[v].hi) {
            slots[v].hi = hi;
            changed = true;
          }
        }
      }
    }
    return changed;
  }

  /// Coupled constraints: enumerate every coupled variable but one (the one with the widest range)
  /// and, for each point, bound the remaining one and generate the rest as a box.
  PieceStatus enumerate(const std::vector<IntConstraint>& general, AffineBoxUnion& out) {
    std::vector<std::size_t> coupled;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      for (const IntConstraint& c : general) {
        if (c.e.coef[i] != 0) {
          coupled.push_back(i);
          break;
        }
      }
    }
    // Keep free the variable along which the subscript is densest (smallest stride, then widest
    // range): each enumerated point then yields one contiguous run instead of one per value.
    auto better = [&](std::size_t a, std::size_t b) {
      const std::int64_t ca = subscript_.coef[a] < 0 ? -subscript_.coef[a] : subscript_.coef[a];
      const std::int64_t cb = subscript_.coef[b] < 0 ? -subscript_.coef[b] : subscript_.coef[b];
      if ((ca != 0) != (cb != 0)) return ca != 0;
      if (ca != cb) return ca < cb;
      return slots_[a].hi - slots_[a].lo > slots_[b].hi - slots_[b].lo;
    };
    std::size_t free_var = coupled.front();
    for (std::size_t i : coupled) {
      if (better(i, free_var)) free_var = i;
    }
    std::vector<std::size_t> enumerated;
    Int128 points = 1;
    for (std::size_t i : coupled) {
      if (i == free_var) continue;
      enumerated.push_back(i);
      points *= static_cast<Int128>(slots_[i].hi) - slots_[i].lo + 1;
    }
    if (points > static_cast<Int128>(kMaxEnumeratedPoints)) {
      // Too many points: drop the coupled constraints (a superset of the exact set).
      add_box(out, slots_, subscript_);
      return PieceStatus::approximate;
    }
    std::vector<std::int64_t> point(enumerated.size());
    for (std::size_t k = 0; k < enumerated.size(); ++k) point[k] = slots_[enumerated[k]].lo;
    // Per-point copies, assigned (not constructed) in the loop so that their storage is reused.
    std::vector<Slot> slots;
    IntExpr sub;
    std::vector<IntConstraint> cons;
    std::vector<std::int64_t> holes;
    // When the subscript does not depend on the enumerated variables, the points only shape the
    // free variable's range: unite those ranges here and add the box once per disjoint range.
    bool independent = true;
    for (std::size_t i : enumerated) independent = independent && subscript_.coef[i] == 0;
    bool pending = false;
    std::int64_t pending_lo = 0;
    std::int64_t pending_hi = 0;
    const auto add_range = [&](std::int64_t lo, std::int64_t hi) {
      if (!independent) {
        add_box(out, slots, sub, free_var, lo, hi);
        return;
      }
      if (pending && static_cast<Int128>(lo) <= static_cast<Int128>(pending_hi) + 1 &&
          static_cast<Int128>(pending_lo) <= static_cast<Int128>(hi) + 1) {
        pending_lo = std::min(pending_lo, lo);
        pending_hi = std::max(pending_hi, hi);
        return;
      }
      if (pending) add_box(out, slots_, subscript_, free_var, pending_lo, pending_hi);
      pending = true;
      pending_lo = lo;
      pending_hi = hi;
    };
    for (;;) {
      slots = slots_;
      sub = subscript_;
      cons = general;
      for (std::size_t k = 0; k < enumerated.size(); ++k) {
        const std::size_t i = enumerated[k];
        slots[i].lo = slots[i].hi = point[k];
        sub.constant += sub.coef[i] * point[k];
        sub.coef[i] = 0;
        for (IntConstraint& c : cons) {
          c.e.constant += c.e.coef[i] * point[k];
          c.e.coef[i] = 0;
        }
      }
      if (tighten(slots, cons)) {
        // Remaining != constraints on the free variable split its range.
        holes.clear();
        for (const IntConstraint& c : cons) {
          if (c.rel != Constraint::Relation::not_equal_zero) continue;
          const std::int64_t a = c.e.coef[free_var];
          if (a != 0 && (-c.e.constant) % a == 0) holes.push_back(-c.e.constant / a);
        }
        std::sort(holes.begin(), holes.end());
        if (slots[free_var].hi == kUnbounded && sub.coef[free_var] != 0)
          return PieceStatus::unbounded;
        std::int64_t lo = slots[free_var].lo;
        const std::int64_t hi = slots[free_var].hi;
        for (std::size_t h = 0; h <= holes.size(); ++h) {
          const std::int64_t end = h < holes.size() ? holes[h] - 1 : hi;
          if (h < holes.size() && (holes[h] < lo || holes[h] > hi)) continue;
          if (lo <= end) add_range(lo, end);
          if (h < holes.size()) lo = holes[h] + 1;
        }
      }
      std::size_t k = 0;
      for (; k < enumerated.size(); ++k) {
        if (point[k] < slots_[enumerated[k]].hi) {
          ++point[k];
          break;
        }
        point[k] = slots_[enumerated[k]].lo;
      }
      if (k == enumerated.size()) break;
    }
    if (pending) add_box(out, slots_, subscript_, free_var, pending_lo, pending_hi);
    return PieceStatus::exact;
  }

  static constexpr std::size_t kNoOverride = std::numeric_limits<std::size_t>::max();

  static std::uint64_t var_key(const Var& v) {
    return (static_cast<std::uint64_t>(v.kind) << 32) | v.index;
  }

  /// Adds to out the box of slots (slot override_slot, if any, restricted to [lo, hi]) for
  /// subscript.
  void add_box(AffineBoxUnion& out, const std::vector<Slot>& slots, const IntExpr& subscript,
               std::size_t override_slot = kNoOverride, std::int64_t lo = 0, std::int64_t hi = 0) {
    box_terms_.clear();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const bool restricted = i == override_slot;
      box_terms_.push_back({var_key(slots[i].var), subscript.coef[i], restricted ? lo : slots[i].lo,
                            restricted ? hi : slots[i].hi});
    }
    out.add(subscript.constant, box_terms_, piece_.width);
  }

  const AccessPiece& piece_;
  const ParamValues& values_;
  const NDRange& range_;
  const Box<3>& groups_;
  // In the caller's PieceScratch.
  std::vector<Slot>& slots_;
  IntExpr& subscript_;
  std::vector<IntConstraint>& constraints_;
  std::vector<BoxTerm>& box_terms_;  // scratch of add_box
};
}  // namespace

PieceStatus evaluate_piece(const AccessPiece& piece, const ParamValues& values,
                           const NDRange& range, const Box<3>& groups, AffineBoxUnion& out,
                           PieceScratch& scratch) {
  return PieceEvaluator(piece, values, range, groups, scratch).run(out);
}

PieceStatus evaluate_piece(const AccessPiece& piece, const ParamValues& values,
                           const NDRange& range, const Box<3>& groups, AffineBoxUnion& out) {
  PieceScratch scratch;
  return evaluate_piece(piece, values, range, groups, out, scratch);
}

}  // namespace unimem
