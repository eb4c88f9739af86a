#pragma once

// The bytes an analysed kernel touches in a launch partition, per buffer argument, and whether a
// launch may be split over devices (DSOM section 4.3.3; Matz et al. section 4.1).

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unimem/nd_range.hpp>
#include "analysis/access_pattern.hpp"
#include "region/access_bytes.hpp"
#include "region/box.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// Throws PreconditionError unless range is one whose accesses the analysis can evaluate:
/// 1 <= dims <= 3; in the used dimensions positive global and local sizes (a concrete work-group
/// size: local 0, "driver chooses", is not accepted) with local dividing global; beyond them
/// global 1, offset 0 and local 0 or 1.
void validate_for_analysis(const NDRange& range);
/// Work-groups per dimension (1 beyond the used dimensions). range must pass validate_for_analysis.
[[nodiscard]] std::array<std::uint64_t, 3> num_groups(const NDRange& range);

/// Every work-group of range. A launch partition is a box of work-group ids (region/box.hpp),
/// indexed by NDRange dimension (index 0 is OpenCL dimension 0; 1 group beyond range.dims).
/// range must pass validate_for_analysis.
[[nodiscard]] Box<3> all_groups(const NDRange& range);

/// Launch-time argument values: scalar values and buffer sizes, by argument index.
struct LaunchArguments {
  std::vector<std::optional<std::int64_t>> scalars;
  std::vector<std::optional<std::uint64_t>> buffer_sizes;

  void set_scalar(std::uint32_t index, std::int64_t value);
  void set_buffer_size(std::uint32_t index, std::uint64_t bytes);
};

/// The bytes one buffer argument's accesses touch in a launch partition.
struct ArgumentRanges {
  std::uint32_t index = 0;
  std::string name;
  IntervalSet read;
  IntervalSet write;
  bool read_exact = true;          // false: read is a superset
  bool write_exact = true;         // false: write is a may-write superset
  bool write_conditional = false;  // some write is behind a condition the analysis dropped

  /// The byte sets as the runtime uses them: read; write as writes when exact and unconditional,
  /// else as may-writes (fetched before the kernel, DESIGN.md invariant 6).
  [[nodiscard]] AccessBytes access_bytes() const&;
  /// The same, moving the sets out.
  [[nodiscard]] AccessBytes access_bytes() &&;
};

struct LaunchRanges {
  std::string kernel;
  /// The launch may be split over devices: every write is bounded and no two work-groups write
  /// the same byte (Matz et al. section 4.1: write maps exact and injective).
  bool splittable = true;
  std::string unsplittable_reason;
  std::vector<ArgumentRanges> args;  // buffer arguments only, by index

  [[nodiscard]] const ArgumentRanges* find(const std::string& arg_name) const;
};

/// Turns a kernel's access patterns into byte ranges at launch time (DSOM section 4.3.3).
/// The patterns are precomputed by the analysis; per launch only parameters are substituted and
/// bounds evaluated. Box-shaped domains go to the DSOM Fig. 10 fast generator of the region layer
/// (region/range_generator.hpp), after boxes of pieces with equal coefficients are united
/// (region/box_set.hpp); coupled constraints (triangular loops, guards mixing variables)
/// enumerate the coupled variables and generate the rest as boxes. Injectivity of writes over
/// work-groups is decided by the analysis for every launch when isl can (parametric maps), else
/// with isl once per distinct set of launch parameters.
class KernelRangeGenerator {
 public:
  explicit KernelRangeGenerator(KernelAccessInfo kernel);
  ~KernelRangeGenerator();
  KernelRangeGenerator(const KernelRangeGenerator&) = delete;
  KernelRangeGenerator& operator=(const KernelRangeGenerator&) = delete;

  [[nodiscard]] const KernelAccessInfo& kernel() const { return kernel_; }

  /// Byte ranges of every buffer argument for the work-groups in groups. Throws PreconditionError
  /// for an invalid range or group box, a missing scalar value that a subscript needs, or a missing
  /// buffer size where the analysis must fall back to the whole buffer.
  [[nodiscard]] LaunchRanges ranges(const NDRange& range, const Box<3>& groups,
                                    const LaunchArguments& args) const;

  /// Whether the launch may be split: static splittability plus injectivity of the write map over
  /// all work-groups of range. Decided by the analysis for every launch when it could
  /// (KernelAccessInfo::write_injectivity); otherwise with isl for the concrete launch parameters,
  /// cached per injectivity_key (launch_injectivity.hpp).
  [[nodiscard]] bool splittable(const NDRange& range, const LaunchArguments& args,
                                std::string* reason = nullptr) const;

  /// How many concrete (launch-time) isl injectivity checks splittable() has run so far.
  [[nodiscard]] std::size_t launch_time_checks() const;

 private:
  /// The launch-time verdict of splittable() for the last launch it decided: the launch's range
  /// and the values of write_scalars_. Those are everything injectivity_key reads from a launch
  /// (launch_injectivity.hpp: the range, and scalar values only through the write pieces'
  /// expressions), so a launch equal in them has the same key and the same verdict; this answers
  /// it without building the key's text (floyd-warshall: every launch differs only in k, which no
  /// write reads).
  struct LastVerdict {
    NDRange range;
    std::vector<std::optional<std::int64_t>> write_scalar_values;  // by write_scalars_
    bool injective = false;
    std::string reason;
  };
  [[nodiscard]] bool same_launch(const LastVerdict& last, const NDRange& range,
                                 const LaunchArguments& args) const;
  void remember(const NDRange& range, const LaunchArguments& args, bool injective,
                const std::string& reason) const;

  KernelAccessInfo kernel_;
  std::vector<std::string> argument_names_;  // by index, for the messages of ParamValues
  /// The scalar argument indices any write piece's byte offset or guard reads.
  std::vector<std::uint32_t> write_scalars_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::pair<bool, std::string>> injectivity_cache_;
  mutable std::optional<LastVerdict> last_verdict_;  // guarded by mutex_
  /// The storage ranges() works in (kernel_ranges.cpp), one per call running, kept for later
  /// calls so that planning a launch again allocates only for its results. Guarded by mutex_.
  struct Scratch;
  mutable std::vector<std::unique_ptr<Scratch>> scratch_pool_;
  mutable std::size_t launch_time_checks_ = 0;
};

}  // namespace unimem
