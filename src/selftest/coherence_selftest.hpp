#pragma once

// `unimem selftest coherence`: the randomized differential check of the coherence layer and the
// runtime (a random program on host-driver devices against a flat memory,
// selftest/flat_memory.hpp).

#include <cstddef>
#include <cstdint>
#include <string>

#include "coherence/update_strategy.hpp"

namespace unimem {

struct CoherenceSelftestOptions {
  std::uint64_t seed = 1;
  std::size_t ops = 200;
  std::size_t devices = 4;  ///< 1..16
  std::size_t buffers = 3;  ///< >= 1
  UpdateStrategy strategy = UpdateStrategy::lazy;
  bool peer_copies = true;  ///< false forces device-to-device traffic through the host
  std::uint64_t max_buffer_size = 512;
  /// Device memory cap per device (RuntimeOptions::device_memory; 0: none). A kernel uses at
  /// most 3 buffers, so a cap of at least 3 * max_buffer_size always fits a launch; smaller caps
  /// are rejected up front. Caps close to that make most operations evict.
  std::uint64_t device_memory = 0;
  /// Non-empty: the devices are simulated devices of this preset (src/device/sim/) over the host
  /// devices; the model then decides which pairs copy peer to peer.
  std::string sim_preset;
  /// RuntimeOptions::direct_host_reads (the oracle's copy count follows it).
  bool direct_reads = true;
};

struct CoherenceSelftestResult {
  bool ok = false;
  std::uint64_t mismatched_bytes = 0;
  std::uint64_t bytes_copied = 0;
  std::uint64_t minimum_bytes = 0;  ///< what the lazy protocol must copy for this program
  std::uint64_t copies = 0;
  std::uint64_t replays = 0;                ///< adaptive: copy sequences replayed
  std::uint64_t mispredictions = 0;         ///< adaptive: replays that did not recur
  std::uint64_t prefetch_bytes = 0;         ///< adaptive: bytes copied by replays
  std::uint64_t prefetch_unread_bytes = 0;  ///< adaptive: replayed bytes no reader used
  std::size_t launches = 0;
  std::size_t partitioned_launches = 0;
  std::size_t cycle_launches = 0;       ///< launches of cycles (each passing its repeat token)
  std::uint64_t repeated_launches = 0;  ///< of all launches, those the runtime repeated
  std::uint64_t deferred_record_launches = 0;  ///< of those, with deferred hazard records
  std::uint64_t periodic_replays = 0;          ///< of those, replayed as a verified periodic cycle
  std::size_t host_reads = 0;
  std::size_t host_writes = 0;
  std::uint64_t evictions = 0;                 ///< allocations evicted, over all devices
  std::uint64_t evicted_bytes = 0;             ///< current bytes dropped by evictions
  std::uint64_t eviction_writeback_bytes = 0;  ///< of them, written home first
  std::uint64_t reloaded_bytes = 0;            ///< bytes copied back after an eviction
  std::uint64_t relocated_bytes = 0;  ///< bytes moved within a device when its boxes merged
  std::uint64_t reclaims = 0;  ///< merged-away boxes freed early (after their users) to make room
  std::uint64_t peak_device_bytes = 0;  ///< most bytes held on one device
  std::uint64_t direct_read_bytes = 0;  ///< host reads: bytes copied from devices to the reader
  std::uint64_t home_read_bytes = 0;    ///< host reads: bytes copied out of the home copy
  std::string error;                    ///< exception text if the run threw
  /// One JSON line: {"ok":..,"seed":..,"ops":..,"devices":..,"buffers":..,"strategy":..,
  /// "mismatched_bytes":..,"bytes_copied":..,"minimum_bytes":..,...}
  [[nodiscard]] std::string to_json(const CoherenceSelftestOptions& options) const;
};

/// The randomized differential checker: a seeded random program of host writes, host reads and
/// kernel launches (single-device and partitioned, random and sometimes overlapping read / write /
/// may-write sets, many in flight at once) runs through a Runtime over `devices` host-driver
/// devices and, op by op, on one flat memory. Every host read and the final contents must match
/// byte for byte; under the lazy strategy the bytes copied must equal the protocol's minimum
/// (each byte a reader lacks is copied once, plus a write-back when no peer path exists; with
/// direct reads a host read copies the bytes the host lacks again each time); under
/// adaptive with peer copies, the minimum plus the replayed bytes no reader used (both only when
/// no eviction happened: an eviction adds its write-back and the re-fetches). Under a device
/// memory cap no device may ever hold more than the cap. The same options always generate the
/// same program.
CoherenceSelftestResult run_coherence_selftest(const CoherenceSelftestOptions& options);

}  // namespace unimem
