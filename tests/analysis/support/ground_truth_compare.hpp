#pragma once

// Comparing the kernel access analysis (issue 5) with the execution ground truth: reads exact
// where the analysis says exact, a superset where it says approximate, never a missing byte;
// executed writes inside the claimed writes; data-dependent writes flagged; overlapping writes of
// different work-groups only in unsplittable kernels.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/corpus_manifest.hpp"
#include "analysis/support/ground_truth_json.hpp"

namespace unimem::testing {

struct PartitionVerdict {
  std::vector<std::string> problems;    ///< empty when the analysis is right for this partition
  bool exact_equal = true;              ///< every claimed set equals the recorded one
  std::uint64_t extra_read_bytes = 0;   ///< claimed but not read in this execution
  std::uint64_t extra_write_bytes = 0;  ///< claimed but not written in this execution
  std::uint64_t truth_bytes = 0;        ///< recorded bytes (read + write) over all arguments
};

/// Rules of what the analysis owes for one partition. `data_dependent` names buffers whose
/// touched bytes depend on buffer contents (there one execution shows a subset of the possible
/// accesses, so "exact" cannot be held to equality); `conditional_writes` names buffers written
/// behind data-dependent conditions (write_conditional must be set).
PartitionVerdict compare_partition(const KernelSignature& signature, const AnalysisReport& claim,
                                   const std::vector<ParamAccess>& truth,
                                   const std::set<std::string>& data_dependent,
                                   const std::set<std::string>& conditional_writes);

/// Whether two different work-groups of the trace wrote the same byte (the first such byte
/// described in `where`), which makes a kernel unsplittable.
bool groups_write_overlap(const AccessTrace& trace, std::string* where = nullptr);

/// Runs `cli analyze FILE ... --json` for one partition and parses its answer; throws
/// std::runtime_error with the command and its output when it fails. Every scalar is passed with
/// --arg (floating-point ones too: the command checks them against the parameter type).
AnalysisReport run_analyze_command(const std::string& cli, const std::string& file,
                                   const std::vector<std::string>& options,
                                   const KernelSignature& signature, const LaunchConfig& config,
                                   const KernelInputs& inputs, const GroupBox& groups);

}  // namespace unimem::testing
