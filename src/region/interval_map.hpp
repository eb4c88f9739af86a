#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "region/interval.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// Non-overlapping segments of byte offsets, each carrying a value of type V; offsets covered by
/// no segment are unmapped. After every mutation, segments are maximal: two segments that touch
/// never carry equal values (they are merged), so the segment list is canonical and two maps are
/// equal exactly when they map every offset to the same value. This is DSOM's byte-granular
/// segment table (seeds/000_7b2a075be0870d8f.txt, section 3) with the value left generic.
///
/// Segments live in a balanced tree keyed by their first offset. Lookups are O(log n); assign /
/// update / erase cost O(log n + k) for the k segments touched: a single tree search finds the
/// start, then the touched segments are walked in order.
/// V must be copyable and equality-comparable. If a function passed to update throws, the
/// segments it already rewrote keep their new value and the map stays canonical.
template <typename V>
class IntervalMap {
 public:
  struct Segment {
    Interval range;
    V value;
    friend bool operator==(const Segment&, const Segment&) = default;
  };

  IntervalMap() = default;
  /// A map with the single segment [range) = value (empty if range is).
  IntervalMap(Interval range, V value) { assign(range, std::move(value)); }

  [[nodiscard]] bool empty() const { return segments_.empty(); }
  /// Number of (maximal) segments.
  [[nodiscard]] std::size_t segment_count() const { return segments_.size(); }

  /// Sets every offset of range to value (mapping offsets that were unmapped).
  void assign(const Interval& range, const V& value) {
    if (range.empty()) return;
    auto first = split_at(range.begin);
    auto last = split_forward(first, range.end);
    if (first != last && first->first == range.begin) {
      // A segment starts exactly at range.begin: reuse its node instead of allocating.
      first->second = Entry{range.end, value};
      segments_.erase(std::next(first), last);
    } else {
      first = segments_.emplace_hint(segments_.erase(first, last), range.begin,
                                     Entry{range.end, value});
    }
    merge_around(first);
    check_if_enabled();
  }
  void assign(const IntervalSet& ranges, const V& value) {
    for (const Interval& r : ranges) assign(r, value);
  }

  /// Replaces the value v of every mapped part of range by f(v); unmapped parts stay unmapped.
  template <typename F>
  void update(const Interval& range, F&& f) {
    if (range.empty()) return;
    auto it = split_at(range.begin);
    const auto last = split_forward(it, range.end);
    const auto first = it == segments_.begin() ? it : std::prev(it);  // may merge with the left
    try {
      for (; it != last; ++it) it->second.value = f(std::as_const(it->second.value));
    } catch (...) {
      merge_range(first, last);
      throw;
    }
    merge_range(first, last);
    check_if_enabled();
  }
  template <typename F>
  void update(const IntervalSet& ranges, F&& f) {
    for (const Interval& r : ranges) update(r, f);
  }

  /// Like update, but also maps the unmapped parts of range: f receives std::nullopt there.
  template <typename F>
  void update_or_insert(const Interval& range, F&& f) {
    if (range.empty()) return;
    auto it = split_at(range.begin);
    const auto last = split_forward(it, range.end);
    // Segments inserted before it at the front of the map would be missed by a merge starting
    // at it, so the merge then starts at the (new) first segment.
    const bool at_front = it == segments_.begin();
    const auto before = at_front ? it : std::prev(it);
    auto merge_touched = [&] { merge_range(at_front ? segments_.begin() : before, last); };
    try {
      std::uint64_t cursor = range.begin;
      while (cursor < range.end) {
        if (it != last && it->first == cursor) {
          it->second.value = f(std::optional<V>(it->second.value));
          cursor = it->second.end;
          ++it;
        } else {
          // A gap: it ends where the next segment starts, or at range.end.
          const std::uint64_t gap_end = it != last ? it->first : range.end;
          segments_.emplace_hint(it, cursor, Entry{gap_end, f(std::optional<V>())});
          cursor = gap_end;
        }
      }
    } catch (...) {
      merge_touched();
      throw;
    }
    merge_touched();
    check_if_enabled();
  }
  template <typename F>
  void update_or_insert(const IntervalSet& ranges, F&& f) {
    for (const Interval& r : ranges) update_or_insert(r, f);
  }

  /// Unmaps every offset of range.
  void erase(const Interval& range) {
    if (range.empty()) return;
    auto first = split_at(range.begin);
    auto last = split_forward(first, range.end);
    segments_.erase(first, last);
    check_if_enabled();
  }
  void erase(const IntervalSet& ranges) {
    for (const Interval& r : ranges) erase(r);
  }

  /// Calls f(clipped_range, value) for every mapped part of range, in order of offset.
  template <typename F>
  void for_each_in(const Interval& range, F&& f) const {
    if (range.empty()) return;
    for (auto it = first_touching(range.begin); it != segments_.end() && it->first < range.end;
         ++it) {
      const Interval seg{it->first, it->second.end};
      f(seg.intersect(range), std::as_const(it->second.value));
    }
  }

