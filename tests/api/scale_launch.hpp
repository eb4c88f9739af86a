// The element-wise launch that the deferred-record and periodic-replay tests run in cycles:
// out[i] = 3 in[i] + c over a grid of bytes split evenly over the devices (partition d on device
// d, or on devices - 1 - d when reversed), each partition reading and writing only its own bytes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"

namespace unimem::testing {

struct ScaleLaunch {
  std::vector<LaunchArg> args;
  std::vector<LaunchPartition> partitions;
};

inline std::shared_ptr<const ScaleLaunch> scale_launch(BufferId in, BufferId out, int c,
                                                       std::size_t devices, std::uint64_t grid,
                                                       const std::shared_ptr<HostKernel>& kernel,
                                                       bool reversed = false) {
  auto b = std::make_shared<ScaleLaunch>();
  b->args = {LaunchArg::of_buffer(in, {}, {}), LaunchArg::of_buffer(out, {}, {}),
             LaunchArg::of_scalar(c)};
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t first = grid * d / devices;
    const std::uint64_t last = grid * (d + 1) / devices;
    LaunchPartition p;
    p.device = reversed ? devices - 1 - d : d;
    p.kernel = kernel;
    p.range.dims = 1;
    p.range.offset[0] = first;
    p.range.global[0] = last - first;
    const IntervalSet own{{first, last}};
    p.accesses[0] = AccessBytes{own, {}, {}};
    p.accesses[1] = AccessBytes{{}, own, {}};
    b->partitions.push_back(std::move(p));
  }
  return b;
}

/// What the launch leaves in a flat memory: out = 3 in + c, byte by byte.
inline void scale_flat(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out, int c) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
  }
}

}  // namespace unimem::testing
