#pragma once

// Test support for Box / BoxSet: a dense bitmap oracle over the universe [0, kSide)^N and random
// box generators with fixed seeds.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "region/box.hpp"
#include "region/box_set.hpp"

namespace unimem {

// GoogleTest printers (found by argument-dependent lookup).
template <std::size_t N>
void PrintTo(const Box<N>& box, std::ostream* os) {
  *os << box.to_string();
}
template <std::size_t N>
void PrintTo(const BoxSet<N>& set, std::ostream* os) {
  *os << set.to_string();
}

}  // namespace unimem

namespace unimem::test {

template <std::size_t N>
using Dim = std::integral_constant<std::size_t, N>;
using Dimensions = ::testing::Types<Dim<1>, Dim<2>, Dim<3>>;

/// Names typed tests "1D", "2D", "3D".
struct DimensionNames {
  template <typename T>
  static std::string GetName(int /*index*/) {
    return std::to_string(T::value) + "D";
  }
};

/// A box with the same [lo, hi) in every dimension.
template <std::size_t N>
Box<N> cube(std::int64_t lo, std::int64_t hi) {
  typename Box<N>::Point min{};
  typename Box<N>::Point max{};
  min.fill(lo);
  max.fill(hi);
  return Box<N>(min, max);
}

/// A box [lo0, hi0) in dimension 0 and [lo, hi) in every other dimension.
template <std::size_t N>
Box<N> slab(std::int64_t lo0, std::int64_t hi0, std::int64_t lo, std::int64_t hi) {
  typename Box<N>::Point min{};
  typename Box<N>::Point max{};
  min.fill(lo);
  max.fill(hi);
  min[0] = lo0;
  max[0] = hi0;
  return Box<N>(min, max);
}

template <std::size_t N>
typename Box<N>::Point point(std::int64_t v) {
  typename Box<N>::Point p{};
  p.fill(v);
  return p;
}

/// Dense set of points of [0, kSide)^N.
template <std::size_t N>
class Bitmap {
 public:
  static constexpr std::int64_t kSide = 12;
  using Point = typename Box<N>::Point;

  static constexpr std::size_t size() {
    std::size_t s = 1;
    for (std::size_t d = 0; d < N; ++d) s *= static_cast<std::size_t>(kSide);
    return s;
  }
  static Point test_point(std::int64_t v) {
    Point p{};
    p.fill(v);
    return p;
  }
  static Point point_at(std::size_t index) {
    Point p{};
    for (std::size_t d = N; d-- > 0;) {
      p[d] = static_cast<std::int64_t>(index % static_cast<std::size_t>(kSide));
      index /= static_cast<std::size_t>(kSide);
    }
    return p;
  }
  static std::size_t index_of(const Point& p) {
    std::size_t index = 0;
    for (std::size_t d = 0; d < N; ++d) {
      index = index * static_cast<std::size_t>(kSide) + static_cast<std::size_t>(p[d]);
    }
    return index;
  }

  /// Sets (or clears) every point of box inside the universe.
  void fill(const Box<N>& box, bool value = true) {
    const Box<N> clipped = box.intersect(Box<N>(Point{}, test_point(kSide)));
    if (clipped.empty()) return;
    Point p = clipped.min();  // odometer over the clipped box, last dimension fastest
    while (true) {
      bits_[index_of(p)] = value ? 1 : 0;
      std::size_t d = N;
      while (d-- > 0) {
        if (++p[d] < clipped.max()[d]) break;
        p[d] = clipped.min()[d];
      }
      if (d == static_cast<std::size_t>(-1)) return;
    }
  }
  template <typename Boxes>
  void fill_all(const Boxes& boxes, bool value = true) {
    for (const Box<N>& box : boxes) fill(box, value);
  }

