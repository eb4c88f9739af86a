#pragma once

// The JSON contract of `unimem analyze --json` (issue 5): printing the ground truth in that format
// and reading the analysis' answer back.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/kernel_instrumenter.hpp"
#include "region/interval_set.hpp"

namespace unimem::testing {

struct AnalysisArg {
  std::uint64_t index = 0;
  std::string name;
  IntervalSet read;
  IntervalSet write;
  bool read_exact = false;
  bool write_exact = false;
  bool write_conditional = false;
};

struct AnalysisReport {
  std::string kernel;
  bool splittable = false;
  std::vector<AnalysisArg> args;
  [[nodiscard]] const AnalysisArg* find_arg(std::string_view name) const;
};

/// Parses one `unimem analyze --json` object; throws std::runtime_error naming the missing or
/// malformed field.
AnalysisReport parse_analysis_json(std::string_view text);

/// The recorded accesses in the same format (read_exact and write_exact true, write_conditional
/// false, splittable omitted).
std::string ground_truth_json(const KernelSignature& signature,
                              const std::vector<ParamAccess>& accesses);

/// "[[0,16],[32,48]]".
std::string intervals_json(const IntervalSet& set);

}  // namespace unimem::testing
