#pragma once

// Hazard trackers of released buffers, emptied and kept for the buffers created next. A
// tracker's storage grows with the accesses in flight (floyd-warshall: about a thousand records
// per device and run, the host submitting 1024 launches ahead), and growing it again for every
// new buffer costs a run a dozen large allocations per tracker, each of which makes the
// allocator consolidate every small block freed since the last one (malloc_consolidate: about
// 0.3 ms per floyd-warshall run on the submitting thread).

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "coherence/hazard_tracker.hpp"

namespace unimem {

/// Thread-safe (buffers are destroyed outside the runtime's lock).
class TrackerPool {
 public:
  /// max_kept: trackers kept at most; max_bytes: storage kept at most (both bound the memory a
  /// runtime holds for buffers that are gone).
  explicit TrackerPool(std::size_t max_kept = 32, std::size_t max_bytes = 16U << 20U)
      : max_kept_(max_kept), max_bytes_(max_bytes) {}

  /// n empty trackers, kept ones first.
  [[nodiscard]] std::vector<HazardTracker> take(std::size_t n) {
    std::vector<HazardTracker> out(n);
    const std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < n && !kept_.empty(); ++i) {
      bytes_ -= kept_.back().capacity_bytes();
      out[i] = std::move(kept_.back());
      kept_.pop_back();
    }
    return out;
  }
  /// Keeps what fits of `trackers`, emptied; every event they hold must have finished.
  void give(std::vector<HazardTracker>&& trackers) {
    for (HazardTracker& t : trackers) t.clear();
    const std::lock_guard lock(mutex_);
    for (HazardTracker& t : trackers) {
      const std::size_t b = t.capacity_bytes();
      if (b == 0 || kept_.size() >= max_kept_ || bytes_ + b > max_bytes_) continue;
      bytes_ += b;
      kept_.push_back(std::move(t));
    }
  }
  [[nodiscard]] std::size_t kept() const {
    const std::lock_guard lock(mutex_);
    return kept_.size();
  }

 private:
  const std::size_t max_kept_;
  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::vector<HazardTracker> kept_;
  std::size_t bytes_ = 0;
};

}  // namespace unimem
