// ProgramBuilds (src/api/program_builds.hpp): the builds of a program's source for every device,
// the scan for offset-dependent work-item functions, and the on-demand builds of split launches.

#include "api/program_builds.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <unimem/runtime.hpp>
#include "api/device_library.hpp"
#include "api/kernel_pitch_rewrite.hpp"
#include "api/kernel_rewrite.hpp"

namespace unimem {
namespace {

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

}  // namespace

ProgramBuilds::ProgramBuilds(Runtime& runtime, std::string source_text, std::string options,
                             std::function<void(const std::string&)> say)
    : runtime_(runtime),
      source_(std::move(source_text)),
      options_(std::move(options)),
      say_(std::move(say)) {
  const std::string& source = source_;
  options_ += (options_.empty() ? "" : " ") + detail::device_library_build_options();
  const auto build_start = std::chrono::steady_clock::now();
  programs_ = build_per_domain(source, &contexts_, options_);
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
  build_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
}

// Whether a launch can use the program built with whole-launch group ids: one exists, and the
// launch has no global offset of its own and an explicit work-group size (so every partition
// starts at a whole number of work-groups).
bool ProgramBuilds::group_variant_fits(const NDRange& range) const {
  if (!wants_group_variant_) return false;
  for (std::uint32_t d = 0; d < range.dims; ++d) {
    if (range.offset[d] != 0 || range.local[d] == 0) return false;
  }
  return true;
}

bool ProgramBuilds::split_needs_work_group_size() const {
  if (!offset_dependent_call_.empty() || runtime_.device_count() < 2) return false;
  return calls_group_id_ ||
         std::find(size_calls_.begin(), size_calls_.end(), "get_num_groups") != size_calls_.end();
}

bool ProgramBuilds::group_ids_need_launch_offset(const NDRange& range) const {
  if (!wants_group_variant_) return false;
  bool offset = false;
  for (std::uint32_t d = 0; d < range.dims; ++d) {
    if (range.local[d] == 0) return false;
    offset = offset || range.offset[d] != 0;
  }
  return offset;
}

// One build per build domain (an OpenCL context): devices of a domain share the program.
std::vector<std::shared_ptr<const CompiledProgram>> ProgramBuilds::build_per_domain(
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

std::vector<std::shared_ptr<const CompiledProgram>> ProgramBuilds::build_variant(
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

const std::vector<std::shared_ptr<const CompiledProgram>>* ProgramBuilds::group_variant() const {
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
// A program calling only get_group_id needs only the launch's offset: the program does not call
// get_global_offset, so its macro changes nothing else, and the build serves every global size.
ProgramBuilds::SizeVariant* ProgramBuilds::size_variant(PlanRequest& request) {
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
  const bool group_ids_only = size_calls_.empty();
  if (!group_ids_only) {
    prefix += value(
        "get_global_size", [&](std::uint32_t d) { return r.global[d]; }, 1);
  }
  prefix += value(
      "get_global_offset", [&](std::uint32_t d) { return r.offset[d]; }, 0);
  if (explicit_local && !group_ids_only) {
    prefix += value(
        "get_num_groups", [&](std::uint32_t d) { return r.global[d] / r.local[d]; }, 1);
  }
  if (explicit_local) {
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

std::shared_ptr<const CompiledKernel> ProgramBuilds::kernel_for(const std::string& name,
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

std::shared_ptr<const CompiledKernel> ProgramBuilds::kernel_in(
    const std::string& name, std::size_t device,
    const std::vector<std::shared_ptr<const CompiledProgram>>& programs) {
  std::lock_guard lock(kernels_mutex_);
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

// The rewritten kernel `name` for device `device`; null (logged once) when the program has none.
std::shared_ptr<const CompiledKernel> ProgramBuilds::rebased_kernel_for(const std::string& name,
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
      say_(
          "unimem: every buffer of this program gets full mirrors (partial residency needs its "
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
      say_(
          "unimem: program's whole-launch build of its rewritten kernels failed, so their "
          "buffers get full mirrors: " +
          std::string(e.what()));
    }
  }
  const auto& programs = prefix.empty() ? rebased_programs_ : rebased_variants_.at(prefix);
  if (programs.empty() || !rebased_pointers_.contains(name)) {
    if (residency_logged_.insert(name + '\0' + "rewrite").second) {
      say_("unimem: kernel '" + name +
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
      say_("unimem: kernel '" + name + "': its buffers get full mirrors (the rewritten program " +
           "has no such kernel: " + e.what() + ")");
    }
    return nullptr;
  }
  rebased_kernels_.emplace(key, k);
  return k;
}

std::shared_ptr<const std::vector<bool>> ProgramBuilds::rebased_pointers(
    const std::string& kernel) {
  std::lock_guard lock(rebase_mutex_);
  return rebased_pointers_.at(kernel);
}

std::shared_ptr<const std::vector<std::uint32_t>> ProgramBuilds::pitched_parameters(
    const std::string& kernel) {
  std::lock_guard lock(pitch_mutex_);
  if (!pitch_tried_) {
    pitch_tried_ = true;
    try {
      PitchedSource rewritten = rewrite_for_pitches(source_);
      pitched_source_ = std::move(rewritten.source);
      for (const auto& [name, parameters] : rewritten.parameters) {
        std::vector<std::uint32_t> out;
        out.reserve(parameters.size());
        for (const PitchedParameter& q : parameters) {
          out.push_back(q.global_pointer ? q.element_size : LaunchPartition::kNotPointer);
        }
        pitched_parameters_.emplace(name, std::make_shared<const std::vector<std::uint32_t>>(out));
      }
    } catch (const std::exception& e) {
      say_(
          "unimem: this program's kernels keep 1-D boxes (the rewrite for packed 2-D boxes "
          "failed: " +
          std::string(e.what()) + ")");
    }
  }
  const auto it = pitched_parameters_.find(kernel);
  return it == pitched_parameters_.end() ? nullptr : it->second;
}

std::shared_ptr<const CompiledKernel> ProgramBuilds::pitched_kernel_for(const std::string& name,
                                                                        std::size_t device,
                                                                        const std::string& prefix,
                                                                        const std::string& macros) {
  std::lock_guard lock(pitch_mutex_);
  if (pitched_source_.empty()) return nullptr;
  const std::string variant = macros + prefix;
  if (!pitched_builds_by_.contains(variant)) {
    auto& built = pitched_builds_by_[variant];
    try {
      built = build_per_domain(variant + pitched_source_, nullptr, options_);
      ++pitched_builds_;
    } catch (const std::exception& e) {
      say_("unimem: kernel '" + name +
           "' keeps 1-D boxes: its build for packed 2-D boxes failed: " + e.what());
    }
  }
  const auto& programs = pitched_builds_by_.at(variant);
  if (programs.empty()) return nullptr;
  const auto key = std::tuple{name, device, variant};
  if (auto it = pitched_kernels_.find(key); it != pitched_kernels_.end()) return it->second;
  const CompiledProgram* program = programs.at(device).get();
  for (const auto& [k, v] : pitched_kernels_) {
    if (std::get<0>(k) == name && std::get<2>(k) == variant &&
        programs.at(std::get<1>(k)).get() == program) {
      pitched_kernels_.emplace(key, v);
      return v;
    }
  }
  std::shared_ptr<const CompiledKernel> k;
  try {
    k = program->kernel(name);
  } catch (const DeviceError& e) {
    say_("unimem: kernel '" + name + "' keeps 1-D boxes: the pitched program has no such kernel (" +
         e.what() + ")");
    return nullptr;
  }
  pitched_kernels_.emplace(key, k);
  return k;
}

void ProgramBuilds::say_once(std::string key, const std::string& message) {
  std::lock_guard lock(rebase_mutex_);
  if (residency_logged_.insert(std::move(key)).second) say_(message);
}

}  // namespace unimem
