#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "memory/allocation_cache.hpp"
#include "memory/device_memory.hpp"
#include "region/interval.hpp"

namespace unimem {

namespace detail {
struct ResidencyTestAccess;  // defined by the tests that break a Residency on purpose
}  // namespace detail

/// A device allocation that holds the bytes [base, base + allocation.size) of a buffer: buffer
/// byte b lies at offset b - base of the allocation.
struct ResidentAllocation {
  DeviceAllocation allocation;
  std::uint64_t base = 0;

  /// The buffer bytes the allocation holds.
  [[nodiscard]] Interval covers() const { return Interval{base, base + allocation.size}; }
  /// The allocation offset of buffer byte buffer_offset, which must lie in covers() or at its end.
  [[nodiscard]] std::uint64_t offset_of(std::uint64_t buffer_offset) const;
  friend bool operator==(const ResidentAllocation&, const ResidentAllocation&) = default;
};

/// What a Residency's owner (the SharedBuffer, one layer up) does when DeviceMemory evicts one of
/// its allocations: the write-back decision needs the coherence directory, which this layer may
/// not see (cmake/layers.cmake: memory uses device only). Both hooks are called under
/// DeviceMemory's lock and must not call back into it (no allocation, no use counts).
class EvictionClient {
 public:
  virtual ~EvictionClient() = default;
  /// Whether operations issued on the owner's allocation on device are still running.
  [[nodiscard]] virtual bool busy_on(std::size_t device) const = 0;
  /// Box-out (BBMM Algorithm 4): the allocation on device is about to be freed. Write home the
  /// bytes it alone holds, stop counting it as a holder of any byte, and wait until no issued
  /// operation uses it any more. May throw; then the allocation stays.
  virtual void box_out(std::size_t device) = 0;
  /// The owner, for error messages ("buffer 'a' (#1, 64 bytes)").
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// Where the bytes of one shared buffer live on each device: per device, the allocations that
/// hold them, made on first use from an AllocationCache and handed back to it when released.
///
/// The question callers ask is "which allocation on device d holds these bytes, and where",
/// so that partial residency (allocations covering only the bytes a device uses; BBMM, seed
/// 001_9219257c3045faa0.txt section 4) can answer it differently. Today the answer is always the
/// device's one full-size mirror: kernels index buffers from their start, so a kernel's
/// allocation must cover the whole buffer (drivers that back device memory with host pages, like
/// POCL, only fault in the pages a device touches).
///
/// Two ways to get device memory: straight from an AllocationCache (no limit, no eviction), or
/// through a runtime's DeviceMemory, which accounts every allocation against the device's limit,
/// keeps the use counts and LRU lists, and may evict an allocation of this Residency to make room
/// for another buffer (asking the EvictionClient to box it out first).
///
/// Not thread-safe: its owner serialises calls (DeviceMemory changes the allocations only under
/// its own lock, from allocate / release / eviction). The cache, the DeviceMemory, the client and
/// the devices must outlive it.
class Residency {
 public:
  /// A buffer of buffer_size bytes on device_count devices, holding no allocation yet; memory
  /// comes from the cache, without a limit.
  Residency(std::uint64_t buffer_size, std::size_t device_count, AllocationCache& allocations);
  /// The same, with memory from `memory` (under its limits, evictable; `client` boxes out).
  Residency(std::uint64_t buffer_size, std::size_t device_count, AllocationCache& allocations,
            DeviceMemory& memory, EvictionClient& client);
  /// Releases every allocation (no operation may still use them).
  ~Residency();
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;

  [[nodiscard]] std::uint64_t buffer_size() const { return size_; }
  [[nodiscard]] std::size_t device_count() const { return mirrors_.size(); }

  /// The allocation on device that holds all of bytes, or nullopt if the device has none.
  [[nodiscard]] std::optional<ResidentAllocation> find(std::size_t device,
                                                       const Interval& bytes) const;
  /// Whether device holds an allocation covering bytes.
  [[nodiscard]] bool covers(std::size_t device, const Interval& bytes) const {
    return find(device, bytes).has_value();
  }
  /// An allocation on device that holds bytes, allocated on first use (fresh or recycled memory:
  /// its contents are unspecified until a copy or a kernel writes them), and now the most
  /// recently used. Throws DeviceError (OutOfDeviceMemory under a DeviceMemory) if the device
  /// cannot allocate it, even after eviction.
  ResidentAllocation ensure(std::size_t device, const Interval& bytes);
  /// The allocation a kernel on device is given: it covers the whole buffer.
  ResidentAllocation ensure_whole(std::size_t device) { return ensure(device, Interval{0, size_}); }
  /// ensure_whole(device), and the allocation is in use (not evictable) until the matching
  /// end_use(device). Uses nest. Without a DeviceMemory only the allocation is made.
  ResidentAllocation begin_use(std::size_t device);
  void end_use(std::size_t device);
  /// Every allocation stays in use until released (the buffer is being destroyed: its pending
  /// operations may still run, so nothing may evict it meanwhile).
  void retire();
  /// Bytes allocated for this buffer on device (0 before its first use).
  [[nodiscard]] std::uint64_t allocated_bytes(std::size_t device) const;

  /// Hands device's allocations back to the cache; no pending operation may still use them.
  /// A driver that fails to free them leaks them (nothing else can be done).
  void release(std::size_t device);
  /// release() on every device.
  void release_all();

  /// Throws InvariantError unless every allocation is valid, lies on a known device and covers
  /// the whole buffer from its start, and (under a DeviceMemory) is registered there.
  void check_invariants() const;

 private:
  friend struct detail::ResidencyTestAccess;
  friend class DeviceMemory;  // calls the hooks below under its lock
  void check_if_enabled() const;
  // DeviceMemory's hooks.
  void adopt(std::size_t device, DeviceAllocation allocation, DeviceMemory::EntryId id);
  DeviceAllocation forget(std::size_t device);
  DeviceAllocation evict(std::size_t device);  // box-out through the client, then forget
  [[nodiscard]] bool busy_on(std::size_t device) const;
  [[nodiscard]] bool holds(std::size_t device, const DeviceAllocation& allocation) const;
  [[nodiscard]] std::string describe() const;

  std::uint64_t size_;
  AllocationCache& allocations_;
  DeviceMemory* memory_ = nullptr;          // null: allocations straight from the cache
  EvictionClient* client_ = nullptr;        // set with memory_
  std::vector<DeviceAllocation> mirrors_;   // per device; invalid before the first use
  std::vector<DeviceMemory::EntryId> ids_;  // per device, under memory_: its DeviceMemory entry
  bool retired_ = false;
};

}  // namespace unimem
