// stencil2d, unimem version: two shared grids used in turn and one plain launch per step. The
// access descriptors say what the kernel (stencil2d.cl) does: it reads its cell and, inside the
// grid, the cells above and below (left and right are in the same rows); it writes its cell.

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"

namespace unimem::examples {

namespace {
constexpr float kCenter = 0.6f;    // as in stencil2d.cpp; verification against the reference
constexpr float kAdjacent = 0.1f;  // catches any drift
}  // namespace

std::map<std::string, BufferId> submit_stencil2d_program(Runtime& runtime, Program& program,
                                                         const LaunchOptions& options,
                                                         const Problem& problem,
                                                         std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> grids{
      buffers.at("grid"),
      runtime.create_buffer(problem.size * problem.size * sizeof(float), "grid b")};
  buffers["grid b"] = grids[1];
  LaunchOptions launch = options;
  const IndexVar row = IndexVar::global_id(1);
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read,
                                              {grid_piece(n), grid_piece(n, -n, {{row, 1, n - 1}}),
                                               grid_piece(n, n, {{row, 0, n - 2}})}),
                     AccessDescriptor::affine(1, AccessMode::write, {grid_piece(n)})};
  NDRange range;
  range.dims = 2;
  range.global = {problem.size, problem.size, 1};
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
