#pragma once

// The process-wide state of the unimem OpenCL platform: the registry of live handles, the one
// Runtime over the vendors' devices (created on first use), the devices the platform exposes
// (UNIMEM_PLATFORM_DEVICES), the run report (UNIMEM_REPORT), and the small helpers every entry
// point uses (info answers, error codes).

#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "platform/device_copies.hpp"
#include "platform/objects.hpp"
#include "platform/profiling.hpp"

namespace unimem {
class RuntimeCore;
struct LaunchPlan;
namespace sim {
class SimSystem;
}  // namespace sim
}  // namespace unimem

namespace unimem::platform {

/// The dispatch table every object of the platform points to (dispatch.cpp).
const cl_icd_dispatch* dispatch_table();

/// Registers a new object (its header says its kind) / forgets a destroyed one.
void register_object(const void* object, ObjectKind kind);
void forget_object(const void* object);
/// Whether `object` is a live object of this kind.
[[nodiscard]] bool is_live(const void* object, ObjectKind kind);
/// Whether both are (one look-up under the registry's lock, for a hot path).
[[nodiscard]] bool are_live(const void* a, ObjectKind a_kind, const void* b, ObjectKind b_kind);
/// How many memory objects have been destroyed so far: a kernel whose buffer arguments were all
/// live when this count was n still has them all while it is n (read it before checking).
[[nodiscard]] std::uint64_t mems_destroyed();

/// Which devices the platform exposes (UNIMEM_PLATFORM_DEVICES).
enum class ExposedDevices { aggregate, each, both };

/// What a run did, for `unimem run` (written as JSON to UNIMEM_REPORT at exit).
struct RunReport {
  std::uint64_t launches = 0;
  std::uint64_t split_launches = 0;
  std::map<std::string, std::uint64_t> partitions_per_device;
  struct Fallback {
    std::string kernel;
    std::string reason;
    std::uint64_t count = 0;
  };
  std::vector<Fallback> fallbacks;  ///< one entry per (kernel, reason)
};

class PlatformState {
 public:
  /// The one state of the process; never destroyed (the ICD loader may call in at any time).
  static PlatformState& get();

  [[nodiscard]] cl_platform_id platform() { return &platform_; }
  /// The exposed devices, discovering the vendors' devices on first call. Empty when there is
  /// none; error() then says why.
  std::span<const cl_device_id> devices();
  [[nodiscard]] const std::string& error();
  /// The runtime over every underlying device (devices() must be non-empty).
  Runtime& runtime();
  RuntimeCore& core();
  /// The copy kernels of clEnqueueCopyBuffer{,Rect}, built on first use.
  DeviceCopies& copies();
  [[nodiscard]] std::size_t underlying_count();
  /// The vendor's device behind runtime device i.
  [[nodiscard]] cl_device_id underlying(std::size_t i);

  /// Where the devices' profiling clocks sit on the host clock (profiling.hpp).
  DeviceClocks& device_clocks() { return device_clocks_; }
  /// Device times for CL_PROFILING_COMMAND_START / END (profiling.hpp) from now on
  /// (RuntimeCore::time_device_operations), once: called by the first profiling queue's
  /// clCreateCommandQueue, before any command of it. Until then the devices do not profile:
  /// POCL reads the clock at every step of every command of a profiling queue, a cost of each
  /// launch that a program profiling nothing need not pay (docs/MEASUREMENTS.md, issue 9).
  void time_devices();

  /// Counts a launch in the run report.
  void record_launch(const std::string& kernel, const std::shared_ptr<const LaunchPlan>& plan);
  /// A tally for the lean repeats of one launch (kernel, plan): what it counts is in the report
  /// whenever the report is read. The platform keeps it until its holder lets go of it.
  [[nodiscard]] std::shared_ptr<LaunchTally> new_tally(const std::string& kernel,
                                                       std::shared_ptr<const LaunchPlan> plan);
  /// The report's launches and split_launches so far (unimem_platform_launch_counts).
  void launch_counts(std::uint64_t& launches, std::uint64_t& split);
  /// Writes the report to UNIMEM_REPORT (when set). Called at exit.
  void write_report();

