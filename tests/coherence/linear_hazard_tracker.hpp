#pragma once

// The HazardTracker as it was before its interval tree (main abe3678): a list of records scanned
// whole by every access. Kept only as the oracle of hazard_tracker_differential_test.cpp. It
// names every unfinished access a new one conflicts with; HazardTracker::deps_for_write may
// leave out writes that an ordered read it names waited for, so the differential test compares
// what the two lists wait for transitively.

#include <algorithm>
#include <cstddef>
#include <vector>

#include <unimem/event.hpp>
#include "coherence/hazard_tracker.hpp"
#include "region/interval_set.hpp"

namespace unimem::test {

class LinearHazardTracker {
 public:
  void deps_for_read(const IntervalSet& bytes, EventList& deps) const {
    collect(bytes, true, deps);
  }
  void deps_for_write(const IntervalSet& bytes, EventList& deps) const {
    collect(bytes, false, deps);
  }
  void record_read(const IntervalSet& bytes, const Event& event) {
    prune();
    if (bytes.empty() || event.is_null()) return;
    records_.push_back({bytes, bytes.bounds(), event, false});
  }
  // The oracle relies on no ordering: an ordered read is a read.
  void record_ordered_read(const IntervalSet& bytes, const Event& event) {
    record_read(bytes, event);
  }
  void record_write(const IntervalSet& bytes, const Event& event) {
    prune();
    if (bytes.empty() || event.is_null()) return;
    const Interval b = bytes.bounds();
    bool emptied = false;
    for (Record& r : records_) {
      if (!r.bounds.overlaps(b) || !r.bytes.intersects(bytes)) continue;
      r.bytes = r.bytes.subtract(bytes);
      r.bounds = r.bytes.bounds();
      emptied = emptied || r.bytes.empty();
    }
    if (emptied) std::erase_if(records_, [](const Record& r) { return r.bytes.empty(); });
    records_.push_back({bytes, b, event, true});
  }
  [[nodiscard]] EventList pending() const {
    EventList out;
    for (const Record& r : records_) out.push_back(r.event);
    return unique_pending(std::move(out));
  }
  [[nodiscard]] EventList pending_on(const IntervalSet& bytes) const {
    EventList out;
    if (bytes.empty()) return out;
    const Interval b = bytes.bounds();
    for (const Record& r : records_) {
      if (r.bounds.overlaps(b) && r.bytes.intersects(bytes)) out.push_back(r.event);
    }
    return unique_pending(std::move(out));
  }
  [[nodiscard]] std::size_t record_count() const { return records_.size(); }

 private:
  struct Record {
    IntervalSet bytes;
    Interval bounds;
    Event event;
    bool write;
  };
  void collect(const IntervalSet& bytes, bool writes_only, EventList& deps) const {
    if (bytes.empty()) return;
    const Interval b = bytes.bounds();
    for (const Record& r : records_) {
      if (writes_only && !r.write) continue;
      if (!r.bounds.overlaps(b)) continue;
      if (r.bytes.intersects(bytes)) add_dependency(deps, r.event);
    }
  }
  void prune() {
    if (records_.size() < prune_at_) return;
    std::erase_if(records_, [](const Record& r) { return r.event.is_complete(); });
    prune_at_ = std::max<std::size_t>(16, 2 * records_.size());
  }

  std::vector<Record> records_;
  std::size_t prune_at_ = 16;
};

}  // namespace unimem::test
