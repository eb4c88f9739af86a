#pragma once

#include <cstddef>
#include <vector>

#include <unimem/event.hpp>
#include "region/interval_set.hpp"

namespace unimem {

namespace detail {
struct HazardTrackerTestAccess;  // defined by the tests that break a tracker on purpose
}  // namespace detail

/// The in-flight accesses to one copy (the home copy or one device mirror) of one buffer, so that
/// a new access waits exactly for the earlier ones it conflicts with: a read for the earlier
/// writes of its bytes (RAW), a write for the earlier reads and writes of its bytes (WAR, WAW).
/// A recorded write shadows older accesses to its bytes (it already waits for them), so they are
/// dropped; finished accesses are dropped too. Not thread-safe.
class HazardTracker {
 public:
  /// Appends to deps the events of unfinished writes that overlap bytes.
  void deps_for_read(const IntervalSet& bytes, EventList& deps) const;
  /// Appends to deps the events of unfinished reads and writes that overlap bytes.
  void deps_for_write(const IntervalSet& bytes, EventList& deps) const;
  void record_read(const IntervalSet& bytes, const Event& event);
  void record_write(const IntervalSet& bytes, const Event& event);

  /// Every unfinished event (for waiting before the copy goes away).
  [[nodiscard]] EventList pending() const;
  /// The unfinished events of the accesses that overlap bytes, each once: deps_for_write's
  /// events in O(n log n) (a tracker may hold a thousand readers of a pivot row).
  [[nodiscard]] EventList pending_on(const IntervalSet& bytes) const;
  [[nodiscard]] std::size_t record_count() const { return records_.size(); }

  /// Throws InvariantError unless every record has bytes, up-to-date bounds and an event, and no
  /// record overlaps a later write (a write shadows the older accesses to its bytes).
  void check_invariants() const;

 private:
  friend struct detail::HazardTrackerTestAccess;
  struct Record {
    IntervalSet bytes;
    Interval bounds;
    Event event;
    bool write;
  };
  void collect(const IntervalSet& bytes, bool writes_only, EventList& deps) const;
  // Drops finished records, but only when the list has doubled since the last pass (at least
  // kPruneMinimum records): asking an event whether it finished may cost a driver call, and a host
  // that submits far ahead of the devices (floyd-warshall: 1024 launches) would otherwise pay
  // O(records) of them per access. Finished records left in are harmless: collect() skips them.
  void prune();
  static constexpr std::size_t kPruneMinimum = 16;
  // The shadowing check compares every pair of records: only done for this many or fewer.
  static constexpr std::size_t kPairCheckLimit = 64;
  void check_if_enabled() const;

  std::vector<Record> records_;
  std::size_t prune_at_ = kPruneMinimum;
};

/// Appends e to events unless it is null, complete or already present.
void add_dependency(EventList& events, const Event& e);

/// The events of `events` that are neither null nor complete, each once, in the order of their
/// first occurrence: add_dependency for each, in O(n log n) instead of O(n^2) (a buffer's trackers
/// can hold a thousand records when the host submits far ahead, as floyd-warshall does).
[[nodiscard]] EventList unique_pending(EventList events);

}  // namespace unimem
