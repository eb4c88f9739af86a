#pragma once

// Memory of released shared buffers, kept for the next buffer of the same size.
//
// Programs create and release buffers of the same sizes over and over (every run of a workload,
// every outer iteration of a solver). Handing a released buffer's device mirrors and home copy to
// the next buffer of that size skips the driver allocation and, above all, the page faults of
// fresh memory: on the 2-core CI machine a fresh 16 MiB region costs about 9 ms of page faults
// when first touched, against 1.7 ms to copy 16 MiB into memory already mapped, and POCL's CPU
// devices back every mirror with such host memory. The hand-written OpenCL versions of the
// workloads get the same recycling for free from the C allocator because their buffers are half
// the size (a block plus halo); full-size mirrors and the home copy exceed what glibc keeps.
//
// Recycled memory holds stale bytes. That is safe: the directory never marks a byte current on a
// device before a copy or a kernel wrote it there, and a SharedBuffer tracks which bytes of its
// home copy were never written and zeroes them before anything reads them (a new buffer still
// reads as zeros).
//
// Bounded: at most `budget` bytes are kept for the host and for each device; memory released
// beyond that is freed at once. When a device refuses an allocation (its capacity is used up), the
// memory kept on that device is freed and the allocation retried. Budget 0 disables recycling.
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "device/device.hpp"

namespace unimem {

namespace detail {
struct AllocationCacheTestAccess;  // defined by the tests that break a cache on purpose
}  // namespace detail

class AllocationCache {
 public:
  /// devices: not owned; they must outlive the cache. Devices are named by their index here.
  AllocationCache(std::vector<Device*> devices, std::uint64_t budget);
  /// Frees everything kept.
  ~AllocationCache();
  AllocationCache(const AllocationCache&) = delete;
  AllocationCache& operator=(const AllocationCache&) = delete;

  /// A device allocation of exactly `bytes` on device `device`: a kept one if there is one,
  /// else a new one from the device (freeing what is kept there and retrying if it is full).
  DeviceAllocation allocate(std::size_t device, std::uint64_t bytes);
  /// Takes back an allocation of `bytes` bytes of device `device` that no operation uses any more.
  void release(std::size_t device, DeviceAllocation allocation, std::uint64_t bytes);

  /// Host memory of `bytes` bytes, contents unspecified (never zeroed here).
  std::unique_ptr<std::byte[]> allocate_host(std::uint64_t bytes);
  /// Takes back host memory of `bytes` bytes that nothing uses any more.
  void release_host(std::unique_ptr<std::byte[]> memory, std::uint64_t bytes);

  /// Frees everything kept.
  void clear();
  /// Frees what is kept on device `device` (to make room under a device memory limit).
  void trim(std::size_t device);
  /// Whether an allocation of exactly `bytes` is kept on device `device` (allocate() would reuse
  /// it).
  [[nodiscard]] bool keeps(std::size_t device, std::uint64_t bytes) const;

  struct Counts {
    std::uint64_t reused = 0;     ///< allocations served from kept memory
    std::uint64_t allocated = 0;  ///< allocations that needed new memory
  };
  [[nodiscard]] Counts counts() const;
  /// Bytes of host memory kept for reuse.
  [[nodiscard]] std::uint64_t kept_host_bytes() const;
  /// Bytes of device memory kept for reuse on device `device`.
  [[nodiscard]] std::uint64_t kept_device_bytes(std::size_t device) const;

  /// Throws InvariantError unless every kept allocation is valid and filed under its own size,
  /// the byte counts equal the sums of what is kept, and no count exceeds the budget.
  void check_invariants() const;

 private:
  friend struct detail::AllocationCacheTestAccess;
  void free_device_locked(std::size_t device);
  void check_locked() const;
  void check_if_enabled_locked() const;

  std::vector<Device*> devices_;
  std::uint64_t budget_;
  mutable std::mutex mutex_;
  // Per device: kept allocations by size.
  std::vector<std::multimap<std::uint64_t, DeviceAllocation>> device_kept_;
  std::vector<std::uint64_t> device_kept_bytes_;
  std::multimap<std::uint64_t, std::unique_ptr<std::byte[]>> host_kept_;
  std::uint64_t host_kept_bytes_ = 0;
  Counts counts_;
};

}  // namespace unimem
