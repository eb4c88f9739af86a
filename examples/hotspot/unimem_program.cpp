// hotspot, unimem version: two shared temperature grids used in turn, the power grid, one plain
// launch per step. The kernel (hotspot.cl) reads its temperature cell and, inside the chip, the
// cells above and below, and its power cell; it writes its new temperature.

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {

std::map<std::string, BufferId> submit_hotspot_program(Runtime& runtime, Program& program,
                                                       const LaunchOptions& options,
                                                       const Problem& problem,
                                                       std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> temps = pingpong_buffers(runtime, buffers, "temp");
  const BufferId power = buffers.at("power");
  const HotspotCoefficients k = hotspot_coefficients(problem.size, problem.size);
  const IndexVar row = IndexVar::global_id(1);
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read,
                                              {grid_piece(n), grid_piece(n, -n, {{row, 1, n - 1}}),
                                               grid_piece(n, n, {{row, 0, n - 2}})}),
                     AccessDescriptor::affine(1, AccessMode::read, {grid_piece(n)}),
                     AccessDescriptor::affine(2, AccessMode::write, {grid_piece(n)})};
  const NDRange range = ndrange({problem.size, problem.size});
  for (std::uint32_t step = 0; step < problem.steps; ++step) {
    program.launch(
        "hotspot", range,
        {Arg::buffer(temps[step % 2]), Arg::buffer(power), Arg::buffer(temps[1 - step % 2]),
         Arg::scalar(static_cast<std::int32_t>(n)), Arg::scalar(static_cast<std::int32_t>(n)),
         Arg::scalar(std::int32_t{0}), Arg::scalar(std::int32_t{0}), Arg::scalar(k.step_div_cap),
         Arg::scalar(k.rx_1), Arg::scalar(k.ry_1), Arg::scalar(k.rz_1), Arg::scalar(k.amb_temp)},
        launch);
  }
  return {{"temp", temps[problem.steps % 2]}};
}

}  // namespace unimem::examples
