#include "analysis/range_generator.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "analysis/write_injectivity.hpp"
#include "common/check.hpp"
#include "region/box_set.hpp"
#include "region/range_generator.hpp"

namespace unimem {

// 128-bit intermediates keep products of 64-bit bounds and coefficients exact.
__extension__ typedef __int128 Int128;

namespace {

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();
// Work bounds per piece: intervals emitted by the fast generator and points of the coupled
// variables enumerated. Beyond them the piece is over-approximated (and flagged inexact).
constexpr std::uint64_t kMaxIntervalsPerPiece = std::uint64_t{1} << 20;
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

/// A piece with parameters substituted: dense coefficient vectors over the piece's variables.
struct IntExpr {
  std::int64_t constant = 0;
  std::vector<std::int64_t> coef;
};

struct IntConstraint {
  IntExpr e;
  Constraint::Relation rel = Constraint::Relation::GreaterEqualZero;
};

struct Slot {
  Var var;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

enum class PieceStatus { Exact, Approximate, Unbounded };

/// The box-shaped parts of an argument's pieces in one launch partition: bytes
/// constant + sum(coef_i * x_i) + [0, width) for x in a box. Byte ranges are generated only at the
/// end (region/range_generator.hpp, DSOM Fig. 10). Before that, parts with the same width and
/// coefficients are united as boxes of their variables (region/box_set.hpp): a stencil's interior
/// piece, its boundary pieces and its neighbours shifted by one element then make whole rows,
/// which Fig. 10 coalesces into one interval, instead of one interval per row and piece.
class BoxCollector {
 public:
  /// Records the box of slots (slot override_slot, if any, restricted to [lo, hi]).
  void add(const std::vector<Slot>& slots, const IntExpr& subscript, std::uint32_t width,
           std::size_t override_slot = kNoOverride, std::int64_t lo = 0, std::int64_t hi = 0) {
    Part part;
    part.constant = subscript.constant;
    part.width = width;
    part.first = terms_.size();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (subscript.coef[i] == 0) continue;
      const std::int64_t l = i == override_slot ? lo : slots[i].lo;
      const std::int64_t h = i == override_slot ? hi : slots[i].hi;
      if (l > h) {
        terms_.resize(part.first);
        return;  // empty box
      }
      terms_.push_back({var_key(slots[i].var), subscript.coef[i], l, h});
    }
    part.count = terms_.size() - part.first;
    std::sort(terms_.begin() + static_cast<std::ptrdiff_t>(part.first), terms_.end(),
              [](const Term& a, const Term& b) { return a.var < b.var; });
    canonicalize_constant(part);
    if (!parts_.empty() && coalesce(parts_.back(), part)) {
      terms_.resize(part.first);
      return;
    }
    parts_.push_back(part);
  }

  /// The bytes of every part, normalized; exact is cleared if some box hit the interval limit and
  /// was over-approximated.
  IntervalSet generate(std::uint64_t max_intervals, bool& exact) const {
    std::vector<Interval> out;
    std::vector<std::size_t> runs;  // start of each box's output in out (each one is sorted)
    deferred_.clear();
    exact = generate(max_intervals, out, runs) && exact;
    IntervalSet cheap = merge_runs(std::move(out), std::move(runs));
    if (deferred_.empty()) return cheap;
    // Boxes with many intervals: first drop the values of their outermost variable whose bytes
    // the cheap boxes already cover (a halo piece inside the main piece's run, say), then
    // generate the rest.
    out.clear();
    runs.clear();
    std::vector<AffineAccess> rest;
    for (const AffineAccess& a : deferred_) trim_covered(a, cheap, rest);
    if (rest.size() == 1 && cheap.empty()) {  // the common large case: no copy
      GeneratedRanges r = generate_ranges(rest.front(), 1, max_intervals, BelowZero::Clip);
      exact = exact && r.exact;
      return std::move(r.bytes);
    }
    for (const AffineAccess& a : rest) {
      const GeneratedRanges r = generate_ranges(a, 1, max_intervals, BelowZero::Clip);
      exact = exact && r.exact;
      append_run(r.bytes, out, runs);
    }
    IntervalSet more = merge_runs(std::move(out), std::move(runs));
    return cheap.empty() ? more : cheap.unite(more);
  }

