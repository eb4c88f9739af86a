#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "region/box.hpp"

namespace unimem {

namespace detail {
struct BoxSetTestAccess;
}  // namespace detail

/// A set of integer points in N dimensions (N = 1, 2, 3) kept as a canonical list of disjoint,
/// non-empty boxes, so that two sets are equal exactly when their box lists are equal.
///
/// Canonical form (a recursive sweep): cut the set along dimension 0 into maximal slabs [a, b)
/// over which the cross-section (an (N-1)-dimensional set) stays the same and is non-empty; the
/// boxes are the slabs extruded over the canonical boxes of their cross-section. For N = 1 this is
/// the list of maximal intervals. Boxes are sorted by their min corner in lexicographic order.
///
/// Operations follow BBMM Table I (001_9219257c3045faa0.txt): simple union (insert / unite),
/// convex union (bounds), intersection, subtract and is-subset; each result is re-normalized by one
/// sweep, O(k log k) for k boxes in 1-D and up to O(k^2) per dimension above that.
template <std::size_t N>
class BoxSet {
  static_assert(N >= 1 && N <= 3, "BoxSet supports 1, 2 and 3 dimensions");

 public:
  using Point = typename Box<N>::Point;
  using const_iterator = typename std::vector<Box<N>>::const_iterator;

  BoxSet() = default;
  /// The points of one box (the empty set if the box is empty).
  explicit BoxSet(const Box<N>& box);
  /// The union of arbitrary boxes in any order; overlapping and empty ones are fine.
  BoxSet(std::initializer_list<Box<N>> boxes);
  /// The union of arbitrary boxes in any order; overlapping and empty ones are fine.
  static BoxSet from_boxes(const std::vector<Box<N>>& boxes);

  [[nodiscard]] bool empty() const { return boxes_.empty(); }
  /// Number of boxes in the canonical form.
  [[nodiscard]] std::size_t box_count() const { return boxes_.size(); }
  /// Number of points. Precondition: the count fits in std::uint64_t.
  [[nodiscard]] std::uint64_t volume() const;
  /// BBMM Table I "convex union": the smallest box covering the whole set (empty box if empty).
  [[nodiscard]] Box<N> bounds() const;

  [[nodiscard]] bool contains(const Point& point) const;
  /// BBMM Table I "is subset": true when every point of box lies in this set.
  [[nodiscard]] bool contains(const Box<N>& box) const;
  /// True when other is a subset of this set.
  [[nodiscard]] bool contains(const BoxSet& other) const;
  /// True when this set is a subset of other.
  [[nodiscard]] bool is_subset_of(const BoxSet& other) const { return other.contains(*this); }
  [[nodiscard]] bool intersects(const Box<N>& box) const;
  [[nodiscard]] bool intersects(const BoxSet& other) const;

  /// In-place simple union (BBMM Table I "simple union", kept canonical).
  void insert(const Box<N>& box);
  void insert(const BoxSet& other);
  /// In-place subtraction.
  void erase(const Box<N>& box);
  void erase(const BoxSet& other);

  [[nodiscard]] BoxSet unite(const Box<N>& box) const;
  [[nodiscard]] BoxSet unite(const BoxSet& other) const;
  [[nodiscard]] BoxSet intersect(const Box<N>& box) const;
  [[nodiscard]] BoxSet intersect(const BoxSet& other) const;
  [[nodiscard]] BoxSet subtract(const Box<N>& box) const;
  [[nodiscard]] BoxSet subtract(const BoxSet& other) const;

  [[nodiscard]] const_iterator begin() const { return boxes_.begin(); }
  [[nodiscard]] const_iterator end() const { return boxes_.end(); }
  [[nodiscard]] const std::vector<Box<N>>& boxes() const { return boxes_; }
  /// Precondition: i < box_count().
  [[nodiscard]] const Box<N>& operator[](std::size_t i) const;

  friend bool operator==(const BoxSet&, const BoxSet&) = default;

  /// Throws InvariantError unless the boxes are non-empty, pairwise disjoint and canonical.
  void check_invariants() const;
  /// "{[0, 4) x [2, 8), [4, 6) x [0, 8)}"; "{}" for the empty set.
  [[nodiscard]] std::string to_string() const;

 private:
  friend struct detail::BoxSetTestAccess;
  void check_invariants_if_enabled() const;
  /// The set of boxes that are already in normal form (what combine returns).
  static BoxSet of_normalized(std::vector<Box<N>> boxes);

  std::vector<Box<N>> boxes_;
};

template <std::size_t N>
BoxSet<N> operator|(const BoxSet<N>& a, const BoxSet<N>& b) {
  return a.unite(b);
}
template <std::size_t N>
BoxSet<N> operator&(const BoxSet<N>& a, const BoxSet<N>& b) {
  return a.intersect(b);
}
template <std::size_t N>
BoxSet<N> operator-(const BoxSet<N>& a, const BoxSet<N>& b) {
  return a.subtract(b);
}

namespace detail {
/// Test hook: raw access to the box list, so tests can check that check_invariants() rejects a
/// broken one.
struct BoxSetTestAccess {
  template <std::size_t N>
  static std::vector<Box<N>>& boxes(BoxSet<N>& set) {
    return set.boxes_;
  }
};
}  // namespace detail

// Defined in box_set.cpp for N = 1, 2, 3.
extern template class BoxSet<1>;
extern template class BoxSet<2>;
extern template class BoxSet<3>;

}  // namespace unimem
