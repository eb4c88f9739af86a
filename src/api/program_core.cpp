// ProgramCore (src/api/program_core.hpp): building a program for every device and the steps
// of a launch.

#include "api/program_core.hpp"

#include "analysis/team_footprint.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "api/out_of_core.hpp"
#include "common/check.hpp"

namespace unimem {
namespace {

// A launch argument as the runtime takes it; a buffer's access sets come from the plan.
LaunchArg to_launch_arg(const Arg& a) {
  LaunchArg out;
  switch (a.kind) {
    case Arg::Kind::buffer:
      out.kind = KernelArg::Kind::buffer;
      out.buffer = a.buffer_id;
      out.offset = a.buffer_offset;
      break;
    case Arg::Kind::null_buffer:
      out.kind = KernelArg::Kind::null_buffer;
      break;
    case Arg::Kind::scalar:
      out.kind = KernelArg::Kind::scalar;
      out.scalar_bytes = a.scalar_bytes;
      break;
    case Arg::Kind::local_memory:
      out.kind = KernelArg::Kind::local_memory;
      out.local_bytes = a.local_bytes;
      break;
  }
  return out;
}

}  // namespace

// The bytes a buffer argument's kernel pointer reaches: the buffer from the argument's offset on.
std::uint64_t ProgramCore::view_size(const std::string& kernel, std::size_t index,
                                     const Arg& a) const {
  const std::uint64_t size = runtime_.buffer_size(a.buffer_id);
  if (a.buffer_offset > size) {
    throw PreconditionError("launch of '" + kernel + "': argument " + std::to_string(index) +
                            " points " + std::to_string(a.buffer_offset) +
                            " bytes into a buffer of " + std::to_string(size) + " bytes");
  }
  return size - a.buffer_offset;
}

ProgramCore::ProgramCore(Runtime& runtime, std::string source_text, std::string options)
    : runtime_(runtime),
      builds_(runtime, std::move(source_text), std::move(options),
              [this](const std::string& message) { say(message); }) {
  build_report_.contexts = builds_.contexts();
  build_report_.opencl_build_seconds = builds_.build_seconds();
  // DSOM section 4.3.2: the analysis runs when the program is built. A source the analysis cannot
  // read still runs: arguments without descriptors then count as whole-buffer may-writes.
  detail::AnalysisTiming timing;
  analysis_ = detail::ProgramAnalysis::analyze(builds_.source(), builds_.options(),
                                               &analysis_error_, &timing);
  build_report_.analysis_seconds = timing.seconds;
  build_report_.analysis_cached = timing.cached;
  // Team kernels are recognised by their spill parameter's name (analysis/team_footprint.hpp).
  if (!builds_.programs().empty()) {
    for (const std::string& name : builds_.programs().front()->kernel_names()) {
      const std::vector<std::string> params = builds_.kernel_for(name, 0)->argument_names();
      try {
        if (auto team = team_footprint(name, params)) build_report_.teams.emplace(name, *team);
      } catch (const std::invalid_argument& e) {
        throw PreconditionError(e.what());
      }
    }
  }
}

ProgramCore::~ProgramCore() {
  std::lock_guard lock(spill_mutex_);
  std::vector<BufferId> buffers = retired_spills_;
  for (const auto& [kernel, buffer] : spills_) buffers.push_back(buffer);
  for (const BufferId buffer : buffers) {
    try {
      runtime_.release_buffer(buffer);  // waits for the launches that use it
    } catch (const std::exception& e) {
      std::cerr << "unimem: releasing a team kernel's spill area: " << e.what() << "\n";
    }
  }
}

ProgramCore::Recurrence ProgramCore::repeats(const RepeatableLaunch& last,
                                             const std::string& kernel, const NDRange& range,
                                             std::span<const Arg> args,
                                             const LaunchOptions& options, bool twins) {
  const auto same_range = [](const NDRange& a, const NDRange& b) {
    return a.dims == b.dims && a.offset == b.offset && a.global == b.global && a.local == b.local;
  };
  // Only launches whose descriptors are not used are cached (ProgramCore::launch), so the
  // last launch's accesses were empty or ignored.
  const RepeatOptions& o = last.options;
  if (last.kernel != kernel || !same_range(last.range, range) || last.args.size() != args.size() ||
      uses_descriptors(options) || o.device != options.device || o.devices != options.devices ||
      o.split_dimension != options.split_dimension || o.balance != options.balance ||
      o.use_analysis != options.use_analysis || o.ignore_accesses != options.ignore_accesses) {
    return Recurrence::none;
  }
  Recurrence result = Recurrence::same;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = last.args[i];
    const Arg& b = args[i];
    if (a.kind != b.kind || a.buffer_id != b.buffer_id || a.buffer_offset != b.buffer_offset ||
        a.local_bytes != b.local_bytes || a.scalar_bytes.size() != b.scalar_bytes.size()) {
      return Recurrence::none;
    }
    if (a.scalar_bytes == b.scalar_bytes) continue;
    if (!twins || !last.free_scalar(i)) return Recurrence::none;
    result = Recurrence::twin;
  }
  return result;
}

