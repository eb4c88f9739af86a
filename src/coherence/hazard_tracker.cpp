#include "coherence/hazard_tracker.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "common/check.hpp"

namespace unimem {

void add_dependency(EventList& events, const Event& e) {
  // The list first: is_complete() may be a driver query.
  if (e.is_null() || std::find(events.begin(), events.end(), e) != events.end()) return;
  if (e.is_complete()) return;
  events.push_back(e);
}

EventList unique_pending(EventList events) {
  // Sort positions by event identity to find the first occurrence of each, then keep those in
  // their original order.
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto state = [&events](std::size_t i) { return events[i].state().get(); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::less<const void*>()(state(a), state(b));
  });
  std::vector<char> keep(events.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && state(order[k]) == state(order[k - 1])) continue;
    keep[order[k]] = !events[order[k]].is_complete() ? 1 : 0;  // a null event is complete
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (keep[i] != 0) events[kept++] = std::move(events[i]);
  }
  events.resize(kept);
  return events;
}

void HazardTracker::collect(const IntervalSet& bytes, bool writes_only, EventList& deps) const {
  if (bytes.empty()) return;
  const Interval b = bytes.bounds();
  for (const Record& r : records_) {
    if (writes_only && !r.write) continue;
    if (!r.bounds.overlaps(b)) continue;
    if (r.bytes.intersects(bytes)) add_dependency(deps, r.event);
  }
}

void HazardTracker::deps_for_read(const IntervalSet& bytes, EventList& deps) const {
  collect(bytes, true, deps);
}

void HazardTracker::deps_for_write(const IntervalSet& bytes, EventList& deps) const {
  collect(bytes, false, deps);
}

void HazardTracker::record_read(const IntervalSet& bytes, const Event& event) {
  prune();
  if (bytes.empty() || event.is_null()) return;
  records_.push_back({bytes, bytes.bounds(), event, false});
  check_if_enabled();
}

void HazardTracker::record_write(const IntervalSet& bytes, const Event& event) {
  prune();
  if (bytes.empty() || event.is_null()) return;
  // The new write depends on every older access to these bytes, so later accesses to them need
  // only wait for it.
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
  check_if_enabled();
}

EventList HazardTracker::pending() const {
  EventList out;
  out.reserve(records_.size());
  for (const Record& r : records_) out.push_back(r.event);
  return unique_pending(std::move(out));
}

EventList HazardTracker::pending_on(const IntervalSet& bytes) const {
  EventList out;
  if (bytes.empty()) return out;
  const Interval b = bytes.bounds();
  for (const Record& r : records_) {
    if (r.bounds.overlaps(b) && r.bytes.intersects(bytes)) out.push_back(r.event);
  }
  return unique_pending(std::move(out));
}

void HazardTracker::prune() {
  if (records_.size() < prune_at_) return;
  std::erase_if(records_, [](const Record& r) { return r.event.is_complete(); });
  prune_at_ = std::max(kPruneMinimum, 2 * records_.size());
}

void HazardTracker::check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_invariants();
#endif
}

void HazardTracker::check_invariants() const {
  auto fail = [](const std::string& what) {
    detail::throw_invariant("HazardTracker: " + what, __FILE__, __LINE__);
  };
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    const std::string name = "record " + std::to_string(i);
    r.bytes.check_invariants();
    if (r.bytes.empty()) fail(name + " holds no bytes");
    if (r.bounds != r.bytes.bounds()) {
      fail(name + " has bounds " + r.bounds.to_string() + " but bytes " + r.bytes.to_string());
    }
    if (r.event.is_null()) fail(name + " has no event");
  }
  if (prune_at_ < kPruneMinimum) fail("prune threshold below " + std::to_string(kPruneMinimum));
  if (records_.size() > kPairCheckLimit) return;
  for (std::size_t j = 0; j < records_.size(); ++j) {
    if (!records_[j].write) continue;
    for (std::size_t i = 0; i < j; ++i) {
      if (records_[i].bounds.overlaps(records_[j].bounds) &&
          records_[i].bytes.intersects(records_[j].bytes)) {
        fail("record " + std::to_string(i) + " overlaps the later write " + std::to_string(j) +
             " in " + records_[i].bytes.intersect(records_[j].bytes).to_string() +
             " (a write must shadow older accesses)");
      }
    }
  }
}

}  // namespace unimem