 private:
  static IntervalSet merge_runs(std::vector<Interval> out, std::vector<std::size_t> runs) {
    const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
    if (runs.size() <= kMaxMergedRuns) {
      // Few sorted runs: merge them pairwise (linear per level) instead of sorting everything.
      runs.push_back(out.size());
      while (runs.size() > 2) {
        std::vector<std::size_t> next;
        for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
          next.push_back(runs[i]);
          if (i + 2 < runs.size()) {
            const auto at = [&out](std::size_t k) {
              return out.begin() + static_cast<std::ptrdiff_t>(k);
            };
            std::inplace_merge(at(runs[i]), at(runs[i + 1]), at(runs[i + 2]), by_begin);
          }
        }
        next.push_back(out.size());
        runs = std::move(next);
      }
    }
    return IntervalSet::from_unsorted(std::move(out));  // no sort if already sorted
  }

  static void append_run(const IntervalSet& bytes, std::vector<Interval>& out,
                         std::vector<std::size_t>& runs) {
    // A new run unless it continues the previous one in order.
    if (!bytes.empty() && (out.empty() || bytes[0].begin < out.back().begin)) {
      runs.push_back(out.size());
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
  }

  /// Splits a (its bytes constant + sum(coef * x) over a box) into at most two boxes by removing
  /// the longest range of values of its variable with the largest |coef| whose bytes all lie in
  /// one interval of covered.
  static void trim_covered(const AffineAccess& a, const IntervalSet& covered,
                           std::vector<AffineAccess>& rest) {
    std::size_t v = a.terms.size();
    for (std::size_t i = 0; i < a.terms.size(); ++i) {
      const AffineTerm& t = a.terms[i];
      if (t.lower == t.upper) continue;
      if (v == a.terms.size() ||
          static_cast<Int128>(t.coefficient) * t.coefficient >
              static_cast<Int128>(a.terms[v].coefficient) * a.terms[v].coefficient) {
        v = i;
      }
    }
    if (v == a.terms.size() || covered.empty()) {
      rest.push_back(a);
      return;
    }
    // Bytes for x: base + k * y + [rmin, rmax] with y = x (k > 0) or y = -x (k < 0).
    const AffineTerm& tv = a.terms[v];
    const Int128 k = tv.coefficient < 0 ? -static_cast<Int128>(tv.coefficient) : tv.coefficient;
    const Int128 y_lo = tv.coefficient < 0 ? -static_cast<Int128>(tv.upper) : tv.lower;
    const Int128 y_hi = tv.coefficient < 0 ? -static_cast<Int128>(tv.lower) : tv.upper;
    Int128 rmin = a.constant;
    Int128 rmax = a.constant;
    for (std::size_t i = 0; i < a.terms.size(); ++i) {
      if (i == v) continue;
      const Int128 p = static_cast<Int128>(a.terms[i].coefficient) * a.terms[i].lower;
      const Int128 q = static_cast<Int128>(a.terms[i].coefficient) * a.terms[i].upper;
      rmin += std::min(p, q);
      rmax += std::max(p, q);
    }
    const auto floor_div128 = [](Int128 n, Int128 d) {  // d > 0
      return n >= 0 ? n / d : -((-n + d - 1) / d);
    };
    // The longest run of y values whose bytes [k*y + rmin, k*y + rmax] lie in one interval.
    Int128 best_lo = 1;
    Int128 best_hi = 0;
    const Int128 first = k * y_lo + rmin;
    const Int128 last = k * y_hi + rmax;
    for (const Interval& iv : covered) {
      if (static_cast<Int128>(iv.end) <= first) continue;
      if (static_cast<Int128>(iv.begin) > last) break;
      // k*y + rmin >= begin and k*y + rmax <= end - 1.
      const Int128 lo = std::max(y_lo, -floor_div128(-(static_cast<Int128>(iv.begin) - rmin), k));
      const Int128 hi = std::min(y_hi, floor_div128(static_cast<Int128>(iv.end) - 1 - rmax, k));
      if (hi - lo > best_hi - best_lo) {
        best_lo = lo;
        best_hi = hi;
      }
    }
    if (best_lo > best_hi) {
      rest.push_back(a);
      return;
    }
    // Back to x: y in [best_lo, best_hi] is x in [best_lo, best_hi] (k > 0) or negated.
    const Int128 x_lo = tv.coefficient < 0 ? -best_hi : best_lo;
    const Int128 x_hi = tv.coefficient < 0 ? -best_lo : best_hi;
    if (x_lo > tv.lower) {
      AffineAccess below = a;
      below.terms[v].upper = static_cast<std::int64_t>(x_lo - 1);
      rest.push_back(std::move(below));
    }
    if (x_hi < tv.upper) {
      AffineAccess above = a;
      above.terms[v].lower = static_cast<std::int64_t>(x_hi + 1);
      rest.push_back(std::move(above));
    }
  }

  bool generate(std::uint64_t max_intervals, std::vector<Interval>& out,
                std::vector<std::size_t>& runs) const {
    std::vector<std::size_t> order(parts_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // Stable: within a group the parts keep the order they came in (usually increasing offsets,
    // so the generated intervals need no sort).
    std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
      return key_less(parts_[a], parts_[b]);
    });
    bool exact = true;
    for (std::size_t g = 0; g < order.size();) {
      std::size_t e = g + 1;
      while (e < order.size() && same_key(parts_[order[g]], parts_[order[e]])) ++e;
      exact = generate_group(order, g, e, max_intervals, out, runs) && exact;
      g = e;
    }
    return exact;
  }

