#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/check.hpp"

namespace unimem {

/// An N-dimensional half-open box [min, max) of integer coordinates (N = 1, 2, 3).
/// Dimension 0 is the slowest-varying (row-major: for N = 2, dimension 0 is the row, dimension 1
/// the column). Every empty box has one canonical representation, min = max = 0 in every
/// dimension, so equality is a plain member-wise comparison.
template <std::size_t N>
class Box {
  static_assert(N >= 1 && N <= 3, "Box supports 1, 2 and 3 dimensions");

 public:
  using Point = std::array<std::int64_t, N>;

  /// The canonical empty box.
  constexpr Box() = default;
  /// The box [min, max); if max[d] <= min[d] in any dimension the box is empty (canonicalized).
  constexpr Box(const Point& min, const Point& max) : min_(min), max_(max) {
    for (std::size_t d = 0; d < N; ++d) {
      if (max_[d] <= min_[d]) {
        min_ = Point{};
        max_ = Point{};
        return;
      }
    }
  }

  [[nodiscard]] constexpr const Point& min() const { return min_; }
  [[nodiscard]] constexpr const Point& max() const { return max_; }
  [[nodiscard]] constexpr std::int64_t extent(std::size_t d) const { return max_[d] - min_[d]; }
  [[nodiscard]] constexpr bool empty() const { return max_[0] == min_[0]; }
  /// Number of points in the box.
  [[nodiscard]] constexpr std::uint64_t volume() const {
    std::uint64_t v = 1;
    for (std::size_t d = 0; d < N; ++d) v *= static_cast<std::uint64_t>(extent(d));
    return v;
  }
  [[nodiscard]] constexpr bool contains(const Point& p) const {
    for (std::size_t d = 0; d < N; ++d) {
      if (p[d] < min_[d] || p[d] >= max_[d]) return false;
    }
    return true;
  }
  /// True when other is a subset of this box (the empty box is a subset of every box).
  [[nodiscard]] constexpr bool contains(const Box& other) const {
    if (other.empty()) return true;
    for (std::size_t d = 0; d < N; ++d) {
      if (other.min_[d] < min_[d] || other.max_[d] > max_[d]) return false;
    }
    return true;
  }
  [[nodiscard]] constexpr bool overlaps(const Box& other) const {
    return !intersect(other).empty();
  }
  /// BBMM Table I "intersection" (001_9219257c3045faa0.txt).
  [[nodiscard]] constexpr Box intersect(const Box& other) const {
    Point lo{};
    Point hi{};
    for (std::size_t d = 0; d < N; ++d) {
      lo[d] = std::max(min_[d], other.min_[d]);
      hi[d] = std::min(max_[d], other.max_[d]);
    }
    return Box(lo, hi);
  }
  /// BBMM Table I "convex union": the smallest box covering both.
  [[nodiscard]] constexpr Box bounding_union(const Box& other) const {
    if (empty()) return other;
    if (other.empty()) return *this;
    Point lo{};
    Point hi{};
    for (std::size_t d = 0; d < N; ++d) {
      lo[d] = std::min(min_[d], other.min_[d]);
      hi[d] = std::max(max_[d], other.max_[d]);
    }
    return Box(lo, hi);
  }

  friend constexpr bool operator==(const Box&, const Box&) = default;

  /// "[0, 4) x [2, 8)"; "empty" for the empty box.
  [[nodiscard]] std::string to_string() const {
    if (empty()) return "empty";
    std::string s;
    for (std::size_t d = 0; d < N; ++d) {
      if (d > 0) s += " x ";
      s += "[" + std::to_string(min_[d]) + ", " + std::to_string(max_[d]) + ")";
    }
    return s;
  }

 private:
  Point min_{};
  Point max_{};
};

}  // namespace unimem
