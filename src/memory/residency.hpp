#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "device/device.hpp"
#include "memory/allocation_cache.hpp"
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
/// Not thread-safe: its owner serialises calls. The cache and the devices must outlive it.
class Residency {
 public:
  /// A buffer of buffer_size bytes on device_count devices, holding no allocation yet.
  Residency(std::uint64_t buffer_size, std::size_t device_count, AllocationCache& allocations);
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
  /// its contents are unspecified until a copy or a kernel writes them). Throws DeviceError if
  /// the device cannot allocate it.
  ResidentAllocation ensure(std::size_t device, const Interval& bytes);
  /// The allocation a kernel on device is given: it covers the whole buffer.
  ResidentAllocation ensure_whole(std::size_t device) { return ensure(device, Interval{0, size_}); }
  /// Bytes allocated for this buffer on device (0 before its first use).
  [[nodiscard]] std::uint64_t allocated_bytes(std::size_t device) const;

  /// Hands device's allocations back to the cache; no pending operation may still use them.
  /// A driver that fails to free them leaks them (nothing else can be done).
  void release(std::size_t device);
  /// release() on every device.
  void release_all();

  /// Throws InvariantError unless every allocation is valid, lies on a known device and covers
  /// the whole buffer from its start.
  void check_invariants() const;

 private:
  friend struct detail::ResidencyTestAccess;
  void check_if_enabled() const;

  std::uint64_t size_;
  AllocationCache& allocations_;
  std::vector<DeviceAllocation> mirrors_;  // per device; invalid before the first use
};

}  // namespace unimem
