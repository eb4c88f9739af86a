// floyd_warshall: PolyBench's floyd-warshall with the loop over k on the host, one launch per k.
// Split by rows: at iteration k every device needs row k, which the device owning it wrote at
// iteration k - 1 (a peer copy to each other device; from the host at k = 0).

#include <chrono>

#include "common/check.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/unimem_version.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace embedded {
extern const char floyd_warshall_cl[];
}  // namespace embedded

namespace {

constexpr float kNoEdge = 1.0e9f;  // exactly representable; 2 * kNoEdge stays finite

class FloydWarshall final : public Workload {
 public:
  std::string name() const override { return "floyd-warshall"; }
  std::string description() const override {
    return "Floyd-Warshall shortest paths on N nodes, N launches (host loop over k); rows split "
           "over devices, row k sent to every other device per launch";
  }
  Problem small_problem() const override { return {40, 1}; }
  Problem medium_problem() const override { return {1024, 1}; }
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "floyd-warshall needs at least one device");
    UNIMEM_REQUIRE(problem.size >= devices, "floyd-warshall needs at least one row per device");
    UNIMEM_REQUIRE(problem.size <= 46000, "floyd-warshall matrix too large for 32-bit indices");
  }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"floyd_warshall.cl", embedded::floyd_warshall_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    // A random directed graph: an edge with probability 1/3, integer weights 1..100 (sums stay
    // exact in float), 0 on the diagonal.
    const std::uint64_t n = problem.size;
    const std::vector<float> coin = random_floats(n * n, seed, 0.0f, 3.0f);
    const std::vector<float> weight = random_floats(n * n, seed + 1, 1.0f, 101.0f);
    std::vector<float> dist(n * n);
    for (std::uint64_t c = 0; c < n * n; ++c) {
      dist[c] = coin[c] < 1.0f ? static_cast<float>(static_cast<int>(weight[c])) : kNoEdge;
    }
    for (std::uint64_t i = 0; i < n; ++i) dist[i * n + i] = 0.0f;
    return {{"dist", std::move(dist)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const std::uint64_t n = problem.size;
    std::vector<float> dist = inputs.at("dist");
    for (std::uint64_t k = 0; k < n; ++k) {
      for (std::uint64_t i = 0; i < n; ++i) {
        for (std::uint64_t j = 0; j < n; ++j) {
          const float direct = dist[i * n + j];
          const float via_k = dist[i * n + k] + dist[k * n + j];
          dist[i * n + j] = via_k < direct ? via_k : direct;
        }
      }
    }
    return {{"dist", std::move(dist)}};
  }

  ManualResult run_manual(const ClPlatformDevices& platform, std::span<const cl_device_id> devices,
                          const Problem& problem, const Arrays& inputs) const override {
    const auto count = static_cast<unsigned>(devices.size());
    validate(problem, count);
    ManualContext context(platform, devices);
    const KernelSource source = kernel_sources().front();
    const ClProgram program = context.build(source.text, source.options, source.file);
    const ClKernel kernel = context.kernel(program, "floyd_warshall");
    const std::uint64_t n = problem.size;
    const std::uint64_t row_bytes = n * sizeof(float);
    const std::vector<Block> own = split_evenly(n, count);
    const std::vector<float>& dist_in = inputs.at("dist");
    std::vector<float> dist(n * n);

    const auto start = std::chrono::steady_clock::now();
    // Per device: its rows, and a one-row buffer for row k when another device owns it.
    std::vector<ClMem> rows;
    std::vector<ClMem> krows;
    std::vector<std::vector<ClEvent>> ready(count);
    for (unsigned d = 0; d < count; ++d) {
      rows.push_back(context.allocate(d, own[d].size() * row_bytes, "rows of dist"));
      krows.push_back(context.allocate(d, row_bytes, "row k"));
      ready[d].push_back(context.write(d, rows[d], 0, dist_in.data() + own[d].begin * n,
                                       own[d].size() * row_bytes));
    }
    std::vector<ClEvent> kernels(count);
    unsigned owner = 0;
    for (std::uint64_t k = 0; k < n; ++k) {
      while (k >= own[owner].end) ++owner;
      const std::uint64_t k_offset = (k - own[owner].begin) * n;  // in floats, in owner's rows
      std::vector<ClEvent> row_k_sent;
      for (unsigned d = 0; d < count; ++d) {
        if (d == owner) continue;
        if (k == 0) {
          (void)context.write(d, krows[d], 0, dist_in.data(), row_bytes);  // nobody wrote it yet
        } else {
          const ClEvent wait[] = {kernels[owner]};
          row_k_sent.push_back(
              context.copy(d, rows[owner], k_offset * sizeof(float), krows[d], 0, row_bytes, wait));
        }
      }
      // The owner's kernel rewrites row k (with the same values): it waits for the copies out.
      ready[owner].insert(ready[owner].end(), row_k_sent.begin(), row_k_sent.end());
      for (unsigned d = 0; d < count; ++d) {
        const bool holds_k = d == owner;
        kernels[d] =
            context.launch(d, kernel,
                           {ClArg::mem(rows[d]), ClArg::mem(holds_k ? rows[d] : krows[d]),
                            ClArg::of(static_cast<cl_int>(n)), ClArg::of(static_cast<cl_int>(k)),
                            ClArg::of(static_cast<cl_int>(own[d].begin)),
                            ClArg::of(static_cast<cl_int>(holds_k ? k_offset : 0))},
                           {0, own[d].begin}, {n, own[d].size()}, ready[d]);
        ready[d].clear();
      }
    }
    for (unsigned d = 0; d < count; ++d) {
      (void)context.read(d, rows[d], 0, dist.data() + own[d].begin * n, own[d].size() * row_bytes);
    }
    context.finish_all();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"dist", std::move(dist)}}, context.transfers(), elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t n = problem.size;
    const std::uint64_t row = n * sizeof(float);
    const BufferId dist = buffers.at("dist");
    const KernelSource source = kernel_sources().front();
    for (std::uint64_t k = 0; k < n; ++k) {
      // Row k is read through the second argument: the same buffer, at offset k * n.
      SplitLaunch launch;
      launch.kernel = "floyd_warshall";
      launch.args = {buffer_arg(dist),
                     buffer_arg(dist),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(k)),
                     LaunchArg::of_scalar(std::int32_t{0}),
                     LaunchArg::of_scalar(static_cast<std::int32_t>(k * n))};
      launch.units = n;
      launch.range = [n](const Block& rows) { return ndrange_2d(n, rows); };
      launch.accesses = [k, row](const Block& rows) {
        const IntervalSet own = unit_bytes(rows.begin, rows.end, row);
        return std::map<std::size_t, BufferAccess>{{0, {own, own, {}}},
                                                   {1, {unit_bytes(k, k + 1, row), {}, {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, launch);
    }
    return {{"dist", dist}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    return {{"floyd_warshall", [](const HostKernelContext& c) {
               float* dist = c.buffer<float>(0);
               const float* krow = c.buffer<const float>(1);
               const auto n = c.scalar<std::int32_t>(2);
               const auto k = c.scalar<std::int32_t>(3);
               const auto row_base = c.scalar<std::int32_t>(4);
               const auto krow_offset = c.scalar<std::int32_t>(5);
               for_each_item(c, [&](int j, int i, int) {
                 const int row = (i - row_base) * n;
                 const float direct = dist[row + j];
                 const float via_k = dist[row + k] + krow[krow_offset + j];
                 dist[row + j] = (via_k < direct) ? via_k : direct;
               });
             }}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    const std::uint64_t n = problem.size;
    const std::uint64_t row = n * sizeof(float);
    // Rows uploaded once, plus row 0 (unwritten yet) to every non-owner; row k for k >= 1 was
    // written by its owner at iteration k - 1 and goes to the devices - 1 others.
    return {n * row + (devices - 1) * row, n * row, (n - 1) * (devices - 1) * row};
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    BufferPlan plan;
    plan.buffer_bytes = {{"dist", problem.size * problem.size * sizeof(float)}};
    for (std::uint64_t k = 0; k < problem.size; ++k) {
      plan.launches.push_back({"floyd_warshall", {"dist"}, {"dist"}});
    }
    plan.host_reads = {"dist"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_floyd_warshall() { return std::make_unique<FloydWarshall>(); }

}  // namespace unimem::examples
