// ProgramCore (src/api/program_core.hpp): building a program for every device and the steps
// of a launch.

#include "api/program_core.hpp"

#include "analysis/team_footprint.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "api/device_library.hpp"
#include "api/kernel_rewrite.hpp"
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

// The work-item functions the source calls whose value changes when the NDRange is split into
// partitions run with global offsets (OpenCL: group ids count from the launch's offset, sizes are
// the partition's), in this order. Only get_global_id and get_local_id, get_local_size keep their
// values. A textual scan (a name in a comment counts too): conservative, never unsafe.
std::vector<std::string> offset_dependent_calls(const std::string& source) {
  std::vector<std::string> found;
  for (const char* name :
       {"get_group_id", "get_num_groups", "get_global_size", "get_global_offset"}) {
    const std::string n(name);
    for (std::size_t at = source.find(n); at != std::string::npos; at = source.find(n, at + 1)) {
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(source[at - 1])) ||
                                       source[at - 1] == '_');
      const std::size_t end = at + n.size();
      const bool ends =
          end >= source.size() ||
          !(std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_');
      if (starts && ends) {
        found.push_back(n);
        break;
      }
    }
  }
  return found;
}

// The -I directories of build options ("-Idir", "-I dir", "-I\"d i r\"").
std::vector<std::filesystem::path> include_dirs(const std::string& options) {
  std::vector<std::filesystem::path> dirs;
  for (std::size_t at = options.find("-I"); at != std::string::npos;
       at = options.find("-I", at + 2)) {
    if (at > 0 && !std::isspace(static_cast<unsigned char>(options[at - 1]))) continue;
    std::size_t begin = at + 2;
    while (begin < options.size() && std::isspace(static_cast<unsigned char>(options[begin]))) {
      ++begin;
    }
    if (begin >= options.size()) break;
    std::size_t end = 0;
    if (options[begin] == '"') {
      end = options.find('"', ++begin);
      if (end == std::string::npos) end = options.size();
    } else {
      end = begin;
      while (end < options.size() && !std::isspace(static_cast<unsigned char>(options[end]))) ++end;
    }
    dirs.emplace_back(options.substr(begin, end - begin));
  }
  return dirs;
}

// The text the offset-dependent scan reads: the source and, recursively, every file it
// #includes that can be found (quoted names in the current directory, then the -I directories),
// except unimem's own device library, whose team number handles split launches itself. An include
// that cannot be read is named in `unreadable` (the scan then cannot vouch for the program).
// `files` (when given) receives each include's name as written and its text.
std::string with_includes(const std::string& source, const std::vector<std::filesystem::path>& dirs,
                          const std::string& library_dir, std::set<std::string>& seen, int depth,
                          std::string& unreadable,
                          std::vector<std::pair<std::string, std::string>>* files) {
  namespace fs = std::filesystem;
  std::string text = source;
  if (depth > 16) return text;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    std::size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line[at] != '#') continue;
    at = line.find_first_not_of(" \t", at + 1);
    if (at == std::string::npos || line.compare(at, 7, "include") != 0) continue;
    at = line.find_first_of("<\"", at + 7);
    if (at == std::string::npos) continue;
    const char close = line[at] == '<' ? '>' : '"';
    const std::size_t end = line.find(close, at + 1);
    if (end == std::string::npos) continue;
    const std::string name = line.substr(at + 1, end - at - 1);
    std::vector<fs::path> candidates;
    if (close == '"') candidates.push_back(fs::current_path() / name);
    for (const fs::path& d : dirs) candidates.push_back(d / name);
    bool found = false;
    for (const fs::path& c : candidates) {
      std::error_code error;
      if (!fs::is_regular_file(c, error)) continue;
      found = true;
      const std::string canonical = fs::weakly_canonical(c, error).string();
      if (!library_dir.empty() && canonical.starts_with(library_dir)) break;
      const bool first = seen.insert(canonical).second;
      if (!first && files == nullptr) break;
      std::ifstream in(c);
      std::stringstream content;
      content << in.rdbuf();
      if (files != nullptr) files->emplace_back(name, content.str());
      if (first) {
        text += "\n" +
                with_includes(content.str(), dirs, library_dir, seen, depth + 1, unreadable, files);
      }
      break;
    }
    if (!found && unreadable.empty()) unreadable = name;
  }
  return text;
}

