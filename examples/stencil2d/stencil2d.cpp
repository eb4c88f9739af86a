// stencil2d: SHOC's Stencil2D (Danalis et al.), reduced to the 5-point form the seeds evaluate
// (Matz et al., 002_aa84334820ddd8b5.txt, section 8), with clamped borders. Split by rows.

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
extern const char stencil2d_cl[];
}  // namespace embedded

namespace {

constexpr float kCenter = 0.6f;
constexpr float kAdjacent = 0.1f;

class Stencil2d final : public Workload {
 public:
  std::string name() const override { return "stencil2d"; }
  std::string description() const override {
    return "5-point stencil on an N x N grid with clamped borders, STEPS steps; rows split over "
           "devices, one halo row exchanged per neighbour and step";
  }
  Problem small_problem() const override { return {48, 4}; }
  Problem medium_problem() const override { return {2048, 50}; }
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "stencil2d needs at least one device");
    UNIMEM_REQUIRE(problem.steps >= 1, "stencil2d needs at least one step");
    UNIMEM_REQUIRE(problem.size >= devices, "stencil2d needs at least one row per device");
    UNIMEM_REQUIRE(problem.size <= 46000, "stencil2d grid too large for 32-bit indices");
  }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"stencil2d.cl", embedded::stencil2d_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    return {{"grid", random_floats(problem.size * problem.size, seed, 0.0f, 1.0f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    std::vector<float> in = inputs.at("grid");
    std::vector<float> out(in.size());
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          const std::int64_t c = i * n + j;
          const std::int64_t north = i > 0 ? c - n : c;
          const std::int64_t south = i < n - 1 ? c + n : c;
          const std::int64_t west = j > 0 ? c - 1 : c;
          const std::int64_t east = j < n - 1 ? c + 1 : c;
          out[c] = kCenter * in[c] + kAdjacent * ((in[north] + in[south]) + (in[west] + in[east]));
        }
      }
      std::swap(in, out);
    }
    return {{"grid", std::move(in)}};
  }

  ManualResult run_manual(const ClPlatformDevices& platform, std::span<const cl_device_id> devices,
                          const Problem& problem, const Arrays& inputs) const override {
    validate(problem, static_cast<unsigned>(devices.size()));
    ManualContext context(platform, devices);
    const KernelSource source = kernel_sources().front();
    const ClProgram program = context.build(source.text, source.options, source.file);
    const ClKernel kernel = context.kernel(program, "stencil2d");
    const auto n = static_cast<cl_int>(problem.size);
    HaloKernelLaunch launch;
    launch.args = [n](unsigned, const ClMem& in, const ClMem& out, const HaloBlock& block) {
      return std::vector<ClArg>{ClArg::mem(in),
                                ClArg::mem(out),
                                ClArg::of(n),
                                ClArg::of(n),
                                ClArg::of(static_cast<cl_int>(block.held.begin)),
                                ClArg::of(kCenter),
                                ClArg::of(kAdjacent)};
    };
    launch.range = [n](const Block& own) {
      return std::pair{std::vector<std::size_t>{0, own.begin},
                       std::vector<std::size_t>{static_cast<std::size_t>(n), own.size()}};
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> grid =
        run_halo_pingpong(context, kernel, inputs.at("grid"), problem.size, problem.size, 1,
                          problem.steps, launch, std::vector<std::vector<ClEvent>>(devices.size()));
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"grid", std::move(grid)}}, context.transfers(), elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t n = problem.size;
    const std::uint64_t row = n * sizeof(float);
    const std::array<BufferId, 2> grids{buffers.at("grid"), scratch(runtime, "grid b", n * n)};
    buffers["grid b"] = grids[1];
    const KernelSource source = kernel_sources().front();
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      SplitLaunch launch;
      launch.kernel = "stencil2d";
      launch.args = {buffer_arg(grids[step % 2]),
                     buffer_arg(grids[1 - step % 2]),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(std::int32_t{0}),
                     LaunchArg::of_scalar(kCenter),
                     LaunchArg::of_scalar(kAdjacent)};
      launch.units = n;
      launch.range = [n](const Block& rows) { return ndrange_2d(n, rows); };
      launch.accesses = [n, row](const Block& rows) {
        const std::uint64_t first = rows.begin == 0 ? 0 : rows.begin - 1;
        return std::map<std::size_t, BufferAccess>{
            {0, {unit_bytes(first, std::min(n, rows.end + 1), row), {}, {}}},
            {1, {{}, unit_bytes(rows.begin, rows.end, row), {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, launch);
    }
    return {{"grid", grids[problem.steps % 2]}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    return {{"stencil2d", [](const HostKernelContext& c) {
               const float* in = c.buffer<const float>(0);
               float* out = c.buffer<float>(1);
               const auto rows = c.scalar<std::int32_t>(2);
               const auto cols = c.scalar<std::int32_t>(3);
               const auto row_base = c.scalar<std::int32_t>(4);
               const auto w_center = c.scalar<float>(5);
               const auto w_adjacent = c.scalar<float>(6);
               for_each_item(c, [&](int j, int i, int) {
                 const int cell = (i - row_base) * cols + j;
                 const int north = (i > 0) ? cell - cols : cell;
                 const int south = (i < rows - 1) ? cell + cols : cell;
                 const int west = (j > 0) ? cell - 1 : cell;
                 const int east = (j < cols - 1) ? cell + 1 : cell;
                 out[cell] = w_center * in[cell] +
                             w_adjacent * ((in[north] + in[south]) + (in[west] + in[east]));
               });
             }}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    return halo_pingpong_bytes(problem.size, problem.size * sizeof(float), devices, 1,
                               problem.steps);
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    BufferPlan plan;
    const std::uint64_t bytes = problem.size * problem.size * sizeof(float);
    plan.buffer_bytes = {{"a", bytes}, {"b", bytes}};
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      const std::string in = step % 2 == 0 ? "a" : "b";
      const std::string out = step % 2 == 0 ? "b" : "a";
      plan.launches.push_back({"stencil2d", {in}, {out}});
    }
    plan.host_reads = {problem.steps % 2 == 0 ? "a" : "b"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_stencil2d() { return std::make_unique<Stencil2d>(); }

}  // namespace unimem::examples
