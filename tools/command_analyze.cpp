// unimem analyze: the access patterns of each kernel of an OpenCL C file, and the byte ranges a
// launch partition touches (issue 5 specifies the JSON form).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"

#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS
#include <nlohmann/json.hpp>

#include "analysis/analysis_cache.hpp"
#include "analysis/kernel_ranges.hpp"
#include "analysis/program_analyzer.hpp"
#include "analysis/scalar_argument.hpp"
#include "analysis/team_footprint.hpp"
#include "api/device_library.hpp"
#endif

namespace unimem::tools {

namespace {

struct AnalyzeOptions {
  std::string file;
  std::vector<std::string> defines;
  std::vector<std::string> includes;
  std::string build_options;
  std::string kernel;
  std::string global;
  std::string local;
  std::string offset;
  std::vector<std::string> args;
  std::vector<std::string> buffers;
  std::string groups;
  bool json = false;
  bool stats = false;
};

#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::int64_t parse_int(const std::string& s, const std::string& what) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s, &used, 0);
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw std::runtime_error("invalid number '" + s + "' in " + what);
  }
}

std::array<std::uint64_t, 3> parse_dims(const std::string& s, const std::string& what,
                                        std::uint32_t* dims, std::uint64_t fill) {
  std::array<std::uint64_t, 3> out{fill, fill, fill};
  const std::vector<std::string> parts = split(s, ',');
  if (parts.empty() || parts.size() > 3) throw std::runtime_error(what + " takes 1 to 3 values");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::int64_t v = parse_int(parts[i], what);
    if (v < 0) throw std::runtime_error(what + ": " + negative_number_error(parts[i]));
    out[i] = static_cast<std::uint64_t>(v);
  }
  if (dims != nullptr) *dims = static_cast<std::uint32_t>(parts.size());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The argument named (or numbered) by key in kernel.
const ArgumentAccess& find_argument(const KernelAccessInfo& kernel, const std::string& key,
                                    const std::string& option) {
  if (const ArgumentAccess* a = kernel.find_arg(key)) return *a;
  bool numeric = !key.empty();
  for (char c : key) numeric = numeric && (c >= '0' && c <= '9');
  if (numeric) {
    const std::size_t i = std::stoul(key);
    if (i < kernel.args.size()) return kernel.args[i];
  }
  throw std::runtime_error(option + ": kernel '" + kernel.name + "' has no argument '" + key + "'");
}

/// [[begin, end], ...]: the half-open byte intervals of s.
nlohmann::ordered_json intervals_json(const IntervalSet& s) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < s.interval_count(); ++i)
    out.push_back(nlohmann::ordered_json::array({s[i].begin, s[i].end}));
  return out;
}

void print_stats(const ProgramAccessInfo& program, const std::string& only) {
  std::printf("%-28s %6s %6s %6s %6s  %s\n", "kernel", "total", "N1", "N2", "N3",
              "(N3: general-exact, indirect, non-affine, unknown-call)");
  AccessStats sum;
  for (const KernelAccessInfo& k : program.kernels) {
    if (!only.empty() && k.name != only) continue;
    const AccessStats& s = k.stats;
    const unsigned n3 = s.affine_general + s.indirect + s.non_affine + s.unknown_call;
    std::printf("%-28s %6u %6u %6u %6u  (%u, %u, %u, %u)\n", k.name.c_str(), s.total, s.affine,
                s.affine_rectangular, n3, s.affine_general, s.indirect, s.non_affine,
                s.unknown_call);
    sum += s;
  }
  const unsigned n3 = sum.affine_general + sum.indirect + sum.non_affine + sum.unknown_call;
  std::printf("%-28s %6u %6u %6u %6u  (%u, %u, %u, %u)\n", "TOTAL", sum.total, sum.affine,
              sum.affine_rectangular, n3, sum.affine_general, sum.indirect, sum.non_affine,
              sum.unknown_call);
}

