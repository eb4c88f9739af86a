#pragma once

// The api layer's view of the kernel analysis (src/analysis): a program's kernels analysed once,
// then per launch whether it may be split and which bytes each box of work-groups touches.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unimem/nd_range.hpp>
#include "analysis/access_pattern.hpp"
#include "analysis/kernel_ranges.hpp"
#include "region/access_bytes.hpp"
#include "region/box.hpp"

namespace unimem::detail {

/// How an analysis request was served.
struct AnalysisTiming {
  bool cached = false;   ///< served from the process-wide cache (no work done)
  double seconds = 0.0;  ///< wall time of this request (Clang + canonicalization + extraction)
};

/// The analysed kernels of one program. Thread-safe.
class ProgramAnalysis {
 public:
  /// Analyses source + options (DSOM section 4.3.2). Results, failures included, are cached for
  /// the life of the process keyed by (source, options), so a program built twice -- by several
  /// Programs or Runtimes -- is analysed once. Returns null and sets *error when unimem is built
  /// without the analysis or the analysis cannot read the source. Thread-safe.
  static std::shared_ptr<const ProgramAnalysis> analyze(const std::string& source,
                                                        const std::string& options,
                                                        std::string* error,
                                                        AnalysisTiming* timing = nullptr);
  /// Number of (source, options) pairs in the cache, and emptying it (for tests and tools).
  static std::size_t cache_size();
  static void clear_cache();

  explicit ProgramAnalysis(ProgramAccessInfo info);

  /// Whether the program has an analysed kernel of that name.
  [[nodiscard]] bool has_kernel(const std::string& kernel) const;
  /// Whether a launch of kernel over range may be split over devices (writes bounded and
  /// injective over work-groups); reason says why not. Throws PreconditionError when the launch
  /// cannot be evaluated (e.g. a missing scalar value).
  [[nodiscard]] bool splittable(const std::string& kernel, const NDRange& range,
                                const LaunchArguments& args, std::string* reason) const;
  /// The bytes of every buffer argument, by argument index, for the work-groups in groups of
  /// range (ArgumentRanges::access_bytes).
  [[nodiscard]] std::map<std::uint32_t, AccessBytes> bytes(const std::string& kernel,
                                                           const NDRange& range,
                                                           const Box<3>& groups,
                                                           const LaunchArguments& args) const;
  /// Per argument index, whether the kernel's accesses depend on that scalar argument's value
  /// (scalars_in_accesses, analysis/access_pattern.hpp): splittable() and bytes() read no other
  /// scalar. The kernel must be one has_kernel() knows.
  [[nodiscard]] const std::vector<bool>& scalars_in_accesses(const std::string& kernel) const {
    return scalars_in_accesses_.at(kernel);
  }

 private:
  std::map<std::string, std::unique_ptr<KernelRangeGenerator>> generators_;
  std::map<std::string, std::vector<bool>> scalars_in_accesses_;
};

}  // namespace unimem::detail
