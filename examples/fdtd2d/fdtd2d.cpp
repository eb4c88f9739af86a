// fdtd2d: PolyBench fdtd-2d (2-D finite-difference time domain, Yee's scheme) as three kernels per
// time step, the form the seeds evaluate. Split by rows; per step and boundary between blocks the
// lower block needs the hz row above it (for ey) and the upper block the ey row below it (for hz,
// ny - 1 columns), each written by the neighbour in the step before / the same step.

#include <algorithm>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace embedded {
extern const char fdtd2d_cl[];
}  // namespace embedded

namespace {

class Fdtd2d final : public Workload {
 public:
  std::string name() const override { return "fdtd2d"; }
  std::string description() const override {
    return "PolyBench fdtd-2d on N x N fields, STEPS steps of three kernels; rows split over "
           "devices, one hz row and one ey row exchanged per boundary and step";
  }
  Problem small_problem() const override { return {40, 4}; }
  Problem medium_problem() const override { return {2048, 50}; }
  SizeRules size_rules() const override { return {"rows", 2, 46000, true}; }

  std::vector<KernelSource> kernel_sources() const override {
    return {{"fdtd2d.cl", embedded::fdtd2d_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t cells = problem.size * problem.size;
    return {{"ex", random_floats(cells, seed, -1.0f, 1.0f)},
            {"ey", random_floats(cells, seed + 1, -1.0f, 1.0f)},
            {"hz", random_floats(cells, seed + 2, -1.0f, 1.0f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const std::uint64_t nx = problem.size;
    const std::uint64_t ny = problem.size;
    std::vector<float> ex = inputs.at("ex");
    std::vector<float> ey = inputs.at("ey");
    std::vector<float> hz = inputs.at("hz");
    for (std::uint32_t t = 0; t < problem.steps; ++t) {
      const auto fict = static_cast<float>(t);
      for (std::uint64_t j = 0; j < ny; ++j) ey[j] = fict;
      for (std::uint64_t i = 1; i < nx; ++i) {
        for (std::uint64_t j = 0; j < ny; ++j) {
          ey[i * ny + j] = ey[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
        }
      }
      for (std::uint64_t i = 0; i < nx; ++i) {
        for (std::uint64_t j = 1; j < ny; ++j) {
          ex[i * ny + j] = ex[i * ny + j] - 0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]);
        }
      }
      for (std::uint64_t i = 0; i + 1 < nx; ++i) {
        for (std::uint64_t j = 0; j + 1 < ny; ++j) {
          const std::uint64_t c = i * ny + j;
          hz[c] = hz[c] - 0.7f * (((ex[c + 1] - ex[c]) + ey[c + ny]) - ey[c]);
        }
      }
    }
    return {{"ex", std::move(ex)}, {"ey", std::move(ey)}, {"hz", std::move(hz)}};
  }

  Arrays manual_version(ManualContext& context, const ClProgram& program, const Problem& problem,
                        const Arrays& inputs) const override {
    const unsigned count = context.device_count();
    const ClKernel kernel_ey = context.kernel(program, "fdtd_ey");
    const ClKernel kernel_ex = context.kernel(program, "fdtd_ex");
    const ClKernel kernel_hz = context.kernel(program, "fdtd_hz");
    const std::uint64_t nx = problem.size;
    const std::uint64_t ny = problem.size;
    const std::uint64_t row_bytes = ny * sizeof(float);
    const std::vector<Block> own = split_evenly(nx, count);
    // Rows each device holds: ex its own; ey its own plus the row below (read by fdtd_hz); hz its
    // own plus the row above (read by fdtd_ey).
    std::vector<Block> ey_rows;
    std::vector<Block> hz_rows;
    for (const Block& b : own) {
      ey_rows.push_back({b.begin, std::min(nx, b.end + 1)});
      hz_rows.push_back({b.begin == 0 ? 0 : b.begin - 1, b.end});
    }
    std::vector<float> ex(nx * ny);
    std::vector<float> ey(nx * ny);
    std::vector<float> hz(nx * ny);
    std::vector<ClMem> ex_mem;
    std::vector<ClMem> ey_mem;
    std::vector<ClMem> hz_mem;
    std::vector<std::vector<ClEvent>> ready(count);
    for (unsigned d = 0; d < count; ++d) {
      const Block& b = own[d];
      ex_mem.push_back(context.allocate(d, b.size() * row_bytes, "rows of ex"));
      ey_mem.push_back(context.allocate(d, ey_rows[d].size() * row_bytes, "rows of ey"));
      hz_mem.push_back(context.allocate(d, hz_rows[d].size() * row_bytes, "rows of hz"));
      ready[d].push_back(context.write(d, ex_mem[d], 0, inputs.at("ex").data() + b.begin * ny,
                                       b.size() * row_bytes));
      // ey row 0 is overwritten with fict before anything reads it: it is never uploaded.
      const std::uint64_t first_ey = std::max<std::uint64_t>(b.begin, 1);
      if (first_ey < b.end) {
        ready[d].push_back(context.write(d, ey_mem[d], (first_ey - b.begin) * row_bytes,
                                         inputs.at("ey").data() + first_ey * ny,
                                         (b.end - first_ey) * row_bytes));
      }
      ready[d].push_back(context.write(d, hz_mem[d], 0,
                                       inputs.at("hz").data() + hz_rows[d].begin * ny,
                                       hz_rows[d].size() * row_bytes));
    }
    auto rows_arg = [](const Block& b) { return ClArg::of(static_cast<cl_int>(b.begin)); };
    const auto nx_arg = ClArg::of(static_cast<cl_int>(nx));
    const auto ny_arg = ClArg::of(static_cast<cl_int>(ny));
    std::vector<ClEvent> ey_done(count);
    std::vector<ClEvent> hz_done(count);
    for (std::uint32_t t = 0; t < problem.steps; ++t) {
      // hz row above each block, written by the neighbour's fdtd_hz of the previous step.
      if (t > 0) {
        for (unsigned d = 1; d < count; ++d) {
          const ClEvent wait[] = {hz_done[d - 1]};
          ready[d - 1].push_back(context.copy(d, hz_mem[d - 1],
                                              (hz_rows[d].begin - hz_rows[d - 1].begin) * row_bytes,
                                              hz_mem[d], 0, row_bytes, wait));
        }
      }
      for (unsigned d = 0; d < count; ++d) {
        ey_done[d] = context.launch(
            d, kernel_ey,
            {ClArg::mem(ey_mem[d]), ClArg::mem(hz_mem[d]), ny_arg, rows_arg(ey_rows[d]),
             rows_arg(hz_rows[d]), ClArg::of(static_cast<float>(t))},
            {0, own[d].begin}, {ny, own[d].size()}, ready[d]);
        ready[d].clear();
        (void)context.launch(d, kernel_ex,
                             {ClArg::mem(ex_mem[d]), ClArg::mem(hz_mem[d]), ny_arg,
                              rows_arg(own[d]), rows_arg(hz_rows[d])},
                             {0, own[d].begin}, {ny, own[d].size()});
      }
      // ey row below each block (columns 0 .. ny-2: fdtd_hz reads no more), written by the
      // neighbour's fdtd_ey of this step. The last block has no row below.
      std::vector<std::vector<ClEvent>> before_hz(count);
      for (unsigned d = 0; d + 1 < count; ++d) {
        const ClEvent wait[] = {ey_done[d + 1]};
        const ClEvent copied =
            context.copy(d, ey_mem[d + 1], 0, ey_mem[d], own[d].size() * row_bytes,
                         (ny - 1) * sizeof(float), wait);
        ready[d + 1].push_back(copied);  // its next fdtd_ey overwrites the source
      }
      for (unsigned d = 0; d < count; ++d) {
        hz_done[d] = context.launch(
            d, kernel_hz,
            {ClArg::mem(hz_mem[d]), ClArg::mem(ex_mem[d]), ClArg::mem(ey_mem[d]), nx_arg, ny_arg,
             rows_arg(hz_rows[d]), rows_arg(own[d]), rows_arg(ey_rows[d])},
            {0, own[d].begin}, {ny, own[d].size()}, ready[d]);
        ready[d].clear();
      }
    }
    for (unsigned d = 0; d < count; ++d) {
      const Block& b = own[d];
      (void)context.read(d, ex_mem[d], 0, ex.data() + b.begin * ny, b.size() * row_bytes);
      (void)context.read(d, ey_mem[d], 0, ey.data() + b.begin * ny, b.size() * row_bytes);
      (void)context.read(d, hz_mem[d], (b.begin - hz_rows[d].begin) * row_bytes,
                         hz.data() + b.begin * ny, b.size() * row_bytes);
    }
    context.finish_all();
    return {{"ex", std::move(ex)}, {"ey", std::move(ey)}, {"hz", std::move(hz)}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    const std::uint64_t nx = problem.size;
    const std::uint64_t ny = problem.size;
    const std::uint64_t row = ny * sizeof(float);
    const std::uint64_t boundaries = devices - 1;
    const std::uint64_t steps = problem.steps;
    TransferBytes bytes;
    // Uploads: ex whole, ey but row 0 (fict overwrites it unread), hz whole plus the row above
    // every block but the first.
    bytes.h2d = nx * row + (nx - 1) * row + nx * row + boundaries * row;
    // Per boundary: the ey row below (ny - 1 floats) every step; the hz row above every step but
    // the first (the initial one came with the upload).
    bytes.d2d = boundaries * (steps * (ny - 1) * sizeof(float) + (steps - 1) * row);
    bytes.d2h = 3 * nx * row;
    return bytes;
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    const std::uint64_t field = problem.size * problem.size * sizeof(float);
    BufferPlan plan;
    plan.buffer_bytes = {{"ex", field}, {"ey", field}, {"hz", field}};
    for (std::uint32_t t = 0; t < problem.steps; ++t) {
      plan.launches.push_back({"fdtd_ey", {"ey", "hz"}, {"ey"}});
      plan.launches.push_back({"fdtd_ex", {"ex", "hz"}, {"ex"}});
      plan.launches.push_back({"fdtd_hz", {"hz", "ex", "ey"}, {"hz"}});
    }
    plan.host_reads = {"ex", "ey", "hz"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_fdtd2d() { return std::make_unique<Fdtd2d>(); }

}  // namespace unimem::examples
