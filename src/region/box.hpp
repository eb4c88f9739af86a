#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "common/check.hpp"

namespace unimem {

template <std::size_t N>
class BoxPieces;

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
  /// Precondition: every extent max[d] - min[d] fits in std::int64_t.
  constexpr Box(const Point& min, const Point& max) : min_(min), max_(max) {
    for (std::size_t d = 0; d < N; ++d) {
      UNIMEM_REQUIRE(min_[d] >= 0 || max_[d] <= min_[d] + std::numeric_limits<std::int64_t>::max(),
                     "Box: extent max - min overflows a 64-bit coordinate");
    }
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
  /// Number of points in the box. Precondition: the count fits in std::uint64_t.
  [[nodiscard]] constexpr std::uint64_t volume() const {
    std::uint64_t v = 1;
    for (std::size_t d = 0; d < N; ++d) {
      const bool overflow = __builtin_mul_overflow(v, static_cast<std::uint64_t>(extent(d)), &v);
      UNIMEM_REQUIRE(!overflow, "Box::volume: the number of points overflows 64 bits");
    }
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

  /// BBMM Table I "subtract" (001_9219257c3045faa0.txt): this box minus other as at most 2N
  /// disjoint non-empty boxes. Slab decomposition: in each dimension d in turn, the part of the
  /// remainder below other (low slab) and above it (high slab) are cut off, and the remainder is
  /// narrowed to other's extent in d ("two cuts in each dimension"). Pieces come in the order
  /// low 0, high 0, low 1, high 1, ...; a piece that would be empty is left out.
  [[nodiscard]] constexpr BoxPieces<N> subtract(const Box& other) const;

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

/// Up to 2N boxes held inline (no allocation): the result of Box::subtract.
template <std::size_t N>
class BoxPieces {
 public:
  static constexpr std::size_t kCapacity = 2 * N;
  using const_iterator = typename std::array<Box<N>, kCapacity>::const_iterator;

  constexpr BoxPieces() = default;

  /// Appends a box; empty boxes are ignored. Precondition: fewer than 2N boxes held.
  constexpr void push_back(const Box<N>& box) {
    if (box.empty()) return;
    UNIMEM_REQUIRE(count_ < kCapacity, "BoxPieces: more than 2N pieces");
    pieces_[count_++] = box;
  }

  [[nodiscard]] constexpr std::size_t size() const { return count_; }
  [[nodiscard]] constexpr bool empty() const { return count_ == 0; }
  [[nodiscard]] constexpr const Box<N>& operator[](std::size_t i) const {
    UNIMEM_REQUIRE(i < count_, "BoxPieces: index out of range");
    return pieces_[i];
  }
  [[nodiscard]] constexpr const_iterator begin() const { return pieces_.begin(); }
  [[nodiscard]] constexpr const_iterator end() const {
    return pieces_.begin() + static_cast<std::ptrdiff_t>(count_);
  }

 private:
  std::array<Box<N>, kCapacity> pieces_{};
  std::size_t count_ = 0;
};

template <std::size_t N>
constexpr BoxPieces<N> Box<N>::subtract(const Box& other) const {
  BoxPieces<N> pieces;
  const Box cut = intersect(other);
  if (cut.empty()) {
    pieces.push_back(*this);
    return pieces;
  }
  Box rest = *this;  // Invariant: rest is non-empty and contains cut.
  for (std::size_t d = 0; d < N; ++d) {
    if (rest.min_[d] < cut.min_[d]) {
      Box low = rest;
      low.max_[d] = cut.min_[d];
      pieces.push_back(low);
      rest.min_[d] = cut.min_[d];
    }
    if (cut.max_[d] < rest.max_[d]) {
      Box high = rest;
      high.min_[d] = cut.max_[d];
      pieces.push_back(high);
      rest.max_[d] = cut.max_[d];
    }
  }
  return pieces;  // rest == cut now and is left out.
}

}  // namespace unimem
