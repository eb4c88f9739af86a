// Issue 5 evidence: every corpus kernel (tests/analysis/corpus/corpus.json) runs instrumented on
// the OpenCL device for each configuration; its recorded accesses are compared, for the whole
// launch and for each listed partition of work-groups, with `unimem analyze --json`. The analysis
// must never miss a byte, must be exact where it says so, and must flag data-dependent writes.
// Without the analyze command the test still checks the corpus and the instrumentation (the
// instrumented kernel computes what the original computes).
#include <gtest/gtest.h>

#if UNIMEM_HAVE_GROUND_TRUTH

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/support/corpus_check.hpp"

namespace unimem::testing {
namespace {

const Corpus& corpus() {
  static const Corpus loaded =
      load_corpus(std::filesystem::path(UNIMEM_CORPUS_DIR) / "corpus.json");
  return loaded;
}

std::vector<std::string> corpus_ids() {
  std::vector<std::string> ids;
  try {
    for (const CorpusKernel& kernel : corpus().kernels) ids.push_back(kernel.id);
  } catch (const std::exception&) {
    ids.push_back("manifest_error");  // the test body reports the error
  }
  return ids;
}

std::string analyze_command() {
#if defined(UNIMEM_ANALYZE_CLI)
  return UNIMEM_ANALYZE_CLI;
#else
  return {};
#endif
}

class GroundTruthCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(GroundTruthCorpus, AnalysisCoversEveryRecordedAccess) {
  const Corpus& loaded = corpus();
  const CorpusKernel* kernel = nullptr;
  for (const CorpusKernel& candidate : loaded.kernels) {
    if (candidate.id == GetParam()) kernel = &candidate;
  }
  ASSERT_NE(kernel, nullptr) << "no corpus kernel " << GetParam();
  SCOPED_TRACE("corpus kernel " + kernel->id + " (" + kernel->file + ")");
  AccessRecorder recorder;
  InProcessAnalysis analysis;
  AnalysisAccess access;
  access.analyze_cli = analyze_command();
  if (in_process_analysis_available()) access.analysis = &analysis;
  const KernelCheck check = check_corpus_kernel(recorder, loaded, *kernel, access);
  EXPECT_EQ(check.configs, kernel->configs.size());
  EXPECT_GT(check.access_sites, 0U);
  const std::vector<std::string> problems = check.all_problems();
  if (!kernel->known_issue.empty() && (access.analysis != nullptr || !access.analyze_cli.empty())) {
    // Still reproduces: report it without failing; fixed: the marker must go.
    EXPECT_FALSE(problems.empty()) << "known issue no longer reproduces, remove 'known_issue' from "
                                   << kernel->id << " in corpus.json: " << kernel->known_issue;
    for (const std::string& problem : problems) {
      std::cout << "[ KNOWN ISSUE ] " << kernel->id << ": " << problem << "\n";
    }
    return;
  }
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
  if (kernel->exact && (access.analysis != nullptr || !access.analyze_cli.empty())) {
    for (const PartitionResult& p : check.partitions) {
      EXPECT_TRUE(p.analyzed) << p.launch << " groups " << p.groups << " not analysed";
      EXPECT_TRUE(p.verdict.exact_equal)
          << kernel->id << " is marked exact, but " << p.launch << " groups " << p.groups
          << " claims " << p.verdict.extra_read_bytes << " read and " << p.verdict.extra_write_bytes
          << " written bytes more than executed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, GroundTruthCorpus, ::testing::ValuesIn(corpus_ids()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

TEST(GroundTruthCorpusManifest, HasTheKernelsTheIssueAsksFor) {
  const Corpus& loaded = corpus();
  EXPECT_GE(loaded.kernels.size(), 45U);
  std::set<std::string> classes;
  for (const CorpusKernel& kernel : loaded.kernels) classes.insert(kernel.kernel_class);
  for (const char* required :
       {"stencil-1d", "stencil-2d", "stencil-3d", "matmul", "transpose", "triangular",
        "floyd-warshall", "nbody", "reduction", "indirect", "strided", "column", "scalar-offset",
        "define", "helper", "boundary-write", "data-dependent-write"}) {
    EXPECT_EQ(classes.count(required), 1U) << "no kernel of class " << required;
  }
}

}  // namespace
}  // namespace unimem::testing

#else
TEST(GroundTruthCorpus, SkippedWithoutOpenClAndClang) {
  GTEST_SKIP() << "OpenCL or Clang 15 not found at configure time";
}
#endif
