#pragma once

// `unimem selftest pointer`: the randomized differential check of the pointer layer
// (<unimem/unimem.h>). A seeded random program of host accesses through the one pointer (plain
// memcpy into and out of the application view, element stores and loads, stores from two
// threads at once, um_memcpy / um_memset, read / pread / fread into shared memory and write /
// fwrite out of it) interleaved with kernel launches split over 1..N OpenCL devices (whole and
// interior pointers) and um_sync, run against the same program on flat memory
// (selftest/flat_memory.hpp). Every host read and the final contents must match byte for byte.

#include <cstddef>
#include <cstdint>
#include <string>

namespace unimem {

struct PointerSelftestOptions {
  std::uint64_t seed = 1;
  std::size_t ops = 200;
  std::size_t devices = 2;        ///< launches split over the first `devices` OpenCL devices
  std::string protocol = "lazy";  ///< batch | lazy | rolling
  std::size_t allocations = 3;    ///< >= 2
  std::size_t block_size = 16384;
  std::uint64_t max_allocation_size = 256 << 10;
};

struct PointerSelftestResult {
  bool ok = false;
  std::uint64_t mismatched_bytes = 0;
  std::uint64_t faults = 0;
  std::uint64_t read_faults = 0;
  std::uint64_t write_faults = 0;
  /// Bytes between host views and the devices' side: fetched + published + direct.
  std::uint64_t bytes_copied = 0;
  std::uint64_t bytes_fetched = 0;
  std::uint64_t bytes_published = 0;
  std::uint64_t bytes_direct = 0;
  std::uint64_t eager_blocks = 0;
  std::uint64_t device_bytes = 0;  ///< the runtime's own copies (home <-> devices)
  std::size_t launches = 0;
  std::uint64_t partitions = 0;  ///< device partitions the launches were split into
  std::size_t io_calls = 0;
  std::size_t host_checks = 0;  ///< host reads compared with the flat memory
  std::string first_mismatch;   ///< where the first mismatching byte was found
  std::string error;            ///< what failed, if a call returned an error
  /// {"ok":..,"seed":..,"ops":..,"devices":..,"protocol":..,"mismatched_bytes":..,"faults":..,
  /// "bytes_copied":..,...}
  [[nodiscard]] std::string to_json(const PointerSelftestOptions& options) const;
};

/// Runs the program; throws PreconditionError for bad options (unknown protocol, more devices
/// than exist, fewer than two allocations). Uses the process's pointer runtime (the C API's
/// state): it sets the protocol, block size and devices, and frees everything it allocated.
PointerSelftestResult run_pointer_selftest(const PointerSelftestOptions& options);

}  // namespace unimem
