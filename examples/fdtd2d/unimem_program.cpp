// fdtd2d, unimem version: three shared fields and three plain launches per step (fdtd2d.cl),
// split by rows. The descriptors follow each kernel's guards: fdtd_ey reads ey and the hz row
// above only below row 0 (row 0 becomes fict unread); fdtd_ex reads its row of hz; fdtd_hz reads
// ex and ey (and the ey row below) only inside [0, nx - 1) x [0, ny - 1).

#include <cstdint>

#include "examples/program_version.hpp"

namespace unimem::examples {

std::map<std::string, BufferId> submit_fdtd2d_program(Runtime&, Program& program,
                                                      const LaunchOptions& options,
                                                      const Problem& problem,
                                                      std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);  // nx = ny = n
  const BufferId ex = buffers.at("ex");
  const BufferId ey = buffers.at("ey");
  const BufferId hz = buffers.at("hz");
  const IndexVar col = IndexVar::global_id(0);
  const IndexVar row = IndexVar::global_id(1);
  const VarBound below_first{row, 1, n - 1};
  const VarBound inner_rows{row, 0, n - 2};
  const VarBound inner_cols{col, 0, n - 2};

  LaunchOptions ey_launch = options;
  ey_launch.accesses = {
      AccessDescriptor::affine(0, AccessMode::read, {grid_piece(n, 0, {below_first})}),
      AccessDescriptor::affine(0, AccessMode::write, {grid_piece(n)}),
      AccessDescriptor::affine(
          1, AccessMode::read,
          {grid_piece(n, 0, {below_first}), grid_piece(n, -n, {below_first})})};
  LaunchOptions ex_launch = options;
  ex_launch.accesses = {AccessDescriptor::affine(0, AccessMode::read_write, {grid_piece(n)}),
                        AccessDescriptor::affine(1, AccessMode::read, {grid_piece(n)})};
  LaunchOptions hz_launch = options;
  hz_launch.accesses = {AccessDescriptor::affine(0, AccessMode::read_write, {grid_piece(n)}),
                        AccessDescriptor::affine(1, AccessMode::read,
                                                 {grid_piece(n, 0, {inner_rows, inner_cols}),
                                                  grid_piece(n, 1, {inner_rows, inner_cols})}),
                        AccessDescriptor::affine(2, AccessMode::read,
                                                 {grid_piece(n, 0, {inner_rows, inner_cols}),
                                                  grid_piece(n, n, {inner_rows, inner_cols})})};
  const NDRange range = ndrange({problem.size, problem.size});
  const auto ni = static_cast<std::int32_t>(n);
  const auto zero = std::int32_t{0};
  for (std::uint32_t t = 0; t < problem.steps; ++t) {
    program.launch("fdtd_ey", range,
                   {Arg::buffer(ey), Arg::buffer(hz), Arg::scalar(ni), Arg::scalar(zero),
                    Arg::scalar(zero), Arg::scalar(static_cast<float>(t))},
                   ey_launch);
    program.launch(
        "fdtd_ex", range,
        {Arg::buffer(ex), Arg::buffer(hz), Arg::scalar(ni), Arg::scalar(zero), Arg::scalar(zero)},
        ex_launch);
    program.launch("fdtd_hz", range,
                   {Arg::buffer(hz), Arg::buffer(ex), Arg::buffer(ey), Arg::scalar(ni),
                    Arg::scalar(ni), Arg::scalar(zero), Arg::scalar(zero), Arg::scalar(zero)},
                   hz_launch);
  }
  return {{"ex", ex}, {"ey", ey}, {"hz", hz}};
}

}  // namespace unimem::examples
