#include "selftest/random_program.hpp"

#include <algorithm>

namespace unimem::selftest {

Interval ProgramGenerator::interval_in(std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t b = lo + below(hi - lo);
  const std::uint64_t max_len = std::max<std::uint64_t>(1, (hi - lo) / 2);
  const std::uint64_t len = 1 + below(std::min(max_len, hi - b));
  return {b, b + len};
}

IntervalSet ProgramGenerator::set_in(std::uint64_t lo, std::uint64_t hi, int max_pieces) {
  std::vector<Interval> pieces;
  const int n = 1 + static_cast<int>(below(static_cast<std::uint64_t>(max_pieces)));
  for (int i = 0; i < n; ++i) pieces.push_back(interval_in(lo, hi));
  return IntervalSet::from_unsorted(std::move(pieces));
}

AccessBytes ProgramGenerator::access_in(std::uint64_t size, std::uint64_t write_lo,
                                        std::uint64_t write_hi) {
  AccessBytes access;
  if (chance(85)) access.reads = set_in(0, size, 3);
  if (write_hi > write_lo) {
    if (chance(75)) access.writes = set_in(write_lo, write_hi, 2);
    if (chance(20)) access.may_writes = set_in(write_lo, write_hi, 2);
  }
  return access;
}

KernelEffect ProgramGenerator::kernel_effect(const std::vector<std::uint64_t>& sizes) {
  KernelEffect effect;
  effect.salt = next();
  const std::size_t nargs = 1 + below(std::min<std::size_t>(3, sizes.size()));
  while (effect.buffers.size() < nargs) {
    const std::size_t b = below(sizes.size());
    if (std::find(effect.buffers.begin(), effect.buffers.end(), b) == effect.buffers.end()) {
      effect.buffers.push_back(b);
    }
  }
  for (std::size_t b : effect.buffers) effect.access.push_back(access_in(sizes[b], 0, sizes[b]));
  return effect;
}

}  // namespace unimem::selftest