 private:
  PlatformState();
  void discover();

  _cl_platform_id platform_;
  std::mutex mutex_;
  bool discovered_ = false;
  std::string error_;
  std::unique_ptr<Runtime> runtime_;
  std::once_flag copies_built_;
  std::unique_ptr<DeviceCopies> copies_;
  std::vector<cl_device_id> underlying_;
  std::shared_ptr<sim::SimSystem> simulation_;  // set when the devices are simulated
  std::vector<cl_device_id> exposed_;
  /// Adds the pending launches of one plan to report_ (report_mutex_ held).
  void count_pending_launches();
  /// The same and every tally's launches (report_mutex_ held).
  void count_all_launches();
  /// Adds n launches of `kernel` with `plan` to report_ (report_mutex_ held).
  void count_launches(const std::string& kernel, const LaunchPlan& plan, std::uint64_t n);

  DeviceClocks device_clocks_;
  std::once_flag devices_timed_;
  std::mutex report_mutex_;
  RunReport report_;
  // Launches of one plan in a row are counted here and added to report_ when another plan comes
  // (or the report is written): a repeated launch costs a comparison, not map lookups by name.
  std::shared_ptr<const LaunchPlan> pending_plan_;
  std::string pending_kernel_;
  std::uint64_t pending_launches_ = 0;
  // The lean repeats' tallies (new_tally); one only the platform holds is dropped once counted.
  std::vector<std::shared_ptr<LaunchTally>> tallies_;
  std::size_t prune_tallies_at_ = 16;
};

/// Answers a clGet*Info query with `n` bytes at `data` (OpenCL's param_value rules).
inline cl_int answer(const void* data, std::size_t n, std::size_t size, void* value,
                     std::size_t* size_ret) {
  if (value != nullptr) {
    if (size < n) return CL_INVALID_VALUE;
    if (n > 0) std::memcpy(value, data, n);
  }
  if (size_ret != nullptr) *size_ret = n;
  return CL_SUCCESS;
}
template <typename T>
cl_int answer_value(const T& v, std::size_t size, void* value, std::size_t* size_ret) {
  return answer(&v, sizeof(T), size, value, size_ret);
}
inline cl_int answer_string(const std::string& s, std::size_t size, void* value,
                            std::size_t* size_ret) {
  return answer(s.c_str(), s.size() + 1, size, value, size_ret);
}
template <typename T>
cl_int answer_vector(const std::vector<T>& v, std::size_t size, void* value,
                     std::size_t* size_ret) {
  return answer(v.data(), v.size() * sizeof(T), size, value, size_ret);
}

inline void set_error(cl_int* errcode_ret, cl_int code) {
  if (errcode_ret != nullptr) *errcode_ret = code;
}

/// Prints message to stderr when UNIMEM_PLATFORM_VERBOSE is set (refused calls, fallbacks).
void say(const std::string& message);

/// The OpenCL error for the exception in flight (DeviceError carries the vendor's code), after
/// reporting its message to the context's notify callback when there is one.
cl_int error_of_current_exception(cl_context context, cl_int fallback);

/// Retain / release of the header's reference count. release returns true when it reached zero.
inline void retain(ObjectHeader& h) { h.references.fetch_add(1); }
inline bool release(ObjectHeader& h) { return h.references.fetch_sub(1) == 1; }

/// Releases objects (and what they hold) when their count reaches zero.
void release_context(cl_context context);
void release_queue(cl_command_queue queue);
/// The queue's eventless launches (_cl_command_queue::eventless) as one event among its
/// anonymous ones (RuntimeCore::close_eventless), for what waits for the queue's commands next.
/// Call without queue->mutex held. Throws what the runtime throws (the flag is then set again).
void take_eventless_launches(cl_command_queue queue);
void release_mem(cl_mem mem);
void release_program(cl_program program);
void release_kernel(cl_kernel kernel);
void release_event(cl_event event);

}  // namespace unimem::platform
