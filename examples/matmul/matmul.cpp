// matmul: dense single-precision matrix product (the seeds' matmul / sgemm). Split by rows of C:
// each device reads its rows of A and all of B, and writes its rows of C.

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace embedded {
extern const char matmul_cl[];
}  // namespace embedded

namespace {

class Matmul final : public Workload {
 public:
  std::string name() const override { return "matmul"; }
  std::string description() const override {
    return "C = A x B for N x N matrices, one launch; rows of A and C split over devices, B "
           "broadcast";
  }
  Problem small_problem() const override { return {48, 1}; }
  Problem medium_problem() const override { return {512, 1}; }
  SizeRules size_rules() const override { return {"rows", 1, 46000, false}; }

  std::vector<KernelSource> kernel_sources() const override {
    return {{"matmul.cl", embedded::matmul_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t cells = problem.size * problem.size;
    return {{"a", random_floats(cells, seed, -1.0f, 1.0f)},
            {"b", random_floats(cells, seed + 1, -1.0f, 1.0f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const std::uint64_t n = problem.size;
    const std::vector<float>& a = inputs.at("a");
    const std::vector<float>& b = inputs.at("b");
    std::vector<float> c(n * n);
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::uint64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (std::uint64_t k = 0; k < n; ++k) sum = sum + a[i * n + k] * b[k * n + j];
        c[i * n + j] = sum;
      }
    }
    return {{"c", std::move(c)}};
  }

  Arrays manual_version(ManualContext& context, const ClProgram& program, const Problem& problem,
                        const Arrays& inputs) const override {
    const unsigned count = context.device_count();
    const ClKernel kernel = context.kernel(program, "matmul");
    const std::uint64_t n = problem.size;
    const std::uint64_t row_bytes = n * sizeof(float);
    const std::vector<float>& a = inputs.at("a");
    const std::vector<float>& b = inputs.at("b");
    std::vector<float> c(n * n);

    const std::vector<Block> rows = split_evenly(n, count);
    std::vector<ClMem> keep;
    for (unsigned d = 0; d < count; ++d) {
      const Block& r = rows[d];
      ClMem a_block = context.allocate(d, r.size() * row_bytes, "rows of a");
      ClMem b_whole = context.allocate(d, n * row_bytes, "b");
      ClMem c_block = context.allocate(d, r.size() * row_bytes, "rows of c");
      const ClEvent uploads[] = {
          context.write(d, a_block, 0, a.data() + r.begin * n, r.size() * row_bytes),
          context.write(d, b_whole, 0, b.data(), n * row_bytes)};
      const ClEvent done[] = {context.launch(
          d, kernel,
          {ClArg::mem(a_block), ClArg::mem(b_whole), ClArg::mem(c_block),
           ClArg::of(static_cast<cl_int>(n)), ClArg::of(static_cast<cl_int>(r.begin))},
          {0, r.begin}, {n, r.size()}, uploads)};
      (void)context.read(d, c_block, 0, c.data() + r.begin * n, r.size() * row_bytes, done);
      keep.insert(keep.end(), {a_block, b_whole, c_block});
    }
    context.finish_all();
    return {{"c", std::move(c)}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    const std::uint64_t matrix = problem.size * problem.size * sizeof(float);
    // Each device reads its rows of A (A once in total) and all of B; C comes back once.
    return {matrix + devices * matrix, matrix, 0};
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    const std::uint64_t matrix = problem.size * problem.size * sizeof(float);
    BufferPlan plan;
    plan.buffer_bytes = {{"a", matrix}, {"b", matrix}, {"c", matrix}};
    plan.launches = {{"matmul", {"a", "b"}, {"c"}}};
    plan.host_reads = {"c"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_matmul() { return std::make_unique<Matmul>(); }

}  // namespace unimem::examples