 public:
  static constexpr std::size_t kNoOverride = std::numeric_limits<std::size_t>::max();

 private:
  struct Term {
    std::uint64_t var = 0;  // identity of the variable (for grouping only)
    std::int64_t coef = 0;
    std::int64_t lo = 0;
    std::int64_t hi = 0;
  };
  struct Part {
    std::int64_t constant = 0;
    std::uint32_t width = 1;
    std::size_t first = 0;
    std::size_t count = 0;
  };
  // Boxes united per group at most; beyond that the parts are generated one by one (BoxSet's
  // normalization is quadratic in the box count).
  static constexpr std::size_t kMaxUnitedBoxes = 256;
  // Up to this many generated runs are merged pairwise; more are sorted.
  static constexpr std::size_t kMaxMergedRuns = 64;
  // Boxes with more intervals than this are generated after the others (see generate).
  static constexpr std::uint64_t kProbeIntervals = 64;

  static std::uint64_t var_key(const Var& v) {
    return (static_cast<std::uint64_t>(v.kind) << 32) | v.index;
  }

  /// The new part b (just after a in terms_) extends a when both have the same key and the same
  /// ranges except in at most one variable, where they overlap or touch: a then becomes their
  /// union. (The enumeration of coupled variables produces such runs: the rows j <= i of a
  /// triangle for consecutive i.)
  bool coalesce(Part& a, const Part& b) {
    if (a.width != b.width || a.constant != b.constant || a.count != b.count) return false;
    std::size_t differing = a.count;
    for (std::size_t i = 0; i < a.count; ++i) {
      const Term& x = terms_[a.first + i];
      const Term& y = terms_[b.first + i];
      if (x.var != y.var || x.coef != y.coef) return false;
      if (x.lo == y.lo && x.hi == y.hi) continue;
      if (differing != a.count) return false;
      differing = i;
    }
    if (differing == a.count) return true;  // the same box
    Term& x = terms_[a.first + differing];
    const Term& y = terms_[b.first + differing];
    // Overlapping or adjacent: y.lo <= x.hi + 1 and x.lo <= y.hi + 1 (no overflow: compare as
    // 128-bit).
    if (static_cast<Int128>(y.lo) > static_cast<Int128>(x.hi) + 1 ||
        static_cast<Int128>(x.lo) > static_cast<Int128>(y.hi) + 1) {
      return false;
    }
    x.lo = std::min(x.lo, y.lo);
    x.hi = std::max(x.hi, y.hi);
    return true;
  }

