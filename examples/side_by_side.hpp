#pragma once

// The unimem version and the hand-written version of one workload run side by side in one
// process, as `unimem bench` reports them (issue 4, "The bench command and the demo").

#include <cstddef>
#include <span>
#include <string>

#include "examples/manual_opencl.hpp"
#include "examples/unimem_version.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {

struct SideBySide {
  std::string workload;
  unsigned devices = 0;
  std::string strategy;
  Problem problem;
  bool unimem_verified = false;  ///< unimem outputs match the CPU reference
  bool manual_verified = false;  ///< hand-written outputs match the CPU reference
  std::string first_mismatch;    ///< of whichever failed first, empty when both verified
  TransferBytes bytes;           ///< moved by the unimem version
  TransferBytes manual_bytes;    ///< moved by the hand-written version
  bool peer_to_peer = true;      ///< whether the devices copy peer to peer
  std::uint64_t bytes_min = 0;   ///< TransferBytes::total(peer_to_peer) of Workload::bytes_min
  std::uint64_t bytes_whole_buffer = 0;
  double seconds = 0;         ///< unimem version, best of the timed runs
  double manual_seconds = 0;  ///< hand-written version, best of the timed runs
};

/// Runs both versions `repeats` times each (after one untimed warm-up run each, which compiles
/// the kernels) on devices 0..count-1 of `runtime` and of `platform` (the same devices), verifies
/// both against the reference, and reports the last run's bytes and the best times.
[[nodiscard]] SideBySide run_side_by_side(const Workload& workload, Runtime& runtime,
                                          KernelProvider& kernels,
                                          const ClPlatformDevices& platform, unsigned count,
                                          const Problem& problem, int repeats);

/// One JSON object with the fields `unimem bench` prints (overhead_fraction excepted: it needs the
/// runtime's measurement modes).
[[nodiscard]] std::string to_json(const SideBySide& result);

}  // namespace unimem::examples