// The program built for split launches of a source that calls get_group_id: a partition launched
// with global offset o (a whole number of work-groups) sees group ids from 0; adding o / local
// size gives the whole launch's ids again. Right only for launches without a global offset of
// their own and with an explicit work-group size (ProgramCore::group_variant_fits).
// UNIMEM_WHOLE_LAUNCH_GROUP_IDS tells <unimem/team.h> not to add the offset a second time.
constexpr const char* kWholeLaunchGroupIds =
    "#define UNIMEM_WHOLE_LAUNCH_GROUP_IDS 1\n"
    "#define get_group_id(d) (get_group_id(d) + get_global_offset(d) / get_local_size(d))\n"
    "#line 1\n";

}  // namespace

// Whether a launch can use the program built with whole-launch group ids: one exists, and the
// launch has no global offset of its own and an explicit work-group size (so every partition
// starts at a whole number of work-groups).
bool ProgramCore::group_variant_fits(const NDRange& range) const {
  if (!wants_group_variant_) return false;
  for (std::uint32_t d = 0; d < range.dims; ++d) {
    if (range.offset[d] != 0 || range.local[d] == 0) return false;
  }
  return true;
}

// One build per build domain (an OpenCL context): devices of a domain share the program.
std::vector<std::shared_ptr<const CompiledProgram>> ProgramCore::build_per_domain(
    const std::string& text, std::size_t* contexts, const std::string& options) const {
  std::vector<std::pair<const void*, std::shared_ptr<const CompiledProgram>>> built;
  std::vector<std::shared_ptr<const CompiledProgram>> per_device;
  for (std::size_t i = 0; i < runtime_.device_count(); ++i) {
    const Device& device = runtime_.core().device(i);
    auto it = std::find_if(built.begin(), built.end(),
                           [&](const auto& b) { return b.first == device.build_domain(); });
    if (it == built.end()) {
      built.emplace_back(device.build_domain(), device.build_program(text, options));
      it = std::prev(built.end());
    }
    per_device.push_back(it->second);
  }
  if (contexts != nullptr) *contexts = built.size();
  return per_device;
}

