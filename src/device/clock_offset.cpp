#include "device/clock_offset.hpp"

#include <algorithm>

namespace unimem {

void ClockOffset::observe_submitted(std::int64_t submitted_ns, const EventTimes& t) {
  lower_ = std::max(lower_, submitted_ns - t.queued);
}

void ClockOffset::observe_done(std::int64_t done_ns, const EventTimes& t) {
  upper_ = std::min(upper_, done_ns - t.end);
}

std::int64_t ClockOffset::offset() const {
  if (has_lower() && has_upper()) return lower_ <= upper_ ? lower_ + (upper_ - lower_) / 2 : upper_;
  if (has_upper()) return upper_;
  if (has_lower()) return lower_;
  return 0;
}

std::int64_t ClockOffset::uncertainty() const {
  return has_lower() && has_upper() && lower_ <= upper_ ? (upper_ - lower_) / 2 : -1;
}

}  // namespace unimem
