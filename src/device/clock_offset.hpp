#pragma once

// Where a device's profiling clock sits on the host clock. OpenCL stamps CL_PROFILING_COMMAND_*
// on the device's own clock; host = device + offset. A Cristian-style bound (as in clock
// synchronisation) from each profiled operation: the host read its clock just before the enqueue
// call, which stamped QUEUED, so offset >= submitted - queued; and it saw completion after END,
// so offset <= done - end. The trace recorder and the OpenCL platform's profiling answers both
// place device times on the host clock with it.

#include <cstdint>
#include <limits>

#include <unimem/event.hpp>

namespace unimem {

/// The bounds on one device clock's offset, tightened by every operation observed. Not
/// thread-safe (callers lock).
class ClockOffset {
 public:
  /// An operation handed to the driver after the host read submitted_ns, with device times `t`.
  void observe_submitted(std::int64_t submitted_ns, const EventTimes& t);
  /// The host saw the operation with device times `t` complete at done_ns.
  void observe_done(std::int64_t done_ns, const EventTimes& t);
  /// The middle of the bounds; if they cross (clock drift), the upper bound, so that nothing
  /// appears to end after the host saw it end; a single bound as it is; 0 without any.
  [[nodiscard]] std::int64_t offset() const;
  /// Half the width of the bounds, or -1 when they are not both known or cross.
  [[nodiscard]] std::int64_t uncertainty() const;
  [[nodiscard]] bool known() const { return has_lower() || has_upper(); }

 private:
  [[nodiscard]] bool has_lower() const {
    return lower_ != std::numeric_limits<std::int64_t>::min();
  }
  [[nodiscard]] bool has_upper() const {
    return upper_ != std::numeric_limits<std::int64_t>::max();
  }

  std::int64_t lower_ = std::numeric_limits<std::int64_t>::min();
  std::int64_t upper_ = std::numeric_limits<std::int64_t>::max();
};

}  // namespace unimem
