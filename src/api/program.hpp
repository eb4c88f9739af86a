#pragma once

// The user-facing launch API: a Program is OpenCL C source built for every device of a
// Runtime (one build per OpenCL context); Program::launch runs a kernel over an NDRange with shared
// buffers, scalars and __local memory as arguments and, by default, splits it by work-groups over
// every device (schedule/launch_plan.hpp). User code never copies or partitions.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <unimem/access_descriptor.hpp>
#include "analysis/team_footprint.hpp"
#include "api/kernel_analysis.hpp"
#include "api/runtime_core.hpp"
#include "schedule/launch_plan.hpp"
#include "schedule/partitioner.hpp"

namespace unimem {

/// One argument of Program::launch.
struct Arg {
  LaunchArg value;
  static Arg buffer(BufferId b) {
    Arg a;
    a.value.kind = KernelArg::Kind::buffer;
    a.value.buffer = b;
    return a;
  }
  template <typename T>
  static Arg scalar(const T& v) {
    return Arg{LaunchArg::of_scalar(v)};
  }
  static Arg local(std::uint64_t bytes) { return Arg{LaunchArg::of_local(bytes)}; }
};

/// How partition sizes are chosen.
enum class Balance : std::uint8_t {
  equal,     ///< the same number of work-groups per device (within one)
  measured,  ///< time the first launch of each kernel per device, then balance by throughput
};

struct LaunchOptions {
  /// Run on this device only (no split).
  std::optional<std::size_t> device;
  /// Split over these devices (in this order); empty = every device of the runtime.
  std::vector<std::size_t> devices;
  /// Split dimension; default the slowest-varying.
  std::optional<std::uint32_t> split_dimension;
  /// Access descriptors of the buffer arguments. They override what the analysis derives; a
  /// buffer argument with no descriptor at all is taken as read and maybe written in whole (so the
  /// launch runs on one device, with a log message).
  KernelAccess accesses;
  Balance balance = Balance::equal;
  /// Derive the bytes of buffer arguments without descriptors from the kernel analysis
  /// (analysis/kernel_ranges.hpp), when unimem is built with it.
  bool use_analysis = true;
  /// For comparisons only: ignore `accesses` and use only what the analysis derives.
  bool ignore_accesses = false;
};

/// What building a Program cost: the kernel analysis time next to the OpenCL build time.
struct ProgramBuildReport {
  double opencl_build_seconds = 0.0;  ///< clBuildProgram for every OpenCL context, wall time
  std::size_t contexts = 0;           ///< OpenCL contexts built for
  double analysis_seconds = 0.0;      ///< kernel analysis, wall time (near zero when cached)
  bool analysis_cached = false;       ///< the analysis of this source + options was reused
  /// The team kernels (include/unimem/team.h) by name, with their team memory and spill per
  /// work-group.
  std::map<std::string, TeamFootprint> teams;
};

/// OpenCL C source built for every device of a Runtime (Device::build_program, once per build
/// domain). Every device's driver must compile OpenCL C. Thread-safe.
class Program {
 public:
  /// Builds source with options once per OpenCL context of runtime's devices. A build failure
  /// throws DeviceError carrying the device names and compiler logs. The device library's
  /// include directory and -cl-kernel-arg-info are added to options (api/device_library.hpp), so
  /// kernels may `#include <unimem/team.h>`.
  Program(Runtime& runtime, std::string source, std::string options = {});
  /// Releases the spill areas of team kernels (waits for the launches that use them).
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Runs kernel over range with args. Buffers are shared buffers of the runtime. Returns the
  /// event of the whole launch (all partitions). Throws PreconditionError for an unknown kernel,
  /// a bad argument or descriptor, naming the kernel.
  ///
  /// A team kernel (build_report().teams) takes every argument but its last, the spill parameter
  /// of UM_TEAM_PARAM: the program passes a spill area of its own, sized for the launch's
  /// work-groups, and gives each partition the slices of its work-groups as write-only scratch
  /// (nothing fetched before the kernel, nothing copied after). Team kernels need a 1-D range
  /// with an explicit work-group size and no global offset.
  Event launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
               const LaunchOptions& options = {});
  Event launch(const std::string& kernel, const NDRange& range, std::initializer_list<Arg> args,
               const LaunchOptions& options = {}) {
    const std::vector<Arg> a(args);
    return launch(kernel, range, std::span<const Arg>(a), options);
  }

  /// Whether the kernel analysis describes this program (false when built without it or when it
  /// could not read the source; analysis_error() then says why).
  [[nodiscard]] bool analyzed() const { return analysis_ != nullptr; }
  [[nodiscard]] const std::string& analysis_error() const { return analysis_error_; }
  /// Build and analysis times of this program.
  [[nodiscard]] const ProgramBuildReport& build_report() const { return build_report_; }

  /// The plan of the last launch (for tools and tests).
  [[nodiscard]] LaunchPlan last_plan() const;
  /// Where fallback messages go (default: stderr, "unimem: ..."). Tests capture them.
  void set_log(std::function<void(const std::string&)> log);

 private:
  std::shared_ptr<const CompiledKernel> kernel_for(const std::string& name, std::size_t device);
  // The steps of launch (program.cpp says what each does).
  PlanRequest describe_launch(const std::string& kernel, const NDRange& range,
                              std::span<const Arg> args, const LaunchOptions& options,
                              std::vector<LaunchArg>& launch_args) const;
  std::string attach_analysis(PlanRequest& request, std::span<const Arg> args,
                              const LaunchOptions& options) const;
  static LaunchPlan plan_with_fallback(PlanRequest& request);
  void report_fallback(const LaunchPlan& plan, const std::string& analysis_note) const;
  void add_team_spill(const std::string& kernel, const TeamFootprint& team, const NDRange& range,
                      std::vector<Arg>& args);
  static void attach_team_spill(PlanRequest& request, const TeamFootprint& team);
  void time_partitions(const std::string& kernel, const LaunchPlan& plan,
                       const std::vector<Event>& events,
                       std::chrono::steady_clock::time_point start);

  Runtime& runtime_;
  std::string options_;
  std::shared_ptr<const detail::ProgramAnalysis> analysis_;
  std::string analysis_error_;
  ProgramBuildReport build_report_;
  // Per device: the program of its build domain (devices of one domain share one).
  std::vector<std::shared_ptr<const CompiledProgram>> programs_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::size_t>, std::shared_ptr<const CompiledKernel>> kernels_;
  struct Profile {  // shared with completion callbacks, which may outlive the Program
    std::mutex mutex;
    ThroughputProfile table{1, 1};  // skip the first launch (kernel compilation), time one
  };
  std::shared_ptr<Profile> profile_ = std::make_shared<Profile>();
  LaunchPlan last_plan_;
  // Team kernels' spill areas (lazy strategy: scratch is never copied), by kernel name.
  std::mutex spill_mutex_;
  std::map<std::string, BufferId> spills_;
  std::vector<BufferId> retired_spills_;  // outgrown; released with the Program
  std::function<void(const std::string&)> log_;
};

}  // namespace unimem
