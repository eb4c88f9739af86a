#pragma once

// A min-plus Floyd-Warshall over a small matrix split by rows over host devices, as the runtime
// sees it (floyd-warshall's launches: each partition writes its rows and reads row k): the kernel,
// its partitions, a flat-memory step, and host devices whose launches can be made to fail. Shared
// by the rewriting launches' tests and the affine replays' tests.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/runtime_core.hpp"
#include "device/device.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "forwarding_device.hpp"
#include "launch_failing_device.hpp"

namespace unimem::floyd_rows {

// A randomized test's first seed: UNIMEM_TEST_SEED when set (to reproduce one), else fallback.
inline std::uint32_t seed_or(std::uint32_t fallback) {
  if (const char* s = std::getenv("UNIMEM_TEST_SEED"))
    return static_cast<std::uint32_t>(std::stoul(s));
  return fallback;
}

constexpr std::uint64_t kN = 24;  // rows and columns of the matrix (uint32 entries)
constexpr std::uint64_t kRow = kN * 4;

// dist[i][j] = min(dist[i][j], dist[i][k] + dist[k][j]) over the partition's rows.
inline std::shared_ptr<HostKernel> floyd_kernel(const std::string& name = "floyd") {
  return std::make_shared<HostKernel>(name, [](const HostKernelContext& ctx) {
    auto* dist = ctx.buffer<std::uint32_t>(0);
    const auto k = ctx.scalar<std::uint32_t>(1);
    const std::uint64_t first = ctx.range().offset[0];
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      for (std::uint64_t j = 0; j < kN; ++j) {
        const std::uint32_t via = dist[i * kN + k] + dist[k * kN + j];
        if (via < dist[i * kN + j]) dist[i * kN + j] = via;
      }
    }
  });
}

// The same kernel's bytes as launch_partitioned sees them: rows [first, last) read and written,
// row k read.
inline std::vector<LaunchPartition> floyd_partitions(std::uint32_t k, std::size_t devices,
                                                     const std::shared_ptr<HostKernel>& kernel) {
  std::vector<LaunchPartition> out;
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t first = kN * d / devices;
    const std::uint64_t last = kN * (d + 1) / devices;
    LaunchPartition p;
    p.device = d;
    p.kernel = kernel;
    p.range.dims = 1;
    p.range.offset[0] = first;
    p.range.global[0] = last - first;
    const IntervalSet own{{first * kRow, last * kRow}};
    p.accesses[0] = AccessBytes{own.unite(IntervalSet{{k * kRow, (k + 1) * kRow}}), own, {}};
    out.push_back(std::move(p));
  }
  return out;
}

inline void floyd_step(std::vector<std::uint32_t>& dist, std::uint32_t k) {
  for (std::uint64_t i = 0; i < kN; ++i) {
    for (std::uint64_t j = 0; j < kN; ++j) {
      const std::uint32_t via = dist[i * kN + k] + dist[k * kN + j];
      if (via < dist[i * kN + j]) dist[i * kN + j] = via;
    }
  }
}

// A launch on device 0 writing 7 over the whole of `buffer`, a buffer of the matrix's size (under
// a device memory cap it evicts the matrix's rows there).
inline void fill_on_device_0(RuntimeCore& core, BufferId buffer) {
  Launch l;
  l.device = 0;
  l.kernel = std::make_shared<HostKernel>("fill", [](const HostKernelContext& c) {
    auto* d = c.buffer<std::uint32_t>(0);
    for (std::uint64_t i = 0; i < kN * kN; ++i) d[i] = 7;
  });
  l.range.dims = 1;
  l.range.global[0] = 1;
  const IntervalSet all{{0, kN * kRow}};
  l.args = {LaunchArg::of_buffer(buffer, all, all)};
  core.launch(l);
}

// Host devices whose launches can be made to fail (launch_failing_device.hpp).
using testing::failing_host_devices;
using testing::FailingHostDevices;
using testing::LaunchFailingDevice;

}  // namespace unimem::floyd_rows
