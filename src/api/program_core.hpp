#pragma once

// The state and steps behind Program (<unimem/program.hpp>, whose members forward here): one
// compiled program per build domain, the kernel analysis of the source, and a launch cut into
// named steps that plan the split (schedule/launch_plan.hpp) and hand the partitions to
// RuntimeCore::launch_partitioned.

#include <atomic>
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
#include <utility>
#include <vector>

#include <unimem/access_descriptor.hpp>
#include <unimem/program.hpp>
#include "api/kernel_analysis.hpp"
#include "api/missed_keys.hpp"
#include "api/program_builds.hpp"
#include "api/runtime_core.hpp"
#include "schedule/launch_plan.hpp"
#include "schedule/partitioner.hpp"

namespace unimem {

namespace detail {
struct ProgramCoreTestAccess;  // defined by the tests that make the analysis fail on purpose
}  // namespace detail

/// OpenCL C source built for every device of a Runtime (Device::build_program, once per build
/// domain). Every device's driver must compile OpenCL C. Thread-safe.
class ProgramCore {
 public:
  // Program's members (<unimem/program.hpp> documents them).
  ProgramCore(Runtime& runtime, std::string source, std::string options = {});
  ~ProgramCore();
  ProgramCore(const ProgramCore&) = delete;
  ProgramCore& operator=(const ProgramCore&) = delete;
  /// Program::launch; when plan is given, it receives this launch's plan, and when
  /// partition_events is given, each partition's kernel event (in the plan's order).
  /// When ticket is given, it receives what launch_again needs to repeat this launch (null when
  /// the launch has no repeat token: its plan is not cached).
  Event launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
               const LaunchOptions& options = {}, std::shared_ptr<const LaunchPlan>* plan = nullptr,
               std::vector<Event>* partition_events = nullptr,
               std::shared_ptr<const void>* ticket = nullptr);
  /// The launch behind ticket (from launch) again, when it was the runtime's previous operation
  /// and RuntimeCore::launch_again takes it (the lean repeat; program_core.cpp says why this is
  /// the launch launch() would make); nullopt, with nothing done, otherwise. The caller passes
  /// no plan or partition events (it asks for none). eventless: as RuntimeCore::launch_again's
  /// (a null Event then may stand for a launch made: RuntimeCore::close_eventless).
  std::optional<Event> launch_again(const std::shared_ptr<const void>& ticket,
                                    bool eventless = false);
  [[nodiscard]] bool analyzed() const { return analysis_ != nullptr; }
  [[nodiscard]] const std::string& analysis_error() const { return analysis_error_; }
  [[nodiscard]] const ProgramBuildReport& build_report() const { return build_report_; }
  void set_log(std::function<void(const std::string&)> log);

  /// The plan of the last launch (for tools and tests).
  [[nodiscard]] LaunchPlan last_plan() const;
  /// The plans the plan cache holds (for tests).
  [[nodiscard]] std::size_t cached_plans() const;
  /// The kernel `name` as built for device `device` (devices of one build domain share it).
  /// Throws PreconditionError naming the kernel when the program has none by that name.
  /// The kernel on a device; whole_launch_group_ids: from the program built so that get_group_id
  /// counts over the whole launch (ProgramBuilds::kWholeLaunchGroupIds).
  std::shared_ptr<const CompiledKernel> kernel_for(const std::string& name, std::size_t device,
                                                   bool whole_launch_group_ids = false) {
    return builds_.kernel_for(name, device, whole_launch_group_ids);
  }
  [[nodiscard]] const std::string& options() const { return builds_.options(); }
  // The builds (api/program_builds.hpp documents these).
  [[nodiscard]] std::size_t group_variant_builds() const { return builds_.group_variant_builds(); }
  [[nodiscard]] std::size_t size_variant_builds() const { return builds_.size_variant_builds(); }
  [[nodiscard]] bool split_needs_work_group_size() const {
    return builds_.split_needs_work_group_size();
  }
  /// Builds of the pitched rewrite (packed 2-D boxes) made so far.
  [[nodiscard]] std::size_t pitched_builds() const { return builds_.pitched_builds(); }
  static constexpr std::size_t kSizeVariants = ProgramBuilds::kSizeVariants;
  /// Out-of-core launches: the chunks all launches of this program ran so far (LaunchPlan::chunks
  /// summed; 0 while every partition fit its device).
  [[nodiscard]] std::uint64_t chunks_run() const { return chunks_run_.load(); }
  /// Launches that ran as the scalar twin of a recent launch (RuntimeOptions::scalar_twins):
  /// its plan and repeat token with their own scalar values.
  [[nodiscard]] std::uint64_t twin_launches() const { return twin_launches_.load(); }
  /// The program as built for device `device` (throws std::out_of_range for a bad index).
  [[nodiscard]] const CompiledProgram& compiled(std::size_t device) const {
    return *builds_.programs().at(device);
  }

