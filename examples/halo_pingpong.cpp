#include "examples/halo_pingpong.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "common/check.hpp"

namespace unimem::examples {

std::vector<HaloBlock> halo_blocks(std::uint64_t units, unsigned devices, std::uint64_t halo) {
  std::vector<HaloBlock> blocks;
  for (const Block& own : split_evenly(units, devices)) {
    const std::uint64_t begin = own.begin >= halo ? own.begin - halo : 0;
    const std::uint64_t end = std::min(units, own.end + halo);
    blocks.push_back({own, {begin, end}});
  }
  return blocks;
}

TransferBytes halo_pingpong_bytes(std::uint64_t units, std::uint64_t unit_bytes, unsigned devices,
                                  std::uint64_t halo, std::uint32_t steps) {
  TransferBytes bytes;
  for (const HaloBlock& b : halo_blocks(units, devices, halo)) {
    bytes.h2d += b.held.size() * unit_bytes;
    bytes.d2d += (steps - 1) * (b.held.size() - b.own.size()) * unit_bytes;
  }
  bytes.d2h = units * unit_bytes;
  return bytes;
}

std::vector<float> run_halo_pingpong(ManualContext& context, const ClKernel& kernel,
                                     std::span<const float> grid, std::uint64_t units,
                                     std::uint64_t unit_elems, std::uint64_t halo,
                                     std::uint32_t steps, const HaloKernelLaunch& launch,
                                     const std::vector<std::vector<ClEvent>>& waits) {
  const unsigned devices = context.device_count();
  UNIMEM_REQUIRE(grid.size() == units * unit_elems, "run_halo_pingpong: grid size mismatch");
  UNIMEM_REQUIRE(steps >= 1, "run_halo_pingpong needs at least one step");
  UNIMEM_REQUIRE(waits.size() == devices, "run_halo_pingpong: one wait list per device");
  const std::vector<HaloBlock> blocks = halo_blocks(units, devices, halo);
  // A device's halo must come from its direct neighbours only.
  for (const HaloBlock& b : blocks) {
    UNIMEM_REQUIRE(b.own.size() >= halo, "run_halo_pingpong: a block is thinner than the halo");
  }
  const std::uint64_t unit_bytes = unit_elems * sizeof(float);
  std::vector<std::array<ClMem, 2>> buffers(devices);
  std::vector<std::vector<ClEvent>> ready(devices);  // what device d's next kernel waits for
  for (unsigned d = 0; d < devices; ++d) {
    const HaloBlock& b = blocks[d];
    for (ClMem& m : buffers[d]) m = context.allocate(d, b.held.size() * unit_bytes, "grid block");
    ready[d] = waits[d];
    ready[d].push_back(context.write(d, buffers[d][0], 0, grid.data() + b.held.begin * unit_elems,
                                     b.held.size() * unit_bytes));
  }
  std::vector<ClEvent> kernels(devices);
  for (std::uint32_t step = 0; step < steps; ++step) {
    const unsigned in = step % 2;
    const unsigned out = 1 - in;
    for (unsigned d = 0; d < devices; ++d) {
      std::vector<std::size_t> offset(launch.extent.size(), 0);
      std::vector<std::size_t> global = launch.extent;
      offset.push_back(blocks[d].own.begin);
      global.push_back(blocks[d].own.size());
      const std::vector<ClArg> args = launch.args(d, buffers[d][in], buffers[d][out], blocks[d]);
      kernels[d] = context.launch(d, kernel, args, offset, global, ready[d]);
      ready[d].clear();
    }
    if (step + 1 == steps) break;
    // Halo exchange into each device's new grid, on the receiving device's queue (in order before
    // its next kernel). The sender's next kernel waits for the copies out of its grid (only the
    // one after overwrites their source; waiting one step earlier is simpler and costs nothing).
    for (unsigned d = 0; d < devices; ++d) {
      const HaloBlock& b = blocks[d];
      if (d > 0 && b.held.begin < b.own.begin) {
        const HaloBlock& from = blocks[d - 1];
        const ClEvent wait[] = {kernels[d - 1]};
        ready[d - 1].push_back(
            context.copy(d, buffers[d - 1][out], (b.held.begin - from.held.begin) * unit_bytes,
                         buffers[d][out], 0, (b.own.begin - b.held.begin) * unit_bytes, wait));
      }
      if (d + 1 < devices && b.own.end < b.held.end) {
        const HaloBlock& from = blocks[d + 1];
        const ClEvent wait[] = {kernels[d + 1]};
        ready[d + 1].push_back(context.copy(
            d, buffers[d + 1][out], (b.own.end - from.held.begin) * unit_bytes, buffers[d][out],
            (b.own.end - b.held.begin) * unit_bytes, (b.held.end - b.own.end) * unit_bytes, wait));
      }
    }
  }
  std::vector<float> result(grid.size());
  const unsigned last = steps % 2;
  for (unsigned d = 0; d < devices; ++d) {
    const HaloBlock& b = blocks[d];
    context.read(d, buffers[d][last], (b.own.begin - b.held.begin) * unit_bytes,
                 result.data() + b.own.begin * unit_elems, b.own.size() * unit_bytes);
  }
  context.finish_all();
  return result;
}

SizeRules HaloStencil::size_rules() const {
  // 32-bit cell indices: N^dims < 2^31.
  return {shape().dims == 2 ? "rows" : "planes", 1, shape().dims == 2 ? 46000U : 1280U, true};
}

std::uint64_t HaloStencil::unit_elems(const Problem& problem) const {
  return shape().dims == 2 ? problem.size : problem.size * problem.size;
}

Arrays HaloStencil::reference(const Problem& problem, const Arrays& inputs) const {
  const std::string grid = shape().grid;
  std::vector<float> in = inputs.at(grid);
  std::vector<float> out(in.size());
  for (std::uint32_t step = 0; step < problem.steps; ++step) {
    reference_step(problem, inputs, in, out);
    std::swap(in, out);
  }
  return {{grid, std::move(in)}};
}

TransferBytes HaloStencil::bytes_min(const Problem& problem, unsigned devices) const {
  validate(problem, devices);
  const std::uint64_t unit_bytes = unit_elems(problem) * sizeof(float);
  TransferBytes bytes = halo_pingpong_bytes(problem.size, unit_bytes, devices, 1, problem.steps);
  bytes.h2d += shape().own_inputs.size() * problem.size * unit_bytes;  // each unit once
  return bytes;
}

BufferPlan HaloStencil::buffer_plan(const Problem& problem) const {
  const Shape s = shape();
  const std::uint64_t grid_bytes = problem.size * unit_elems(problem) * sizeof(float);
  std::map<std::string, std::uint64_t> read_only;
  for (const std::string& name : s.own_inputs) read_only[name] = grid_bytes;
  return pingpong_plan(s.kernel, s.grid, grid_bytes, problem.steps, read_only);
}

Arrays HaloStencil::manual_version(ManualContext& context, const ClProgram& program,
                                   const Problem& problem, const Arrays& inputs) const {
  const Shape s = shape();
  const unsigned devices = context.device_count();
  const std::uint64_t elems = unit_elems(problem);
  const std::uint64_t unit_bytes = elems * sizeof(float);
  // The read-only arrays: each device gets its own units, once.
  const std::vector<Block> own = split_evenly(problem.size, devices);
  std::vector<std::vector<ClMem>> own_inputs(devices);
  std::vector<std::vector<ClEvent>> uploaded(devices);
  for (unsigned d = 0; d < devices; ++d) {
    for (const std::string& name : s.own_inputs) {
      own_inputs[d].push_back(context.allocate(d, own[d].size() * unit_bytes, name));
      uploaded[d].push_back(context.write(d, own_inputs[d].back(), 0,
                                          inputs.at(name).data() + own[d].begin * elems,
                                          own[d].size() * unit_bytes));
    }
  }
  HaloKernelLaunch launch;
  launch.args = [&](unsigned d, const ClMem& in, const ClMem& out, const HaloBlock& block) {
    return kernel_args(problem, in, out, own_inputs[d], block);
  };
  launch.extent.assign(s.dims - 1, problem.size);
  const ClKernel kernel = context.kernel(program, s.kernel.c_str());
  return {{s.grid, run_halo_pingpong(context, kernel, inputs.at(s.grid), problem.size, elems, 1,
                                     problem.steps, launch, uploaded)}};
}

}  // namespace unimem::examples
