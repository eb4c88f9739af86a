#include "device/trace_recorder.hpp"

#include "device/clock_offset.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include <unimem/errors.hpp>

namespace unimem {

const char* to_string(TraceCategory category) {
  switch (category) {
    case TraceCategory::kernel:
      return "kernel";
    case TraceCategory::copy_h2d:
      return "copy h2d";
    case TraceCategory::copy_d2h:
      return "copy d2h";
    case TraceCategory::copy_d2d:
      return "copy d2d";
    case TraceCategory::host_write:
      return "host write";
    case TraceCategory::host_read:
      return "host read";
    case TraceCategory::eviction:
      return "eviction";
  }
  return "?";
}

const char* to_string(TraceLane lane) {
  switch (lane) {
    case TraceLane::host:
      return "host accesses";
    case TraceLane::kernels:
      return "kernels";
    case TraceLane::copy_in:
      return "copy engine in (h2d, d2d)";
    case TraceLane::copy_out:
      return "copy engine out (d2h)";
    case TraceLane::evictions:
      return "evictions";
  }
  return "?";
}

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();

}  // namespace

struct TraceRecorder::State {
  struct Entry {
    TraceLane lane = TraceLane::host;
    std::size_t device = 0;
    TraceCategory category = TraceCategory::kernel;
    std::string name;
    Event event;  // null for spans
    std::int64_t submitted = kNone;
    std::int64_t done = kNone;   // operations: when the host saw it complete; spans: the end
    std::int64_t start = kNone;  // spans only
    std::vector<TraceArg> args;
  };

  std::string path;
  std::vector<std::string> device_names;
  std::int64_t origin = 0;
  mutable std::mutex mutex;
  std::vector<Entry> entries;
};

TraceRecorder::TraceRecorder(std::string path, std::vector<std::string> device_names)
    : state_(std::make_shared<State>()) {
  state_->path = std::move(path);
  state_->device_names = std::move(device_names);
  state_->origin = now_ns();
}

TraceRecorder::~TraceRecorder() = default;

std::int64_t TraceRecorder::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const std::string& TraceRecorder::path() const { return state_->path; }

void TraceRecorder::operation(TraceLane lane, std::size_t device, TraceCategory category,
                              std::string name, const Event& event, std::int64_t submitted_ns,
                              std::vector<TraceArg> args) {
  std::size_t index = 0;
  {
    std::lock_guard lock(state_->mutex);
    index = state_->entries.size();
    state_->entries.push_back({lane, device, category, std::move(name), event, submitted_ns, kNone,
                               kNone, std::move(args)});
  }
  // Outside the lock: an event that has finished runs the callback at once, on this thread.
  event.on_complete([state = state_, index] {
    const std::int64_t t = now_ns();
    std::lock_guard lock(state->mutex);
    state->entries[index].done = t;
  });
}

void TraceRecorder::span(TraceLane lane, std::size_t device, TraceCategory category,
                         std::string name, std::int64_t start_ns, std::int64_t end_ns,
                         std::vector<TraceArg> args) {
  std::lock_guard lock(state_->mutex);
  state_->entries.push_back(
      {lane, device, category, std::move(name), Event{}, kNone, end_ns, start_ns, std::move(args)});
}

std::size_t TraceRecorder::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->entries.size();
}

