// hotspot, unimem version: two shared temperature grids used in turn, the power grid, one plain
// launch per step. The kernel (hotspot.cl) reads its temperature cell and, inside the chip, the
// cells above and below, and its power cell; it writes its new temperature.

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"

namespace unimem::examples {

namespace {
// Rodinia's coefficients, computed as hotspot.cpp does (the reference check catches any drift).
struct Coefficients {
  float step_div_cap, rx_1, ry_1, rz_1, amb_temp;
};
Coefficients coefficients(std::uint64_t rows, std::uint64_t cols) {
  const double max_pd = 3.0e6;
  const double precision = 0.001;
  const double spec_heat_si = 1.75e6;
  const double k_si = 100;
  const double factor_chip = 0.5;
  const double t_chip = 0.0005;
  const double chip_height = 0.016;
  const double chip_width = 0.016;
  const double grid_height = chip_height / static_cast<double>(rows);
  const double grid_width = chip_width / static_cast<double>(cols);
  const double cap = factor_chip * spec_heat_si * t_chip * grid_width * grid_height;
  const double rx = grid_width / (2.0 * k_si * t_chip * grid_height);
  const double ry = grid_height / (2.0 * k_si * t_chip * grid_width);
  const double rz = t_chip / (k_si * grid_height * grid_width);
  const double max_slope = max_pd / (factor_chip * t_chip * spec_heat_si);
  const double step = precision / max_slope;
  return {static_cast<float>(step / cap), static_cast<float>(1.0 / rx),
          static_cast<float>(1.0 / ry), static_cast<float>(1.0 / rz), 80.0f};
}
}  // namespace

std::map<std::string, BufferId> submit_hotspot_program(Runtime& runtime, Program& program,
                                                       const LaunchOptions& options,
                                                       const Problem& problem,
                                                       std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> temps{
      buffers.at("temp"),
      runtime.create_buffer(problem.size * problem.size * sizeof(float), "temp b")};
  buffers["temp b"] = temps[1];
  const BufferId power = buffers.at("power");
  const Coefficients k = coefficients(problem.size, problem.size);
  const IndexVar row = IndexVar::global_id(1);
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read,
                                              {grid_piece(n), grid_piece(n, -n, {{row, 1, n - 1}}),
                                               grid_piece(n, n, {{row, 0, n - 2}})}),
                     AccessDescriptor::affine(1, AccessMode::read, {grid_piece(n)}),
                     AccessDescriptor::affine(2, AccessMode::write, {grid_piece(n)})};
  NDRange range;
  range.dims = 2;
  range.global = {problem.size, problem.size, 1};
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
