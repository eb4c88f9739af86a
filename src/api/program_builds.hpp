#pragma once

// The builds of a Program's source behind ProgramCore (api/program_core.hpp): the plain build per
// build domain, the scan for work-item functions whose value changes in a split launch, and the
// builds made on demand for split launches: whole-launch group ids, one whole-launch-size build
// per launch shape, and the rewritten (rebased) twin of each for partial residency.

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/runtime_core.hpp"
#include "schedule/launch_plan.hpp"

namespace unimem {

class Runtime;

/// The compiled programs of one source over every device of a Runtime. Thread-safe.
class ProgramBuilds {
 public:
  /// Builds `source` with `options` (plus the device library's) once per build domain and scans
  /// it; `say` is the program's fallback log (ProgramCore::say).
  ProgramBuilds(Runtime& runtime, std::string source, std::string options,
                std::function<void(const std::string&)> say);
  ProgramBuilds(const ProgramBuilds&) = delete;
  ProgramBuilds& operator=(const ProgramBuilds&) = delete;

  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] const std::string& options() const { return options_; }
  /// The build domains of the plain build, and how long it and the scan took.
  [[nodiscard]] std::size_t contexts() const { return contexts_; }
  [[nodiscard]] double build_seconds() const { return build_seconds_; }
  /// The plain build, per device (devices of one build domain share one).
  [[nodiscard]] const std::vector<std::shared_ptr<const CompiledProgram>>& programs() const {
    return programs_;
  }

  // The program built for split launches of a source that calls get_group_id: a partition
  // launched with global offset o (a whole number of work-groups) sees group ids from 0; adding
  // o / local size gives the whole launch's ids again. Right only for launches without a global
  // offset of their own and with an explicit work-group size (group_variant_fits); those with an
  // offset of their own split with a build that knows it (group_ids_need_launch_offset).
  // UNIMEM_WHOLE_LAUNCH_GROUP_IDS tells <unimem/team.h> not to add the offset a second time.
  static constexpr const char* kWholeLaunchGroupIds =
      "#define UNIMEM_WHOLE_LAUNCH_GROUP_IDS 1\n"
      "#define get_group_id(d) (get_group_id(d) + get_global_offset(d) / get_local_size(d))\n"
      "#line 1\n";
  static constexpr std::size_t kSizeVariants = 8;

  /// The kernel on a device; whole_launch_group_ids: from the program built so that get_group_id
  /// counts over the whole launch (kWholeLaunchGroupIds). Throws PreconditionError naming the
  /// kernel when the program has none by that name.
  std::shared_ptr<const CompiledKernel> kernel_for(const std::string& name, std::size_t device,
                                                   bool whole_launch_group_ids = false);
  /// kernel_for in the build `programs` (programs_, group_programs_ or a size variant's).
  std::shared_ptr<const CompiledKernel> kernel_in(
      const std::string& name, std::size_t device,
      const std::vector<std::shared_ptr<const CompiledProgram>>& programs);

  /// How often the whole-launch group-id program was built (0 or 1): only on the first launch
  /// that splits a kernel of a program calling get_group_id (never for a program never split).
  [[nodiscard]] std::size_t group_variant_builds() const { return group_variant_builds_.load(); }
  /// How many whole-launch-size builds were made (one per launch shape that split a program
  /// calling get_num_groups, get_global_size or get_global_offset; at most kSizeVariants).
  [[nodiscard]] std::size_t size_variant_builds() const { return size_variant_builds_.load(); }

  /// A work-item function the source calls whose value in a partition (launched with a global
  /// offset over part of the NDRange) differs from the whole launch's and that unimem cannot
  /// restore (an #include it could not read may call any). Non-empty keeps launches on one device.
  [[nodiscard]] const std::string& offset_dependent_call() const { return offset_dependent_call_; }
  /// The calls of get_num_groups, get_global_size, get_global_offset the scan found: such a
  /// program splits with a build per launch shape that has the whole launch's values built in.
  [[nodiscard]] const std::vector<std::string>& size_calls() const { return size_calls_; }
  [[nodiscard]] bool calls_group_id() const { return calls_group_id_; }
  /// Whether a launch of this program splits only with an explicit work-group size: the source
  /// calls get_group_id or get_num_groups (whose whole-launch values unimem restores from the
  /// work-group size) and nothing it cannot restore, and the runtime has several devices. A
  /// caller that may choose the work-group size (the OpenCL platform, for a launch that leaves it
  /// to the implementation) chooses one for such a launch, so that it splits.
  [[nodiscard]] bool split_needs_work_group_size() const;