// Which scalars of a launch reach nothing but the kernel. The plan reads scalar values only
// through the kernel analysis (attach_analysis: PlanArgument holds none, descriptors are never
// cached, team kernels are not either), and the analysis only where a value appears in an access
// piece (ProgramAnalysis::scalars_in_accesses). A kernel the analysis has not read, or a launch
// that does not use it, plans without any value.
const std::vector<bool>* ProgramCore::values_read(const std::string& kernel,
                                                  const LaunchOptions& options) const {
  const bool analysed = options.use_analysis && analysis_ && analysis_->has_kernel(kernel);
  return analysed ? &analysis_->scalars_in_accesses(kernel) : nullptr;
}

void ProgramCore::check_twin_plan(const std::string& kernel, const NDRange& range,
                                  std::span<const Arg> args, const LaunchOptions& options,
                                  const LaunchPlan& plan) const {
  std::vector<LaunchArg> launch_args;
  PlanRequest request = describe_launch(kernel, range, args, options, launch_args);
  (void)attach_analysis(request, args, options);
  const auto fail = [&](const std::string& what) {
    detail::throw_invariant("launch of '" + kernel + "' as a scalar twin: " + what, __FILE__,
                            __LINE__);
  };
  // A plan of one partition is the unsplittable one, or one a placement chose (min_split_bytes):
  // the twin's values must leave a split plan splittable.
  if (plan.partitions.size() > 1 && !request.unsplittable_reason.empty()) {
    fail("its own values make it unsplittable (" + request.unsplittable_reason + ")");
  }
  for (std::size_t i = 0; i < plan.partitions.size(); ++i) {
    const LaunchPartition& p = plan.partitions[i];
    std::map<std::uint32_t, AccessBytes> own;
    try {
      own = derive_partition(request, p).accesses;
    } catch (const PreconditionError&) {
      // The analysis cannot evaluate it: planned without it, as plan_with_fallback does.
      request.derived = nullptr;
      own = derive_partition(request, p).accesses;
    }
    if (own != p.accesses) {
      fail("partition " + std::to_string(i) + " of its own plan accesses other bytes");
    }
  }
}

// The lean repeat. A ticket is a RepeatableLaunch of this program. RuntimeCore::launch_again takes
// it only when the runtime's previous operation was a launch_partitioned call with this ticket as
// its token, so launch() of the same kernel, range, options and arguments would be this
// program's repeat path for it: the last launch of this program that reached the runtime passed
// the ticket (each launch() call reaches launch_partitioned, which counts, once it has put its
// entry last in recent_launches_ and before it sets last_plan_ to its plan; a call that fails
// before changes neither), so the entry is the last of recent_launches_ (no rotation, no placement
// check: that is only for entries further back) and last_plan_ is its plan. What launch() still
// does then is report_fallback and launch_partitioned with the token; the runtime part is
// launch_again's, and the report is made here, after it (before the exception of a launch that
// failed, as launch() would have made it before).
std::optional<Event> ProgramCore::launch_again(const std::shared_ptr<const void>& ticket,
                                               bool eventless) {
  const auto& last = *static_cast<const RepeatableLaunch*>(ticket.get());
  // Made in place (no optional assigned or moved on every launch).
  std::optional<Event> e = [&] {
    try {
      return runtime_.core().launch_again(ticket.get(), *last.launch_args, eventless);
    } catch (...) {
      report_fallback(*last.cached.plan, last.cached.analysis_note);
      throw;
    }
  }();
  if (!e) return e;
#if UNIMEM_INVARIANTS_ENABLED
  // Checked while no two launch() calls ever overlapped (see launch_calls_overlapped_), and not
  // while one runs: it has put its entry last and not yet reached the runtime.
  if (!launch_calls_overlapped_.load() && launch_calls_running_.load() == 0) {
    std::lock_guard lock(mutex_);
    if (recent_launches_.empty() || recent_launches_.back().get() != &last ||
        last_plan_ != last.cached.plan) {
      detail::throw_invariant(
          "lean repeat of kernel '" + last.kernel + "': it is not the program's last launch",
          __FILE__, __LINE__);
    }
  }
#endif
  if (!last.cached.plan->fallback_reason.empty()) {
    report_fallback(*last.cached.plan, last.cached.analysis_note);
  }
  return e;
}