std::string TraceRecorder::to_json() const {
  std::vector<State::Entry> entries;
  {
    std::lock_guard lock(state_->mutex);
    entries = state_->entries;
  }
  const std::size_t devices = state_->device_names.size();
  std::vector<std::optional<EventTimes>> times(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].event.is_null()) times[i] = entries[i].event.times();
  }

  // Device clocks onto the host clock, per device (device/clock_offset.hpp), bounded by every
  // profiled command of the device (the bounds only tighten as commands accumulate).
  std::vector<ClockOffset> clock(devices);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const State::Entry& e = entries[i];
    if (!times[i] || times[i]->host_clock || e.device >= devices) continue;
    clock[e.device].observe_submitted(e.submitted, *times[i]);
    if (e.done != kNone) clock[e.device].observe_done(e.done, *times[i]);
  }
  std::vector<std::int64_t> offset(devices, 0);
  nlohmann::ordered_json clocks = nlohmann::ordered_json::array();
  for (std::size_t d = 0; d < devices; ++d) {
    offset[d] = clock[d].offset();
    nlohmann::ordered_json c;
    c["device"] = d;
    c["device_clock_offset_ns"] = offset[d];
    c["offset_uncertainty_ns"] = clock[d].uncertainty();
    clocks.push_back(std::move(c));
  }

  const auto us = [origin = state_->origin](std::int64_t ns) {
    return static_cast<double>(ns - origin) / 1000.0;
  };
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  // Names and order of the lanes: process 0 is the host, process d + 1 device d; a thread per lane.
  const auto process = [&](int pid, const std::string& name) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", name}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
  };
  const auto thread = [&](int pid, TraceLane lane) {
    const int tid = static_cast<int>(lane);
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", to_string(lane)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  };
  process(0, "host");
  thread(0, TraceLane::host);
  bool evictions = false;
  for (const State::Entry& e : entries) evictions = evictions || e.lane == TraceLane::evictions;
  for (std::size_t d = 0; d < devices; ++d) {
    const int pid = static_cast<int>(d) + 1;
    process(pid, "device " + std::to_string(d) + ": " + state_->device_names[d]);
    thread(pid, TraceLane::kernels);
    thread(pid, TraceLane::copy_in);
    thread(pid, TraceLane::copy_out);
    if (evictions) thread(pid, TraceLane::evictions);
  }

  std::size_t unfinished = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const State::Entry& e = entries[i];
    std::int64_t start = 0;
    std::int64_t end = 0;
    const char* timed_by = "host";
    if (e.event.is_null()) {  // a span
      start = e.start;
      end = e.done;
    } else if (!e.event.is_complete()) {
      ++unfinished;
      continue;
    } else if (times[i] && times[i]->host_clock) {
      start = times[i]->start;
      end = times[i]->end;
      timed_by = "host clock around the operation";
    } else if (times[i] && e.device < devices) {
      start = times[i]->start + offset[e.device];
      end = times[i]->end + offset[e.device];
      timed_by = "device profiling";
    } else {
      start = e.submitted;
      end = e.done == kNone ? now_ns() : e.done;
      timed_by = "submission to completion";
    }
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    for (const TraceArg& a : e.args) {
      if (a.is_number) {
        args[a.key] = a.number;
      } else {
        args[a.key] = a.text;
      }
    }
    args["timed_by"] = timed_by;
    const int pid = e.lane == TraceLane::host ? 0 : static_cast<int>(e.device) + 1;
    events.push_back({{"name", e.name},
                      {"cat", to_string(e.category)},
                      {"ph", "X"},
                      {"ts", us(start)},
                      {"dur", static_cast<double>(std::max<std::int64_t>(0, end - start)) / 1000.0},
                      {"pid", pid},
                      {"tid", static_cast<int>(e.lane)},
                      {"args", std::move(args)}});
  }
  nlohmann::ordered_json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ns";
  out["otherData"] = {{"producer", "unimem"},
                      {"clock", "host steady_clock, microseconds since the runtime started"},
                      {"device_clocks", std::move(clocks)},
                      {"unfinished_operations", unfinished}};
  return out.dump();
}

void TraceRecorder::write() const {
  const std::string json = to_json();
  std::ofstream out(state_->path, std::ios::binary | std::ios::trunc);
  if (!out) throw PreconditionError("trace: cannot open '" + state_->path + "' for writing");
  out << json << '\n';
  out.close();
  if (!out) throw PreconditionError("trace: writing '" + state_->path + "' failed");
}

}  // namespace unimem
