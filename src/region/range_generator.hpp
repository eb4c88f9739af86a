#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "region/interval_set.hpp"

namespace unimem {

/// One term A * x of an affine subscript, with the integer variable x ranging over the inclusive
/// domain [lower, upper] (DSOM Eq. 2 writes X_i in [L_i, U_i]). upper < lower means an empty
/// domain.
struct AffineTerm {
  std::int64_t coefficient = 0;
  std::int64_t lower = 0;
  std::int64_t upper = 0;

  friend bool operator==(const AffineTerm&, const AffineTerm&) = default;
};

/// An affine subscript in elements, f = constant + sum(coefficient_i * x_i), over the box domain
/// given by its terms. Coefficients may be negative or zero.
struct AffineAccess {
  std::int64_t constant = 0;
  std::vector<AffineTerm> terms;

  /// "3 + 4*x0[0..9] - 2*x1[1..5]".
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const AffineAccess&, const AffineAccess&) = default;
};

/// The bytes an access touches. exact == false means the enumeration limit was hit and bytes is
/// the single covering interval, an over-approximation (allowed for read sets, DESIGN.md inv. 6).
struct GeneratedRanges {
  IntervalSet bytes;
  bool exact = true;
};

/// What generate_ranges does with element indices below 0.
enum class BelowZero : std::uint8_t {
  reject,  // PreconditionError naming the access and its smallest index (the default)
  clip,    // bytes below offset 0 are dropped: the result is the generated set intersected with
           // [0, 2^64). For callers whose domains over-approximate and are clipped to a buffer
           // anyway (the kernel access analysis, DESIGN.md invariant 6).
};

/// DSOM Fig. 10 (000_7b2a075be0870d8f.txt, GetSegList) fast range generation: every element index
/// f(x) over the domain touches bytes [f * element_size, (f + 1) * element_size); the result is the
/// normalized union of them.
///
/// Steps: zero coefficients and single-value domains fold into the constant; a negative coefficient
/// is turned positive by reversing its variable's range; dimensions are sorted by coefficient;
/// a dimension whose coefficient is <= the current contiguous run (in elements) widens the run
/// (Fig. 10 lines 4-7). Beyond the paper, two strided dimensions whose strides are multiples of
/// each other and whose progressions touch are fused into one progression. Only the dimensions left
/// are enumerated (Fig. 10 line 8), emitting one interval per combination; when their strides nest
/// (each exceeds the span of all smaller ones) the intervals come out sorted and need no sort.
///
/// max_intervals bounds the enumeration: if it would emit more intervals than that, the result is
/// the covering interval with exact = false. A result that is a single run needs no enumeration
/// and is exact whatever the limit. An empty domain gives the empty set, exactly.
/// Throws PreconditionError if element_size is 0, if some point of the domain has a negative
/// element index and below_zero is reject (the message names the access and the smallest index),
/// or if a byte offset would not fit in 64 bits (with clip: once the access is shifted to start
/// at 0).
[[nodiscard]] GeneratedRanges generate_ranges(const AffineAccess& access,
                                              std::uint64_t element_size,
                                              std::uint64_t max_intervals,
                                              BelowZero below_zero = BelowZero::reject);

/// Reference enumerator for tests and benchmarks: visits every point of the domain. Same result
/// and errors as generate_ranges with an unbounded limit; additionally throws PreconditionError if
/// the domain has more than max_points points.
[[nodiscard]] IntervalSet enumerate_ranges_naive(const AffineAccess& access,
                                                 std::uint64_t element_size,
                                                 std::uint64_t max_points = std::uint64_t{1} << 26);

}  // namespace unimem