Event ProgramCore::launch(const std::string& kernel, const NDRange& range,
                          std::span<const Arg> user_args, const LaunchOptions& options,
                          std::shared_ptr<const LaunchPlan>* plan_out,
                          std::vector<Event>* partition_events,
                          std::shared_ptr<const void>* ticket) {
#if UNIMEM_INVARIANTS_ENABLED
  if (++launch_calls_running_ > 1) launch_calls_overlapped_ = true;
  struct Running {
    std::atomic<std::uint32_t>& count;
    ~Running() { --count; }
  } running{launch_calls_running_};
#endif
  if (ticket != nullptr) ticket->reset();
  {
    // A repeated launch: its plan and runtime arguments as last time (see RepeatableLaunch),
    // the previous launch's or, in a cycle of launches, an earlier one's.
    std::shared_ptr<const RepeatableLaunch> last;
    bool recheck_placement = false;
    Recurrence recurrence = Recurrence::none;
    // Off (RuntimeOptions::repeat_fast_path), every launch is described and planned, for
    // comparing.
    if (runtime_.core().repeat_fast_path()) {
      const bool twins = runtime_.core().scalar_twins();
      std::lock_guard lock(mutex_);
      for (std::size_t i = recent_launches_.size(); i-- > 0;) {
        recurrence = repeats(*recent_launches_[i], kernel, range, user_args, options, twins);
        if (recurrence == Recurrence::none) continue;
        last = recent_launches_[i];
        recheck_placement = last->placed && i + 1 != recent_launches_.size();
        if (!recheck_placement) {  // the most recently used last
          std::rotate(recent_launches_.begin() + static_cast<std::ptrdiff_t>(i),
                      recent_launches_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                      recent_launches_.end());
          if (last_plan_ != last->cached.plan) last_plan_ = last->cached.plan;
        }
        break;
      }
    }
    // A placed launch right after its own previous run would be placed there again (that run
    // only added to what its device holds and took from the others); after other launches the
    // device holding most may have changed, as describe_launch would see: then it is planned
    // anew. Only a directory change can change the answer (RuntimeCore::directory_version).
    if (last && recheck_placement) {
      const std::uint64_t version = runtime_.core().directory_version();
      std::uint64_t seen = 0;
      {
        std::lock_guard lock(mutex_);
        seen = last->placement_version;
      }
      if (seen != version) {
        std::vector<std::size_t> devices(runtime_.device_count());
        for (std::size_t d = 0; d < devices.size(); ++d) devices[d] = d;
        if (runtime_.core().device_holding_most(*last->launch_args, devices) ==
            last->cached.plan->partitions.front().device) {
          std::lock_guard lock(mutex_);
          last->placement_version = version;
        } else {
          last = nullptr;
        }
      }
    }
    if (last && recheck_placement) {
      std::lock_guard lock(mutex_);
      const auto it = std::find(recent_launches_.begin(), recent_launches_.end(), last);
      if (it != recent_launches_.end()) std::rotate(it, it + 1, recent_launches_.end());
      if (last_plan_ != last->cached.plan) last_plan_ = last->cached.plan;
    }
    if (last) {
      const LaunchPlan& plan = *last->cached.plan;
      report_fallback(plan, last->cached.analysis_note);
      if (partition_events != nullptr) partition_events->clear();
      if (plan_out != nullptr) *plan_out = last->cached.plan;
      if (recurrence == Recurrence::twin) {
        // A scalar twin: the plan and token of `last` (its access sets are this launch's: no
        // value that differs reaches them), the kernels given this launch's values.
#if UNIMEM_INVARIANTS_ENABLED
        check_twin_plan(kernel, range, user_args, options, plan);
#endif
        std::vector<LaunchArg> own_args = *last->launch_args;
        for (std::size_t i = 0; i < own_args.size(); ++i) {
          if (user_args[i].kind == Arg::Kind::scalar) {
            own_args[i].scalar_bytes = user_args[i].scalar_bytes;
          }
        }
        ++twin_launches_;
        if (plan.chunks != 0) {
          Event all = launch_rounds(runtime_.core(), plan, own_args, partition_events);
          chunks_run_ += plan.chunks;
          return all;
        }
        return runtime_.core().launch_partitioned(own_args, plan.partitions, partition_events,
                                                  std::move(last));
      }
      // A chunked plan runs in rounds again (one partition per device and round), without the
      // repeat token: each round's boxes replace the last ones'.
      if (plan.chunks != 0) {
        Event all = launch_rounds(runtime_.core(), plan, *last->launch_args, partition_events);
        chunks_run_ += plan.chunks;
        return all;
      }
      // The token moves in (one reference count less per launch): it keeps the launch, its
      // arguments and its plan alive until the call returns.
      const std::vector<LaunchArg>& launch_args = *last->launch_args;
      if (ticket != nullptr) *ticket = last;
      return runtime_.core().launch_partitioned(launch_args, plan.partitions, partition_events,
                                                std::move(last));
    }
  }
  const auto team = build_report_.teams.find(kernel);
  std::vector<Arg> team_args;
  std::span<const Arg> args = user_args;
  if (team != build_report_.teams.end()) {
    team_args.assign(user_args.begin(), user_args.end());
    add_team_spill(kernel, team->second, range, team_args);
    args = team_args;
  }
  std::vector<LaunchArg> launch_args;
  PlanRequest request = describe_launch(kernel, range, args, options, launch_args);
  const bool measuring = options.balance == Balance::measured && request.devices.size() > 1;
  const bool needs_sizes =
      !builds_.size_calls().empty() || builds_.group_ids_need_launch_offset(range);
  ProgramBuilds::SizeVariant* sizes =
      needs_sizes && request.devices.size() > 1 && request.unsplittable_reason.empty()
          ? builds_.size_variant(request)
          : nullptr;
  // Measured balance changes its weights, descriptors may be anything, team spill areas grow:
  // only plain launches are cached. Descriptors the launch ignores (LaunchOptions::
  // ignore_accesses: `unimem bench --access analysis` passes the workload's descriptors and
  // ignores them) do not reach the plan, so such a launch is plain.
  std::string key = measuring || uses_descriptors(options) || team != build_report_.teams.end()
                        ? std::string()
                        : plan_key(request, args, options);
  if (!key.empty()) {  // the build in use (the range in the key also determines it)
    const void* build = sizes;
    key.append(reinterpret_cast<const char*>(&build), sizeof build);
  }
  CachedPlan cached;
  bool admit = false;  // keep this launch's plan (a key's second miss: detail::MissedKeys)
  if (!key.empty()) {
    std::lock_guard lock(mutex_);
    if (auto it = plan_cache_.find(key); it != plan_cache_.end()) {
      cached = it->second;
    } else {
      admit = missed_keys_.seen_before(std::hash<std::string>{}(key));
    }
  }
  if (!cached.plan) {
    cached.analysis_note = attach_analysis(request, args, options);
    if (team != build_report_.teams.end()) attach_team_spill(request, team->second);
    if (measuring) {
      std::lock_guard lock(profile_->mutex);
      if (auto w = profile_->table.weights(kernel, request.devices)) request.weights = *w;
    }
    if (derived_for_tests_ && request.derived) {
      request.derived = derived_for_tests_(std::move(request.derived));
    }
    const auto build_plan = [&] {
      LaunchPlan plan = plan_with_fallback(request);
      const bool group_ids = sizes == nullptr && builds_.calls_group_id() &&
                             request.devices.size() > 1 && builds_.group_variant_fits(range) &&
                             builds_.group_variant() != nullptr;
      for (LaunchPartition& p : plan.partitions) {
        p.kernel = sizes != nullptr ? builds_.kernel_in(kernel, p.device, sizes->programs)
                                    : builds_.kernel_for(kernel, p.device, group_ids);
      }
      attach_rebased(plan, kernel,
                     sizes != nullptr ? sizes->prefix
                     : group_ids      ? std::string(ProgramBuilds::kWholeLaunchGroupIds)
                                      : std::string());
      cut_to_fit(runtime_.core(), builds_, plan, request, launch_args, group_ids, sizes);
      return plan;
    };
    LaunchPlan plan;
    try {
      plan = build_plan();
    } catch (const PreconditionError& e) {
      // The analysis evaluated the whole partitions, then failed on a chunk's sub-range
      // (cut_to_fit derives every chunk's bytes): plan again without it, as plan_with_fallback
      // does when it fails on the whole launch. Without the analysis the chunks cannot fit either
      // (their buffers' boxes are whole buffers), so that plan's error says why, and this one.
      if (!request.derived) throw;
      request.derived = nullptr;
      if (request.unsplittable_reason.starts_with("analysis: ")) {
        request.unsplittable_reason.clear();
      }
      const std::string why =
          "analysis failed for kernel '" + request.kernel + "' on a chunk: " + e.what();
      try {
        plan = build_plan();
      } catch (const OutOfDeviceMemory& again) {
        throw OutOfDeviceMemory(std::string(again.what()) + " (" + why + ")");
      }
      plan.fallback_reason += (plan.fallback_reason.empty() ? "" : "; ") + why;
    }
    cached.plan = std::make_shared<const LaunchPlan>(std::move(plan));
    if (admit) {
      std::lock_guard lock(mutex_);
      if (plan_cache_.size() >= kPlanCacheEntries) plan_cache_.clear();
      plan_cache_.emplace(key, cached);
    }
  }
  std::shared_ptr<const RepeatableLaunch> repeatable;
  if (!key.empty()) {
    const bool placed = !options.device && options.devices.empty() && runtime_.device_count() > 1 &&
                        request.devices.size() == 1;
    // The runtime arguments move into the entry, which the launch below reads them from.
    repeatable = std::make_shared<const RepeatableLaunch>(RepeatableLaunch{
        kernel, range, std::vector<Arg>(args.begin(), args.end()), RepeatOptions::of(options),
        cached, std::make_shared<const std::vector<LaunchArg>>(std::move(launch_args)), placed,
        ~std::uint64_t{0}, values_read(kernel, options)});
    std::lock_guard lock(mutex_);
    if (recent_launches_.size() == kRecentLaunches)
      recent_launches_.erase(recent_launches_.begin());
    recent_launches_.push_back(repeatable);
    if (ticket != nullptr && cached.plan->chunks == 0) *ticket = repeatable;
  }
  const LaunchPlan& plan = *cached.plan;
  report_fallback(plan, cached.analysis_note);

  std::vector<Event> events;
  const auto start = std::chrono::steady_clock::now();
  // The entry (moved into the call as its token) keeps its arguments alive through the call.
  const std::vector<LaunchArg>& runtime_args = repeatable ? *repeatable->launch_args : launch_args;
  Event all = plan.chunks == 0 ? runtime_.core().launch_partitioned(runtime_args, plan.partitions,
                                                                    &events, std::move(repeatable))
                               : launch_rounds(runtime_.core(), plan, runtime_args, &events);
  chunks_run_ += plan.chunks;
  if (measuring && plan.chunks == 0) time_partitions(kernel, plan, events, start);
  if (plan_out != nullptr) *plan_out = cached.plan;
  if (partition_events != nullptr) *partition_events = std::move(events);
  {
    std::lock_guard lock(mutex_);
    last_plan_ = cached.plan;
  }
  return all;
}