  /// Moves as much of the constant as possible into the variables' ranges, largest coefficient
  /// first (truncating division): in[(y-1)*w + x] and in[y*w + x-1] then get the constant of
  /// in[y*w + x] and shifted boxes, and can be united with it.
  void canonicalize_constant(Part& part) {
    if (part.constant == 0) return;
    std::array<Term*, 16> small{};
    std::vector<Term*> large;
    Term** by_size = small.data();
    if (part.count > small.size()) {
      large.resize(part.count);
      by_size = large.data();
    }
    for (std::size_t i = 0; i < part.count; ++i) by_size[i] = &terms_[part.first + i];
    std::sort(by_size, by_size + part.count, [](const Term* a, const Term* b) {
      return static_cast<Int128>(a->coef) * a->coef > static_cast<Int128>(b->coef) * b->coef;
    });
    for (std::size_t i = 0; i < part.count; ++i) {
      Term* t = by_size[i];
      const std::int64_t q = part.constant / t->coef;
      std::int64_t lo = 0;
      std::int64_t hi = 0;
      if (q == 0 || __builtin_add_overflow(t->lo, q, &lo) || __builtin_add_overflow(t->hi, q, &hi))
        continue;
      t->lo = lo;
      t->hi = hi;
      part.constant -= q * t->coef;  // |q * coef| <= |constant|
    }
  }

  bool key_less(const Part& a, const Part& b) const {
    if (a.width != b.width) return a.width < b.width;
    if (a.constant != b.constant) return a.constant < b.constant;
    if (a.count != b.count) return a.count < b.count;
    for (std::size_t i = 0; i < a.count; ++i) {
      const Term& x = terms_[a.first + i];
      const Term& y = terms_[b.first + i];
      if (x.var != y.var) return x.var < y.var;
      if (x.coef != y.coef) return x.coef < y.coef;
    }
    return false;
  }

  bool same_key(const Part& a, const Part& b) const { return !key_less(a, b) && !key_less(b, a); }

  bool generate_group(const std::vector<std::size_t>& order, std::size_t g, std::size_t e,
                      std::uint64_t max_intervals, std::vector<Interval>& out,
                      std::vector<std::size_t>& runs) const {
    const Part& head = parts_[order[g]];
    if (head.count == 0)
      return emit(head, nullptr, max_intervals, out, runs);  // all the same bytes
    if (e - g >= 2 && e - g <= kMaxUnitedBoxes) {
      switch (head.count) {
        case 1:
          return emit_united<1>(order, g, e, max_intervals, out, runs);
        case 2:
          return emit_united<2>(order, g, e, max_intervals, out, runs);
        case 3:
          return emit_united<3>(order, g, e, max_intervals, out, runs);
        default:
          break;
      }
    }
    bool exact = true;
    for (std::size_t i = g; i < e; ++i) {
      exact = emit(parts_[order[i]], nullptr, max_intervals, out, runs) && exact;
    }
    return exact;
  }

  template <std::size_t N>
  bool emit_united(const std::vector<std::size_t>& order, std::size_t g, std::size_t e,
                   std::uint64_t max_intervals, std::vector<Interval>& out,
                   std::vector<std::size_t>& runs) const {
    // Box dimension 0 (the slowest in BoxSet's canonical form) is the variable with the largest
    // coefficient: the united boxes are then slabs along the slowest-varying bytes, and the
    // intervals they generate barely interleave.
    const Part& head = parts_[order[g]];
    std::array<std::size_t, N> dim{};
    for (std::size_t d = 0; d < N; ++d) dim[d] = d;
    std::sort(dim.begin(), dim.end(), [&](std::size_t a, std::size_t b) {
      const std::int64_t ca = terms_[head.first + a].coef;
      const std::int64_t cb = terms_[head.first + b].coef;
      return static_cast<Int128>(ca) * ca > static_cast<Int128>(cb) * cb;
    });
    std::vector<Box<N>> boxes;
    boxes.reserve(e - g);
    for (std::size_t i = g; i < e; ++i) {
      const Part& p = parts_[order[i]];
      typename Box<N>::Point lo{};
      typename Box<N>::Point hi{};
      for (std::size_t d = 0; d < N; ++d) {
        const Term& t = terms_[p.first + dim[d]];
        // Half-open boxes need hi + 1 and an extent that fits in 64 bits; otherwise do not unite.
        if (t.hi == std::numeric_limits<std::int64_t>::max() ||
            static_cast<Int128>(t.hi) + 1 - t.lo > std::numeric_limits<std::int64_t>::max()) {
          bool exact = true;
          for (std::size_t j = g; j < e; ++j)
            exact = emit(parts_[order[j]], nullptr, max_intervals, out, runs) && exact;
          return exact;
        }
        lo[d] = t.lo;
        hi[d] = t.hi + 1;
      }
      boxes.emplace_back(lo, hi);
    }
    const BoxSet<N> united = BoxSet<N>::from_boxes(boxes);
    bool exact = true;
    std::array<std::pair<std::int64_t, std::int64_t>, N> range{};
    for (const Box<N>& b : united) {
      for (std::size_t d = 0; d < N; ++d) range[dim[d]] = {b.min()[d], b.max()[d] - 1};
      exact = emit(head, range.data(), max_intervals, out, runs) && exact;
    }
    return exact;
  }

