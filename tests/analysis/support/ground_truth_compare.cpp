#include "analysis/support/ground_truth_compare.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace unimem::testing {
namespace {

std::string describe(const IntervalSet& set) {
  std::string text = set.to_string();
  if (text.size() > 300) text = text.substr(0, 300) + "...}";
  return text + " (" + std::to_string(set.total_size()) + " bytes)";
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string dims(const std::vector<std::size_t>& values) {
  std::string out;
  for (const std::size_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

}  // namespace

PartitionVerdict compare_partition(const KernelSignature& signature, const AnalysisReport& claim,
                                   const std::vector<ParamAccess>& truth,
                                   const std::set<std::string>& data_dependent,
                                   const std::set<std::string>& conditional_writes) {
  PartitionVerdict verdict;
  if (claim.kernel != signature.name) {
    verdict.problems.push_back("analysis answered for kernel '" + claim.kernel + "'");
  }
  for (std::size_t i = 0; i < signature.params.size(); ++i) {
    const KernelParam& param = signature.params[i];
    if (param.kind != ParamKind::global_buffer && param.kind != ParamKind::constant_buffer) {
      continue;
    }
    const ParamAccess& recorded = truth.at(i);
    verdict.truth_bytes += recorded.read.total_size() + recorded.write.total_size();
    const AnalysisArg* arg = claim.find_arg(param.name);
    if (arg == nullptr) {
      verdict.problems.push_back("argument '" + param.name + "' (index " + std::to_string(i) +
                                 ") is not reported");
      verdict.exact_equal = false;
      continue;
    }
    const std::string name = "argument '" + param.name + "'";
    if (arg->index != i) {
      verdict.problems.push_back(name + " reported with index " + std::to_string(arg->index) +
                                 ", expected " + std::to_string(i));
    }
    const bool dependent = data_dependent.count(param.name) != 0;

    const IntervalSet missing_read = recorded.read - arg->read;
    if (!missing_read.empty()) {
      verdict.problems.push_back(name + ": MISSING READ bytes " + describe(missing_read) +
                                 "; recorded " + describe(recorded.read) + ", claimed " +
                                 describe(arg->read));
    }
    const IntervalSet extra_read = arg->read - recorded.read;
    verdict.extra_read_bytes += extra_read.total_size();
    if (arg->read_exact && !dependent && !extra_read.empty()) {
      verdict.problems.push_back(name + ": read claimed exact but holds " + describe(extra_read) +
                                 " never read");
    }

    const IntervalSet missing_write = recorded.write - arg->write;
    if (!missing_write.empty()) {
      verdict.problems.push_back(name + ": MISSING WRITE bytes " + describe(missing_write) +
                                 "; recorded " + describe(recorded.write) + ", claimed " +
                                 describe(arg->write));
    }
    const IntervalSet extra_write = arg->write - recorded.write;
    verdict.extra_write_bytes += extra_write.total_size();
    if (arg->write_exact && !arg->write_conditional && !dependent && !extra_write.empty()) {
      verdict.problems.push_back(name + ": write claimed exact and unconditional but holds " +
                                 describe(extra_write) + " never written");
    }
    if (conditional_writes.count(param.name) != 0 && !arg->write_conditional &&
        !(arg->write.empty() && recorded.write.empty())) {
      verdict.problems.push_back(name +
                                 " is written behind a data-dependent condition but "
                                 "write_conditional is false");
    }
    // A may-write set (behind dropped conditions) is fine in a split launch: it is fetched first
    // (DESIGN.md invariant 6). An over-approximated write that is not a may-write is not.
    if (!arg->write_exact && !arg->write_conditional && claim.splittable) {
      verdict.problems.push_back(name +
                                 ": write over-approximated (not a may-write), yet the "
                                 "kernel is splittable");
    }
    if (!extra_read.empty() || !extra_write.empty() || !missing_read.empty() ||
        !missing_write.empty()) {
      verdict.exact_equal = false;
    }
  }
  return verdict;
}

bool groups_write_overlap(const AccessTrace& trace, std::string* where) {
  const auto groups = trace.config.group_count();
  for (std::size_t p = 0; p < trace.signature.params.size(); ++p) {
    // Per-group write sets (merged), then one sweep over all of them in address order: since a
    // group's own intervals are disjoint, reaching into the furthest end seen so far means
    // another group wrote there.
    std::map<std::uint64_t, std::vector<Interval>> per_group;
    for (const AccessRecord& record : trace.records) {
      if (record.param != p || (record.kind & 2U) == 0) continue;
      const std::uint64_t group =
          record.group[0] + groups[0] * (record.group[1] + groups[1] * record.group[2]);
      per_group[group].emplace_back(record.offset, record.offset + record.size);
    }
    std::vector<std::pair<Interval, std::uint64_t>> all;
    for (auto& [group, intervals] : per_group) {
      for (const Interval& interval : IntervalSet::from_unsorted(std::move(intervals))) {
        all.emplace_back(interval, group);
      }
    }
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
    std::uint64_t furthest = 0;
    std::uint64_t furthest_group = 0;
    for (const auto& [interval, group] : all) {
      if (interval.begin < furthest && group != furthest_group) {
        if (where != nullptr) {
          *where = "argument '" + trace.signature.params[p].name + "' byte " +
                   std::to_string(interval.begin) + " written by groups " +
                   std::to_string(furthest_group) + " and " + std::to_string(group) +
                   " (linear ids)";
        }
        return true;
      }
      if (interval.end > furthest) {
        furthest = interval.end;
        furthest_group = group;
      }
    }
  }
  return false;
}

AnalysisReport run_analyze_command(const std::string& cli, const std::string& file,
                                   const std::vector<std::string>& options,
                                   const KernelSignature& signature, const LaunchConfig& config,
                                   const KernelInputs& inputs, const GroupBox& groups) {
  std::string command = quoted(cli) + " analyze " + quoted(file);
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if (option == "-D" && i + 1 < options.size()) {
      command += " -D " + quoted(options[++i]);
    } else if (option.rfind("-D", 0) == 0) {
      command += " -D " + quoted(option.substr(2));
    }
  }
  command += " --kernel " + quoted(signature.name) + " --global " + dims(config.global) +
             " --local " + dims(config.local);
  if (!config.offset.empty()) command += " --offset " + dims(config.offset);
  for (const auto& [name, value] : inputs.scalars) {
    command += " --arg " + quoted(name + "=" + value);
  }
  for (const auto& [name, bytes] : inputs.buffer_bytes) {
    command += " --buffer " + quoted(name + "=" + std::to_string(bytes));
  }
  command += " --groups " + groups.to_string(config.global.size()) + " --json 2>&1";

  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string output;
  std::array<char, 4096> chunk{};
  while (const std::size_t n = fread(chunk.data(), 1, chunk.size(), pipe.get())) {
    output.append(chunk.data(), n);
  }
  const int status = pclose(pipe.release());
  if (status != 0) {
    throw std::runtime_error("command failed (status " + std::to_string(status) + "): " + command +
                             "\n" + output);
  }
  // The JSON object is the last line that starts with '{'.
  const std::size_t start = output.rfind("\n{");
  const std::string json = start == std::string::npos ? output : output.substr(start + 1);
  try {
    return parse_analysis_json(json);
  } catch (const std::exception& error) {
    throw std::runtime_error(std::string(error.what()) + "\ncommand: " + command + "\noutput:\n" +
                             output);
  }
}

}  // namespace unimem::testing