// The plan cache's key: everything plan_launch and the analysis read from a launch (kernel,
// range, devices, split dimension, analysis switches, each argument's kind with its buffer size,
// scalar bytes or local size, a buffer's offset and which arguments share a buffer). Buffer
// identities are not in it: a plan speaks of argument positions, so the same launch over other
// buffers of the same sizes shares it.
std::string ProgramCore::plan_key(const PlanRequest& request, std::span<const Arg> args,
                                  const LaunchOptions& options) {
  std::string key = request.kernel;
  key.push_back('\0');
  const auto put = [&key](const auto& value) {
    key.append(reinterpret_cast<const char*>(&value), sizeof value);
  };
  const NDRange& r = request.range;
  put(r.dims);
  for (std::uint32_t d = 0; d < 3; ++d) {
    put(r.offset[d]);
    put(r.global[d]);
    put(r.local[d]);
  }
  put(request.devices.size());
  for (std::size_t d : request.devices) put(d);
  put(options.split_dimension.value_or(~0U));
  put(options.use_analysis);
  put(options.ignore_accesses);
  for (std::size_t i = 0; i < args.size(); ++i) {
    put(args[i].kind);
    switch (args[i].kind) {
      case Arg::Kind::buffer: {
        put(request.args[i].buffer_size);
        // Where the pointer points and which earlier argument names the same buffer: both
        // change a partition's boxes (one box per buffer), so whether and how it is cut into
        // chunks (cut_to_fit).
        put(args[i].buffer_offset);
        std::size_t same = i;
        for (std::size_t k = 0; k < i; ++k) {
          if (args[k].kind == Arg::Kind::buffer && args[k].buffer == args[i].buffer) {
            same = k;
            break;
          }
        }
        put(same);
        break;
      }
      case Arg::Kind::null_buffer:
        break;
      case Arg::Kind::scalar:
        put(args[i].scalar_bytes.size());
        key.append(reinterpret_cast<const char*>(args[i].scalar_bytes.data()),
                   args[i].scalar_bytes.size());
        break;
      case Arg::Kind::local_memory:
        put(args[i].local_bytes);
        break;
    }
  }
  return key;
}

