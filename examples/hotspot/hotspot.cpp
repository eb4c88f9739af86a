// hotspot: Rodinia's HotSpot (Che et al., IISWC 2009) in plain global-memory form, with Rodinia's
// chip constants. Split by rows: temperature ping-pongs with one halo row per neighbour; the power
// map is read-only and each device holds only its own rows of it.

#include "examples/halo_pingpong.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {
namespace embedded {
extern const char hotspot_cl[];
}  // namespace embedded

HotspotCoefficients hotspot_coefficients(std::uint64_t rows, std::uint64_t cols) {
  // Computed in double as Rodinia does and rounded to float once.
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

namespace {

class Hotspot final : public HaloStencil {
 public:
  std::string name() const override { return "hotspot"; }
  std::string description() const override {
    return "Rodinia HotSpot on an N x N chip, STEPS steps; rows split over devices, one halo row "
           "of temperature exchanged per neighbour and step, power rows uploaded once";
  }
  Problem small_problem() const override { return {40, 4}; }
  Problem medium_problem() const override { return {2048, 50}; }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"hotspot.cl", embedded::hotspot_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t cells = problem.size * problem.size;
    return {{"temp", random_floats(cells, seed, 323.0f, 343.0f)},
            {"power", random_floats(cells, seed + 1, 0.0f, 0.01f)}};
  }

 protected:
  Shape shape() const override { return {2, "temp", "hotspot", {"power"}}; }
  void reference_step(const Problem& problem, const Arrays& inputs, const std::vector<float>& in,
                      std::vector<float>& out) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    const HotspotCoefficients k = hotspot_coefficients(problem.size, problem.size);
    const std::vector<float>& power = inputs.at("power");
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const ClampedCross x = clamped_cross(i, j, n);
        const float t = in[x.center];
        const float delta =
            k.step_div_cap *
            (((power[x.center] + ((in[x.south] + in[x.north]) - 2.0f * t) * k.ry_1) +
              ((in[x.east] + in[x.west]) - 2.0f * t) * k.rx_1) +
             (k.amb_temp - t) * k.rz_1);
        out[x.center] = t + delta;
      }
    }
  }
  std::vector<ClArg> kernel_args(const Problem& problem, const ClMem& in, const ClMem& out,
                                 std::span<const ClMem> own_inputs,
                                 const HaloBlock& block) const override {
    const auto n = static_cast<cl_int>(problem.size);
    const HotspotCoefficients k = hotspot_coefficients(problem.size, problem.size);
    return {ClArg::mem(in),
            ClArg::mem(own_inputs[0]),
            ClArg::mem(out),
            ClArg::of(n),
            ClArg::of(n),
            ClArg::of(static_cast<cl_int>(block.held.begin)),
            ClArg::of(static_cast<cl_int>(block.own.begin)),
            ClArg::of(k.step_div_cap),
            ClArg::of(k.rx_1),
            ClArg::of(k.ry_1),
            ClArg::of(k.rz_1),
            ClArg::of(k.amb_temp)};
  }
};

}  // namespace

std::unique_ptr<Workload> make_hotspot() { return std::make_unique<Hotspot>(); }

}  // namespace unimem::examples
