#pragma once

// From a launch (NDRange, access descriptors, devices and weights) to the partitions it runs as,
// each with the exact bytes it reads, writes and may write per buffer argument (Matz et al.,
// 002_aa84334820ddd8b5.txt, section 8.3: per partition, iterate the read set to synchronise and the
// write set to update the tracker; byte sets come from the region layer's DSOM Fig. 10 range
// generation). The plan is handed to Runtime::launch_partitioned by the api layer.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unimem/access_descriptor.hpp>
#include "device/device.hpp"
#include "region/access_bytes.hpp"
#include "region/interval_set.hpp"
#include "schedule/partitioner.hpp"

namespace unimem {

/// One argument of the launch as the planner sees it.
struct PlanArgument {
  bool is_buffer = false;
  std::uint64_t buffer_size = 0;  ///< bytes, for buffers
  std::string name;               ///< for messages ("grid"); may be empty
};

/// Bytes derived for one partition by another source (the kernel analysis: its
/// KernelRangeGenerator gives per-argument read / write sets with exactness flags), by buffer
/// argument index. Arguments it could not bound are left out. Caller-supplied descriptors
/// override it argument by argument.
using DerivedBytes =
    std::function<std::map<std::uint32_t, AccessBytes>(const RangePartition& partition)>;

struct PlanRequest {
  std::string kernel;
  NDRange range;
  std::optional<std::uint32_t> dimension;  ///< split dimension; default slowest-varying
  std::vector<std::size_t> devices;        ///< candidate devices, in split order
  std::vector<double> weights;             ///< one per device; empty = equal
  std::vector<PlanArgument> args;
  KernelAccess accesses;
  /// Optional: bytes for arguments without descriptors (see DerivedBytes).
  DerivedBytes derived;
  /// Non-empty when the launch must not be split (e.g. the analysis found an unbounded or
  /// non-injective write): the plan has one partition and this becomes its fallback reason.
  std::string unsplittable_reason;
  /// Enumeration bound per piece (DSOM Fig. 10): beyond it a read set is over-approximated by its
  /// covering interval and a write set becomes a may-write set.
  std::uint64_t max_intervals = 1 << 16;
};

/// One partition of a launch: a slice of the index space on one device (RangePartition), the
/// kernel compiled for that device, and per buffer argument index the bytes this partition
/// touches (arguments not listed access nothing). The planner fills the slice and the bytes; the
/// kernel is set by whoever submits it (Program), and Runtime::launch_partitioned runs it.
struct LaunchPartition : RangePartition {
  std::shared_ptr<const CompiledKernel> kernel;
  std::map<std::uint32_t, AccessBytes> accesses;
  /// Optional (partial residency): the same kernel rewritten so that each `__global T*`
  /// parameter takes the buffer and then a ulong byte offset (api/kernel_rewrite.hpp), and per
  /// parameter of `kernel` whether it is such a pointer. With it, the runtime can give the kernel
  /// allocations that hold only the bytes it touches; without it (and on a device that does not
  /// rebase arguments itself) the kernel's buffers get full-size allocations.
  std::shared_ptr<const CompiledKernel> rebased_kernel;
  std::shared_ptr<const std::vector<bool>> rebased_pointers;
  /// Optional (packed 2-D boxes, issue 10; out-of-core chunks on devices that do not rebase
  /// arguments themselves): per parameter of `kernel`, kNotPointer for one that is not a
  /// __global pointer, else the element size of one that the pitched rewrite
  /// (api/kernel_pitch_rewrite.hpp) may pack, 0 for one it may not. With it, sizing the chunk
  /// (RuntimeCore::footprint) may choose packed boxes.
  static constexpr std::uint32_t kNotPointer = 0xFFFFFFFFU;
  std::shared_ptr<const std::vector<std::uint32_t>> pitched_parameters;
  /// The pitched kernel built for the partition's packed boxes (its variant's macros fixed to
  /// them), and per argument the (pitch, width) in bytes of its buffer's packed box ((0, 0):
  /// not packed). Set by cut_to_fit; the launch packs exactly these boxes.
  std::shared_ptr<const CompiledKernel> pitched_kernel;
  std::shared_ptr<const std::vector<std::pair<std::uint64_t, std::uint64_t>>> pitched_shapes;
  /// Out-of-core launches: when the partition of a device did not fit that device's memory, it
  /// runs as chunks (consecutive blocks of its work-groups along the split dimension), one after
  /// another on the device; this is the chunk's position there (0 for a partition not cut).
  std::uint32_t chunk = 0;
  /// Out-of-core launches: whether this partition is such a chunk. Its boxes replace the
  /// device's boxes of the same buffers that they overlap or touch (the last chunks' boxes)
  /// instead of merging with them (Residency::Placement::replace).
  bool out_of_core = false;
};

struct LaunchPlan {
  std::vector<LaunchPartition> partitions;
  /// Why the launch runs on fewer devices than requested (empty when it did not fall back):
  /// names the kernel, the buffer argument and the bytes two partitions would both write.
  std::string fallback_reason;
  /// Out-of-core launches: the partitions that are chunks of a partition too large for its
  /// device (0 when every partition fits). Partitions with chunk == r run together as round r,
  /// rounds one after another.
  std::size_t chunks = 0;
};

/// The partition of `slice` (a block of request.range's work-groups on slice.device) with the
/// bytes it touches per buffer argument: request.derived's where it has them and the argument
/// has no descriptors, else from the descriptors (partition_bytes).
[[nodiscard]] LaunchPartition derive_partition(const PlanRequest& request,
                                               const RangePartition& slice);

/// The bytes of argument `arg` (a buffer of buffer_size bytes) touched by the work-items of
/// `slice`, from the descriptors of `accesses` for that argument. An argument without descriptors
/// is taken as read and maybe written in whole. Throws PreconditionError naming the kernel and
/// argument when a piece is malformed (unbounded loop variable, negative index).
[[nodiscard]] AccessBytes partition_bytes(const std::string& kernel, const KernelAccess& accesses,
                                          std::uint32_t arg, std::uint64_t buffer_size,
                                          const NDRange& slice,
                                          std::uint64_t max_intervals = 1 << 16);

/// Splits the launch over request.devices and derives every partition's bytes. When two
/// partitions would write the same byte of a buffer, it retries with fewer devices (the first K-1,
/// ...) down to one, and says why in fallback_reason. Results are never wrong: one partition is
/// always a valid plan.
[[nodiscard]] LaunchPlan plan_launch(const PlanRequest& request);

}  // namespace unimem