// Step 1: the devices to split over (checked), the arguments as the planner and the runtime see
// them, and the caller's descriptors.
PlanRequest ProgramCore::describe_launch(const std::string& kernel, const NDRange& range,
                                         std::span<const Arg> args, const LaunchOptions& options,
                                         std::vector<LaunchArg>& launch_args) const {
  PlanRequest request;
  request.kernel = kernel;
  request.range = range;
  request.dimension = options.split_dimension;
  if (options.device) {
    if (*options.device >= runtime_.device_count()) {
      throw PreconditionError("launch of '" + kernel + "': unknown device " +
                              std::to_string(*options.device));
    }
    request.devices = {*options.device};
  } else if (!options.devices.empty()) {
    request.devices = options.devices;
  } else {
    request.devices.resize(runtime_.device_count());
    for (std::size_t i = 0; i < request.devices.size(); ++i) request.devices[i] = i;
  }
  for (std::size_t d : request.devices) {
    if (d >= runtime_.device_count()) {
      throw PreconditionError("launch of '" + kernel + "': unknown device " + std::to_string(d));
    }
  }
  request.args.reserve(args.size());
  launch_args.reserve(launch_args.size() + args.size());
  for (const Arg& a : args) {
    PlanArgument pa;
    pa.is_buffer = a.kind == Arg::Kind::buffer;
    if (pa.is_buffer) pa.buffer_size = view_size(kernel, launch_args.size(), a);
    request.args.push_back(pa);
    launch_args.push_back(to_launch_arg(a));
  }
  // A small launch the caller left to every device runs whole on one (RuntimeOptions::
  // min_split_bytes): the one already holding most of its buffers, so it copies the least.
  if (!options.device && options.devices.empty() && request.devices.size() > 1) {
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < launch_args.size(); ++i) {
      if (!request.args[i].is_buffer) continue;
      const bool seen = std::any_of(
          launch_args.begin(), launch_args.begin() + static_cast<std::ptrdiff_t>(i),
          [&](const LaunchArg& a) {
            return a.kind == KernelArg::Kind::buffer && a.buffer == launch_args[i].buffer;
          });
      if (!seen) bytes += request.args[i].buffer_size;
    }
    if (bytes < runtime_.core().min_split_bytes()) {
      request.devices = {runtime_.core().device_holding_most(launch_args, request.devices)};
    }
  }
  if (!options.ignore_accesses) request.accesses = options.accesses;
  if (!builds_.offset_dependent_call().empty()) {
    request.unsplittable_reason = "the program calls " + builds_.offset_dependent_call() +
                                  ", whose value differs between a split launch's partitions "
                                  "and the whole launch";
  } else if (!builds_.size_calls().empty()) {
    // ProgramCore::launch asks size_variant(), which says why when the launch cannot split.
  } else if (builds_.group_ids_need_launch_offset(range)) {
    // ProgramCore::launch asks size_variant() for a build with the launch's offset.
  } else if (builds_.calls_group_id() && !builds_.group_variant_fits(range)) {
    request.unsplittable_reason =
        "the program calls get_group_id, and the launch leaves the work-group size to the "
        "driver (partitions would see other group ids than the whole launch)";
  } else if (builds_.calls_group_id() && request.devices.size() > 1 &&
             builds_.group_variant() == nullptr) {
    request.unsplittable_reason =
        "the program calls get_group_id, and its build with whole-launch group ids failed: " +
        builds_.group_variant_error();
  }
  return request;
}

