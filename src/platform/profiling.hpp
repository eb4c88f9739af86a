#pragma once

// CL_PROFILING_COMMAND_* of the unimem platform. QUEUED, SUBMIT and END (when no device times
// exist) are host steady-clock times taken by the platform. A kernel command on a profiling queue
// also keeps its partitions' device events (DeviceWork); the platform's devices profile
// (PlatformState turns it on), so its START and END come from the devices' own times, placed on
// the host clock per device by the bounds of device/clock_offset.hpp (as the trace recorder
// does), and clamped so that QUEUED <= SUBMIT <= START <= END.

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <unimem/event.hpp>
#include "device/clock_offset.hpp"
#include "device/opencl/opencl_api.hpp"

namespace unimem::platform {

/// The device work of one kernel command on a profiling queue. The launch fills `partitions`
/// before the command's event completes; the first profiling query after completion works out
/// the times once (an event's answers never change).
struct DeviceWork {
  std::mutex mutex;
  std::vector<std::pair<std::size_t, Event>> partitions;  ///< runtime device index, kernel event
  bool answered = false;
  bool from_devices = false;  ///< every partition had device times
  cl_ulong submit = 0, start = 0, end = 0;
};

/// A command's SUBMIT, START and END on the host clock.
struct CommandTimes {
  cl_ulong submit = 0;
  cl_ulong start = 0;
  cl_ulong end = 0;
};

/// Where the platform's device clocks sit on the host clock, from the profiled kernel commands
/// seen so far. Thread-safe.
class DeviceClocks {
 public:
  /// The times of a finished command queued at `queued` (host clock, before the runtime saw it),
  /// accepted by the runtime at `submit`, whose completion the host saw at `done`; from its
  /// partitions' device times, or nullopt when one of them has none (its device does not profile).
  std::optional<CommandTimes> place(DeviceWork& work, cl_ulong queued, cl_ulong submit,
                                    cl_ulong done);

 private:
  std::mutex mutex_;
  std::vector<ClockOffset> clocks_;  // by runtime device index
};

}  // namespace unimem::platform