  [[nodiscard]] bool test(const Point& p) const { return bits_[index_of(p)] != 0; }
  [[nodiscard]] std::uint64_t count() const {
    std::uint64_t n = 0;
    const std::uint8_t* bits = bits_.data();
    for (std::size_t i = 0; i < size(); ++i) n += bits[i];
    return n;
  }
  [[nodiscard]] bool empty() const { return count() == 0; }
  /// True when every point of this bitmap is set in other.
  [[nodiscard]] bool subset_of(const Bitmap& other) const {
    const std::uint8_t* mine = bits_.data();
    const std::uint8_t* theirs = other.bits_.data();
    for (std::size_t i = 0; i < size(); ++i) {
      if (mine[i] > theirs[i]) return false;
    }
    return true;
  }
  /// The smallest box covering every set point.
  [[nodiscard]] Box<N> bounds() const {
    Point lo = test_point(kSide);
    Point hi = test_point(0);
    for (std::size_t i = 0; i < size(); ++i) {
      if (bits_[i] == 0) continue;
      const Point p = point_at(i);
      for (std::size_t d = 0; d < N; ++d) {
        lo[d] = std::min(lo[d], p[d]);
        hi[d] = std::max(hi[d], p[d] + 1);
      }
    }
    return Box<N>(lo, hi);
  }
  /// Maximal runs along the last dimension, one box each (a decomposition independent of BoxSet).
  [[nodiscard]] std::vector<Box<N>> runs() const {
    std::vector<Box<N>> out;
    for (std::size_t i = 0; i < size(); i += static_cast<std::size_t>(kSide)) {
      std::int64_t start = -1;
      for (std::int64_t x = 0; x <= kSide; ++x) {
        const bool set = x < kSide && bits_[i + static_cast<std::size_t>(x)] != 0;
        if (set && start < 0) start = x;
        if (!set && start >= 0) {
          Point lo = point_at(i);
          Point hi = lo;
          for (auto& v : hi) ++v;
          lo[N - 1] = start;
          hi[N - 1] = x;
          out.push_back(Box<N>(lo, hi));
          start = -1;
        }
      }
    }
    return out;
  }

  Bitmap operator|(const Bitmap& o) const {
    return zip(o, [](unsigned a, unsigned b) { return a | b; });
  }
  Bitmap operator&(const Bitmap& o) const {
    return zip(o, [](unsigned a, unsigned b) { return a & b; });
  }
  Bitmap operator-(const Bitmap& o) const {
    return zip(o, [](unsigned a, unsigned b) { return a & ~b; });
  }
  friend bool operator==(const Bitmap&, const Bitmap&) = default;

 private:
  template <typename F>
  Bitmap zip(const Bitmap& o, F f) const {
    Bitmap out;
    std::uint8_t* result = out.bits_.data();
    const std::uint8_t* mine = bits_.data();
    const std::uint8_t* theirs = o.bits_.data();
    for (std::size_t i = 0; i < size(); ++i) {
      result[i] = static_cast<std::uint8_t>(f(mine[i], theirs[i]) & 1U);
    }
    return out;
  }

  std::vector<std::uint8_t> bits_ = std::vector<std::uint8_t>(size(), 0);
};

template <std::size_t N, typename Boxes>
Bitmap<N> bitmap_of(const Boxes& boxes) {
  Bitmap<N> b;
  b.fill_all(boxes);
  return b;
}

template <std::size_t N>
Bitmap<N> bitmap_of_box(const Box<N>& box) {
  Bitmap<N> b;
  b.fill(box);
  return b;
}

/// Random boxes inside the universe: mostly small and non-empty, sometimes empty or large.
template <std::size_t N>
class BoxGenerator {
 public:
  explicit BoxGenerator(std::uint64_t seed) : rng_(seed) {}

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {  // inclusive
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

  Box<N> box() {
    const std::int64_t side = Bitmap<N>::kSide;
    const std::int64_t kind = uniform(0, 9);
    typename Box<N>::Point lo{};
    typename Box<N>::Point hi{};
    for (std::size_t d = 0; d < N; ++d) {
      if (kind == 0) {  // arbitrary, possibly empty or inverted
        lo[d] = uniform(0, side);
        hi[d] = uniform(0, side);
      } else if (kind == 1) {  // single point
        lo[d] = uniform(0, side - 1);
        hi[d] = lo[d] + 1;
      } else {
        lo[d] = uniform(0, side - 1);
        hi[d] = std::min(side, lo[d] + uniform(1, kind <= 3 ? side : 5));
      }
    }
    return Box<N>(lo, hi);
  }

  std::vector<Box<N>> boxes(std::size_t max_count) {
    std::vector<Box<N>> out(
        static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(max_count))));
    for (auto& b : out) b = box();
    return out;
  }

  typename Box<N>::Point point() {
    typename Box<N>::Point p{};
    for (auto& v : p) v = uniform(0, Bitmap<N>::kSide - 1);
    return p;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace unimem::test
