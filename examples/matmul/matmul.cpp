// matmul: dense single-precision matrix product (the seeds' matmul / sgemm). Split by rows of C:
// each device reads its rows of A and all of B, and writes its rows of C.

#include <chrono>

#include "common/check.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/unimem_version.hpp"
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
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "matmul needs at least one device");
    UNIMEM_REQUIRE(problem.size >= devices, "matmul needs at least one row per device");
    UNIMEM_REQUIRE(problem.size <= 46000, "matmul matrices too large for 32-bit indices");
  }
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

  ManualResult run_manual(const ClPlatformDevices& platform, std::span<const cl_device_id> devices,
                          const Problem& problem, const Arrays& inputs) const override {
    const auto count = static_cast<unsigned>(devices.size());
    validate(problem, count);
    ManualContext context(platform, devices);
    const KernelSource source = kernel_sources().front();
    const ClProgram program = context.build(source.text, source.options, source.file);
    const ClKernel kernel = context.kernel(program, "matmul");
    const std::uint64_t n = problem.size;
    const std::uint64_t row_bytes = n * sizeof(float);
    const std::vector<float>& a = inputs.at("a");
    const std::vector<float>& b = inputs.at("b");
    std::vector<float> c(n * n);

    const auto start = std::chrono::steady_clock::now();
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
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"c", std::move(c)}}, context.transfers(), elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t n = problem.size;
    const std::uint64_t row = n * sizeof(float);
    const BufferId c = scratch(runtime, "c", n * n);
    SplitLaunch launch;
    launch.kernel = "matmul";
    launch.args = {buffer_arg(buffers.at("a")), buffer_arg(buffers.at("b")), buffer_arg(c),
                   LaunchArg::of_scalar(static_cast<std::int32_t>(n)),
                   LaunchArg::of_scalar(std::int32_t{0})};
    launch.units = n;
    launch.range = [n](const Block& rows) { return ndrange_2d(n, rows); };
    launch.accesses = [n, row](const Block& rows) {
      return std::map<std::size_t, BufferAccess>{
          {0, {unit_bytes(rows.begin, rows.end, row), {}, {}}},
          {1, {unit_bytes(0, n, row), {}, {}}},
          {2, {{}, unit_bytes(rows.begin, rows.end, row), {}}}};
    };
    (void)launch_split(runtime, kernels, kernel_sources().front(), devices, launch);
    return {{"c", c}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    return {{"matmul", [](const HostKernelContext& ctx) {
               const float* a = ctx.buffer<const float>(0);
               const float* b = ctx.buffer<const float>(1);
               float* c = ctx.buffer<float>(2);
               const auto n = ctx.scalar<std::int32_t>(3);
               const auto row_base = ctx.scalar<std::int32_t>(4);
               for_each_item(ctx, [&](int j, int i, int) {
                 const int row = (i - row_base) * n;
                 float sum = 0.0f;
                 for (int k = 0; k < n; ++k) sum = sum + a[row + k] * b[k * n + j];
                 c[row + j] = sum;
               });
             }}};
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