 private:
  friend struct detail::ProgramCoreTestAccess;
  // Tests only: wraps the analysis's DerivedBytes of every launch planned anew (to make it fail
  // on some ranges).
  std::function<DerivedBytes(DerivedBytes)> derived_for_tests_;
  // The steps of launch (program_core.cpp says what each does).
  PlanRequest describe_launch(const std::string& kernel, const NDRange& range,
                              std::span<const Arg> args, const LaunchOptions& options,
                              std::vector<LaunchArg>& launch_args) const;
  std::string attach_analysis(PlanRequest& request, std::span<const Arg> args,
                              const LaunchOptions& options) const;
  [[nodiscard]] std::uint64_t view_size(const std::string& kernel, std::size_t index,
                                        const Arg& a) const;
  void add_team_spill(const std::string& kernel, const TeamFootprint& team, const NDRange& range,
                      std::vector<Arg>& args);
  static void attach_team_spill(PlanRequest& request, const TeamFootprint& team);
  static LaunchPlan plan_with_fallback(PlanRequest& request);
  static std::string plan_key(const PlanRequest& request, std::span<const Arg> args,
                              const LaunchOptions& options);
  /// Whether the launch's access descriptors reach its plan (given and not ignored).
  [[nodiscard]] static bool uses_descriptors(const LaunchOptions& options) {
    return !options.accesses.empty() && !options.ignore_accesses;
  }
  static constexpr std::size_t kPlanCacheEntries = 256;
  void report_fallback(const LaunchPlan& plan, const std::string& analysis_note) const;
  /// The fallback log: set_log's function, or stderr.
  void say(const std::string& message) const;
  // Partial residency (RuntimeCore in runtime_core.hpp): the rewritten kernels of a plan whose
  // partitions could hold allocations that do not start at their buffers' byte 0.
  // `prefix`: the text the build in use puts before the source (empty for the plain build).
  // Out-of-core launches (cut_to_fit, launch_rounds) are in api/out_of_core.hpp.
  void attach_rebased(LaunchPlan& plan, const std::string& kernel, const std::string& prefix);
  void time_partitions(const std::string& kernel, const LaunchPlan& plan,
                       const std::vector<Event>& events,
                       std::chrono::steady_clock::time_point start);

