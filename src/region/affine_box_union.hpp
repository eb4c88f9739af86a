#pragma once

// The byte union of many affine accesses over boxes: bytes constant + sum(coefficient_i * x_i) +
// [0, width) for x in a box, one part per add. Byte ranges are generated only at the end (DSOM
// Fig. 10, region/range_generator.hpp). Before that, parts with the same width and coefficients
// are united as boxes of their variables (region/box_set.hpp): a stencil's interior piece, its
// boundary pieces and its neighbours shifted by one element then make whole rows, which Fig. 10
// coalesces into one interval, instead of one interval per row and piece. The kernel analysis
// collects the box-shaped parts of an argument's pieces in one launch partition here.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "region/interval_set.hpp"
#include "region/range_generator.hpp"

namespace unimem {

/// One term coefficient * x of a part, x in [lower, upper]. var identifies the variable: parts
/// whose terms have the same variables and coefficients (and the same width and constant) are
/// united as boxes.
struct BoxTerm {
  std::uint64_t var = 0;
  std::int64_t coefficient = 0;
  std::int64_t lower = 0;
  std::int64_t upper = 0;
};

class AffineBoxUnion {
 public:
  /// Adds the bytes constant + sum(coefficient_i * x_i) + [0, width) for x in the box of terms.
  /// Terms with coefficient 0 are ignored; a term with lower > upper makes the box empty (nothing
  /// is added). Every variable appears at most once.
  void add(std::int64_t constant, std::span<const BoxTerm> terms, std::uint32_t width);

  /// The bytes of every part, normalized; exact is cleared if some box hit the interval limit and
  /// was over-approximated (otherwise left as it was).
  [[nodiscard]] IntervalSet bytes(std::uint64_t max_intervals, bool& exact) const;

  /// Removes every part, keeping the storage: a union cleared and refilled (one per argument
  /// and access kind of a launch partition) allocates only while it grows.
  void clear() {
    terms_.clear();
    parts_.clear();
  }

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
  // Boxes with more intervals than this are generated after the others (see bytes).
  static constexpr std::uint64_t kProbeIntervals = 64;

  static IntervalSet merge_runs(std::vector<Interval> out, std::vector<std::size_t>& runs);
  static void append_run(const IntervalSet& bytes, std::vector<Interval>& out,
                         std::vector<std::size_t>& runs);
  static void trim_covered(const AffineAccess& a, const IntervalSet& covered,
                           std::vector<AffineAccess>& rest);
  bool generate(std::uint64_t max_intervals, std::vector<Interval>& out,
                std::vector<std::size_t>& runs) const;
  bool coalesce(Part& a, const Part& b);
  void canonicalize_constant(Part& part);
  bool key_less(const Part& a, const Part& b) const;
  bool same_key(const Part& a, const Part& b) const;
  bool generate_group(const std::vector<std::size_t>& order, std::size_t g, std::size_t e,
                      std::uint64_t max_intervals, std::vector<Interval>& out,
                      std::vector<std::size_t>& runs) const;
  template <std::size_t N>
  bool emit_united(const std::vector<std::size_t>& order, std::size_t g, std::size_t e,
                   std::uint64_t max_intervals, std::vector<Interval>& out,
                   std::vector<std::size_t>& runs) const;
  bool emit(const Part& part, const std::pair<std::int64_t, std::int64_t>* ranges,
            std::uint64_t max_intervals, std::vector<Interval>& out,
            std::vector<std::size_t>& runs) const;

  std::vector<Term> terms_;
  std::vector<Part> parts_;
  // Scratch of bytes() and generate(), kept so that a union used again does not allocate.
  mutable AffineAccess scratch_;
  mutable std::vector<AffineAccess> deferred_;
  mutable std::vector<std::size_t> order_;
  mutable std::vector<std::size_t> runs_;
};

}  // namespace unimem