  /// Generates one part (with the variable ranges of ranges instead of its own, if given).
  bool emit(const Part& part, const std::pair<std::int64_t, std::int64_t>* ranges,
            std::uint64_t max_intervals, std::vector<Interval>& out,
            std::vector<std::size_t>& runs) const {
    AffineAccess& access = scratch_;  // reused: no allocation per part
    access.constant = part.constant;
    access.terms.clear();
    for (std::size_t i = 0; i < part.count; ++i) {
      const Term& t = terms_[part.first + i];
      access.terms.push_back({t.coef, ranges != nullptr ? ranges[i].first : t.lo,
                              ranges != nullptr ? ranges[i].second : t.hi});
    }
    access.terms.push_back({1, 0, static_cast<std::int64_t>(part.width) - 1});
    // A probe with a small limit: a box that would give more intervals is deferred (see
    // generate: bytes already covered are trimmed first).
    const GeneratedRanges r =
        generate_ranges(access, 1, std::min(max_intervals, kProbeIntervals), BelowZero::Clip);
    if (!r.exact && max_intervals > kProbeIntervals) {
      deferred_.push_back(access);
      return true;
    }
    append_run(r.bytes, out, runs);
    return r.exact;
  }

  std::vector<Term> terms_;
  std::vector<Part> parts_;
  mutable AffineAccess scratch_;
  mutable std::vector<AffineAccess> deferred_;
};

class PieceEvaluator {
 public:
  PieceEvaluator(const AccessPiece& piece, const ParamValues& values, const NDRange& range,
                 const GroupBox& groups)
      : piece_(piece), values_(values), range_(range), groups_(groups) {}

  PieceStatus run(BoxCollector& out) {
    collect_slots();
    subscript_ = to_int(piece_.byte_offset);
    for (const Constraint& c : piece_.constraints)
      constraints_.push_back({to_int(c.expr), c.relation});
    merge_global_ids();
    eliminate_one_sided_existentials();
    if (!tighten(slots_, constraints_)) return PieceStatus::Exact;  // empty domain
    std::vector<IntConstraint> general;
    for (const IntConstraint& c : constraints_) {
      if (!is_settled(c, slots_)) general.push_back(c);
    }
    // Unbounded variables that matter make the piece unbounded.
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      bool used = subscript_.coef[i] != 0;
      for (const IntConstraint& c : general) used = used || c.e.coef[i] != 0;
      if (used && (slots_[i].hi == kUnbounded)) return PieceStatus::Unbounded;
    }
    if (general.empty()) {
      out.add(slots_, subscript_, piece_.width);
      return PieceStatus::Exact;
    }
    return enumerate(general, out);
  }

