#pragma once

// The api layer's narrow view of the kernel analysis (src/analysis): analyse a program once, then
// per launch ask whether it may be split and which bytes each work-group box touches. Kept in its
// own translation unit so that callers include neither LLVM-free analysis headers nor their launch
// types (which may differ from device/device.hpp's): everything crosses as plain values.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "region/interval_set.hpp"

namespace unimem::detail {

/// An index space: dims, offset, global and (concrete) local sizes.
struct AnalysisRange {
  std::uint32_t dims = 1;
  std::array<std::uint64_t, 3> offset{0, 0, 0};
  std::array<std::uint64_t, 3> global{1, 1, 1};
  std::array<std::uint64_t, 3> local{1, 1, 1};
};

/// Launch-time values by argument index: integer scalars and buffer sizes.
struct AnalysisArguments {
  std::vector<std::optional<std::int64_t>> scalars;
  std::vector<std::optional<std::uint64_t>> buffer_sizes;
};

/// What one buffer argument touches in a box of work-groups.
struct AnalysisBytes {
  std::uint32_t index = 0;
  IntervalSet read;
  IntervalSet write;
  bool write_certain = true;  ///< exact and unconditional: no fetch needed before the kernel
};

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
  virtual ~ProgramAnalysis() = default;

  /// Whether the program has an analysed kernel of that name.
  [[nodiscard]] virtual bool has_kernel(const std::string& kernel) const = 0;
  /// Whether a launch of kernel over range may be split over devices (writes bounded and
  /// injective over work-groups); reason says why not. Throws PreconditionError when the launch
  /// cannot be evaluated (e.g. a missing scalar value).
  [[nodiscard]] virtual bool splittable(const std::string& kernel, const AnalysisRange& range,
                                        const AnalysisArguments& args,
                                        std::string* reason) const = 0;
  /// Bytes of every buffer argument for work-groups [group_begin, group_end) of range.
  [[nodiscard]] virtual std::vector<AnalysisBytes> bytes(
      const std::string& kernel, const AnalysisRange& range,
      const std::array<std::uint64_t, 3>& group_begin,
      const std::array<std::uint64_t, 3>& group_end, const AnalysisArguments& args) const = 0;
};

}  // namespace unimem::detail
