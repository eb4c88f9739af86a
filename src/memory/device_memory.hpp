#pragma once

// The device memory of one runtime: per device a limit, the allocations shared buffers hold
// there, and the eviction that makes room when a new allocation does not fit.
//
// BBMM (seed 001_9219257c3045faa0.txt, sections 5-6, Algorithms 3-4) keeps per GPU an in-use list
// (boxes the running tiles need, with use counts) and an unused list (boxes no running tile
// needs, least recently used first); an allocation that does not fit evicts unused boxes from
// the front, writing dirty ones back first (box-out), and a later tile fetches them again
// (box-in). Here a box is one Residency allocation (a run of a buffer's bytes on the device;
// a buffer may have several per device). This layer chooses the victims; what must be written home
// before a victim is freed is decided by the directory, one layer up: Residency::evict asks its
// EvictionClient (the SharedBuffer, coherence layer) to box the bytes out.
//
// Use counts: an allocation is in use while an operation being issued needs it (use() / unuse()
// bracket a whole launch, from its input copies to the publication of its writes, so the
// strategies' copies after a kernel can never evict what the kernel writes). Operations already
// issued and still running on an unused allocation make it busy (EvictionClient::busy_on): busy
// victims are taken only when no idle one is left, and box-out waits for their operations.
//
// Retiring allocations: a box merged into a larger one (Residency::ensure) is not freed at once,
// because operations issued on it, and the copies that move its bytes, may still run. It stays
// here, counted against the limit, until its owner sees them finished and releases it. It is
// never evicted (nothing in it is current any more); when an allocation does not fit, retiring
// allocations are reclaimed (waiting for their operations) before anything is evicted.
//
// Thread-safe (one mutex; eviction calls back into the victim's owner under it, so an owner's
// box-out must not call back into this object).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.hpp"
#include "memory/allocation_cache.hpp"

namespace unimem {

class Residency;

/// The memory of one device as DeviceMemory accounts it.
struct DeviceMemoryStats {
  std::uint64_t limit = 0;            ///< bytes the runtime may allocate on the device
  std::uint64_t held_bytes = 0;       ///< bytes of the allocations buffers hold now
  std::uint64_t peak_held_bytes = 0;  ///< most held_bytes since the start or reset_peaks()
  /// Most held_bytes, less the retiring bytes, at a settle() (the end of a launch):
  /// peak_held_bytes without the moments when a box that grows exists twice (old and merged,
  /// Residency::ensure) or a launch's allocations are being made.
  std::uint64_t peak_settled_bytes = 0;
  /// Bytes of held_bytes in retiring allocations (merged away, freed once their operations end).
  std::uint64_t retiring_bytes = 0;
  std::uint64_t reclaims = 0;       ///< retiring allocations freed early (waiting) to make room
  std::uint64_t evicted_bytes = 0;  ///< bytes of allocations freed by eviction
  std::uint64_t evictions = 0;      ///< allocations freed by eviction
  std::uint64_t refusals = 0;       ///< allocations the driver refused under the limit
};

class DeviceMemory {
 public:
  using EntryId = std::uint64_t;

  /// devices: not owned, they must outlive this object; allocations come from and go back to
  /// cache. cap: bytes allowed per device (0: the device's own capacity); the limit of a device
  /// is the smaller of the two.
  DeviceMemory(std::vector<Device*> devices, AllocationCache& cache, std::uint64_t cap);
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  [[nodiscard]] std::size_t device_count() const { return devices_.size(); }
  /// The limit of device: min(cap, Device::capacity()).
  [[nodiscard]] std::uint64_t limit(std::size_t device) const;

