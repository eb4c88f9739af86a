#include "region/range_generator.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace unimem {

namespace {

// 128-bit intermediates: a product of two int64 values always fits, so the extremes of f can be
// computed without overflow and checked before any 64-bit arithmetic happens.
__extension__ typedef __int128 Wide;  // NOLINT(modernize-use-using): __extension__ needs typedef

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

std::string wide_to_string(Wide v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  // Work on the magnitude as unsigned so that the most negative value is handled too.
  __extension__ unsigned __int128 m =
      negative ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string digits;
  while (m != 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::uint64_t magnitude(std::int64_t v) {
  return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

[[noreturn]] void fail(const std::string& message) { throw PreconditionError(message); }

// One dimension after normalization: offset y * stride for y in [0, last], stride > 0, last > 0.
struct Dim {
  std::uint64_t stride = 0;
  std::uint64_t last = 0;
};

// f rewritten as base + sum(stride_i * y_i) with y_i in [0, last_i]: base is the smallest element
// index, every stride is positive and the dims are sorted by stride.
struct Normalized {
  bool empty = false;
  std::uint64_t base = 0;
  std::uint64_t max_index = 0;
  std::vector<Dim> dims;
};

Normalized normalize(const AffineAccess& access, std::uint64_t element_size, const char* who) {
  if (element_size == 0) {
    fail(std::string(who) + ": element size must be positive (access " + access.to_string() + ")");
  }
  Normalized n;
  for (const AffineTerm& t : access.terms) {
    if (t.upper < t.lower) {
      n.empty = true;
      return n;
    }
  }
  Wide lo = access.constant;
  Wide hi = access.constant;
  n.dims.reserve(access.terms.size());
  for (const AffineTerm& t : access.terms) {
    if (t.coefficient == 0) continue;
    const Wide at_lower = static_cast<Wide>(t.coefficient) * t.lower;
    const Wide at_upper = static_cast<Wide>(t.coefficient) * t.upper;
    if (__builtin_add_overflow(lo, std::min(at_lower, at_upper), &lo) ||
        __builtin_add_overflow(hi, std::max(at_lower, at_upper), &hi)) {
      fail(std::string(who) + ": access " + access.to_string() +
           " has element indices beyond 128 bits");
    }
    if (t.lower != t.upper) {
      // A negative coefficient over [L, U] covers the same values as |A| over [-U, -L]; both are
      // re-based to start at 0, so only the count matters.
      const auto last = static_cast<std::uint64_t>(static_cast<Wide>(t.upper) - t.lower);
      n.dims.push_back({magnitude(t.coefficient), last});
    }
  }
  if (lo < 0) {
    fail(std::string(who) + ": access " + access.to_string() + " reaches element index " +
         wide_to_string(lo) + " (its minimum over the domain), below 0");
  }
  if (hi >= static_cast<Wide>(kU64Max / element_size)) {
    fail(std::string(who) + ": access " + access.to_string() + " reaches element index " +
         wide_to_string(hi) + ", whose end byte with element size " + std::to_string(element_size) +
         " does not fit in 64 bits");
  }
  n.base = static_cast<std::uint64_t>(lo);
  n.max_index = static_cast<std::uint64_t>(hi);
  std::sort(n.dims.begin(), n.dims.end(),
            [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  return n;
}

// Appends [begin, end) to a list, merging it into the last interval when it starts inside or right
// after it (correct for any order; for sorted input the list stays normalized).
void append(std::vector<Interval>& out, std::uint64_t begin, std::uint64_t end) {
  if (!out.empty() && begin >= out.back().begin && begin <= out.back().end) {
    out.back().end = std::max(out.back().end, end);
  } else {
    out.emplace_back(begin, end);
  }
}

// Fuses strided dims pairwise: if b = m * a with m <= last_a + 1, {y*a} + {z*b} is the single
// progression {w*a : w in [0, last_a + m * last_b]}. Repeats until nothing changes.
void fuse_progressions(std::vector<Dim>& dims) {
  for (std::size_t i = 0; i < dims.size(); ++i) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (std::size_t j = i + 1; j < dims.size(); ++j) {
        const std::uint64_t a = dims[i].stride;
        const std::uint64_t b = dims[j].stride;
        if (b % a != 0 || b / a > dims[i].last + 1) continue;
        // The fused span is part of the access's total span, which fits in 64 bits.
        dims[i].last += (b / a) * dims[j].last;
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(j));
        changed = true;
        break;
      }
    }
  }
}

}  // namespace

std::string AffineAccess::to_string() const {
  std::string s = std::to_string(constant);
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const AffineTerm& t = terms[i];
    s += t.coefficient < 0 ? " - " : " + ";
    s += std::to_string(magnitude(t.coefficient)) + "*x" + std::to_string(i) + "[" +
         std::to_string(t.lower) + ".." + std::to_string(t.upper) + "]";
  }
  return s;
}

namespace {

// Indices below 0 with BelowZero::clip: shift the access up so that its smallest index is 0,
// generate, then shift the bytes back down, dropping what falls below 0.
GeneratedRanges generate_clipped(const AffineAccess& access, std::uint64_t element_size,
                                 std::uint64_t max_intervals) {
  Wide lo = access.constant;
  for (const AffineTerm& t : access.terms) {
    if (t.upper < t.lower) return {};
    if (__builtin_add_overflow(lo,
                               std::min(static_cast<Wide>(t.coefficient) * t.lower,
                                        static_cast<Wide>(t.coefficient) * t.upper),
                               &lo)) {
      fail("generate_ranges: access " + access.to_string() +
           " has element indices beyond 128 bits");
    }
  }
  if (lo >= 0) return generate_ranges(access, element_size, max_intervals, BelowZero::reject);
  AffineAccess shifted = access;
  // The shifted constant must fit in 64 bits (else the access spans more than 2^63 elements).
  constexpr Wide kI64Max = std::numeric_limits<std::int64_t>::max();
  if (-lo > kI64Max || -lo > kI64Max - access.constant) {
    fail("generate_ranges: access " + access.to_string() + " reaches element index " +
         wide_to_string(lo) + ", too far below 0 to clip");
  }
  const auto shift = static_cast<std::int64_t>(-lo);
  shifted.constant += shift;
  GeneratedRanges r = generate_ranges(shifted, element_size, max_intervals, BelowZero::reject);
  // The shift in bytes may exceed 64 bits (an access entirely far below 0): compare in 128 bits.
  const Wide shift_bytes = static_cast<Wide>(shift) * element_size;
  std::vector<Interval> out;
  out.reserve(r.bytes.interval_count());
  for (const Interval& iv : r.bytes) {
    if (static_cast<Wide>(iv.end) <= shift_bytes) continue;
    const Wide begin = std::max<Wide>(static_cast<Wide>(iv.begin) - shift_bytes, 0);
    out.emplace_back(static_cast<std::uint64_t>(begin),
                     static_cast<std::uint64_t>(static_cast<Wide>(iv.end) - shift_bytes));
  }
  r.bytes = IntervalSet::from_normalized(std::move(out));
  return r;
}

}  // namespace

GeneratedRanges generate_ranges(const AffineAccess& access, std::uint64_t element_size,
                                std::uint64_t max_intervals, BelowZero below_zero) {
  if (below_zero == BelowZero::clip) {
    return generate_clipped(access, element_size, max_intervals);
  }
  Normalized n = normalize(access, element_size, "generate_ranges");
  GeneratedRanges result;
  if (n.empty) return result;

  // DSOM Fig. 10 lines 3-7: grow the contiguous run (in elements) while the next stride fits in it.
  std::uint64_t run = 1;
  std::size_t first_rest = 0;
  while (first_rest < n.dims.size() && n.dims[first_rest].stride <= run) {
    run += n.dims[first_rest].stride * n.dims[first_rest].last;
    ++first_rest;
  }
  // The dims beyond the run, in n's storage.
  std::vector<Dim>& rest = n.dims;
  rest.erase(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(first_rest));
  fuse_progressions(rest);

  // Number of intervals the enumeration (Fig. 10 line 8) would emit, saturating.
  std::uint64_t count = 1;
  for (const Dim& d : rest) {
    if (__builtin_mul_overflow(count, d.last + 1, &count)) count = kU64Max;
  }
  if (count > 1 && count > max_intervals) {
    result.bytes = IntervalSet(Interval{n.base * element_size, (n.max_index + 1) * element_size});
    result.exact = false;
    return result;
  }

  // Strides nest when each is at least the span of the run plus all smaller dims: then the
  // odometer (largest stride outermost) emits intervals in increasing order.
  bool nested = true;
  std::uint64_t span = run;
  for (const Dim& d : rest) {
    if (d.stride < span) nested = false;
    span += d.stride * d.last;
  }

  std::vector<Interval> out;
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, std::uint64_t{1} << 16)));
  const std::uint64_t width = run * element_size;
  if (rest.empty()) {
    out.emplace_back(n.base * element_size, n.base * element_size + width);
  } else {
    const Dim inner = rest.front();
    // The odometer's position in rest[1..] (rest[0] is the loop over y): nothing to keep, and
    // no storage, for a single dim.
    std::vector<std::uint64_t> index(rest.size() > 1 ? rest.size() : 0, 0);
    std::uint64_t outer_offset = 0;  // contribution of rest[1..] at the current odometer position
    while (true) {
      const std::uint64_t row = n.base + outer_offset;
      for (std::uint64_t y = 0; y <= inner.last; ++y) {
        const std::uint64_t begin = (row + y * inner.stride) * element_size;
        append(out, begin, begin + width);
      }
      std::size_t k = 1;
      for (; k < rest.size(); ++k) {
        if (index[k] < rest[k].last) {
          ++index[k];
          outer_offset += rest[k].stride;
          break;
        }
        outer_offset -= rest[k].stride * rest[k].last;
        index[k] = 0;
      }
      if (k == rest.size()) break;
    }
  }
  result.bytes = nested ? IntervalSet::from_normalized(std::move(out))
                        : IntervalSet::from_unsorted(std::move(out));
  return result;
}

