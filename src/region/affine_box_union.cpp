#include "region/affine_box_union.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "region/box.hpp"
#include "region/box_set.hpp"

namespace unimem {

namespace {

// 128-bit intermediates keep products of 64-bit bounds and coefficients exact.
__extension__ typedef __int128 Int128;

}  // namespace

void AffineBoxUnion::add(std::int64_t constant, std::span<const BoxTerm> terms,
                         std::uint32_t width) {
  Part part;
  part.constant = constant;
  part.width = width;
  part.first = terms_.size();
  for (const BoxTerm& t : terms) {
    if (t.coefficient == 0) continue;
    if (t.lower > t.upper) {
      terms_.resize(part.first);
      return;  // empty box
    }
    terms_.push_back({t.var, t.coefficient, t.lower, t.upper});
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

IntervalSet AffineBoxUnion::bytes(std::uint64_t max_intervals, bool& exact) const {
  std::vector<Interval> out;
  std::vector<std::size_t>& runs = runs_;  // start of each box's output in out (each is sorted)
  runs.clear();
  deferred_.clear();
  exact = generate(max_intervals, out, runs) && exact;
  IntervalSet cheap = merge_runs(std::move(out), runs);
  if (deferred_.empty()) return cheap;
  // Boxes with many intervals: first drop the values of their outermost variable whose bytes
  // the cheap boxes already cover (a halo piece inside the main piece's run, say), then
  // generate the rest.
  out.clear();
  runs.clear();
  std::vector<AffineAccess> rest;
  for (const AffineAccess& a : deferred_) trim_covered(a, cheap, rest);
  if (rest.empty()) return cheap;           // the cheap boxes cover the deferred ones
  if (rest.size() == 1 && cheap.empty()) {  // the common large case: no copy
    GeneratedRanges r = generate_ranges(rest.front(), 1, max_intervals, BelowZero::clip);
    exact = exact && r.exact;
    return std::move(r.bytes);
  }
  for (const AffineAccess& a : rest) {
    const GeneratedRanges r = generate_ranges(a, 1, max_intervals, BelowZero::clip);
    exact = exact && r.exact;
    append_run(r.bytes, out, runs);
  }
  IntervalSet more = merge_runs(std::move(out), runs);
  return cheap.empty() ? more : cheap.unite(more);
}

IntervalSet AffineBoxUnion::merge_runs(std::vector<Interval> out, std::vector<std::size_t>& runs) {
  const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  if (runs.size() <= kMaxMergedRuns) {
    // Few sorted runs: merge them pairwise (linear per level) instead of sorting everything.
    // Each level's run starts are written over the front of runs: entry i / 2 is written after
    // entries i, i + 1 and i + 2 were read.
    runs.push_back(out.size());
    while (runs.size() > 2) {
      std::size_t next = 0;
      for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
        const std::size_t start = runs[i];
        if (i + 2 < runs.size()) {
          const auto at = [&out](std::size_t k) {
            return out.begin() + static_cast<std::ptrdiff_t>(k);
          };
          std::inplace_merge(at(start), at(runs[i + 1]), at(runs[i + 2]), by_begin);
        }
        runs[next++] = start;
      }
      runs[next++] = out.size();
      runs.resize(next);
    }
  }
  return IntervalSet::from_unsorted(std::move(out));  // no sort if already sorted
}

void AffineBoxUnion::append_run(const IntervalSet& bytes, std::vector<Interval>& out,
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
void AffineBoxUnion::trim_covered(const AffineAccess& a, const IntervalSet& covered,
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

bool AffineBoxUnion::generate(std::uint64_t max_intervals, std::vector<Interval>& out,
                              std::vector<std::size_t>& runs) const {
  std::vector<std::size_t>& order = order_;
  order.resize(parts_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Stable: within a group the parts keep the order they came in (usually increasing offsets,
  // so the generated intervals need no sort). Parts already in key order (one part, say) stay
  // as they are without the sort's buffer.
  const auto by_key = [this](std::size_t a, std::size_t b) {
    return key_less(parts_[a], parts_[b]);
  };
  if (!std::is_sorted(order.begin(), order.end(), by_key)) {
    std::stable_sort(order.begin(), order.end(), by_key);
  }
  bool exact = true;
  for (std::size_t g = 0; g < order.size();) {
    std::size_t e = g + 1;
    while (e < order.size() && same_key(parts_[order[g]], parts_[order[e]])) ++e;
    exact = generate_group(order, g, e, max_intervals, out, runs) && exact;
    g = e;
  }
  return exact;
}

/// The new part b (just after a in terms_) extends a when both have the same key and the same
/// ranges except in at most one variable, where they overlap or touch: a then becomes their
/// union. (The enumeration of coupled variables produces such runs: the rows j <= i of a
/// triangle for consecutive i.)
bool AffineBoxUnion::coalesce(Part& a, const Part& b) {
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
void AffineBoxUnion::canonicalize_constant(Part& part) {
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

bool AffineBoxUnion::key_less(const Part& a, const Part& b) const {
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

bool AffineBoxUnion::same_key(const Part& a, const Part& b) const {
  return !key_less(a, b) && !key_less(b, a);
}

bool AffineBoxUnion::generate_group(const std::vector<std::size_t>& order, std::size_t g,
                                    std::size_t e, std::uint64_t max_intervals,
                                    std::vector<Interval>& out,
                                    std::vector<std::size_t>& runs) const {
  const Part& head = parts_[order[g]];
  if (head.count == 0) return emit(head, nullptr, max_intervals, out, runs);  // all the same bytes
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
bool AffineBoxUnion::emit_united(const std::vector<std::size_t>& order, std::size_t g,
                                 std::size_t e, std::uint64_t max_intervals,
                                 std::vector<Interval>& out, std::vector<std::size_t>& runs) const {
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
bool AffineBoxUnion::emit(const Part& part, const std::pair<std::int64_t, std::int64_t>* ranges,
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
      generate_ranges(access, 1, std::min(max_intervals, kProbeIntervals), BelowZero::clip);
  if (!r.exact && max_intervals > kProbeIntervals) {
    deferred_.push_back(access);
    return true;
  }
  append_run(r.bytes, out, runs);
  return r.exact;
}

}  // namespace unimem
