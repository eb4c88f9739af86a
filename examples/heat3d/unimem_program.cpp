// heat3d, unimem version: two shared grids used in turn, one plain 3-D launch per step, split by
// planes (the slowest dimension). The kernel (heat3d.cl) reads its cell's plane and, inside the
// grid, the planes above and below; it writes its cell.

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {

namespace {
using namespace heat3d_parameters;

AffinePiece cell(std::int64_t n, std::int64_t constant, std::vector<VarBound> bounds = {}) {
  return row_major_piece(sizeof(float), {1, n, n * n}, constant, std::move(bounds));
}
}  // namespace

std::map<std::string, BufferId> submit_heat3d_program(Runtime& runtime, Program& program,
                                                      const LaunchOptions& options,
                                                      const Problem& problem,
                                                      std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> grids = pingpong_buffers(runtime, buffers, "grid");
  const IndexVar z = IndexVar::global_id(2);
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read,
                                              {cell(n, 0), cell(n, -n * n, {{z, 1, n - 1}}),
                                               cell(n, n * n, {{z, 0, n - 2}})}),
                     AccessDescriptor::affine(1, AccessMode::write, {cell(n, 0)})};
  const NDRange range = ndrange({problem.size, problem.size, problem.size});
  for (std::uint32_t step = 0; step < problem.steps; ++step) {
    program.launch("heat3d", range,
                   {Arg::buffer(grids[step % 2]), Arg::buffer(grids[1 - step % 2]),
                    Arg::scalar(static_cast<std::int32_t>(n)), Arg::scalar(std::int32_t{0}),
                    Arg::scalar(kCenter), Arg::scalar(kAdjacent)},
                   launch);
  }
  return {{"grid", grids[problem.steps % 2]}};
}

}  // namespace unimem::examples