IntervalSet enumerate_ranges_naive(const AffineAccess& access, std::uint64_t element_size,
                                   std::uint64_t max_points) {
  // normalize() performs the same validation (and error messages) as the fast path.
  const Normalized n = normalize(access, element_size, "enumerate_ranges_naive");
  if (n.empty) return {};
  std::uint64_t points = 1;
  for (const AffineTerm& t : access.terms) {
    const auto values = static_cast<Wide>(t.upper) - t.lower + 1;
    if (values > static_cast<Wide>(max_points) ||
        __builtin_mul_overflow(points, static_cast<std::uint64_t>(values), &points) ||
        points > max_points) {
      fail("enumerate_ranges_naive: access " + access.to_string() + " has more than " +
           std::to_string(max_points) + " points");
    }
  }
  std::vector<Interval> out;
  out.reserve(static_cast<std::size_t>(points));
  std::vector<std::int64_t> x(access.terms.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = access.terms[i].lower;
  while (true) {
    Wide f = access.constant;
    for (std::size_t i = 0; i < x.size(); ++i)
      f += static_cast<Wide>(access.terms[i].coefficient) * x[i];
    const auto begin = static_cast<std::uint64_t>(f) * element_size;
    out.emplace_back(begin, begin + element_size);
    std::size_t k = 0;
    for (; k < x.size(); ++k) {
      if (x[k] < access.terms[k].upper) {
        ++x[k];
        break;
      }
      x[k] = access.terms[k].lower;
    }
    if (k == x.size()) break;
  }
  return IntervalSet::from_unsorted(std::move(out));
}

}  // namespace unimem