std::vector<std::shared_ptr<const CompiledProgram>> ProgramCore::build_variant(
    const std::string& prefix) const {
  namespace fs = std::filesystem;
  // The headers as the first build read them (they may have changed or gone since), in a
  // directory searched first; names that are absolute or climb out are left to the search.
  static std::atomic<unsigned> count{0};
  const fs::path dir = fs::temp_directory_path() / ("unimem-variant-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(count++));
  std::error_code error;
  std::vector<std::shared_ptr<const CompiledProgram>> programs;
  try {
    std::string options = options_;
    if (!included_.empty()) {
      fs::create_directories(dir);
      for (const auto& [name, text] : included_) {
        const fs::path relative(name);
        if (relative.is_absolute() || name.find("..") != std::string::npos) continue;
        const fs::path file = dir / relative;
        if (fs::exists(file, error)) continue;  // the first of one name, as the scan found it
        fs::create_directories(file.parent_path());
        std::ofstream(file, std::ios::binary) << text;
      }
      options = "-I" + dir.string() + " " + options_;
    }
    programs = build_per_domain(prefix + source_, nullptr, options);
  } catch (...) {
    fs::remove_all(dir, error);
    throw;
  }
  fs::remove_all(dir, error);
  return programs;
}

const std::vector<std::shared_ptr<const CompiledProgram>>* ProgramCore::group_variant() const {
  if (!wants_group_variant_) return nullptr;
  std::call_once(group_variant_once_, [this] {
    ++group_variant_builds_;
    try {
      group_programs_ = build_variant(kWholeLaunchGroupIds);
    } catch (const std::exception& e) {
      group_variant_error_ = e.what();
    }
  });
  return group_programs_.empty() ? nullptr : &group_programs_;
}

// The build for a split launch of a program that calls get_num_groups, get_global_size or
// get_global_offset: these (and get_group_id, which counts from the partition's offset) are macros
// giving this launch shape's whole-launch values as constants, which also reach helper functions.
// get_group_id adds (partition offset - launch offset) / work-group size, a whole number since
// partitions start at whole work-groups from the launch's offset; the partition's offset is the
// builtin's, read in a function defined before get_global_offset becomes a macro. Made at most
// once per shape, on the first launch of that shape over several devices, from any thread.
ProgramCore::SizeVariant* ProgramCore::size_variant(PlanRequest& request) {
  const NDRange& r = request.range;
  const bool explicit_local =
      std::all_of(r.local.begin(), r.local.begin() + r.dims, [](std::uint64_t l) { return l > 0; });
  const bool needs_local = calls_group_id_ || std::find(size_calls_.begin(), size_calls_.end(),
                                                        "get_num_groups") != size_calls_.end();
  std::string calls = calls_group_id_ ? "get_group_id" : "";
  for (const std::string& c : size_calls_) {
    if (!calls.empty()) calls += ", ";
    calls += c;
  }
  if (needs_local && !explicit_local) {
    request.unsplittable_reason = "the program calls " + calls +
                                  ", and the launch leaves the work-group size to the driver "
                                  "(partitions would see other values than the whole launch)";
    return nullptr;
  }
  const auto value = [&](const char* name, auto of, std::uint64_t beyond) {
    std::string text = std::string("#define ") + name + "(d) ((size_t)(";
    for (std::uint32_t d = 0; d < 3; ++d) {
      text += "(d) == " + std::to_string(d) + " ? ";
      text += std::to_string(d < r.dims ? of(d) : beyond);
      text += "UL : ";
    }
    text += std::to_string(beyond);
    text += "UL))\n";
    return text;
  };
  std::string prefix;
  if (explicit_local) {
    prefix += "#define UNIMEM_WHOLE_LAUNCH_GROUP_IDS 1\n";
    prefix += "size_t unimem_partition_offset_(uint d) { return get_global_offset(d); }\n";
  }
  prefix += value(
      "get_global_size", [&](std::uint32_t d) { return r.global[d]; }, 1);
  prefix += value(
      "get_global_offset", [&](std::uint32_t d) { return r.offset[d]; }, 0);
  if (explicit_local) {
    prefix += value(
        "get_num_groups", [&](std::uint32_t d) { return r.global[d] / r.local[d]; }, 1);
    prefix +=
        "#define get_group_id(d) (get_group_id(d) + (unimem_partition_offset_(d) - "
        "get_global_offset(d)) / get_local_size(d))\n";
  }
  prefix += "#line 1\n";
  SizeVariant* variant = nullptr;
  {
    std::lock_guard lock(size_variants_mutex_);
    auto it = size_variants_.find(prefix);
    if (it == size_variants_.end()) {
      if (size_variants_.size() >= kSizeVariants) {
        request.unsplittable_reason =
            "the program calls " + calls +
            ", and it already has builds with the whole launch's "
            "sizes for " +
            std::to_string(kSizeVariants) +
            " other launch shapes (global size, work-group size, global offset)";
        return nullptr;
      }
      it = size_variants_.emplace(prefix, std::make_unique<SizeVariant>()).first;
      it->second->prefix = prefix;
    }
    variant = it->second.get();
  }
  std::call_once(variant->once, [this, variant] {
    ++size_variant_builds_;
    try {
      variant->programs = build_variant(variant->prefix);
    } catch (const std::exception& e) {
      variant->error = e.what();
    }
  });
  if (variant->programs.empty()) {
    request.unsplittable_reason =
        "the program calls " + calls +
        ", and its build with the whole launch's sizes failed: " + variant->error;
    return nullptr;
  }
  return variant;
}

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
    : runtime_(runtime), source_(std::move(source_text)), options_(std::move(options)) {
  const std::string& source = source_;
  options_ += (options_.empty() ? "" : " ") + detail::device_library_build_options();
  const auto build_start = std::chrono::steady_clock::now();
  programs_ = build_per_domain(source, &build_report_.contexts, options_);
  // The scan reads what the compiler reads: the source and the files it includes.
  std::set<std::string> seen;
  std::string unreadable_include;
  std::string library_dir;
  if (const std::string d = detail::device_include_dir(); !d.empty()) {
    std::error_code error;
    library_dir = std::filesystem::weakly_canonical(d, error).string();
  }
  std::vector<std::pair<std::string, std::string>> included;
  const std::vector<std::string> calls = offset_dependent_calls(with_includes(
      source, include_dirs(options_), library_dir, seen, 0, unreadable_include, &included));
  calls_group_id_ = !calls.empty() && calls.front() == "get_group_id";
  size_calls_.assign(calls.begin() + (calls_group_id_ ? 1 : 0), calls.end());
  if (!unreadable_include.empty()) {
    // The scan cannot see into it: the program may call any of the four.
    offset_dependent_call_ = "functions of '" + unreadable_include +
                             "' (an #include unimem could not read to check for get_group_id, "
                             "get_num_groups, get_global_size or get_global_offset)";
  }
  // The second build waits for a launch that splits (group_variant()): most programs never do.
  wants_group_variant_ = calls_group_id_ && size_calls_.empty() && offset_dependent_call_.empty() &&
                         runtime_.device_count() > 1;
  if (wants_group_variant_ || (!size_calls_.empty() && runtime_.device_count() > 1)) {
    included_ = std::move(included);  // the headers as they are now, for the later build
  }
  build_report_.opencl_build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  // DSOM section 4.3.2: the analysis runs when the program is built. A source the analysis cannot
  // read still runs: arguments without descriptors then count as whole-buffer may-writes.
  detail::AnalysisTiming timing;
  analysis_ = detail::ProgramAnalysis::analyze(source, options_, &analysis_error_, &timing);
  build_report_.analysis_seconds = timing.seconds;
  build_report_.analysis_cached = timing.cached;
  // Team kernels are recognised by their spill parameter's name (analysis/team_footprint.hpp).
  if (!programs_.empty()) {
    for (const std::string& name : programs_.front()->kernel_names()) {
      const std::vector<std::string> params = kernel_for(name, 0)->argument_names();
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

std::shared_ptr<const CompiledKernel> ProgramCore::kernel_for(const std::string& name,
                                                              std::size_t device,
                                                              bool whole_launch_group_ids) {
  const auto* variant = whole_launch_group_ids ? group_variant() : nullptr;  // before the lock
  if (whole_launch_group_ids && variant == nullptr) {
    throw PreconditionError(
        "launch of '" + name + "': no build with whole-launch group ids (" +
        (group_variant_error_.empty() ? std::string("not needed") : group_variant_error_) + ")");
  }
  return kernel_in(name, device, whole_launch_group_ids ? *variant : programs_);
}

std::shared_ptr<const CompiledKernel> ProgramCore::kernel_in(
    const std::string& name, std::size_t device,
    const std::vector<std::shared_ptr<const CompiledProgram>>& programs) {
  std::lock_guard lock(mutex_);
  const void* build = &programs;
  auto key = std::tuple{name, device, build};
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  // Devices of one build domain share one kernel object (the driver serialises its arguments).
  const CompiledProgram* program = programs.at(device).get();
  for (const auto& [k, v] : kernels_) {
    const auto& [other_name, other_device, other_build] = k;
    if (other_name == name && other_build == build && programs.at(other_device).get() == program) {
      kernels_.emplace(key, v);
      return v;
    }
  }
  std::shared_ptr<const CompiledKernel> kernel;
  try {
    kernel = program->kernel(name);
  } catch (const DeviceError& e) {
    throw PreconditionError("launch: no kernel '" + name + "' in the program (" + e.what() + ")");
  }
  kernels_.emplace(key, kernel);
  return kernel;
}

bool ProgramCore::repeats(const RepeatableLaunch& last, const std::string& kernel,
                          const NDRange& range, std::span<const Arg> args,
                          const LaunchOptions& options) {
  const auto same_range = [](const NDRange& a, const NDRange& b) {
    return a.dims == b.dims && a.offset == b.offset && a.global == b.global && a.local == b.local;
  };
  const auto same_arg = [](const Arg& a, const Arg& b) {
    return a.kind == b.kind && a.buffer_id == b.buffer_id && a.buffer_offset == b.buffer_offset &&
           a.scalar_bytes == b.scalar_bytes && a.local_bytes == b.local_bytes;
  };
  // Only launches without descriptors are cached (ProgramCore::launch), so accesses is empty.
  const LaunchOptions& o = last.options;
  return last.kernel == kernel && same_range(last.range, range) &&
         std::equal(last.args.begin(), last.args.end(), args.begin(), args.end(), same_arg) &&
         options.accesses.empty() && o.device == options.device && o.devices == options.devices &&
         o.split_dimension == options.split_dimension && o.balance == options.balance &&
         o.use_analysis == options.use_analysis && o.ignore_accesses == options.ignore_accesses;
}

Event ProgramCore::launch(const std::string& kernel, const NDRange& range,
                          std::span<const Arg> user_args, const LaunchOptions& options,
                          std::shared_ptr<const LaunchPlan>* plan_out,
                          std::vector<Event>* partition_events) {
  {
    // A repeated launch: its plan and runtime arguments as last time (see RepeatableLaunch).
    std::shared_ptr<const RepeatableLaunch> last;
    {
      std::lock_guard lock(mutex_);
      if (last_launch_ && repeats(*last_launch_, kernel, range, user_args, options)) {
        last = last_launch_;
        last_plan_ = last->cached.plan;
      }
    }
    if (last) {
      const LaunchPlan& plan = *last->cached.plan;
      report_fallback(plan, last->cached.analysis_note);
      if (partition_events != nullptr) partition_events->clear();
      Event all = runtime_.core().launch_partitioned(*last->launch_args, plan.partitions,
                                                     partition_events, last);
      if (plan_out != nullptr) *plan_out = last->cached.plan;
      return all;
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
  SizeVariant* sizes =
      !size_calls_.empty() && request.devices.size() > 1 && request.unsplittable_reason.empty()
          ? size_variant(request)
          : nullptr;
  // Measured balance changes its weights, descriptors may be anything, team spill areas grow:
  // only plain launches are cached.
  std::string key = measuring || !options.accesses.empty() || team != build_report_.teams.end()
                        ? std::string()
                        : plan_key(request, args, options);
  if (!key.empty()) {  // the build in use (the range in the key also determines it)
    const void* build = sizes;
    key.append(reinterpret_cast<const char*>(&build), sizeof build);
  }
  CachedPlan cached;
  if (!key.empty()) {
    std::lock_guard lock(mutex_);
    if (auto it = plan_cache_.find(key); it != plan_cache_.end()) cached = it->second;
  }
  if (!cached.plan) {
    cached.analysis_note = attach_analysis(request, args, options);
    if (team != build_report_.teams.end()) attach_team_spill(request, team->second);
    if (measuring) {
      std::lock_guard lock(profile_->mutex);
      if (auto w = profile_->table.weights(kernel, request.devices)) request.weights = *w;
    }
    LaunchPlan plan = plan_with_fallback(request);
    const bool group_ids = sizes == nullptr && calls_group_id_ && request.devices.size() > 1 &&
                           group_variant_fits(range) && group_variant() != nullptr;
    for (LaunchPartition& p : plan.partitions) {
      p.kernel = sizes != nullptr ? kernel_in(kernel, p.device, sizes->programs)
                                  : kernel_for(kernel, p.device, group_ids);
    }
    attach_rebased(plan, kernel,
                   sizes != nullptr ? sizes->prefix
                   : group_ids      ? std::string(kWholeLaunchGroupIds)
                                    : std::string());
    cut_to_fit(plan, request, launch_args, group_ids, sizes);
    cached.plan = std::make_shared<const LaunchPlan>(std::move(plan));
    if (!key.empty()) {
      std::lock_guard lock(mutex_);
      if (plan_cache_.size() >= kPlanCacheEntries) plan_cache_.clear();
      plan_cache_.emplace(key, cached);
    }
  }
  std::shared_ptr<const RepeatableLaunch> repeatable;
  if (!key.empty()) {
    repeatable = std::make_shared<const RepeatableLaunch>(
        RepeatableLaunch{kernel, range, std::vector<Arg>(args.begin(), args.end()), options, cached,
                         std::make_shared<const std::vector<LaunchArg>>(launch_args)});
    std::lock_guard lock(mutex_);
    last_launch_ = repeatable;
  }
  const LaunchPlan& plan = *cached.plan;
  report_fallback(plan, cached.analysis_note);

  std::vector<Event> events;
  const auto start = std::chrono::steady_clock::now();
  Event all = plan.chunks == 0 ? runtime_.core().launch_partitioned(launch_args, plan.partitions,
                                                                    &events, std::move(repeatable))
                               : launch_rounds(plan, launch_args, &events);
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
// scalar bytes or local size). Buffer identities are not in it: a plan speaks of argument
// positions, so the same launch over other buffers of the same sizes shares it.
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
      case Arg::Kind::buffer:
        put(request.args[i].buffer_size);
        break;
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
    for (std::size_t i = 0; i < runtime_.device_count(); ++i) request.devices.push_back(i);
  }
  for (std::size_t d : request.devices) {
    if (d >= runtime_.device_count()) {
      throw PreconditionError("launch of '" + kernel + "': unknown device " + std::to_string(d));
    }
  }
  for (const Arg& a : args) {
    PlanArgument pa;
    pa.is_buffer = a.kind == Arg::Kind::buffer;
    if (pa.is_buffer) pa.buffer_size = view_size(kernel, launch_args.size(), a);
    request.args.push_back(pa);
    launch_args.push_back(to_launch_arg(a));
  }
  if (!options.ignore_accesses) request.accesses = options.accesses;
  if (!offset_dependent_call_.empty()) {
    request.unsplittable_reason = "the program calls " + offset_dependent_call_ +
                                  ", whose value differs between a split launch's partitions "
                                  "and the whole launch";
  } else if (!size_calls_.empty()) {
    // ProgramCore::launch asks size_variant(), which says why when the launch cannot split.
  } else if (calls_group_id_ && !group_variant_fits(range)) {
    request.unsplittable_reason =
        "the program calls get_group_id, and the launch has a global offset or leaves the "
        "work-group size to the driver (partitions would see other group ids than the whole "
        "launch)";
  } else if (calls_group_id_ && request.devices.size() > 1 && group_variant() == nullptr) {
    request.unsplittable_reason =
        "the program calls get_group_id, and its build with whole-launch group ids failed: " +
        group_variant_error_;
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
        request.derived = [analysis = analysis_, kernel, arange, values,
                           dim](const RangePartition& p) {
          Box<3>::Point begin{0, 0, 0};
          Box<3>::Point end{1, 1, 1};
          for (std::uint32_t d = 0; d < arange.dims; ++d) {
            end[d] = static_cast<std::int64_t>(arange.global[d] / arange.local[d]);
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
        std::string key = kernel + '\0' + std::to_string(arg);
        std::lock_guard lock(rebase_mutex_);
        if (plan.partitions.size() > 1 && residency_logged_.insert(std::move(key)).second) {
          say("unimem: kernel '" + kernel + "' argument " + std::to_string(arg) +
              ": its buffer gets full mirrors on the devices of this launch (partial residency "
              "needs exact access sets; the analysis gives a may-write set " +
              bytes.may_writes.to_string() + " for partition 0)");
        }
        continue;
      }
      const IntervalSet touched = bytes.needed().unite(bytes.written());
      offset_box = offset_box || (!touched.empty() && touched.bounds().begin > 0);
    }
  }
  if (!offset_box) return;
  for (LaunchPartition& p : plan.partitions) {
    if (runtime_.core().device(p.device).rebases_arguments()) continue;
    p.rebased_kernel = rebased_kernel_for(kernel, p.device, prefix);
    if (!p.rebased_kernel) continue;
    std::lock_guard lock(rebase_mutex_);
    p.rebased_pointers = rebased_pointers_.at(kernel);
    // A buffer reaching the kernel through a parameter the rewrite did not turn into buffer +
    // offset (a __constant pointer, a typedef'd one) keeps full mirrors (RuntimeCore).
    for (const auto& [arg, bytes] : p.accesses) {
      if (arg >= p.rebased_pointers->size() || (*p.rebased_pointers)[arg]) continue;
      if (residency_logged_.insert(kernel + '\0' + std::to_string(arg) + '\0' + "pointer").second) {
        say("unimem: kernel '" + kernel + "' argument " + std::to_string(arg) +
            ": its buffer gets full mirrors (the kernel rewrite for partial residency reads only "
            "parameters declared `__global T*`)");
      }
    }
  }
}

// Step 3c (out-of-core launches, issue 10; BBMM 001_9219257c3045faa0.txt runs a GPU's tiles
// within its memory): a partition whose allocations (RuntimeCore::footprint: one box per buffer,
// rebased) do not fit its device even with everything else evicted is cut into chunks, blocks
// of its work-groups along the split dimension, that run one after another on that device: each
// chunk's launch acquires its boxes, evicting the previous chunk's (their Modified bytes go home
// first: DeviceMemory / Residency box-out). Chunks are sized for half the device's limit when a
// work-group allows it, so the next chunk's boxes can be allocated and filled while the current
// chunk's kernel runs. Correct because work-groups of one OpenCL launch have no order among them
// and no synchronisation across them: running the work-groups of a partition in a few launches
// one after another is one of the orders the kernel already allows (a kernel reading bytes
// another work-group writes races in OpenCL itself). Kernels whose work-item functions depend on
// the launch's size (get_num_groups, get_global_size, get_global_offset) cannot be cut; one work-
// group that alone does not fit is an error naming the kernel, its buffers and the bytes.
void ProgramCore::cut_to_fit(LaunchPlan& plan, const PlanRequest& request,
                             std::span<const LaunchArg> launch_args, bool group_ids,
                             const SizeVariant* sizes) {
  RuntimeCore& core = runtime_.core();
  const std::string& kernel = request.kernel;
  const auto with_rebased = [&](LaunchPartition& p, bool whole_launch_group_ids) {
    if (core.device(p.device).rebases_arguments()) return;
    p.rebased_kernel =
        rebased_kernel_for(kernel, p.device,
                           sizes != nullptr         ? sizes->prefix
                           : whole_launch_group_ids ? std::string(kWholeLaunchGroupIds)
                                                    : std::string());
    if (!p.rebased_kernel) return;
    std::lock_guard lock(rebase_mutex_);
    p.rebased_pointers = rebased_pointers_.at(kernel);
  };
  const auto boxes_text = [](const PartitionFootprint& f) {
    std::string text;
    for (const PartitionFootprint::Box& b : f.boxes) {
      text += text.empty() ? "" : ", ";
      text += "argument " + std::to_string(b.arg) + " (" + b.buffer + "): ";
      text += std::to_string(b.bytes) + " bytes";
    }
    return text;
  };
  const std::uint32_t dim = split_dimension(request.range, request.dimension);
  const std::uint64_t unit = request.range.local[dim] == 0 ? 1 : request.range.local[dim];
  std::vector<LaunchPartition> out;
  std::size_t chunks = 0;
  for (LaunchPartition& p : plan.partitions) {
    if (core.whole_buffers_fit(launch_args, p.device)) {
      out.push_back(std::move(p));
      continue;
    }
    PartitionFootprint need = core.footprint(launch_args, p);
    if (need.fits()) {
      out.push_back(std::move(p));
      continue;
    }
    LaunchPartition whole = p;  // rebased, it may fit after all (its boxes start past byte 0)
    if (!whole.rebased_kernel) with_rebased(whole, group_ids);
    need = core.footprint(launch_args, whole);
    if (need.fits()) {
      out.push_back(std::move(whole));
      continue;
    }
    const std::string where =
        "launch of kernel '" + kernel + "' on device " + std::to_string(p.device) +
        ": its partition needs " + std::to_string(need.total) + " bytes there at once (" +
        boxes_text(need) + "), the device's limit is " + std::to_string(need.limit) + " bytes";
    // A whole-launch-size build (size_variant) gives every work-item function the whole
    // launch's value in any sub-range, so its chunks need nothing more.
    if (sizes == nullptr && !offset_dependent_call_.empty()) {
      throw OutOfDeviceMemory(where + ", and it cannot run in chunks: the program calls " +
                              offset_dependent_call_ +
                              ", whose value in a chunk would differ from the whole launch's");
    }
    if (sizes == nullptr && calls_group_id_ && !group_ids) {
      if (!group_variant_fits(request.range) || group_variant() == nullptr) {
        throw OutOfDeviceMemory(
            where +
            ", and it cannot run in chunks: the program calls get_group_id "
            "and has no build counting group ids over the whole launch" +
            (group_variant_error_.empty() ? std::string() : " (" + group_variant_error_ + ")"));
      }
      whole.kernel = kernel_for(kernel, p.device, true);
      with_rebased(whole, true);
    }
    const std::uint64_t groups = p.group_end - p.group_begin;
    std::vector<LaunchPartition> cut;
    // Half the limit first (room to overlap), then the whole limit.
    for (const std::uint64_t budget : {need.limit / 2, need.limit}) {
      std::uint64_t n = std::min<std::uint64_t>(
          groups,
          std::max<std::uint64_t>(2, budget == 0 ? groups : (need.total + budget - 1) / budget));
      bool single_group_too_large = false;
      while (cut.empty() && !single_group_too_large) {
        for (std::uint64_t c = 0; c < n; ++c) {
          const std::uint64_t g0 = p.group_begin + groups * c / n;
          const std::uint64_t g1 = p.group_begin + groups * (c + 1) / n;
          if (g1 == g0) continue;
          RangePartition slice;
          slice.device = p.device;
          slice.range = p.range;
          slice.range.offset[dim] = request.range.offset[dim] + g0 * unit;
          slice.range.global[dim] = (g1 - g0) * unit;
          slice.group_begin = g0;
          slice.group_end = g1;
          LaunchPartition chunk = derive_partition(request, slice);
          chunk.kernel = whole.kernel;
          chunk.rebased_kernel = whole.rebased_kernel;
          chunk.rebased_pointers = whole.rebased_pointers;
          chunk.chunk = static_cast<std::uint32_t>(cut.size());
          const PartitionFootprint f = core.footprint(launch_args, chunk);
          if (f.total > budget || !f.fits()) {
            if (g1 - g0 > 1) {
              cut.clear();
              break;
            }
            single_group_too_large = true;
            if (budget < need.limit) break;
            std::string msg = "launch of kernel '" + kernel + "' on device " +
                              std::to_string(p.device) + ": one work-group (group " +
                              std::to_string(g0) + " along dimension " + std::to_string(dim) +
                              ") needs " + std::to_string(f.total) + " bytes there at once (" +
                              boxes_text(f) + "), more than the device's capacity of " +
                              std::to_string(f.limit) + " bytes";
            if (f.total <= f.limit) {
              msg += " in one allocation of at most " + std::to_string(f.max_allocation) + " bytes";
            }
            throw OutOfDeviceMemory(msg +
                                    "; a work-group cannot be cut into chunks (a buffer's box is "
                                    "the bounding interval of the bytes the work-group touches)");
          }
          cut.push_back(std::move(chunk));
        }
        if (single_group_too_large) cut.clear();
        if (cut.empty() && !single_group_too_large) {
          if (n == groups) break;
          n = std::min(groups, n * 2);
        }
      }
      if (!cut.empty()) break;
    }
    if (cut.empty()) {
      detail::throw_invariant("cut_to_fit: no chunks found and no error raised", __FILE__,
                              __LINE__);
    }
    chunks += cut.size();
    for (LaunchPartition& c : cut) out.push_back(std::move(c));
  }
  plan.partitions = std::move(out);
  plan.chunks = chunks;
}

// The rounds of a plan with chunks (cut_to_fit): round r launches every partition whose chunk
// is r (at most one per device), rounds in order; events receives every partition's kernel event.
Event ProgramCore::launch_rounds(const LaunchPlan& plan, std::span<const LaunchArg> launch_args,
                                 std::vector<Event>* events) {
  std::uint32_t rounds = 0;
  for (const LaunchPartition& p : plan.partitions) rounds = std::max(rounds, p.chunk + 1);
  EventList all;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    std::vector<LaunchPartition> round;
    for (const LaunchPartition& p : plan.partitions) {
      if (p.chunk == r) round.push_back(p);
    }
    all.push_back(runtime_.core().launch_partitioned(launch_args, round, events));
  }
  return when_all(all);
}

// The rewritten kernel `name` for device `device`; null (logged once) when the program has none.
std::shared_ptr<const CompiledKernel> ProgramCore::rebased_kernel_for(const std::string& name,
                                                                      std::size_t device,
                                                                      const std::string& prefix) {
  std::lock_guard lock(rebase_mutex_);
  if (!rebase_tried_) {
    rebase_tried_ = true;
    try {
      RewrittenSource rewritten = rewrite_for_offsets(source_);
      rebased_programs_ = build_per_domain(rewritten.source, nullptr, options_);
      rebased_source_ = std::move(rewritten.source);
      for (auto& [kernel, pointers] : rewritten.global_pointers) {
        rebased_pointers_.emplace(kernel,
                                  std::make_shared<const std::vector<bool>>(std::move(pointers)));
      }
    } catch (const std::exception& e) {
      rebase_error_ = e.what();
      say("unimem: every buffer of this program gets full mirrors (partial residency needs its "
          "kernels rewritten to take buffer + offset, which failed: " +
          rebase_error_ + ")");
    }
  }
  if (!rebase_error_.empty()) return nullptr;
  // The rewrite's builds with a variant's prefix (whole-launch group ids or sizes), like
  // group_variant() and size_variant(), wait for a launch that uses them; a failure leaves one
  // empty, and the kernel's buffers keep full mirrors.
  if (!prefix.empty() && !rebased_variants_.contains(prefix)) {
    auto& built = rebased_variants_[prefix];
    try {
      built = build_per_domain(prefix + rebased_source_, nullptr, options_);
    } catch (const std::exception& e) {
      say("unimem: program's whole-launch build of its rewritten kernels failed, so their "
          "buffers get full mirrors: " +
          std::string(e.what()));
    }
  }
  const auto& programs = prefix.empty() ? rebased_programs_ : rebased_variants_.at(prefix);
  if (programs.empty() || !rebased_pointers_.contains(name)) {
    if (residency_logged_.insert(name + '\0' + "rewrite").second) {
      say("unimem: kernel '" + name +
          "': its buffers get full mirrors (the kernel rewrite for "
          "partial residency did not find its signature in the program's source)");
    }
    return nullptr;
  }
  auto key = std::tuple{name, device, prefix};
  if (auto it = rebased_kernels_.find(key); it != rebased_kernels_.end()) return it->second;
  const CompiledProgram* program = programs.at(device).get();
  for (const auto& [k, v] : rebased_kernels_) {
    if (std::get<0>(k) == name && std::get<2>(k) == prefix &&
        programs.at(std::get<1>(k)).get() == program) {
      rebased_kernels_.emplace(key, v);
      return v;
    }
  }
  std::shared_ptr<const CompiledKernel> k;
  try {
    k = program->kernel(name);
  } catch (const DeviceError& e) {
    if (residency_logged_.insert(name + '\0' + "kernel").second) {
      say("unimem: kernel '" + name + "': its buffers get full mirrors (the rewritten program " +
          "has no such kernel: " + e.what() + ")");
    }
    return nullptr;
  }
  rebased_kernels_.emplace(key, k);
  return k;
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

LaunchPlan ProgramCore::last_plan() const {
  std::lock_guard lock(mutex_);
  return *last_plan_;
}

void ProgramCore::set_log(std::function<void(const std::string&)> log) {
  std::lock_guard lock(mutex_);
  log_ = std::move(log);
}

}  // namespace unimem