  Runtime& runtime_;
  /// The source's builds, plain and on demand (api/program_builds.hpp); its log is say().
  ProgramBuilds builds_;
  std::atomic<std::uint64_t> chunks_run_{0};
  std::shared_ptr<const detail::ProgramAnalysis> analysis_;
  std::string analysis_error_;
  ProgramBuildReport build_report_;
  mutable std::mutex mutex_;
  struct Profile {  // shared with completion callbacks, which may outlive the Program
    std::mutex mutex;
    ThroughputProfile table{1, 1};  // skip the first launch (kernel compilation), time one
  };
  std::shared_ptr<Profile> profile_ = std::make_shared<Profile>();
  std::shared_ptr<const LaunchPlan> last_plan_ = std::make_shared<LaunchPlan>();
  /// Plans of earlier launches, by plan_key: a launch repeated with the same kernel, range,
  /// devices and argument sizes and values reuses its plan (partitions, bytes, kernels) instead
  /// of running the analysis and the range generation again. Bounded (cleared when full). A plan
  /// enters it on its key's second miss (missed_keys_), so keys that never recur cost no memory.
  struct CachedPlan {
    std::shared_ptr<const LaunchPlan> plan;
    std::string analysis_note;
  };
  std::map<std::string, CachedPlan> plan_cache_;
  detail::MissedKeys missed_keys_;  // guarded by mutex_
  /// A recent launch that went through the plan cache. A launch with the same kernel, range,
  /// options and arguments (buffers by id: ids are never reused and a buffer's size never
  /// changes, so its plan key would be the same) reuses its plan and runtime arguments without
  /// describing itself or building its key. Guarded by mutex_.
  /// What repeats() compares of a launch's options: all but the descriptors, which it never
  /// needs (only launches that do not use them are kept, and one that uses them never repeats).
  struct RepeatOptions {
    std::optional<std::size_t> device;
    std::vector<std::size_t> devices;
    std::optional<std::uint32_t> split_dimension;
    Balance balance = Balance::equal;
    bool use_analysis = true;
    bool ignore_accesses = false;
    [[nodiscard]] static RepeatOptions of(const LaunchOptions& o) {
      return {o.device, o.devices, o.split_dimension, o.balance, o.use_analysis, o.ignore_accesses};
    }
  };
  struct RepeatableLaunch {
    std::string kernel;
    NDRange range;
    std::vector<Arg> args;
    RepeatOptions options;
    CachedPlan cached;
    std::shared_ptr<const std::vector<LaunchArg>> launch_args;
    /// Placed whole on the device holding most of its buffers (RuntimeOptions::min_split_bytes,
    /// describe_launch): a launch repeated from further back than the previous one (a cycle)
    /// checks that device again unless RuntimeCore::directory_version() is still
    /// placement_version (guarded by mutex_).
    bool placed = false;
    mutable std::uint64_t placement_version = ~std::uint64_t{0};
    /// Which argument values the plan read: the kernel analysis's scalars_in_accesses of the
    /// kernel, or null when the plan came without the analysis (then it read none). Owned by
    /// analysis_. A scalar it does not name reaches nothing but the kernel (no access set,
    /// guard, partition or plan), and a launch that differs from this one only in such values
    /// is its scalar twin (repeats).
    const std::vector<bool>* values_read = nullptr;
    [[nodiscard]] bool free_scalar(std::size_t arg) const {
      return values_read == nullptr || arg >= values_read->size() || !(*values_read)[arg];
    }
  };
  /// Also the repeat tokens of their runtime launches (RuntimeCore::launch_partitioned): each
  /// keeps its plan and arguments alive and unchanged. The last few, the most recent last, so
  /// that the launches of a cycle (ping-pong: A, B, A, B) find theirs and pass the same token
  /// again; as many as the runtime keeps (RuntimeCore's kRepeatCycle).
  static constexpr std::size_t kRecentLaunches = 4;
  std::vector<std::shared_ptr<const RepeatableLaunch>> recent_launches_;
  /// Invariant builds: launch() calls running, and whether two ever ran at once. launch_again's
  /// check that its ticket is the program's last launch holds only while they never did: two
  /// launch() calls of different threads may put their entries in recent_launches_ in one order
  /// and reach the runtime in the other, which leaves the list's last entry another than the
  /// runtime's previous launch (harmless: the order only decides which entry a search finds
  /// first and what last_plan() answers, and both are an order the calls could have run in).
  std::atomic<std::uint32_t> launch_calls_running_{0};
  std::atomic<bool> launch_calls_overlapped_{false};
  /// How a launch relates to a recent one: not at all, the same launch (every argument equal),
  /// or its scalar twin (equal but for values of free scalars; RuntimeOptions::scalar_twins).
  enum class Recurrence : std::uint8_t { none, same, twin };
  [[nodiscard]] static Recurrence repeats(const RepeatableLaunch& last, const std::string& kernel,
                                          const NDRange& range, std::span<const Arg> args,
                                          const LaunchOptions& options, bool twins);
  /// RepeatableLaunch::values_read of a launch of kernel with options, planned as
  /// ProgramCore::launch plans it.
  [[nodiscard]] const std::vector<bool>* values_read(const std::string& kernel,
                                                     const LaunchOptions& options) const;
  /// Invariant builds: a twin's plan is the plan its own arguments give (the same partitions
  /// and access sets, splittable alike); throws InvariantError naming the kernel otherwise.
  void check_twin_plan(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
                       const LaunchOptions& options, const LaunchPlan& plan) const;
  /// Scalar twins run so far (for tests and tools).
  std::atomic<std::uint64_t> twin_launches_{0};
  std::function<void(const std::string&)> log_;
  // Team kernels' spill areas (lazy strategy: scratch is never copied), by kernel name.
  std::mutex spill_mutex_;
  std::map<std::string, BufferId> spills_;
  std::vector<BufferId> retired_spills_;  // outgrown; released with the program
};

}  // namespace unimem
