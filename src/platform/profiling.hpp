#pragma once

// CL_PROFILING_COMMAND_* of the unimem platform. QUEUED and SUBMIT are host steady-clock times
// taken by the platform (QUEUED at enqueue, SUBMIT when the runtime accepted the command). A
// command on a profiling queue whose event the program holds keeps the operations that did its
// work (DeviceWork): a kernel's and a buffer copy's partitions, a read's copies from the devices
// straight into host memory, and the host copies of reads served from a current home copy and of
// writes, fills and unmaps (into the home copy; the runtime's host worker times them). START and
// END are the first start and last end of those operations: device times are placed on the host
// clock per device by the bounds of device/clock_offset.hpp (as the trace recorder does), host
// times are already on it. All are clamped so that QUEUED <= SUBMIT <= START <= END. A command
// with no such operation (a marker, a barrier, a migration, a map that need not fetch, an unmap
// of a read-only map) or one whose operations have no times reports SUBMIT = START = when the
// runtime accepted it and END = when the platform saw it complete. The devices time their
// operations from the first profiling queue's creation on (PlatformState::time_devices), so every
// command of a profiling queue has device times.

#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <unimem/event.hpp>
#include "device/clock_offset.hpp"
#include "device/opencl/opencl_api.hpp"

namespace unimem {
struct LaunchPlan;
}

namespace unimem::platform {

/// The operations of one command on a profiling queue. The command's submission fills
/// `partitions` before the command's event completes; the first profiling query after completion
/// works out the times once (an event's answers never change).
struct DeviceWork {
  std::mutex mutex;
  /// Runtime device index (whose clock the times are on; unused for host-clock times), event.
  std::vector<std::pair<std::size_t, Event>> partitions;
  bool answered = false;
  bool from_devices = false;  ///< every operation had times (on a device or the host worker)
  cl_ulong submit = 0, start = 0, end = 0;

  /// Adds operations (runtime device index, event), as RuntimeCore's read and write give them.
  void add(std::vector<std::pair<std::size_t, Event>> operations);
  /// Adds a launch's partition events (in the plan's order) with their devices.
  void add(const LaunchPlan& plan, std::span<const Event> events);
};

/// A command's SUBMIT, START and END on the host clock.
struct CommandTimes {
  cl_ulong submit = 0;
  cl_ulong start = 0;
  cl_ulong end = 0;
};

/// Where the platform's device clocks sit on the host clock, from the profiled commands' device
/// operations seen so far. Thread-safe.
class DeviceClocks {
 public:
  /// The times of a finished command queued at `queued` (host clock, before the runtime saw it),
  /// accepted by the runtime at `submit`, whose completion the host saw at `done`; from its
  /// operations' times, or nullopt when it has none or one of them has no times (its device does
  /// not profile, or the host worker does not time).
  std::optional<CommandTimes> place(DeviceWork& work, cl_ulong queued, cl_ulong submit,
                                    cl_ulong done);

 private:
  std::mutex mutex_;
  std::vector<ClockOffset> clocks_;  // by runtime device index
};

}  // namespace unimem::platform
