#pragma once

// What the coherence layer copied: bytes and copies per direction, and the adaptive strategy's
// replay counts.

#include <cstdint>
#include <string>

namespace unimem {

/// Bytes and number of copy operations in one direction.
struct CopyCount {
  std::uint64_t bytes = 0;
  std::uint64_t copies = 0;
  void add(std::uint64_t b) {
    bytes += b;
    ++copies;
  }
  CopyCount& operator+=(const CopyCount& o) {
    bytes += o.bytes;
    copies += o.copies;
    return *this;
  }
  friend bool operator==(const CopyCount&, const CopyCount&) = default;
};

/// Every copy the coherence layer issued, by direction (DESIGN.md, "How to know it works").
/// Adaptive replay copies are counted in the directions too; prefetch_bytes says how many of the
/// bytes were issued by replay rather than on demand.
struct TransferStats {
  CopyCount host_to_device;
  CopyCount device_to_host;
  CopyCount device_to_device;
  std::uint64_t prefetch_bytes = 0;
  /// adaptive: bytes a replay copied to a predicted reader that the reader has not read (they were
  /// overwritten first, or are still unread). With peer-to-peer copies, moved bytes minus these
  /// equal what the lazy strategy moves for the same program: the replays' only waste.
  std::uint64_t prefetch_unread_bytes = 0;
  std::uint64_t replays = 0;         ///< adaptive: copy sequences replayed after a kernel
  std::uint64_t mispredictions = 0;  ///< adaptive: replayed sequences that did not recur
  /// Device memory eviction (RuntimeOptions::device_memory): bytes current on a device that an
  /// eviction dropped there, the part of them written home first because no other copy held
  /// them (counted in d2h too), and bytes copied back to a device they had been evicted from.
  std::uint64_t evicted_bytes = 0;
  std::uint64_t eviction_writeback_bytes = 0;
  std::uint64_t reloaded_bytes = 0;
  /// Partial residency: bytes moved within a device when its allocations of a buffer merged into
  /// a larger one (BBMM bb_readin; device-local, not counted in d2d).
  std::uint64_t relocated_bytes = 0;
  /// Host reads (Runtime::read): of the d2h bytes, those copied from a device straight into the
  /// reader's memory because the home copy was stale there (the home copy stays stale), and the
  /// bytes copied out of the home copy on the host (a memcpy, not a transfer: not in total).
  std::uint64_t direct_read_bytes = 0;
  std::uint64_t home_read_bytes = 0;

  [[nodiscard]] std::uint64_t total_bytes() const {
    return host_to_device.bytes + device_to_host.bytes + device_to_device.bytes;
  }
  [[nodiscard]] std::uint64_t total_copies() const {
    return host_to_device.copies + device_to_host.copies + device_to_device.copies;
  }
  TransferStats& operator+=(const TransferStats& o);
  friend bool operator==(const TransferStats&, const TransferStats&) = default;
  /// {"h2d":{"bytes":..,"copies":..},"d2h":{..},"d2d":{..},"total":{..},"prefetch_bytes":..,
  ///  "prefetch_unread_bytes":..,"replays":..,"mispredictions":..,"evicted_bytes":..,
  ///  "eviction_writeback_bytes":..,"reloaded_bytes":..,"relocated_bytes":..,
  ///  "direct_read_bytes":..,"home_read_bytes":..}
  [[nodiscard]] std::string to_json() const;
};

}  // namespace unimem
