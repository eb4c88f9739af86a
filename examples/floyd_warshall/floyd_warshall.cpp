// floyd_warshall: PolyBench's floyd-warshall with the loop over k on the host, one launch per k.
// Split by rows: at iteration k every device needs row k, which the device owning it wrote at
// iteration k - 1 (a peer copy to each other device; from the host at k = 0).

#include "examples/manual_opencl.hpp"
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
  SizeRules size_rules() const override { return {"rows", 1, 46000, false}; }

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

  Arrays manual_version(ManualContext& context, const ClProgram& program, const Problem& problem,
                        const Arrays& inputs) const override {
    const unsigned count = context.device_count();
    const ClKernel kernel = context.kernel(program, "floyd_warshall");
    const std::uint64_t n = problem.size;
    const std::uint64_t row_bytes = n * sizeof(float);
    const std::vector<Block> own = split_evenly(n, count);
    const std::vector<float>& dist_in = inputs.at("dist");
    std::vector<float> dist(n * n);

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
    return {{"dist", std::move(dist)}};
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