 private:
  void collect_slots() {
    auto add = [&](Var v) {
      for (const Slot& s : slots_) {
        if (s.var == v) return;
      }
      Slot s{v, 0, 0};
      switch (v.kind) {
        case Var::Kind::GroupId:
          s.lo = to_i64(groups_.begin[v.index], "group index too large");
          s.hi = to_i64(groups_.end[v.index], "group index too large") - 1;
          break;
        case Var::Kind::LocalId:
          s.lo = 0;
          s.hi = to_i64(range_.local[v.index], "local size too large") - 1;
          break;
        case Var::Kind::Loop:
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

  IntExpr to_int(const AffineExpr& e) const {
    IntExpr r;
    r.constant = evaluate(e.constant, values_);
    r.coef.assign(slots_.size(), 0);
    for (const auto& [v, c] : e.coefficients) {
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == v) r.coef[i] = evaluate(c, values_);
      }
    }
    return r;
  }

  /// Where group id and local id of a dimension only occur as global id (coefficient of w is the
  /// local size times that of l), replace the pair by one variable over the global index range:
  /// a boundary test on the global id then becomes a bound of one variable (rectangular).
  void merge_global_ids() {
    for (std::uint32_t d = 0; d < 3; ++d) {
      int w = -1;
      int l = -1;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == Var{Var::Kind::GroupId, d}) w = static_cast<int>(i);
        if (slots_[i].var == Var{Var::Kind::LocalId, d}) l = static_cast<int>(i);
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
      if (slots_[v].var.kind != Var::Kind::Loop || subscript_.coef[v] != 0) continue;
      bool lower_only = slots_[v].hi == kUnbounded;
      bool upper_only = true;
      bool any = false;
      for (const IntConstraint& c : constraints_) {
        const std::int64_t a = c.e.coef[v];
        if (a == 0) continue;
        any = true;
        if (c.rel != Constraint::Relation::GreaterEqualZero) {
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
    if (c.rel != Constraint::Relation::NotEqualZero) return true;
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
          const bool truth = c.rel == Constraint::Relation::GreaterEqualZero ? k >= 0
                             : c.rel == Constraint::Relation::EqualZero      ? k == 0
                                                                             : k != 0;
          if (!truth) return false;
          continue;
        }
        Slot& s = slots[v];
        const std::int64_t a = c.e.coef[v];
        const std::int64_t k = c.e.constant;
        std::int64_t lo = s.lo;
        std::int64_t hi = s.hi;
        if (c.rel == Constraint::Relation::GreaterEqualZero) {
          if (a > 0) {
            lo = std::max(lo, ceil_div(-k, a));
          } else {
            hi = std::min(hi, floor_div(k, -a));
          }
        } else if (c.rel == Constraint::Relation::EqualZero) {
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
    if (c.rel == Constraint::Relation::NotEqualZero) return false;
    bool changed = false;
    for (int sign : {1, -1}) {
      if (sign == -1 && c.rel != Constraint::Relation::EqualZero) break;
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
  PieceStatus enumerate(const std::vector<IntConstraint>& general, BoxCollector& out) {
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
      out.add(slots_, subscript_, piece_.width);
      return PieceStatus::Approximate;
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
        out.add(slots, sub, piece_.width, free_var, lo, hi);
        return;
      }
      if (pending && static_cast<Int128>(lo) <= static_cast<Int128>(pending_hi) + 1 &&
          static_cast<Int128>(pending_lo) <= static_cast<Int128>(hi) + 1) {
        pending_lo = std::min(pending_lo, lo);
        pending_hi = std::max(pending_hi, hi);
        return;
      }
      if (pending) out.add(slots_, subscript_, piece_.width, free_var, pending_lo, pending_hi);
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
          if (c.rel != Constraint::Relation::NotEqualZero) continue;
          const std::int64_t a = c.e.coef[free_var];
          if (a != 0 && (-c.e.constant) % a == 0) holes.push_back(-c.e.constant / a);
        }
        std::sort(holes.begin(), holes.end());
        if (slots[free_var].hi == kUnbounded && sub.coef[free_var] != 0)
          return PieceStatus::Unbounded;
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
    if (pending) out.add(slots_, subscript_, piece_.width, free_var, pending_lo, pending_hi);
    return PieceStatus::Exact;
  }

  const AccessPiece& piece_;
  const ParamValues& values_;
  const NDRange& range_;
  const GroupBox& groups_;
  std::vector<Slot> slots_;
  IntExpr subscript_;
  std::vector<IntConstraint> constraints_;
};

ParamValues param_values(const KernelAccessInfo& kernel, const NDRange& range,
                         const LaunchArguments& args) {
  ParamValues v;
  v.scalar_args = args.scalars;
  v.scalar_args.resize(kernel.args.size());
  v.scalar_arg_names.resize(kernel.args.size());
  for (const ArgumentAccess& a : kernel.args) v.scalar_arg_names[a.index] = a.name;
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  for (std::size_t d = 0; d < 3; ++d) {
    v.local_size[d] = to_i64(range.local[d], "local size too large");
    v.global_size[d] = to_i64(range.global[d], "global size too large");
    v.global_offset[d] = to_i64(range.offset[d], "global offset too large");
    v.num_groups[d] = to_i64(groups[d], "group count too large");
  }
  return v;
}

}  // namespace

void validate_for_analysis(const NDRange& range) {
  UNIMEM_REQUIRE(range.dims >= 1 && range.dims <= 3, "NDRange: work dimension must be 1, 2 or 3");
  for (std::size_t d = 0; d < 3; ++d) {
    if (d >= range.dims) {
      UNIMEM_REQUIRE(range.global[d] == 1 && range.local[d] <= 1 && range.offset[d] == 0,
                     "NDRange: sizes beyond the work dimension must be 1 (offset 0)");
      continue;
    }
    UNIMEM_REQUIRE(range.global[d] > 0, "NDRange: global sizes must be positive");
    UNIMEM_REQUIRE(range.local[d] > 0,
                   "NDRange: the analysis needs a concrete local size (local 0 = driver chooses)");
    UNIMEM_REQUIRE(range.global[d] % range.local[d] == 0,
                   "NDRange: local size must divide global size");
  }
}

std::array<std::uint64_t, 3> num_groups(const NDRange& range) {
  std::array<std::uint64_t, 3> groups{1, 1, 1};
  for (std::size_t d = 0; d < range.dims && d < 3; ++d)
    groups[d] = range.global[d] / range.local[d];
  return groups;
}

GroupBox GroupBox::all(const NDRange& range) {
  GroupBox b;
  b.end = num_groups(range);
  return b;
}

bool GroupBox::empty() const {
  return begin[0] >= end[0] || begin[1] >= end[1] || begin[2] >= end[2];
}

void LaunchArguments::set_scalar(std::uint32_t index, std::int64_t value) {
  if (scalars.size() <= index) scalars.resize(index + 1);
  scalars[index] = value;
}

void LaunchArguments::set_buffer_size(std::uint32_t index, std::uint64_t bytes) {
  if (buffer_sizes.size() <= index) buffer_sizes.resize(index + 1);
  buffer_sizes[index] = bytes;
}

const ArgumentRanges* LaunchRanges::find(const std::string& arg_name) const {
  for (const ArgumentRanges& a : args) {
    if (a.name == arg_name) return &a;
  }
  return nullptr;
}

RangeGenerator::RangeGenerator(KernelAccessInfo kernel) : kernel_(std::move(kernel)) {}

std::size_t RangeGenerator::launch_time_checks() const {
  std::lock_guard lock(mutex_);
  return launch_time_checks_;
}

LaunchRanges RangeGenerator::ranges(const NDRange& range, const GroupBox& groups,
                                    const LaunchArguments& args) const {
  validate_for_analysis(range);
  const std::array<std::uint64_t, 3> total = num_groups(range);
  for (std::size_t d = 0; d < 3; ++d) {
    UNIMEM_REQUIRE(groups.begin[d] <= groups.end[d] && groups.end[d] <= total[d],
                   "group box outside the NDRange");
  }
  const ParamValues values = param_values(kernel_, range, args);
  LaunchRanges result;
  result.kernel = kernel_.name;
  result.splittable = kernel_.statically_splittable;
  result.unsplittable_reason = kernel_.unsplittable_reason;
  for (const ArgumentAccess& arg : kernel_.args) {
    if (!arg.is_buffer()) continue;
    ArgumentRanges out;
    out.index = arg.index;
    out.name = arg.name;
    const std::optional<std::uint64_t> size =
        arg.index < args.buffer_sizes.size() ? args.buffer_sizes[arg.index] : std::nullopt;
    auto whole_buffer = [&](std::vector<Interval>& v, const std::string& why) {
      if (!size) {
        throw PreconditionError("kernel '" + kernel_.name + "': the size of buffer argument '" +
                                arg.name + "' is needed (" + why + ")");
      }
      v.emplace_back(0, *size);
    };
    for (int pass = 0; pass < 2; ++pass) {
      const bool is_write = pass == 1;
      const std::vector<AccessPiece>& pieces = is_write ? arg.writes : arg.reads;
      std::vector<Interval> intervals;
      BoxCollector boxes;
      bool exact = true;
      bool conditional = false;
      if (!groups.empty()) {
        for (const AccessPiece& p : pieces) {
          if (!is_affine(p.access_class)) {
            whole_buffer(intervals,
                         std::string(to_string(p.access_class)) + " reference: " + p.reason);
            exact = false;
            conditional = true;
            continue;
          }
          PieceEvaluator eval(p, values, range, groups);
          const PieceStatus st = eval.run(boxes);
          if (st == PieceStatus::Unbounded) {
            whole_buffer(intervals, "a loop without a computable bound");
            exact = false;
            conditional = true;
            if (is_write) {
              result.splittable = false;
              result.unsplittable_reason =
                  "argument '" + arg.name + "' is written in a loop without a computable bound";
            }
            continue;
          }
          if (st == PieceStatus::Approximate) exact = false;
          if (p.conditions_dropped) {
            // A read is then a superset; a write is a may-write set (fetched first, DESIGN.md
            // invariant 6) that is still exact as such: it stays splittable.
            if (!is_write) exact = false;
            conditional = true;
          }
        }
      }
      IntervalSet set = boxes.generate(kMaxIntervalsPerPiece, exact);
      if (!intervals.empty()) set = set.unite(IntervalSet::from_unsorted(std::move(intervals)));
      if (size && !set.empty() && set.bounds().end > *size) set = set.intersect(Interval{0, *size});
      if (is_write) {
        out.write = std::move(set);
        out.write_exact = exact;
        out.write_conditional = conditional;
        if (!exact && result.splittable) {
          // An over-approximated must-write would lose data on a split launch.
          result.splittable = false;
          result.unsplittable_reason = "the write set of '" + arg.name + "' is not exact";
        }
      } else {
        out.read = std::move(set);
        out.read_exact = exact;
      }
    }
    result.args.push_back(std::move(out));
  }
  return result;
}

bool RangeGenerator::splittable(const NDRange& range, const LaunchArguments& args,
                                std::string* reason) const {
  validate_for_analysis(range);
  if (!kernel_.statically_splittable) {
    if (reason != nullptr) *reason = kernel_.unsplittable_reason;
    return false;
  }
  // Decided at analysis time for every launch (parametric isl check, write_injectivity.hpp).
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  bool covered = true;  // the launch is one the analysis-time verdict covers
  for (std::uint32_t d = kernel_.write_injectivity_dims; d < 3; ++d)
    covered = covered && groups[d] == 1;
  switch (covered ? kernel_.write_injectivity : WriteInjectivity::Parametric) {
    case WriteInjectivity::Injective:
      if (reason != nullptr) reason->clear();
      return true;
    case WriteInjectivity::NotInjective:
      if (groups[0] * groups[1] * groups[2] >= 2) {
        if (reason != nullptr) *reason = kernel_.write_injectivity_reason;
        return false;
      }
      if (reason != nullptr) reason->clear();
      return true;  // a single work-group cannot collide with another
    case WriteInjectivity::Parametric:
      break;
  }
  const ParamValues values = param_values(kernel_, range, args);
  std::string key;
  for (std::size_t d = 0; d < 3; ++d) {
    key += std::to_string(range.global[d]) + "," + std::to_string(range.local[d]) + "," +
           std::to_string(range.offset[d]) + ";";
  }
  for (const auto& s : values.scalar_args) key += s ? std::to_string(*s) + "," : "-,";
  {
    std::lock_guard lock(mutex_);
    auto it = injectivity_cache_.find(key);
    if (it != injectivity_cache_.end()) {
      if (reason != nullptr) *reason = it->second.second;
      return it->second.first;
    }
  }
  std::string why;
  const bool ok = writes_injective_over_groups(kernel_, range, values, &why);
  std::lock_guard lock(mutex_);
  injectivity_cache_[key] = {ok, why};
  ++launch_time_checks_;
  if (reason != nullptr) *reason = why;
  return ok;
}

}  // namespace unimem
