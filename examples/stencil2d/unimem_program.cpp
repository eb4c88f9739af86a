// stencil2d, unimem version: two shared grids used in turn and one plain launch per step. The
// access descriptors say what the kernel (stencil2d.cl) does: it reads its cell and, inside the
// grid, the cells above and below (left and right are in the same rows); it writes its cell.

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {

using namespace stencil2d_parameters;

std::map<std::string, BufferId> submit_stencil2d_program(Runtime& runtime, Program& program,
                                                         const LaunchOptions& options,
                                                         const Problem& problem,
                                                         std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> grids = pingpong_buffers(runtime, buffers, "grid");
  LaunchOptions launch = options;
  const IndexVar row = IndexVar::global_id(1);
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read,
                                              {grid_piece(n), grid_piece(n, -n, {{row, 1, n - 1}}),
                                               grid_piece(n, n, {{row, 0, n - 2}})}),
                     AccessDescriptor::affine(1, AccessMode::write, {grid_piece(n)})};
  const NDRange range = ndrange({problem.size, problem.size});
  for (std::uint32_t step = 0; step < problem.steps; ++step) {
    program.launch(
        "stencil2d", range,
        {Arg::buffer(grids[step % 2]), Arg::buffer(grids[1 - step % 2]),
         Arg::scalar(static_cast<std::int32_t>(n)), Arg::scalar(static_cast<std::int32_t>(n)),
         Arg::scalar(std::int32_t{0}), Arg::scalar(kCenter), Arg::scalar(kAdjacent)},
        launch);
  }
  return {{"grid", grids[problem.steps % 2]}};
}

}  // namespace unimem::examples
