#pragma once

// A timeline of what a runtime did (UNIMEM_TRACE=FILE.json, RuntimeOptions::trace): every kernel
// partition, copy, eviction and host access, per device queue and host lane, written as Chrome
// trace JSON (the "Trace Event Format": ph "X" complete events plus process / thread name
// metadata), which ui.perfetto.dev and chrome://tracing open.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <unimem/event.hpp>

namespace unimem {

/// The lane an entry is drawn in: the host's, or one of a device's. A device has one lane for its
/// kernels and one per copy engine (GPUs have one per direction): copies into the device (from
/// the host or a peer; a peer copy runs on the destination's queue) and copies out to the host.
enum class TraceLane { host, kernels, copy_in, copy_out, evictions };

/// What an entry is: its Chrome-trace category ("cat") and its colour in `unimem trace`.
enum class TraceCategory { kernel, copy_h2d, copy_d2h, copy_d2d, host_write, host_read, eviction };

[[nodiscard]] const char* to_string(TraceCategory category);
[[nodiscard]] const char* to_string(TraceLane lane);

/// One argument shown with an entry ("bytes": 4096, "buffer": "a").
struct TraceArg {
  std::string key;
  std::string text;
  std::uint64_t number = 0;
  bool is_number = false;
  static TraceArg of(std::string key, std::uint64_t number) {
    return {std::move(key), {}, number, true};
  }
  static TraceArg of(std::string key, std::string text) {
    return {std::move(key), std::move(text), 0, false};
  }
};

/// Collects trace entries and writes them as Chrome trace JSON.
///
/// Times: every entry is placed on the host's std::chrono::steady_clock, as microseconds since
/// the recorder was made. An operation's event gives its times when the driver measured them
/// (Device::set_profiling): the host driver and the runtime's host queue read the host clock
/// around each operation; OpenCL reports CL_PROFILING_COMMAND_QUEUED / START / END on the
/// device's own clock, which is mapped onto the host clock per device (see to_json). Without
/// measured times an operation spans from its submission to the host's notice of completion
/// (an over-estimate: it includes waiting for dependencies).
///
/// Thread-safe. Completion callbacks hold the recorder's state, so events may finish after the
/// recorder is gone.
class TraceRecorder {
 public:
  /// path: where write() puts the JSON. device_names: device i is process i + 1 in the trace.
  TraceRecorder(std::string path, std::vector<std::string> device_names);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  /// Now on the host clock, in nanoseconds (steady_clock since its epoch).
  [[nodiscard]] static std::int64_t now_ns();
  [[nodiscard]] const std::string& path() const;

  /// An asynchronous operation on device `device`'s lane (ignored for TraceLane::host) whose event
  /// is `event`; submitted_ns: now_ns() taken just before the operation was handed to the driver.
  void operation(TraceLane lane, std::size_t device, TraceCategory category, std::string name,
                 const Event& event, std::int64_t submitted_ns, std::vector<TraceArg> args);
  /// Something the host did itself from start_ns to end_ns (an eviction).
  void span(TraceLane lane, std::size_t device, TraceCategory category, std::string name,
            std::int64_t start_ns, std::int64_t end_ns, std::vector<TraceArg> args);

  /// Entries recorded so far.
  [[nodiscard]] std::size_t size() const;
  /// The trace as Chrome trace JSON: {"traceEvents": [...], "displayTimeUnit": "ns",
  /// "otherData": {...}}. Operations not finished yet are left out (counted in otherData).
  [[nodiscard]] std::string to_json() const;
  /// Writes to_json() to path(); throws PreconditionError naming the file when it cannot.
  void write() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace unimem
