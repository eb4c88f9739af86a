// heat3d: the 7-point heat equation stencil of Pochoir (Tang et al.) that the seeds evaluate
// (seeds/README.md), with clamped borders. Split by z planes, one halo plane per neighbour.

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
extern const char heat3d_cl[];
}  // namespace embedded

namespace {

constexpr float kCenter = 0.4f;
constexpr float kAdjacent = 0.1f;

class Heat3d final : public Workload {
 public:
  std::string name() const override { return "heat3d"; }
  std::string description() const override {
    return "7-point heat stencil on an N x N x N grid with clamped borders, STEPS steps; z planes "
           "split over devices, one halo plane exchanged per neighbour and step";
  }
  Problem small_problem() const override { return {14, 3}; }
  Problem medium_problem() const override { return {160, 30}; }
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "heat3d needs at least one device");
    UNIMEM_REQUIRE(problem.steps >= 1, "heat3d needs at least one step");
    UNIMEM_REQUIRE(problem.size >= devices, "heat3d needs at least one plane per device");
    UNIMEM_REQUIRE(problem.size <= 1280, "heat3d grid too large for 32-bit indices");
  }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"heat3d.cl", embedded::heat3d_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t n = problem.size;
    return {{"grid", random_floats(n * n * n, seed, 0.0f, 1.0f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    const std::int64_t plane = n * n;
    std::vector<float> in = inputs.at("grid");
    std::vector<float> out(in.size());
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      for (std::int64_t z = 0; z < n; ++z) {
        for (std::int64_t y = 0; y < n; ++y) {
          for (std::int64_t x = 0; x < n; ++x) {
            const std::int64_t c = z * plane + y * n + x;
            const std::int64_t xm = x > 0 ? c - 1 : c;
            const std::int64_t xp = x < n - 1 ? c + 1 : c;
            const std::int64_t ym = y > 0 ? c - n : c;
            const std::int64_t yp = y < n - 1 ? c + n : c;
            const std::int64_t zm = z > 0 ? c - plane : c;
            const std::int64_t zp = z < n - 1 ? c + plane : c;
            out[c] = kCenter * in[c] +
                     kAdjacent * (((in[xm] + in[xp]) + (in[ym] + in[yp])) + (in[zm] + in[zp]));
          }
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
    const ClKernel kernel = context.kernel(program, "heat3d");
    const auto n = static_cast<cl_int>(problem.size);
    HaloKernelLaunch launch;
    launch.args = [n](unsigned, const ClMem& in, const ClMem& out, const HaloBlock& block) {
      return std::vector<ClArg>{
          ClArg::mem(in),     ClArg::mem(out),
          ClArg::of(n),       ClArg::of(static_cast<cl_int>(block.held.begin)),
          ClArg::of(kCenter), ClArg::of(kAdjacent)};
    };
    launch.range = [n](const Block& own) {
      const auto edge = static_cast<std::size_t>(n);
      return std::pair{std::vector<std::size_t>{0, 0, own.begin},
                       std::vector<std::size_t>{edge, edge, own.size()}};
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> grid = run_halo_pingpong(
        context, kernel, inputs.at("grid"), problem.size, problem.size * problem.size, 1,
        problem.steps, launch, std::vector<std::vector<ClEvent>>(devices.size()));
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"grid", std::move(grid)}}, context.transfers(), elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t n = problem.size;
    const std::uint64_t plane = n * n * sizeof(float);
    const std::array<BufferId, 2> grids{buffers.at("grid"), scratch(runtime, "grid b", n * n * n)};
    buffers["grid b"] = grids[1];
    const KernelSource source = kernel_sources().front();
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      SplitLaunch launch;
      launch.kernel = "heat3d";
      launch.args = {buffer_arg(grids[step % 2]),
                     buffer_arg(grids[1 - step % 2]),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(std::int32_t{0}),
                     LaunchArg::of_scalar(kCenter),
                     LaunchArg::of_scalar(kAdjacent)};
      launch.units = n;
      launch.range = [n](const Block& planes) { return ndrange_3d(n, n, planes); };
      launch.accesses = [n, plane](const Block& planes) {
        const std::uint64_t first = planes.begin == 0 ? 0 : planes.begin - 1;
        return std::map<std::size_t, BufferAccess>{
            {0, {unit_bytes(first, std::min(n, planes.end + 1), plane), {}, {}}},
            {1, {{}, unit_bytes(planes.begin, planes.end, plane), {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, launch);
    }
    return {{"grid", grids[problem.steps % 2]}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    return {{"heat3d", [](const HostKernelContext& c) {
               const float* in = c.buffer<const float>(0);
               float* out = c.buffer<float>(1);
               const auto n = c.scalar<std::int32_t>(2);
               const auto plane_base = c.scalar<std::int32_t>(3);
               const auto c_center = c.scalar<float>(4);
               const auto c_adjacent = c.scalar<float>(5);
               for_each_item(c, [&](int x, int y, int z) {
                 const int plane = n * n;
                 const int cell = (z - plane_base) * plane + y * n + x;
                 const int xm = (x > 0) ? cell - 1 : cell;
                 const int xp = (x < n - 1) ? cell + 1 : cell;
                 const int ym = (y > 0) ? cell - n : cell;
                 const int yp = (y < n - 1) ? cell + n : cell;
                 const int zm = (z > 0) ? cell - plane : cell;
                 const int zp = (z < n - 1) ? cell + plane : cell;
                 out[cell] =
                     c_center * in[cell] +
                     c_adjacent * (((in[xm] + in[xp]) + (in[ym] + in[yp])) + (in[zm] + in[zp]));
               });
             }}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    return halo_pingpong_bytes(problem.size, problem.size * problem.size * sizeof(float), devices,
                               1, problem.steps);
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    BufferPlan plan;
    const std::uint64_t bytes = problem.size * problem.size * problem.size * sizeof(float);
    plan.buffer_bytes = {{"a", bytes}, {"b", bytes}};
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      const std::string in = step % 2 == 0 ? "a" : "b";
      const std::string out = step % 2 == 0 ? "b" : "a";
      plan.launches.push_back({"heat3d", {in}, {out}});
    }
    plan.host_reads = {problem.steps % 2 == 0 ? "a" : "b"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_heat3d() { return std::make_unique<Heat3d>(); }

}  // namespace unimem::examples