// Step 2: when a buffer argument has no descriptor, the kernel analysis supplies its bytes per
// partition (request.derived) and may forbid the split. Returns why the analysis was not used
// (empty when it was, or was not needed).
std::string ProgramCore::attach_analysis(PlanRequest& request, std::span<const Arg> args,
                                         const LaunchOptions& options) const {
  const std::string& kernel = request.kernel;
  const NDRange& range = request.range;
  std::string analysis_note;
  bool needs_analysis = false;
  for (std::uint32_t i = 0; i < request.args.size(); ++i) {
    if (!request.args[i].is_buffer) continue;
    needs_analysis =
        needs_analysis || std::none_of(request.accesses.begin(), request.accesses.end(),
                                       [&](const AccessDescriptor& d) { return d.arg == i; });
  }
  if (needs_analysis && options.use_analysis) {
    if (analysis_ && analysis_->has_kernel(kernel)) {
      // The analysis needs a concrete work-group size; with "driver chooses" (local 0) a work-item
      // counts as a group, which is exact for subscripts over global ids.
      NDRange arange;
      arange.dims = range.dims;
      arange.offset = range.offset;
      arange.global = range.global;
      for (std::uint32_t d = 0; d < 3; ++d) {
        arange.local[d] = d < range.dims ? (range.local[d] == 0 ? 1 : range.local[d]) : 1;
      }
      LaunchArguments values;
      values.scalars.resize(args.size());
      values.buffer_sizes.resize(args.size());
      for (std::uint32_t i = 0; i < args.size(); ++i) {
        const Arg& a = args[i];
        if (a.kind == Arg::Kind::buffer) {
          values.buffer_sizes[i] = view_size(kernel, i, a);
        } else if (a.kind == Arg::Kind::scalar && a.scalar_bytes.size() == 4) {
          std::int32_t v = 0;
          std::memcpy(&v, a.scalar_bytes.data(), 4);
          values.scalars[i] = v;
        } else if (a.kind == Arg::Kind::scalar && a.scalar_bytes.size() == 8) {
          std::int64_t v = 0;
          std::memcpy(&v, a.scalar_bytes.data(), 8);
          values.scalars[i] = v;
        }
      }
      const std::uint32_t dim = split_dimension(range, options.split_dimension);
      try {
        std::string reason;
        if (request.devices.size() > 1 && !analysis_->splittable(kernel, arange, values, &reason)) {
          request.unsplittable_reason = "analysis: " + reason;
        }
        // The argument values move in: nothing below reads them.
        request.derived = [analysis = analysis_, kernel, arange, values = std::move(values),
                           dim](const RangePartition& p) {
          Box<3>::Point begin{0, 0, 0};
          Box<3>::Point end{1, 1, 1};
          // The partition's work-groups: its block along the split dimension, and along the
          // others those its range covers (an out-of-core chunk may be a tile of both).
          for (std::uint32_t d = 0; d < arange.dims; ++d) {
            const std::uint64_t first = (p.range.offset[d] - arange.offset[d]) / arange.local[d];
            begin[d] = static_cast<std::int64_t>(first);
            end[d] = static_cast<std::int64_t>(first + p.range.global[d] / arange.local[d]);
          }
          begin[dim] = static_cast<std::int64_t>(p.group_begin);
          end[dim] = static_cast<std::int64_t>(p.group_end);
          auto bytes = analysis->bytes(kernel, arange, Box<3>(begin, end), values);
          // A NULL pointer argument has no bytes (the kernel must not dereference it).
          std::erase_if(bytes, [&](const auto& b) { return !values.buffer_sizes.at(b.first); });
          return bytes;
        };
      } catch (const PreconditionError& e) {
        analysis_note = std::string("analysis not usable for this launch: ") + e.what();
      }
    } else {
      analysis_note = analysis_error_.empty() ? "analysis has no kernel '" + kernel + "'"
                                              : "analysis unavailable: " + analysis_error_;
    }
  }
  return analysis_note;
}