  struct Grant {
    DeviceAllocation allocation;
    EntryId id = 0;
  };
  /// An allocation of `bytes` on device for owner, to hold the owner's buffer bytes from `base`
  /// on (handed to it through Residency::adopt before this returns), unused and most recently
  /// used. When it does
  /// not fit under the limit (memory kept by the cache counts too), or the driver refuses it,
  /// first the cache's kept memory, then retiring allocations (their owner waits for their
  /// operations) and then least recently used unused allocations are evicted (idle ones before
  /// busy ones) until it fits. Retiring allocations whose operations have finished are freed
  /// first in any case. Throws OutOfDeviceMemory naming the device,
  /// owner->describe() and the bytes when it cannot fit even then (larger than the limit or the
  /// device's largest allocation, or everything left is in use).
  Grant allocate(std::size_t device, std::uint64_t bytes, Residency& owner, std::uint64_t base = 0);
  /// Whether an allocation of `bytes` on device fits under its limit now, without evicting
  /// anything (memory the cache keeps counts as free).
  [[nodiscard]] bool fits_without_eviction(std::size_t device, std::uint64_t bytes) const;
  /// Evicts one unused allocation now (box-out through its owner, then freed; counted in
  /// evictions and evicted_bytes like any eviction): the owner has no room to merge it into a
  /// larger one, or an out-of-core chunk replaces it (Residency::Placement::replace). Throws
  /// PreconditionError if it is in use.
  void evict(std::size_t device, EntryId id);
  /// The owner gives the allocation back (no operation may still use it); it goes to the cache
  /// and the owner forgets it.
  void release(std::size_t device, EntryId id);
  /// The owner no longer holds bytes in the allocation, but operations issued on it may still
  /// run: it stays counted until release(), is never evicted, and allocate() may reclaim it
  /// (Residency::reclaim waits for those operations) when nothing else makes room. Unused
  /// allocations only; use() / unuse() still pin it (a buffer being destroyed).
  void retire(std::size_t device, EntryId id);
  /// Use count +1 (the allocation moves to the in-use list) / -1 (at 0 it becomes the most
  /// recently used of the unused list).
  void use(std::size_t device, EntryId id);
  void unuse(std::size_t device, EntryId id);
  /// The allocation was used: it becomes the most recently used of its list.
  void touch(std::size_t device, EntryId id);
  /// The use count of an allocation (for tests).
  [[nodiscard]] std::uint32_t uses(std::size_t device, EntryId id) const;
  /// The allocations of device in the order of its in-use, unused (least recently used first)
  /// and retiring lists, each list ended by a 0 (for invariant checks and tests: what eviction
  /// would choose depends on nothing else).
  [[nodiscard]] std::vector<EntryId> list_order(std::size_t device) const;

  [[nodiscard]] DeviceMemoryStats stats(std::size_t device) const;
  /// Evictions on every device so far, without taking the lock: a launch that repeats an earlier
  /// one (RuntimeCore::launch_partitioned) compares it with the count after that one, since an
  /// eviction changes both the directory and the boxes the earlier launch found.
  [[nodiscard]] std::uint64_t eviction_count() const {
    return evictions_.load(std::memory_order_relaxed);
  }
  /// Starts the peaks over at the bytes held now (to measure one run of a program).
  void reset_peaks();
  /// A launch has finished making and merging its allocations: the bytes held now count towards
  /// peak_settled_bytes.
  void settle();

  /// Throws InvariantError unless, per device, every allocation is on exactly one list (in use
  /// iff its use count is positive, else retiring iff it was retired), its owner agrees it holds
  /// it, the held and retiring bytes are the sums of the allocations, and the peak is at least
  /// what is held.
  void check_invariants() const;

 private:
  struct Entry {
    DeviceAllocation allocation;
    Residency* owner = nullptr;
    std::uint32_t uses = 0;
    bool retiring = false;
    std::list<EntryId>::iterator position;  // in in_use, unused or retiring
  };
  struct PerDevice {
    std::unordered_map<EntryId, Entry> entries;
    std::list<EntryId> in_use;    // order of first use; any order would do
    std::list<EntryId> unused;    // least recently used first
    std::list<EntryId> retiring;  // oldest first; not in use
    DeviceMemoryStats stats;
    /// The list an allocation with no use belongs on.
    std::list<EntryId>& idle_list(const Entry& e) { return e.retiring ? retiring : unused; }
    std::list<EntryId>& list_of(const Entry& e) { return e.uses > 0 ? in_use : idle_list(e); }
  };

  Entry& entry_locked(std::size_t device, EntryId id, const char* what);
  /// Frees the oldest retiring allocation that is not in use, after its owner waited for its
  /// operations; false when there is none.
  bool reclaim_one_locked(std::size_t device);
  /// Frees the retiring allocations whose operations have all finished (no waiting), so that
  /// memory only waiting for its owner's next reap() is not counted against a new allocation.
  void free_finished_retiring_locked(std::size_t device);
  /// Takes retiring allocation id off the books after its owner forgot it (reclaim).
  void drop_retiring_locked(std::size_t device, EntryId id, const DeviceAllocation& a);
  /// Evicts the least recently used unused allocation (an idle one if there is one); false when
  /// there is none.
  bool evict_one_locked(std::size_t device);
  /// Box-out of the unused allocation id, then frees it and counts the eviction.
  void evict_locked(std::size_t device, EntryId id);
  void check_locked() const;
  void check_if_enabled_locked() const;

  std::vector<Device*> devices_;
  AllocationCache& cache_;
  std::uint64_t cap_;
  mutable std::mutex mutex_;
  /// Set (under mutex_) when held or retiring bytes changed since the last settle().
  std::atomic<bool> settle_due_{true};
  std::vector<PerDevice> per_device_;
  EntryId next_id_ = 1;
  std::atomic<std::uint64_t> evictions_{0};  // eviction_count()
};

}  // namespace unimem