  [[nodiscard]] bool group_variant_fits(const NDRange& range) const;
  /// A launch of a program calling get_group_id (and none of the size functions) with a global
  /// offset of its own and an explicit work-group size: its group ids count from that offset
  /// (OpenCL 1.2 section 6.12.1), so it splits with a size_variant() build that has the offset
  /// built in, one per offset.
  [[nodiscard]] bool group_ids_need_launch_offset(const NDRange& range) const;
  /// The second build, made now if not yet; null when it failed (group_variant_error() says why).
  const std::vector<std::shared_ptr<const CompiledProgram>>* group_variant() const;
  [[nodiscard]] const std::string& group_variant_error() const { return group_variant_error_; }

  struct SizeVariant {
    std::string prefix;  ///< the macros put before the source
    std::once_flag once;
    std::vector<std::shared_ptr<const CompiledProgram>> programs;  ///< empty when the build failed
    std::string error;
  };
  /// The whole-launch-size build for this launch's shape, built now if not yet; null (with
  /// request.unsplittable_reason saying why) when the launch cannot have one. For a program
  /// calling only get_group_id, the shape is the launch's global offset alone.
  SizeVariant* size_variant(PlanRequest& request);

  /// The rewritten kernel `name` for device `device` in the build with `prefix` before the source
  /// (empty for the plain build); null (logged once) when the program has none.
  std::shared_ptr<const CompiledKernel> rebased_kernel_for(const std::string& name,
                                                           std::size_t device,
                                                           const std::string& prefix);
  /// Which parameters of `kernel` the rewrite turned into buffer + offset (after
  /// rebased_kernel_for gave that kernel).
  std::shared_ptr<const std::vector<bool>> rebased_pointers(const std::string& kernel);
  /// Packed 2-D boxes: per parameter of `kernel`, as LaunchPartition::pitched_parameters wants
  /// it, from the pitched rewrite (api/kernel_pitch_rewrite.hpp; made on first call, text only);
  /// null when the rewrite failed or has no such kernel.
  std::shared_ptr<const std::vector<std::uint32_t>> pitched_parameters(const std::string& kernel);
  /// The pitched kernel `name` for device `device`, built with `macros` (pitch_macros of its
  /// packed parameters) and then `prefix` (a variant's, or empty) before the pitched source; one
  /// build per distinct macros + prefix, kept. Null (said once) when that build failed.
  std::shared_ptr<const CompiledKernel> pitched_kernel_for(const std::string& name,
                                                           std::size_t device,
                                                           const std::string& prefix,
                                                           const std::string& macros);
  /// Builds of the pitched source made so far (for tests and tools).
  [[nodiscard]] std::size_t pitched_builds() const { return pitched_builds_.load(); }
  /// Says `message` unless a message with `key` was said before (once per program and reason).
  void say_once(std::string key, const std::string& message);

 private:
  /// `text` built with `options` once per build domain, per device; `contexts` receives the
  /// domains' count.
  std::vector<std::shared_ptr<const CompiledProgram>> build_per_domain(
      const std::string& text, std::size_t* contexts, const std::string& options) const;
  /// source_ with `prefix` before it, built per build domain with the headers as the first build
  /// read them (included_).
  std::vector<std::shared_ptr<const CompiledProgram>> build_variant(
      const std::string& prefix) const;

  Runtime& runtime_;
  std::string source_;
  std::string options_;
  std::function<void(const std::string&)> say_;
  std::size_t contexts_ = 0;
  double build_seconds_ = 0;
  std::string offset_dependent_call_;
  std::vector<std::string> size_calls_;
  mutable std::mutex size_variants_mutex_;
  /// By launch shape (global size, work-group size, global offset); at most kSizeVariants, never
  /// removed (a plan cached for a launch that got none stays right).
  std::map<std::string, std::unique_ptr<SizeVariant>> size_variants_;
  std::atomic<std::size_t> size_variant_builds_{0};
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
  // Per device: the program of its build domain (devices of one domain share one).
  std::vector<std::shared_ptr<const CompiledProgram>> programs_;
  std::mutex kernels_mutex_;
  /// By kernel name, device and build (the address of its programs vector).
  std::map<std::tuple<std::string, std::size_t, const void*>, std::shared_ptr<const CompiledKernel>>
      kernels_;
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
  // The pitched rewrite (packed 2-D boxes): its source, per kernel its parameters, and its builds
  // by macros + prefix (an empty vector: that build failed), under pitch_mutex_.
  std::mutex pitch_mutex_;
  bool pitch_tried_ = false;
  std::string pitched_source_;
  std::map<std::string, std::shared_ptr<const std::vector<std::uint32_t>>> pitched_parameters_;
  std::map<std::string, std::vector<std::shared_ptr<const CompiledProgram>>> pitched_builds_by_;
  std::map<std::tuple<std::string, std::size_t, std::string>, std::shared_ptr<const CompiledKernel>>
      pitched_kernels_;
  std::atomic<std::size_t> pitched_builds_{0};
};

}  // namespace unimem
