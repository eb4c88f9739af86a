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
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unimem/access_descriptor.hpp>
#include <unimem/program.hpp>
#include "api/kernel_analysis.hpp"
#include "api/runtime_core.hpp"
#include "schedule/launch_plan.hpp"
#include "schedule/partitioner.hpp"

namespace unimem {

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
  Event launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
               const LaunchOptions& options = {}, std::shared_ptr<const LaunchPlan>* plan = nullptr,
               std::vector<Event>* partition_events = nullptr);
  [[nodiscard]] bool analyzed() const { return analysis_ != nullptr; }
  [[nodiscard]] const std::string& analysis_error() const { return analysis_error_; }
  [[nodiscard]] const ProgramBuildReport& build_report() const { return build_report_; }
  void set_log(std::function<void(const std::string&)> log);

  /// The plan of the last launch (for tools and tests).
  [[nodiscard]] LaunchPlan last_plan() const;
  /// The kernel `name` as built for device `device` (devices of one build domain share it).
  /// Throws PreconditionError naming the kernel when the program has none by that name.
  /// The kernel on a device; whole_launch_group_ids: from the program built so that get_group_id
  /// counts over the whole launch (ProgramCore.cpp kWholeLaunchGroupIds).
  std::shared_ptr<const CompiledKernel> kernel_for(const std::string& name, std::size_t device,
                                                   bool whole_launch_group_ids = false);
  [[nodiscard]] const std::string& options() const { return options_; }
  /// How often the whole-launch group-id program was built (0 or 1): only on the first launch
  /// that splits a kernel of a program calling get_group_id (never for a program never split).
  [[nodiscard]] std::size_t group_variant_builds() const { return group_variant_builds_.load(); }
  /// How many whole-launch-size builds were made (one per launch shape that split a program
  /// calling get_num_groups, get_global_size or get_global_offset; at most kSizeVariants).
  [[nodiscard]] std::size_t size_variant_builds() const { return size_variant_builds_.load(); }
  static constexpr std::size_t kSizeVariants = 8;
  /// Out-of-core launches: the chunks all launches of this program ran so far (LaunchPlan::chunks
  /// summed; 0 while every partition fit its device).
  [[nodiscard]] std::uint64_t chunks_run() const { return chunks_run_.load(); }
  /// The program as built for device `device` (throws std::out_of_range for a bad index).
  [[nodiscard]] const CompiledProgram& compiled(std::size_t device) const {
    return *programs_.at(device);
  }

 private:
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
  static constexpr std::size_t kPlanCacheEntries = 256;
  void report_fallback(const LaunchPlan& plan, const std::string& analysis_note) const;
  /// The fallback log: set_log's function, or stderr.
  void say(const std::string& message) const;
  // Partial residency (RuntimeCore in runtime_core.hpp): the rewritten kernels of a plan whose
  // partitions could hold allocations that do not start at their buffers' byte 0.
  // `prefix`: the text the build in use puts before the source (empty for the plain build).
  void attach_rebased(LaunchPlan& plan, const std::string& kernel, const std::string& prefix);
  // Out-of-core launches: partitions whose allocations do not fit their device cut into chunks
  // that run the build in use (group_ids: the group-id build; sizes: a whole-launch-size build).
  struct SizeVariant;
  void cut_to_fit(LaunchPlan& plan, const PlanRequest& request,
                  std::span<const LaunchArg> launch_args, bool group_ids, const SizeVariant* sizes);
  Event launch_rounds(const LaunchPlan& plan, std::span<const LaunchArg> launch_args,
                      std::vector<Event>* events);
  std::shared_ptr<const CompiledKernel> rebased_kernel_for(const std::string& name,
                                                           std::size_t device,
                                                           const std::string& prefix);
  void time_partitions(const std::string& kernel, const LaunchPlan& plan,
                       const std::vector<Event>& events,
                       std::chrono::steady_clock::time_point start);

  Runtime& runtime_;
  std::string source_;
  std::string options_;
  /// A work-item function the source calls whose value in a partition (launched with a global
  /// offset over part of the NDRange) differs from the whole launch's and that unimem cannot
  /// restore (an #include it could not read may call any). Non-empty keeps launches on one device.
  std::string offset_dependent_call_;
  /// The calls of get_num_groups, get_global_size, get_global_offset the scan found: such a
  /// program splits with a build per launch shape that has the whole launch's values built in.
  std::vector<std::string> size_calls_;
  struct SizeVariant {
    std::string prefix;  ///< the macros put before the source
    std::once_flag once;
    std::vector<std::shared_ptr<const CompiledProgram>> programs;  ///< empty when the build failed
    std::string error;
  };
  mutable std::mutex size_variants_mutex_;
  /// By launch shape (global size, work-group size, global offset); at most kSizeVariants, never
  /// removed (a plan cached for a launch that got none stays right).
  std::map<std::string, std::unique_ptr<SizeVariant>> size_variants_;
  std::atomic<std::size_t> size_variant_builds_{0};
  /// The whole-launch-size build for this launch's shape, built now if not yet; null (with
  /// request.unsplittable_reason saying why) when the launch cannot have one.
  SizeVariant* size_variant(PlanRequest& request);
  /// source_ with `prefix` before it, built per build domain with the headers as the first build
  /// read them (included_).
  std::vector<std::shared_ptr<const CompiledProgram>> build_variant(
      const std::string& prefix) const;
  /// kernel_for in the build `programs` (programs_, group_programs_ or a size variant's).
  std::shared_ptr<const CompiledKernel> kernel_in(
      const std::string& name, std::size_t device,
      const std::vector<std::shared_ptr<const CompiledProgram>>& programs);
  /// get_group_id is restored by a second build (group_programs_, per device like programs_),
  /// made on first need by group_variant(), at most once, from any thread.
  bool calls_group_id_ = false;
  bool wants_group_variant_ = false;  ///< calls get_group_id, no other offset call, >1 device
  /// The files the source includes (name as written, text) as the first build read them.
  std::vector<std::pair<std::string, std::string>> included_;
  mutable std::once_flag group_variant_once_;
  mutable std::vector<std::shared_ptr<const CompiledProgram>> group_programs_;
  mutable std::string group_variant_error_;  ///< why the second build failed
  mutable std::atomic<std::size_t> group_variant_builds_{0};
  std::atomic<std::uint64_t> chunks_run_{0};
  [[nodiscard]] bool group_variant_fits(const NDRange& range) const;
  /// The second build, made now if not yet; null when it failed (group_variant_error_ says why).
  const std::vector<std::shared_ptr<const CompiledProgram>>* group_variant() const;
  /// `text` built with `options` once per build domain, per device; `contexts` receives the
  /// domains' count.
  std::vector<std::shared_ptr<const CompiledProgram>> build_per_domain(
      const std::string& text, std::size_t* contexts, const std::string& options) const;
  std::shared_ptr<const detail::ProgramAnalysis> analysis_;
  std::string analysis_error_;
  ProgramBuildReport build_report_;
  // Per device: the program of its build domain (devices of one domain share one).
  std::vector<std::shared_ptr<const CompiledProgram>> programs_;
  mutable std::mutex mutex_;
  /// By kernel name, device and build (the address of its programs vector).
  std::map<std::tuple<std::string, std::size_t, const void*>, std::shared_ptr<const CompiledKernel>>
      kernels_;
  struct Profile {  // shared with completion callbacks, which may outlive the Program
    std::mutex mutex;
    ThroughputProfile table{1, 1};  // skip the first launch (kernel compilation), time one
  };
  std::shared_ptr<Profile> profile_ = std::make_shared<Profile>();
  std::shared_ptr<const LaunchPlan> last_plan_ = std::make_shared<LaunchPlan>();
  /// Plans of earlier launches, by plan_key: a launch repeated with the same kernel, range,
  /// devices and argument sizes and values reuses its plan (partitions, bytes, kernels) instead
  /// of running the analysis and the range generation again. Bounded (cleared when full).
  struct CachedPlan {
    std::shared_ptr<const LaunchPlan> plan;
    std::string analysis_note;
  };
  std::map<std::string, CachedPlan> plan_cache_;
  /// The last launch that went through the plan cache. A launch with the same kernel, range,
  /// options and arguments (buffers by id: ids are never reused and a buffer's size never
  /// changes, so its plan key would be the same) reuses its plan and runtime arguments without
  /// describing itself or building its key. Guarded by mutex_.
  struct RepeatableLaunch {
    std::string kernel;
    NDRange range;
    std::vector<Arg> args;
    LaunchOptions options;
    CachedPlan cached;
    std::shared_ptr<const std::vector<LaunchArg>> launch_args;
  };
  /// Also the repeat token of its runtime launches (RuntimeCore::launch_partitioned): it keeps
  /// the plan and the arguments alive and unchanged.
  std::shared_ptr<const RepeatableLaunch> last_launch_;
  [[nodiscard]] static bool repeats(const RepeatableLaunch& last, const std::string& kernel,
                                    const NDRange& range, std::span<const Arg> args,
                                    const LaunchOptions& options);
  std::function<void(const std::string&)> log_;
  // The program rewritten so that every __global pointer parameter takes buffer + byte offset
  // (api/kernel_rewrite.hpp), built per build domain (and with whole-launch group ids when
  // group_programs_ is) on the first launch that can use it; rebase_error_ says why there is none.
  std::mutex rebase_mutex_;
  bool rebase_tried_ = false;
  std::string rebase_error_;
  std::map<std::string, std::shared_ptr<const std::vector<bool>>> rebased_pointers_;
  std::vector<std::shared_ptr<const CompiledProgram>> rebased_programs_;
  std::string rebased_source_;  ///< the rewrite, kept for its variant builds
  /// The rewrite built with a variant's prefix (whole-launch group ids or sizes), by prefix; an
  /// empty vector when that build failed.
  std::map<std::string, std::vector<std::shared_ptr<const CompiledProgram>>> rebased_variants_;
  std::map<std::tuple<std::string, std::size_t, std::string>, std::shared_ptr<const CompiledKernel>>
      rebased_kernels_;
  std::set<std::string> residency_logged_;  // full-mirror fallbacks already logged
  // Team kernels' spill areas (lazy strategy: scratch is never copied), by kernel name.
  std::mutex spill_mutex_;
  std::map<std::string, BufferId> spills_;
  std::vector<BufferId> retired_spills_;  // outgrown; released with the program
};

}  // namespace unimem
