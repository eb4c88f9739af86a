#pragma once

// The coherence selftest's random source: a seeded generator of intervals, byte sets and kernel
// effects. The same seed always yields the same sequence.

#include <cstdint>
#include <random>
#include <vector>

#include "region/interval_set.hpp"
#include "selftest/flat_memory.hpp"

namespace unimem::selftest {

class ProgramGenerator {
 public:
  explicit ProgramGenerator(std::uint64_t seed) : rng_(seed) {}

  /// Uniform in [0, n); 0 when n is 0.
  [[nodiscard]] std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  [[nodiscard]] bool chance(int percent) {
    return below(100) < static_cast<std::uint64_t>(percent);
  }
  [[nodiscard]] std::uint64_t next() { return rng_(); }

  /// A non-empty interval within [lo, hi), at most half of it long.
  [[nodiscard]] Interval interval_in(std::uint64_t lo, std::uint64_t hi);
  /// The union of 1..max_pieces such intervals.
  [[nodiscard]] IntervalSet set_in(std::uint64_t lo, std::uint64_t hi, int max_pieces);
  /// Random access sets on a buffer of `size` bytes: reads anywhere, writes and may-writes only in
  /// [write_lo, write_hi) (so that partitions of one launch write disjoint slices).
  [[nodiscard]] AccessBytes access_in(std::uint64_t size, std::uint64_t write_lo,
                                      std::uint64_t write_hi);
  /// A kernel on 1..3 distinct buffers out of `sizes`, each argument's writes anywhere.
  [[nodiscard]] KernelEffect kernel_effect(const std::vector<std::uint64_t>& sizes);

 private:
  std::mt19937_64 rng_;
};

}  // namespace unimem::selftest
