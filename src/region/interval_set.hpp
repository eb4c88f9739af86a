#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "region/interval.hpp"

namespace unimem {

/// A set of byte offsets kept as a normalized list of intervals: sorted by begin, non-empty,
/// disjoint and non-adjacent (a gap of at least one byte between neighbours). Because the form is
/// canonical, two sets are equal exactly when their interval lists are equal.
class IntervalSet {
 public:
  using const_iterator = std::vector<Interval>::const_iterator;

  IntervalSet() = default;
  /// The set of bytes covered by one interval (empty if the interval is).
  explicit IntervalSet(Interval interval);
  /// The union of arbitrary intervals in any order; overlapping and empty ones are fine.
  IntervalSet(std::initializer_list<Interval> intervals);
  static IntervalSet from_unsorted(std::vector<Interval> intervals);
  /// Adopts a list that the caller guarantees is already normalized (checked in debug builds).
  static IntervalSet from_normalized(std::vector<Interval> intervals);

  [[nodiscard]] bool empty() const { return intervals_.empty(); }
  /// The empty set, keeping the storage (a set refilled again and again allocates once).
  void clear() { intervals_.clear(); }
  /// Number of maximal intervals.
  [[nodiscard]] std::size_t interval_count() const { return intervals_.size(); }
  /// Number of bytes in the set.
  [[nodiscard]] std::uint64_t total_size() const;
  /// The smallest interval that covers the set (empty interval for the empty set).
  [[nodiscard]] Interval bounds() const;

  [[nodiscard]] bool contains(std::uint64_t offset) const;
  [[nodiscard]] bool contains(const Interval& interval) const;
  [[nodiscard]] bool contains(const IntervalSet& other) const;
  [[nodiscard]] bool intersects(const Interval& interval) const;
  [[nodiscard]] bool intersects(const IntervalSet& other) const;

  /// In-place union with one interval: O(log n + k) for k intervals absorbed, plus the shift.
  void insert(const Interval& interval);
  /// In-place removal of one interval.
  void erase(const Interval& interval);
  /// Appends piece (non-empty), which starts at or after the end of every interval held, joined
  /// with the last one when they touch: a set built in address order costs no search.
  void extend_with(const Interval& piece) {
    UNIMEM_REQUIRE(!piece.empty() && (intervals_.empty() || piece.begin >= intervals_.back().end),
                   "IntervalSet::extend_with: the piece is empty or lies before the set's end");
    if (!intervals_.empty() && intervals_.back().end == piece.begin) {
      intervals_.back().end = piece.end;
    } else {
      intervals_.push_back(piece);
    }
  }

  [[nodiscard]] IntervalSet unite(const IntervalSet& other) const;
  [[nodiscard]] IntervalSet intersect(const IntervalSet& other) const;
  [[nodiscard]] IntervalSet intersect(const Interval& interval) const;
  [[nodiscard]] IntervalSet subtract(const IntervalSet& other) const;
  /// Makes this set a.subtract(b), reusing this set's storage (a loop that computes such a
  /// difference every time allocates only when it grows).
  void assign_difference(const IntervalSet& a, const IntervalSet& b);
  /// Every offset shifted by delta (which must not overflow or go below zero).
  [[nodiscard]] IntervalSet shifted(std::int64_t delta) const;

  [[nodiscard]] const_iterator begin() const { return intervals_.begin(); }
  [[nodiscard]] const_iterator end() const { return intervals_.end(); }
  [[nodiscard]] const std::vector<Interval>& intervals() const { return intervals_; }
  [[nodiscard]] const Interval& operator[](std::size_t i) const { return intervals_[i]; }

  friend bool operator==(const IntervalSet&, const IntervalSet&) = default;

  /// Throws InvariantError if the list is not normalized.
  void check_invariants() const;
  /// "{[0, 4), [8, 16)}".
  [[nodiscard]] std::string to_string() const;

 private:
  std::vector<Interval> intervals_;
};

IntervalSet operator|(const IntervalSet& a, const IntervalSet& b);
IntervalSet operator&(const IntervalSet& a, const IntervalSet& b);
IntervalSet operator-(const IntervalSet& a, const IntervalSet& b);

}  // namespace unimem
