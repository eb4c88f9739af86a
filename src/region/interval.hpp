#pragma once

#include <cstdint>
#include <string>

#include "common/check.hpp"

namespace unimem {

/// A half-open range [begin, end) of 64-bit byte offsets. begin <= end always holds; an interval
/// with begin == end is empty. Comparison is member-wise, so two empty intervals at different
/// offsets compare unequal: containers of intervals (IntervalSet) never hold empty ones.
struct Interval {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  constexpr Interval() = default;
  constexpr Interval(std::uint64_t b, std::uint64_t e) : begin(b), end(e) {
    UNIMEM_REQUIRE(b <= e, "Interval: begin must not exceed end");
  }

  [[nodiscard]] constexpr std::uint64_t size() const { return end - begin; }
  [[nodiscard]] constexpr bool empty() const { return begin == end; }
  [[nodiscard]] constexpr bool contains(std::uint64_t offset) const {
    return begin <= offset && offset < end;
  }
  /// True when every byte of other lies in this interval (an empty other is always contained).
  [[nodiscard]] constexpr bool contains(const Interval& other) const {
    return other.empty() || (begin <= other.begin && other.end <= end);
  }
  /// True when the two intervals share at least one byte (never for an empty interval).
  [[nodiscard]] constexpr bool overlaps(const Interval& other) const {
    return !empty() && !other.empty() && begin < other.end && other.begin < end;
  }
  /// The common part, or an empty interval at max(begin) when there is none.
  [[nodiscard]] constexpr Interval intersect(const Interval& other) const {
    const std::uint64_t b = begin > other.begin ? begin : other.begin;
    const std::uint64_t e = end < other.end ? end : other.end;
    return b < e ? Interval{b, e} : Interval{b, b};
  }

  friend constexpr bool operator==(const Interval&, const Interval&) = default;
  [[nodiscard]] std::string to_string() const;
};

}  // namespace unimem