  /// Calls f(range, value) for every segment, in order of offset.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [begin, e] : segments_) f(Interval{begin, e.end}, std::as_const(e.value));
  }

  /// The mapped parts of range, clipped to it.
  [[nodiscard]] std::vector<Segment> query(const Interval& range) const {
    std::vector<Segment> out;
    for_each_in(range, [&out](const Interval& r, const V& v) { out.push_back({r, v}); });
    return out;
  }

  /// The value at offset, if mapped.
  [[nodiscard]] std::optional<V> at(std::uint64_t offset) const {
    auto it = first_touching(offset);
    if (it == segments_.end() || it->first > offset) return std::nullopt;
    return it->second.value;
  }

  /// The offsets within range whose value satisfies pred.
  template <typename P>
  [[nodiscard]] IntervalSet select(const Interval& range, P&& pred) const {
    std::vector<Interval> out;
    for_each_in(range, [&](const Interval& r, const V& v) {
      if (!pred(v)) return;
      if (!out.empty() && out.back().end == r.begin) {
        out.back().end = r.end;
      } else {
        out.push_back(r);
      }
    });
    return IntervalSet::from_normalized(std::move(out));
  }

  /// Every segment, in order.
  [[nodiscard]] std::vector<Segment> segments() const {
    std::vector<Segment> out;
    out.reserve(segments_.size());
    for (const auto& [begin, e] : segments_) out.push_back({{begin, e.end}, e.value});
    return out;
  }

  void clear() { segments_.clear(); }

  friend bool operator==(const IntervalMap& a, const IntervalMap& b) {
    return a.segments_ == b.segments_;
  }

  /// Throws InvariantError unless segments are non-empty, disjoint and maximal.
  void check_invariants() const {
    const Entry* prev = nullptr;
    std::uint64_t prev_begin = 0;
    for (const auto& [begin, e] : segments_) {
      if (begin >= e.end) {
        detail::throw_invariant(
            "IntervalMap segment starting at " + std::to_string(begin) + " is empty", __FILE__,
            __LINE__);
      }
      if (prev != nullptr) {
        if (prev->end > begin) {
          detail::throw_invariant("IntervalMap segments at " + std::to_string(prev_begin) +
                                      " and " + std::to_string(begin) + " overlap",
                                  __FILE__, __LINE__);
        }
        if (prev->end == begin && prev->value == e.value) {
          detail::throw_invariant("IntervalMap segments at " + std::to_string(prev_begin) +
                                      " and " + std::to_string(begin) +
                                      " touch with equal values (not merged)",
                                  __FILE__, __LINE__);
        }
      }
      prev = &e;
      prev_begin = begin;
    }
  }

 private:
  struct Entry {
    std::uint64_t end;
    V value;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  using Map = std::map<std::uint64_t, Entry>;
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    if (segments_.size() <= kFullCheckLimit) check_invariants();
#endif
  }
  // Whole-structure checks are linear; above this size they would make debug runs quadratic.
  static constexpr std::size_t kFullCheckLimit = 4096;

  // The segment containing offset, or else the first one starting after it.
  const_iterator first_touching(std::uint64_t offset) const {
    auto it = segments_.upper_bound(offset);
    if (it != segments_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > offset) return prev;
    }
    return it;
  }

  // Splits the segment at it in two at offset (it must start before offset and end after it);
  // returns the right part.
  iterator split(iterator it, std::uint64_t offset) {
    Entry right{it->second.end, it->second.value};
    it->second.end = offset;
    return segments_.emplace_hint(std::next(it), offset, std::move(right));
  }

  // Ensures no segment straddles offset; returns the first segment starting at or after offset.
  iterator split_at(std::uint64_t offset) {
    auto it = segments_.upper_bound(offset);
    if (it != segments_.begin()) {
      auto prev = std::prev(it);
      if (prev->first == offset) return prev;
      if (prev->second.end > offset) return split(prev, offset);
    }
    return it;
  }

  // Like split_at(offset), but walks forward from it (a segment starting at or before offset, or
  // the first segment after it) instead of searching the tree: O(segments passed).
  iterator split_forward(iterator it, std::uint64_t offset) {
    while (it != segments_.end() && it->second.end <= offset) ++it;
    if (it != segments_.end() && it->first < offset) return split(it, offset);
    return it;
  }

  // Merges equal touching neighbours among [first, last] (last included if it is not end()).
  void merge_range(iterator first, iterator last) {
    if (first == segments_.end()) return;
    const auto stop = last == segments_.end() ? last : std::next(last);
    auto it = first;
    while (it != stop) {
      auto next = std::next(it);
      if (next == stop) break;
      if (it->second.end == next->first && it->second.value == next->second.value) {
        it->second.end = next->second.end;
        segments_.erase(next);
      } else {
        it = next;
      }
    }
  }

  // Merges the segment at it with its neighbours where they touch and carry equal values.
  void merge_around(iterator it) {
    const auto first = it == segments_.begin() ? it : std::prev(it);
    merge_range(first, std::next(it));
  }

  Map segments_;
};

}  // namespace unimem
