#pragma once

// Splitting one launch over devices by work-groups (Matz et al., 002_aa84334820ddd8b5.txt,
// section 7: a partition is a half-open box of the thread grid; here it is enqueued with a global
// work offset instead of rewriting the kernel, which OpenCL allows).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"

namespace unimem {

/// One slice of a launch: device `device` runs the work-items `range` (global offset and size);
/// work-groups [group_begin, group_end) along the split dimension.
struct RangePartition {
  std::size_t device = 0;
  NDRange range;
  std::uint64_t group_begin = 0;
  std::uint64_t group_end = 0;
};

/// The dimension a launch is split along: `requested` when given (must be < range.dims), else the
/// slowest-varying one (dims - 1).
[[nodiscard]] std::uint32_t split_dimension(const NDRange& range,
                                            std::optional<std::uint32_t> requested);

/// Work-groups of `range` along `dim`: global / local, or global when local is 0 (the driver
/// chooses; then any work-item boundary is a valid split point). Throws PreconditionError when
/// local does not divide global.
[[nodiscard]] std::uint64_t group_count(const NDRange& range, std::uint32_t dim);

/// Splits the work-groups of `range` along `dim` into one contiguous block per device, in device
/// order, sized in proportion to `weights` (one per device, >= 0, not all 0) by largest remainder;
/// with equal weights the sizes differ by at most one, larger blocks first (as the workloads'
/// split_evenly). Devices whose block is empty get no partition. devices[i] is the device index of
/// weights[i].
[[nodiscard]] std::vector<RangePartition> split_by_groups(const NDRange& range, std::uint32_t dim,
                                                          std::span<const std::size_t> devices,
                                                          std::span<const double> weights);

/// Per-kernel device throughputs measured by timing the first launches (DSOM balances by
/// profiling; 000_7b2a075be0870d8f.txt section 5.2). Not thread-safe: the owner serialises calls.
class ThroughputProfile {
 public:
  /// After `skipped` launches per kernel and device (the first includes compiling the kernel),
  /// `samples` launches are timed before the measured weights are used.
  explicit ThroughputProfile(std::size_t samples = 1, std::size_t skipped = 0)
      : samples_(samples), skipped_(skipped) {}

  /// Records that `device` ran `work_items` of `kernel` in `seconds`.
  void record(const std::string& kernel, std::size_t device, std::uint64_t work_items,
              double seconds);
  /// Weights (work-items per second) for `devices`, once every device has `samples` records for
  /// `kernel`; nullopt before (callers split equally meanwhile).
  [[nodiscard]] std::optional<std::vector<double>> weights(
      const std::string& kernel, std::span<const std::size_t> devices) const;

 private:
  struct Sample {
    std::size_t seen = 0;
    std::size_t count = 0;
    std::uint64_t items = 0;
    double seconds = 0;
  };
  std::size_t samples_;
  std::size_t skipped_;
  std::vector<std::pair<std::pair<std::string, std::size_t>, Sample>> table_;
};

}  // namespace unimem