// Step 0 (team kernels): checks the range and the arguments, then appends the kernel's spill area,
// grown when this launch has more work-groups than the last (Bercea et al. section 5.2: the
// fallback list in global memory; here one slice per work-group, indexed by the team number).
void ProgramCore::add_team_spill(const std::string& kernel, const TeamFootprint& team,
                                 const NDRange& range, std::vector<Arg>& args) {
  const std::string what = "launch of team kernel '" + kernel + "'";
  if (args.size() != team.argument) {
    throw PreconditionError(what + ": " + std::to_string(args.size()) +
                            " arguments given; it takes " + std::to_string(team.argument) +
                            " (every parameter but the last, UM_TEAM_PARAM, which unimem passes)");
  }
  if (range.dims != 1 || range.local[0] == 0 || range.offset[0] != 0) {
    throw PreconditionError(
        what + ": a team kernel needs a 1-D NDRange with an explicit " +
        "work-group size and no global offset (got " + std::to_string(range.dims) + "-D, local " +
        std::to_string(range.local[0]) + ", offset " + std::to_string(range.offset[0]) + ")");
  }
  const std::uint64_t groups = group_count(range, 0);
  const std::uint64_t bytes = std::max<std::uint64_t>(groups * team.spill_bytes_per_group(), 8);
  std::lock_guard lock(spill_mutex_);
  auto it = spills_.find(kernel);
  if (it != spills_.end() && runtime_.buffer_size(it->second) < bytes) {
    // Another thread may hold the smaller area for a launch it has not submitted yet: it is
    // released with the Program, not now.
    retired_spills_.push_back(it->second);
    spills_.erase(it);
    it = spills_.end();
  }
  if (it == spills_.end()) {
    const BufferId spill =
        runtime_.create_buffer(bytes, "team spill of '" + kernel + "'", UpdateStrategy::lazy);
    it = spills_.emplace(kernel, spill).first;
  }
  args.push_back(Arg::buffer(it->second));
}

// Step 2b (team kernels): each partition writes the spill slices of its own work-groups and reads
// only what it wrote itself, so the runtime treats them as write-only scratch: no fetch before the
// kernel, and no partition shares a byte with another.
void ProgramCore::attach_team_spill(PlanRequest& request, const TeamFootprint& team) {
  const std::uint64_t per_group = team.spill_bytes_per_group();
  request.derived = [inner = std::move(request.derived), arg = team.argument,
                     per_group](const RangePartition& p) {
    std::map<std::uint32_t, AccessBytes> bytes;
    if (inner) bytes = inner(p);
    AccessBytes scratch;
    if (per_group > 0 && p.group_end > p.group_begin) {
      scratch.writes = IntervalSet(Interval{p.group_begin * per_group, p.group_end * per_group});
    }
    bytes[arg] = std::move(scratch);
    return bytes;
  };
}

// Step 3: the plan; when the analysis cannot evaluate this launch, the plan without it (never
// wrong, maybe slower), saying why.
LaunchPlan ProgramCore::plan_with_fallback(PlanRequest& request) {
  try {
    return plan_launch(request);
  } catch (const PreconditionError& e) {
    if (!request.derived) throw;
    request.derived = nullptr;
    if (request.unsplittable_reason.starts_with("analysis: ")) request.unsplittable_reason.clear();
    LaunchPlan plan = plan_launch(request);
    plan.fallback_reason += (plan.fallback_reason.empty() ? "" : "; ") +
                            std::string("analysis failed for kernel '") + request.kernel +
                            "': " + e.what();
    return plan;
  }
}

