#pragma once

// The kernel corpus of issue 5 (tests/analysis/corpus/corpus.json): which kernels to run, with
// which build options, NDRanges, argument values, buffer sizes and work-group partitions.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/support/access_recorder.hpp"

namespace unimem::testing {

struct CorpusConfig {
  LaunchConfig launch;
  KernelInputs inputs;
  /// Partitions to check; the whole launch is always checked in addition.
  std::vector<GroupBox> partitions;
};

struct CorpusKernel {
  std::string id;    ///< unique in the corpus (defaults to the kernel name)
  std::string file;  ///< relative to the manifest
  std::string kernel;
  std::string kernel_class;  ///< stencil, matmul, indirect, ... (for the summary)
  std::vector<std::string> options;
  /// Buffers whose accessed bytes depend on buffer contents (a data-dependent condition or an
  /// indirect subscript): one execution shows a subset of what other inputs would touch.
  std::set<std::string> data_dependent;
  /// Buffers written behind a data-dependent condition (the analysis must set write_conditional).
  std::set<std::string> conditional_writes;
  std::vector<CorpusConfig> configs;
  /// A known analysis bug this kernel exposes (see the text): the check is still run and must
  /// still find a problem; when it no longer does, the entry is stale and the test says so.
  std::string known_issue;
  /// The analysis must be exact for this kernel: every checked partition's claimed read and write
  /// sets equal the recorded ones (an over-approximation, though safe, fails the check).
  bool exact = false;
};

struct Corpus {
  std::filesystem::path directory;
  std::vector<CorpusKernel> kernels;
  [[nodiscard]] std::string read_source(const CorpusKernel& kernel) const;
};

/// Loads and validates the manifest; throws std::runtime_error naming the kernel and field.
Corpus load_corpus(const std::filesystem::path& manifest);

}  // namespace unimem::testing
