#include "platform/profiling.hpp"

#include <algorithm>
#include <limits>

#include "schedule/launch_plan.hpp"

namespace unimem::platform {

void DeviceWork::add(std::vector<std::pair<std::size_t, Event>> operations) {
  std::lock_guard lock(mutex);
  for (auto& o : operations) partitions.push_back(std::move(o));
}

void DeviceWork::add(const LaunchPlan& plan, std::span<const Event> events) {
  std::lock_guard lock(mutex);
  for (std::size_t i = 0; i < std::min(events.size(), plan.partitions.size()); ++i) {
    partitions.emplace_back(plan.partitions[i].device, events[i]);
  }
}

std::optional<CommandTimes> DeviceClocks::place(DeviceWork& work, cl_ulong queued, cl_ulong submit,
                                                cl_ulong done) {
  std::lock_guard work_lock(work.mutex);
  if (!work.answered) {
    work.answered = true;
    std::vector<std::pair<std::size_t, EventTimes>> times;
    for (const auto& [device, event] : work.partitions) {
      std::optional<EventTimes> t = event.times();
      if (!t) return std::nullopt;  // answered: host times from now on
      times.emplace_back(device, *t);
    }
    if (times.empty()) return std::nullopt;
    const auto q = static_cast<std::int64_t>(queued);
    const auto d = static_cast<std::int64_t>(done);
    std::int64_t start = std::numeric_limits<std::int64_t>::max();
    std::int64_t end = std::numeric_limits<std::int64_t>::min();
    {
      std::lock_guard lock(mutex_);
      for (const auto& [device, t] : times) {
        std::int64_t offset = 0;
        if (!t.host_clock) {
          if (clocks_.size() <= device) clocks_.resize(device + 1);
          clocks_[device].observe_submitted(q, t);
          clocks_[device].observe_done(d, t);
          offset = clocks_[device].offset();
        }
        start = std::min(start, t.start + offset);
        end = std::max(end, t.end + offset);
      }
    }
    // The bounds keep START after QUEUED and END before the host saw the end unless the device
    // clock drifts; the clamps keep the spec's order even then.
    start = std::max(start, q);
    end = std::max(end, start);
    work.start = static_cast<cl_ulong>(start);
    work.end = static_cast<cl_ulong>(end);
    work.submit = std::clamp(submit, queued, work.start);
    work.from_devices = true;
  }
  if (!work.from_devices) return std::nullopt;
  return CommandTimes{work.submit, work.start, work.end};
}

}  // namespace unimem::platform