// Step 3b (partial residency): the partitions on devices that do not rebase arguments themselves
// get the rewritten kernel, built on the first launch whose partitions touch a buffer from a byte
// other than 0 (a plan whose bytes all start at byte 0 needs no rebasing). Where a buffer keeps
// a full mirror for a reason the runtime cannot say (RuntimeCore in runtime_core.hpp), the
// fallback log says so, once per program and reason.
void ProgramCore::attach_rebased(LaunchPlan& plan, const std::string& kernel,
                                 const std::string& prefix) {
  bool offset_box = false;
  for (const LaunchPartition& p : plan.partitions) {
    for (const auto& [arg, bytes] : p.accesses) {
      if (!bytes.may_writes.empty()) {
        if (plan.partitions.size() > 1) {
          builds_.say_once(kernel + '\0' + std::to_string(arg),
                           "unimem: kernel '" + kernel + "' argument " + std::to_string(arg) +
                               ": its buffer gets full mirrors on the devices of this launch "
                               "(partial residency needs exact access sets; the analysis gives a "
                               "may-write set " +
                               bytes.may_writes.to_string() + " for partition 0)");
        }
        continue;
      }
      // Whether the touched bytes (reads and writes: the may-writes are empty here) start
      // beyond byte 0: some set is not empty and none starts at 0.
      const auto beyond_zero = [](const IntervalSet& s) {
        return s.empty() || s.bounds().begin > 0;
      };
      offset_box = offset_box || ((!bytes.reads.empty() || !bytes.writes.empty()) &&
                                  beyond_zero(bytes.reads) && beyond_zero(bytes.writes));
    }
  }
  if (!offset_box) return;
  for (LaunchPartition& p : plan.partitions) {
    if (runtime_.core().device(p.device).rebases_arguments()) continue;
    p.rebased_kernel = builds_.rebased_kernel_for(kernel, p.device, prefix);
    if (!p.rebased_kernel) continue;
    p.rebased_pointers = builds_.rebased_pointers(kernel);
    // A buffer reaching the kernel through a parameter the rewrite did not turn into buffer +
    // offset (a __constant pointer, a typedef'd one) keeps full mirrors (RuntimeCore).
    for (const auto& [arg, bytes] : p.accesses) {
      if (arg >= p.rebased_pointers->size() || (*p.rebased_pointers)[arg]) continue;
      builds_.say_once(kernel + '\0' + std::to_string(arg) + '\0' + "pointer",
                       "unimem: kernel '" + kernel + "' argument " + std::to_string(arg) +
                           ": its buffer gets full mirrors (the kernel rewrite for partial "
                           "residency reads only parameters declared `__global T*`)");
    }
  }
}

void ProgramCore::say(const std::string& message) const {
  std::function<void(const std::string&)> log;
  {
    std::lock_guard lock(mutex_);
    log = log_;
  }
  if (log) {
    log(message);
  } else {
    std::cerr << message << "\n";
  }
}

// Step 4: a launch that runs on fewer devices than asked says so (set_log, or stderr).
void ProgramCore::report_fallback(const LaunchPlan& plan, const std::string& analysis_note) const {
  if (plan.fallback_reason.empty()) return;
  std::string message = "unimem: " + plan.fallback_reason + "; running on " +
                        std::to_string(plan.partitions.size()) + " device(s)";
  if (!analysis_note.empty()) message += " (" + analysis_note + ")";
  say(message);
}

// Step 5 (Balance::measured): each partition's kernel time feeds the throughput profile.
void ProgramCore::time_partitions(const std::string& kernel, const LaunchPlan& plan,
                                  const std::vector<Event>& events,
                                  std::chrono::steady_clock::time_point start) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::uint64_t items = 1;
    const LaunchPartition& p = plan.partitions[i];
    for (std::uint32_t d = 0; d < 3; ++d) items *= p.range.global[d];
    events[i].on_complete([profile = profile_, kernel, device = p.device, items, start] {
      const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
      std::lock_guard lock(profile->mutex);
      profile->table.record(kernel, device, items, s.count());
    });
  }
}

std::size_t ProgramCore::cached_plans() const {
  std::lock_guard lock(mutex_);
  return plan_cache_.size();
}

LaunchPlan ProgramCore::last_plan() const {
  std::lock_guard lock(mutex_);
  return *last_plan_;
}

void ProgramCore::set_log(std::function<void(const std::string&)> log) {
  std::lock_guard lock(mutex_);
  log_ = std::move(log);
}

}  // namespace unimem
