#pragma once

// One corpus kernel checked end to end: instrumented, run on the device for every configuration,
// checked against its uninstrumented run, and (when an analyzer is given) compared partition by
// partition with `unimem analyze --json`.

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/analysis_adapter.hpp"
#include "analysis/support/corpus_manifest.hpp"
#include "analysis/support/ground_truth_compare.hpp"

namespace unimem::testing {

struct PartitionResult {
  std::size_t config = 0;
  std::string launch;  ///< LaunchConfig::to_string()
  std::string groups;  ///< "x0:x1,y0:y1"
  bool whole_launch = false;
  bool analyzed = false;
  PartitionVerdict verdict;
};

struct KernelCheck {
  std::vector<PartitionResult> partitions;
  /// Problems of the kernel as a whole (instrumentation changed results, nothing recorded,
  /// overlapping writes in a kernel claimed splittable, the analyzer failed).
  std::vector<std::string> problems;
  std::size_t configs = 0;
  std::size_t access_sites = 0;
  std::size_t records = 0;
  [[nodiscard]] std::vector<std::string> all_problems() const;
};

/// How the analysis is consulted: in-process for every partition (when `analysis` is not null),
/// and through `analyze_cli analyze ... --json` (when not empty) for the whole launch of every
/// configuration, or for every partition when there is no in-process analysis; when both are
/// given, their answers must agree. Neither: ground truth only, no comparison.
struct AnalysisAccess {
  InProcessAnalysis* analysis = nullptr;
  std::string analyze_cli;
};

KernelCheck check_corpus_kernel(AccessRecorder& recorder, const Corpus& corpus,
                                const CorpusKernel& kernel, const AnalysisAccess& access);

}  // namespace unimem::testing