// The team footprint of a kernel (include/unimem/team.h), from its parameter names.
std::optional<TeamFootprint> kernel_team(const KernelAccessInfo& kernel) {
  std::vector<std::string> names;
  for (const ArgumentAccess& a : kernel.args) names.push_back(a.name);
  try {
    return team_footprint(kernel.name, names);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

void run_analyze(const AnalyzeOptions& o) {
  const std::string source = read_file(o.file);
  std::string options = o.build_options;
  for (const std::string& d : o.defines) options += " -D" + d;
  for (const std::string& i : o.includes) options += " -I" + i;
  // Kernels find the device library (<unimem/team.h>) as they do in Program.
  options += " " + detail::device_library_build_options();
  AnalysisCache cache;
  const auto program = cache.get(source, options);

  if (o.stats) {
    print_stats(*program, o.kernel);
    return;
  }
  std::vector<const KernelAccessInfo*> kernels;
  for (const KernelAccessInfo& k : program->kernels) {
    if (o.kernel.empty() || k.name == o.kernel) kernels.push_back(&k);
  }
  if (kernels.empty()) {
    throw std::runtime_error(o.kernel.empty()
                                 ? "'" + o.file + "' defines no kernel"
                                 : "'" + o.file + "' has no kernel '" + o.kernel + "'");
  }
  const bool launch = o.json || !o.global.empty();
  if (!launch) {
    std::printf("# %s: analysed in %.2f ms (clang %.2f, passes %.2f, extraction %.2f)\n",
                o.file.c_str(), program->total_ms(), program->frontend_ms, program->transform_ms,
                program->extraction_ms);
    for (const KernelAccessInfo* k : kernels) {
      std::printf("%s", to_string(*k).c_str());
      if (const auto team = kernel_team(*k)) {
        std::printf("  team kernel: %s\n", team->to_string().c_str());
      }
    }
    return;
  }
  if (kernels.size() != 1) {
    throw std::runtime_error("'" + o.file + "' has several kernels: choose one with --kernel");
  }
  if (o.global.empty()) throw std::runtime_error("--json needs --global");
  const KernelAccessInfo& kernel = *kernels.front();
  NDRange range;
  range.global = parse_dims(o.global, "--global", &range.dims, 1);
  if (o.local.empty()) {
    range.local = range.global;  // one work-group when no local size is given
  } else {
    std::uint32_t local_dims = 0;
    range.local = parse_dims(o.local, "--local", &local_dims, 1);
    if (local_dims != range.dims) throw std::runtime_error("--local and --global differ in rank");
  }
  if (!o.offset.empty()) {
    std::uint32_t offset_dims = 0;
    range.offset = parse_dims(o.offset, "--offset", &offset_dims, 0);
    if (offset_dims != range.dims) throw std::runtime_error("--offset and --global differ in rank");
  }
  validate_for_analysis(range);
  Box<3> groups = all_groups(range);
  if (!o.groups.empty()) {
    Box<3>::Point begin = groups.min();
    Box<3>::Point end = groups.max();
    const std::vector<std::string> dims = split(o.groups, ',');
    if (dims.size() > range.dims)
      throw std::runtime_error("--groups has more dimensions than --global");
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const std::vector<std::string> be = split(dims[d], ':');
      if (be.size() != 2) throw std::runtime_error("--groups takes X0:X1[,Y0:Y1[,Z0:Z1]]");
      const std::int64_t b = parse_int(be[0], "--groups");
      const std::int64_t e = parse_int(be[1], "--groups");
      if (b < 0 || e < b) throw std::runtime_error("--groups: invalid range " + dims[d]);
      // Checked here: an empty box (b == e) has no bounds left for the generator to check.
      if (e > groups.max()[d]) {
        throw std::runtime_error("--groups: range " + dims[d] + " is outside the NDRange (" +
                                 std::to_string(groups.max()[d]) + " work-groups)");
      }
      begin[d] = b;
      end[d] = e;
    }
    groups = Box<3>(begin, end);
  }
  LaunchArguments args;
  for (const std::string& a : o.args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error("--arg takes NAME=VALUE, got '" + a + "'");
    const ArgumentAccess& arg = find_argument(kernel, a.substr(0, eq), "--arg");
    const std::string value = a.substr(eq + 1);
    if (arg.is_buffer() || arg.kind != ArgKind::scalar) {
      throw std::runtime_error("--arg: argument '" + arg.name + "' is not a scalar (use --buffer)");
    }
    ScalarArgumentValue parsed;
    try {
      parsed = parse_scalar_argument(arg, value);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("--arg: ") + e.what());
    }
    // Floating-point scalars never enter a subscript: checked, not passed on.
    if (!parsed.floating) args.set_scalar(arg.index, parsed.integer);
  }
  for (const std::string& a : o.buffers) {
    const auto eq = a.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error("--buffer takes NAME=BYTES, got '" + a + "'");
    const ArgumentAccess& arg = find_argument(kernel, a.substr(0, eq), "--buffer");
    const std::int64_t bytes = parse_int(a.substr(eq + 1), "--buffer " + a);
    if (bytes < 0) throw std::runtime_error("--buffer: negative size for '" + arg.name + "'");
    args.set_buffer_size(arg.index, static_cast<std::uint64_t>(bytes));
  }
  KernelRangeGenerator generator(kernel);
  const auto t0 = std::chrono::steady_clock::now();
  LaunchRanges r = generator.ranges(range, groups, args);
  const auto t1 = std::chrono::steady_clock::now();
  std::string reason = r.unsplittable_reason;
  if (r.splittable) r.splittable = generator.splittable(range, args, &reason);
  const auto t2 = std::chrono::steady_clock::now();
  if (o.json) {
    nlohmann::ordered_json out;
    out["kernel"] = kernel.name;
    out["splittable"] = r.splittable;
    if (const auto team = kernel_team(kernel)) {
      nlohmann::ordered_json t;
      t["shared_variables"] = team->shared_variables;
      t["slots"] = team->slots;
      t["team_memory_bytes_per_group"] = team->team_memory_bytes();
      t["spill_bytes_per_group"] = team->spill_bytes_per_group();
      t["spill_argument"] = team->argument;
      out["team"] = std::move(t);
    }
    out["args"] = nlohmann::ordered_json::array();
    for (const ArgumentRanges& a : r.args) {
      nlohmann::ordered_json arg;
      arg["index"] = a.index;
      arg["name"] = a.name;
      arg["read"] = intervals_json(a.read);
      arg["write"] = intervals_json(a.write);
      arg["read_exact"] = a.read_exact;
      arg["write_exact"] = a.write_exact;
      arg["write_conditional"] = a.write_conditional;
      out["args"].push_back(std::move(arg));
    }
    std::printf("%s\n",
                out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("kernel %s: %s%s\n", kernel.name.c_str(),
              r.splittable ? "splittable" : "not splittable: ", r.splittable ? "" : reason.c_str());
  if (const auto team = kernel_team(kernel)) {
    const std::uint64_t groups_in_launch = static_cast<std::uint64_t>(groups.volume());
    std::printf("  team kernel: %s; spill area of these %llu work-groups: %llu B\n",
                team->to_string().c_str(), static_cast<unsigned long long>(groups_in_launch),
                static_cast<unsigned long long>(groups_in_launch * team->spill_bytes_per_group()));
  }
  for (const ArgumentRanges& a : r.args) {
    std::printf("  %s read %s%s write %s%s%s\n", a.name.c_str(), a.read.to_string().c_str(),
                a.read_exact ? "" : " (over-approximated)", a.write.to_string().c_str(),
                a.write_exact ? "" : " (over-approximated)",
                a.write_conditional ? " (conditional)" : "");
  }
  std::printf("# ranges in %.1f us, injectivity check %.1f us\n",
              std::chrono::duration<double, std::micro>(t1 - t0).count(),
              std::chrono::duration<double, std::micro>(t2 - t1).count());
}

#else

void run_analyze(const AnalyzeOptions&) {
  throw std::runtime_error("this unimem was built without UNIMEM_WITH_ANALYSIS");
}

#endif

}  // namespace

void add_analyze_command(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand(
      "analyze", "Print each kernel's read/write access patterns; with --global, the byte ranges");
  cmd->add_option("file", o->file, "OpenCL C source file")->required();
  cmd->add_option("-D", o->defines, "Preprocessor definition NAME=VALUE (repeatable)");
  cmd->add_option("-I", o->includes, "Include directory (repeatable)");
  cmd->add_option("--options", o->build_options,
                  "Further clBuildProgram options, e.g. -cl-std=CL2.0");
  cmd->add_option("--kernel", o->kernel, "Only this kernel");
  cmd->add_option("--global", o->global, "Global size X[,Y[,Z]]");
  cmd->add_option("--local", o->local, "Local size X[,Y[,Z]] (default: one work-group)");
  cmd->add_option("--offset", o->offset, "Global offset X[,Y[,Z]]");
  cmd->add_option("--arg", o->args, "Scalar argument value NAME=VALUE (repeatable)");
  cmd->add_option("--buffer", o->buffers, "Buffer size NAME=BYTES (repeatable)");
  cmd->add_option("--groups", o->groups,
                  "Work-groups X0:X1[,Y0:Y1[,Z0:Z1]] (half-open; default all)");
  cmd->add_flag("--json", o->json, "Print one JSON object with the byte ranges");
  cmd->add_flag("--stats", o->stats, "Print DSOM Table 2 style reference counts");
  cmd->callback([o] { run_analyze(*o); });
}

}  // namespace unimem::tools
