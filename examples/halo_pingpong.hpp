#pragma once

// The shared skeleton of the hand-written versions of the iterative stencils (stencil2d, heat3d,
// hotspot): the grid is split along its slowest dimension into one block of `units` (rows or
// planes) per device; each device holds its block plus `halo` units on each side in two buffers
// used in turn (ping-pong); after every step but the last, each device receives the halo units of
// the new grid from its neighbours by peer copy. Upload once, exchange halos, download once.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {

/// The units a device computes (own) and the units it holds (own plus halo, clipped to the grid).
struct HaloBlock {
  Block own;
  Block held;
};

/// The split_evenly blocks of [0, units) over `devices` devices with `halo` units on each side.
[[nodiscard]] std::vector<HaloBlock> halo_blocks(std::uint64_t units, unsigned devices,
                                                 std::uint64_t halo);

/// bytes_min of a halo ping-pong run: every device uploads the units it holds once, receives its
/// halo units after each of the first steps - 1 steps, and the grid is downloaded once.
[[nodiscard]] TransferBytes halo_pingpong_bytes(std::uint64_t units, std::uint64_t unit_bytes,
                                                unsigned devices, std::uint64_t halo,
                                                std::uint32_t steps);

/// How one device's kernel is launched: arguments given the input and output buffers of the step,
/// and the NDRange (offset, global) of its own block.
struct HaloKernelLaunch {
  std::function<std::vector<ClArg>(unsigned device, const ClMem& in, const ClMem& out,
                                   const HaloBlock& block)>
      args;
  std::function<std::pair<std::vector<std::size_t>, std::vector<std::size_t>>(const Block& own)>
      range;
};

/// Runs `steps` steps of `kernel` over `grid` (units * unit_elems floats) on every device of
/// `context` and returns the final grid. `waits[d]` are events device d's first kernel waits for
/// (uploads of extra buffers).
[[nodiscard]] std::vector<float> run_halo_pingpong(ManualContext& context, const ClKernel& kernel,
                                                   std::span<const float> grid, std::uint64_t units,
                                                   std::uint64_t unit_elems, std::uint64_t halo,
                                                   std::uint32_t steps,
                                                   const HaloKernelLaunch& launch,
                                                   const std::vector<std::vector<ClEvent>>& waits);

}  // namespace unimem::examples
