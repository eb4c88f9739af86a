#pragma once

// The unimem form of the workloads: shared buffers, host writes of the inputs, plain launches
// split over the devices with explicit per-partition read / write sets derived from the geometry
// (the sets the kernel analysis will derive later), host reads of the outputs. No manual copies:
// the coherence runtime moves exactly what each partition reads.
//
// Kernels come from a KernelProvider, so the same run works on the OpenCL driver (the .cl kernels)
// and on the host reference driver (C++ twins of the .cl kernels with the same arguments).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "api/runtime.hpp"
#include "device/host/host_kernel.hpp"
#include "examples/workload.hpp"
#include "region/interval_set.hpp"

namespace unimem::examples {

/// Compiled kernels of a workload for the devices of a Runtime.
class KernelProvider {
 public:
  virtual ~KernelProvider() = default;
  /// Kernel `name` of `source`, compiled for runtime device `device`. Thread-compatible.
  [[nodiscard]] virtual std::shared_ptr<const CompiledKernel> kernel(std::size_t device,
                                                                     const KernelSource& source,
                                                                     const std::string& name) = 0;
};

/// The C++ twins of a workload's OpenCL kernels, for the host driver: same name, same arguments,
/// same arithmetic.
using HostKernelBodies = std::map<std::string, HostKernel::Body>;

/// Provides the host twins of `workload`'s kernels (any device). Throws PreconditionError naming
/// a kernel without a twin.
class HostKernelProvider final : public KernelProvider {
 public:
  explicit HostKernelProvider(const Workload& workload);
  std::shared_ptr<const CompiledKernel> kernel(std::size_t device, const KernelSource& source,
                                               const std::string& name) override;

 private:
  std::string workload_;
  HostKernelBodies bodies_;
  std::map<std::string, std::shared_ptr<const CompiledKernel>> made_;
};

/// Bytes [begin * unit_bytes, end * unit_bytes) of a buffer (empty when the block is empty).
[[nodiscard]] IntervalSet unit_bytes(std::uint64_t begin, std::uint64_t end,
                                     std::uint64_t bytes_per_unit);

/// A launch split along one dimension into one block per device (split_evenly).
struct SplitLaunch {
  std::string kernel;
  /// Arguments as the kernel declares them; the access sets of buffer arguments are ignored
  /// (each partition's come from `accesses`).
  std::vector<LaunchArg> args;
  std::uint64_t units = 0;  ///< extent of the split dimension
  std::function<NDRange(const Block&)> range;
  /// Per buffer argument index, what the partition computing `block` reads and writes.
  std::function<std::map<std::size_t, BufferAccess>(const Block&)> accesses;
};

/// Submits `launch` over `devices` (runtime device indices, block d on devices[d]).
Event launch_split(Runtime& runtime, KernelProvider& kernels, const KernelSource& source,
                   std::span<const std::size_t> devices, const SplitLaunch& launch);

/// Creates a shared buffer holding `values` (written from the host).
[[nodiscard]] BufferId upload(Runtime& runtime, const std::string& name,
                              const std::vector<float>& values);
/// A shared buffer of `floats` floats the host never writes.
[[nodiscard]] BufferId scratch(Runtime& runtime, const std::string& name, std::uint64_t floats);
/// Reads a whole buffer of floats back to the host.
[[nodiscard]] std::vector<float> download(Runtime& runtime, BufferId buffer);

/// Result of the unimem version.
struct UnimemResult {
  Arrays outputs;
  TransferStats moved;  ///< what the runtime copied during the run
  double seconds = 0;   ///< from the first host write to the last host read
};

/// Runs `workload`'s unimem version on `devices` of `runtime`.
[[nodiscard]] UnimemResult run_unimem(const Workload& workload, Runtime& runtime,
                                      KernelProvider& kernels, std::span<const std::size_t> devices,
                                      const Problem& problem, const Arrays& inputs);

/// The bytes_min fields in TransferStats' terms.
[[nodiscard]] TransferBytes transfer_bytes(const TransferStats& stats);

/// NDRanges of a block: 1-D over the block; 2-D over (cols, rows of the block); 3-D over
/// (nx, ny, planes of the block). The split dimension is the slowest.
[[nodiscard]] NDRange ndrange_1d(const Block& block);
[[nodiscard]] NDRange ndrange_2d(std::uint64_t cols, const Block& rows);
[[nodiscard]] NDRange ndrange_3d(std::uint64_t nx, std::uint64_t ny, const Block& planes);

/// A buffer argument (its access sets come from SplitLaunch::accesses).
[[nodiscard]] inline LaunchArg buffer_arg(BufferId buffer) {
  return LaunchArg::of_buffer(buffer, {}, {});
}

/// Applies `item` to every work-item (x fastest) of a host kernel's NDRange.
template <typename Item>
void for_each_item(const HostKernelContext& context, Item&& item) {
  const NDRange& r = context.range();
  for (std::uint64_t z = r.offset[2]; z < r.offset[2] + r.global[2]; ++z) {
    for (std::uint64_t y = r.offset[1]; y < r.offset[1] + r.global[1]; ++y) {
      for (std::uint64_t x = r.offset[0]; x < r.offset[0] + r.global[0]; ++x) {
        item(static_cast<int>(x), static_cast<int>(y), static_cast<int>(z));
      }
    }
  }
}

}  // namespace unimem::examples
