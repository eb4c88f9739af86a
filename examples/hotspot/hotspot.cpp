// hotspot: Rodinia's HotSpot (Che et al., IISWC 2009) in plain global-memory form, with Rodinia's
// chip constants. Split by rows: temperature ping-pongs with one halo row per neighbour; the power
// map is read-only and each device holds only its own rows of it.

#include <algorithm>
#include <array>
#include <chrono>

#include "common/check.hpp"
#include "examples/halo_pingpong.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/unimem_version.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace embedded {
extern const char hotspot_cl[];
}  // namespace embedded

namespace {

/// Rodinia hotspot's per-step coefficients for a rows x cols chip, computed in double as Rodinia
/// does and rounded to float once.
struct Coefficients {
  float step_div_cap;
  float rx_1;
  float ry_1;
  float rz_1;
  float amb_temp;
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

class Hotspot final : public Workload {
 public:
  std::string name() const override { return "hotspot"; }
  std::string description() const override {
    return "Rodinia HotSpot on an N x N chip, STEPS steps; rows split over devices, one halo row "
           "of temperature exchanged per neighbour and step, power rows uploaded once";
  }
  Problem small_problem() const override { return {40, 4}; }
  Problem medium_problem() const override { return {2048, 50}; }
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "hotspot needs at least one device");
    UNIMEM_REQUIRE(problem.steps >= 1, "hotspot needs at least one step");
    UNIMEM_REQUIRE(problem.size >= devices, "hotspot needs at least one row per device");
    UNIMEM_REQUIRE(problem.size <= 46000, "hotspot grid too large for 32-bit indices");
  }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"hotspot.cl", embedded::hotspot_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t cells = problem.size * problem.size;
    return {{"temp", random_floats(cells, seed, 323.0f, 343.0f)},
            {"power", random_floats(cells, seed + 1, 0.0f, 0.01f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    const Coefficients k = coefficients(problem.size, problem.size);
    const std::vector<float>& power = inputs.at("power");
    std::vector<float> in = inputs.at("temp");
    std::vector<float> out(in.size());
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          const std::int64_t c = i * n + j;
          const std::int64_t north = i > 0 ? c - n : c;
          const std::int64_t south = i < n - 1 ? c + n : c;
          const std::int64_t west = j > 0 ? c - 1 : c;
          const std::int64_t east = j < n - 1 ? c + 1 : c;
          const float t = in[c];
          const float delta =
              k.step_div_cap * (((power[c] + ((in[south] + in[north]) - 2.0f * t) * k.ry_1) +
                                 ((in[east] + in[west]) - 2.0f * t) * k.rx_1) +
                                (k.amb_temp - t) * k.rz_1);
          out[c] = t + delta;
        }
      }
      std::swap(in, out);
    }
    return {{"temp", std::move(in)}};
  }

  ManualResult run_manual(const ClPlatformDevices& platform, std::span<const cl_device_id> devices,
                          const Problem& problem, const Arrays& inputs) const override {
    const auto count = static_cast<unsigned>(devices.size());
    validate(problem, count);
    ManualContext context(platform, devices);
    const KernelSource source = kernel_sources().front();
    const ClProgram program = context.build(source.text, source.options, source.file);
    const ClKernel kernel = context.kernel(program, "hotspot");
    const auto n = static_cast<cl_int>(problem.size);
    const Coefficients k = coefficients(problem.size, problem.size);
    const std::uint64_t row_bytes = problem.size * sizeof(float);
    const std::vector<float>& power = inputs.at("power");

    const auto start = std::chrono::steady_clock::now();
    // The power map is read-only: each device gets its own rows, once.
    const std::vector<Block> own = split_evenly(problem.size, count);
    std::vector<ClMem> power_blocks;
    std::vector<std::vector<ClEvent>> uploaded(count);
    for (unsigned d = 0; d < count; ++d) {
      power_blocks.push_back(context.allocate(d, own[d].size() * row_bytes, "power block"));
      uploaded[d].push_back(context.write(d, power_blocks[d], 0,
                                          power.data() + own[d].begin * problem.size,
                                          own[d].size() * row_bytes));
    }
    HaloKernelLaunch launch;
    launch.args = [&](unsigned d, const ClMem& in, const ClMem& out, const HaloBlock& block) {
      return std::vector<ClArg>{ClArg::mem(in),
                                ClArg::mem(power_blocks[d]),
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
    };
    launch.range = [n](const Block& block) {
      return std::pair{std::vector<std::size_t>{0, block.begin},
                       std::vector<std::size_t>{static_cast<std::size_t>(n), block.size()}};
    };
    std::vector<float> temp = run_halo_pingpong(context, kernel, inputs.at("temp"), problem.size,
                                                problem.size, 1, problem.steps, launch, uploaded);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"temp", std::move(temp)}}, context.transfers(), elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t n = problem.size;
    const std::uint64_t row = n * sizeof(float);
    const Coefficients k = coefficients(n, n);
    const std::array<BufferId, 2> temps{buffers.at("temp"), scratch(runtime, "temp b", n * n)};
    buffers["temp b"] = temps[1];
    const BufferId power = buffers.at("power");
    const KernelSource source = kernel_sources().front();
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      SplitLaunch launch;
      launch.kernel = "hotspot";
      launch.args = {buffer_arg(temps[step % 2]),
                     buffer_arg(power),
                     buffer_arg(temps[1 - step % 2]),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(std::int32_t{0}),
                     LaunchArg::of_scalar(std::int32_t{0}),
                     LaunchArg::of_scalar(k.step_div_cap),
                     LaunchArg::of_scalar(k.rx_1),
                     LaunchArg::of_scalar(k.ry_1),
                     LaunchArg::of_scalar(k.rz_1),
                     LaunchArg::of_scalar(k.amb_temp)};
      launch.units = n;
      launch.range = [n](const Block& rows) { return ndrange_2d(n, rows); };
      launch.accesses = [n, row](const Block& rows) {
        const std::uint64_t first = rows.begin == 0 ? 0 : rows.begin - 1;
        return std::map<std::size_t, BufferAccess>{
            {0, {unit_bytes(first, std::min(n, rows.end + 1), row), {}, {}}},
            {1, {unit_bytes(rows.begin, rows.end, row), {}, {}}},
            {2, {{}, unit_bytes(rows.begin, rows.end, row), {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, launch);
    }
    return {{"temp", temps[problem.steps % 2]}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    return {{"hotspot", [](const HostKernelContext& c) {
               const float* temp_in = c.buffer<const float>(0);
               const float* power = c.buffer<const float>(1);
               float* temp_out = c.buffer<float>(2);
               const auto rows = c.scalar<std::int32_t>(3);
               const auto cols = c.scalar<std::int32_t>(4);
               const auto temp_base = c.scalar<std::int32_t>(5);
               const auto power_base = c.scalar<std::int32_t>(6);
               const auto step_div_cap = c.scalar<float>(7);
               const auto rx_1 = c.scalar<float>(8);
               const auto ry_1 = c.scalar<float>(9);
               const auto rz_1 = c.scalar<float>(10);
               const auto amb_temp = c.scalar<float>(11);
               for_each_item(c, [&](int j, int i, int) {
                 const int cell = (i - temp_base) * cols + j;
                 const int north = (i > 0) ? cell - cols : cell;
                 const int south = (i < rows - 1) ? cell + cols : cell;
                 const int west = (j > 0) ? cell - 1 : cell;
                 const int east = (j < cols - 1) ? cell + 1 : cell;
                 const float t = temp_in[cell];
                 const float delta =
                     step_div_cap * (((power[(i - power_base) * cols + j] +
                                       ((temp_in[south] + temp_in[north]) - 2.0f * t) * ry_1) +
                                      ((temp_in[east] + temp_in[west]) - 2.0f * t) * rx_1) +
                                     (amb_temp - t) * rz_1);
                 temp_out[cell] = t + delta;
               });
             }}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    TransferBytes bytes =
        halo_pingpong_bytes(problem.size, problem.size * sizeof(float), devices, 1, problem.steps);
    bytes.h2d += problem.size * problem.size * sizeof(float);  // each power row, once
    return bytes;
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    BufferPlan plan;
    const std::uint64_t bytes = problem.size * problem.size * sizeof(float);
    plan.buffer_bytes = {{"temp_a", bytes}, {"temp_b", bytes}, {"power", bytes}};
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      const std::string in = step % 2 == 0 ? "temp_a" : "temp_b";
      const std::string out = step % 2 == 0 ? "temp_b" : "temp_a";
      plan.launches.push_back({"hotspot", {in, "power"}, {out}});
    }
    plan.host_reads = {problem.steps % 2 == 0 ? "temp_a" : "temp_b"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_hotspot() { return std::make_unique<Hotspot>(); }

}  // namespace unimem::examples
