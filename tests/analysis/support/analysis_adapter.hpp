#pragma once

// The kernel access analysis (src/analysis) called in-process, answering in the form of
// `unimem analyze --json` (AnalysisReport). One analysis per (source, options), then one range
// evaluation per partition: the corpus test needs hundreds of partitions, which as separate
// `unimem analyze` processes would re-run Clang for each.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/ground_truth_json.hpp"

namespace unimem::testing {

/// True when unimem was built with the analysis (UNIMEM_WITH_ANALYSIS).
bool in_process_analysis_available();

class InProcessAnalysis {
 public:
  InProcessAnalysis();
  ~InProcessAnalysis();
  InProcessAnalysis(const InProcessAnalysis&) = delete;
  InProcessAnalysis& operator=(const InProcessAnalysis&) = delete;

  /// The analysis' answer for one partition. Throws what the analysis throws (unsupported
  /// sources, missing arguments) and std::runtime_error when the analysis is not built.
  AnalysisReport report(const std::string& source, const std::vector<std::string>& options,
                        const KernelSignature& signature, const LaunchConfig& config,
                        const KernelInputs& inputs, const GroupBox& groups);

  /// Milliseconds the analysis spent compiling and extracting (summed over distinct programs).
  [[nodiscard]] double analysis_ms() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace unimem::testing
