#pragma once

// The shared skeleton of the iterative stencils (stencil2d, heat3d, hotspot). The hand-written
// version splits the grid along its slowest dimension into one block of `units` (rows or planes)
// per device; each device holds its block plus `halo` units on each side in two buffers used in
// turn (ping-pong); after every step but the last, each device receives the halo units of the new
// grid from its neighbours by peer copy. Upload once, exchange halos, download once. HaloStencil
// derives a workload's reference loop, manual version, bytes_min and buffer plan from its shape.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
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

/// Cell (i, j) of an n x n row-major grid and its four neighbours, each clamped to the cell itself
/// at the grid's border (the CPU references of stencil2d and hotspot).
struct ClampedCross {
  std::int64_t center, north, south, west, east;
};
[[nodiscard]] inline ClampedCross clamped_cross(std::int64_t i, std::int64_t j, std::int64_t n) {
  const std::int64_t c = i * n + j;
  return {c, i > 0 ? c - n : c, i < n - 1 ? c + n : c, j > 0 ? c - 1 : c, j < n - 1 ? c + 1 : c};
}

/// How one device's kernel is launched: arguments given the input and output buffers of the step,
/// and the NDRange extents of the dimensions faster than the split one ({n} for rows of n
/// floats, {n, n} for planes); the split dimension covers the device's own block.
struct HaloKernelLaunch {
  std::function<std::vector<ClArg>(unsigned device, const ClMem& in, const ClMem& out,
                                   const HaloBlock& block)>
      args;
  std::vector<std::size_t> extent;
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

/// A stencil on an N^dims grid of floats, split along its slowest dimension, `steps` steps with one
/// halo unit per neighbour, plus read-only arrays shaped like the grid of which each device needs
/// only its own units (hotspot's power map).
class HaloStencil : public Workload {
 public:
  [[nodiscard]] SizeRules size_rules() const override;
  [[nodiscard]] Arrays reference(const Problem& problem, const Arrays& inputs) const final;
  [[nodiscard]] TransferBytes bytes_min(const Problem& problem, unsigned devices) const final;
  [[nodiscard]] BufferPlan buffer_plan(const Problem& problem) const final;

 protected:
  struct Shape {
    unsigned dims = 2;   ///< 2: the units are rows of N floats; 3: planes of N x N floats
    std::string grid;    ///< the array that is both input and output ("grid", "temp")
    std::string kernel;  ///< the kernel of one step (in the workload's one source)
    std::vector<std::string> own_inputs;  ///< read-only arrays each device holds its units of
  };
  [[nodiscard]] virtual Shape shape() const = 0;
  /// One step of the CPU reference in the kernel's arithmetic order: `out` from `in` (and the
  /// other arrays of `inputs`).
  virtual void reference_step(const Problem& problem, const Arrays& inputs,
                              const std::vector<float>& in, std::vector<float>& out) const = 0;
  /// The kernel's arguments for one device's step: the grid blocks it reads and writes (both hold
  /// the units `block.held`) and its blocks of shape().own_inputs (its own units only).
  [[nodiscard]] virtual std::vector<ClArg> kernel_args(const Problem& problem, const ClMem& in,
                                                       const ClMem& out,
                                                       std::span<const ClMem> own_inputs,
                                                       const HaloBlock& block) const = 0;
  [[nodiscard]] Arrays manual_version(ManualContext& context, const ClProgram& program,
                                      const Problem& problem, const Arrays& inputs) const final;

 private:
  [[nodiscard]] std::uint64_t unit_elems(const Problem& problem) const;
};

}  // namespace unimem::examples
