// fdtd2d: PolyBench fdtd-2d (2-D finite-difference time domain, Yee's scheme) as three kernels per
// time step, the form the seeds evaluate. Split by rows; per step and boundary between blocks the
// lower block needs the hz row above it (for ey) and the upper block the ey row below it (for hz,
// ny - 1 columns), each written by the neighbour in the step before / the same step.

#include <algorithm>
#include <chrono>

#include "common/check.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/unimem_version.hpp"
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
  void validate(const Problem& problem, unsigned devices) const override {
    UNIMEM_REQUIRE(devices >= 1, "fdtd2d needs at least one device");
    UNIMEM_REQUIRE(problem.steps >= 1, "fdtd2d needs at least one step");
    UNIMEM_REQUIRE(problem.size >= 2, "fdtd2d needs at least 2 x 2 fields");
    UNIMEM_REQUIRE(problem.size >= devices, "fdtd2d needs at least one row per device");
    UNIMEM_REQUIRE(problem.size <= 46000, "fdtd2d fields too large for 32-bit indices");
  }
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

  ManualResult run_manual(const ClPlatformDevices& platform, std::span<const cl_device_id> devices,
                          const Problem& problem, const Arrays& inputs) const override {
    const auto count = static_cast<unsigned>(devices.size());
    validate(problem, count);
    ManualContext context(platform, devices);
    const KernelSource source = kernel_sources().front();
    const ClProgram program = context.build(source.text, source.options, source.file);
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

    const auto start = std::chrono::steady_clock::now();
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
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {{{"ex", std::move(ex)}, {"ey", std::move(ey)}, {"hz", std::move(hz)}},
            context.transfers(),
            elapsed.count()};
  }

  std::map<std::string, BufferId> submit_unimem(
      Runtime& runtime, KernelProvider& kernels, std::span<const std::size_t> devices,
      const Problem& problem, std::map<std::string, BufferId>& buffers) const override {
    const std::uint64_t nx = problem.size;
    const std::uint64_t ny = problem.size;
    const std::uint64_t row = ny * sizeof(float);
    const BufferId ex = buffers.at("ex");
    const BufferId ey = buffers.at("ey");
    const BufferId hz = buffers.at("hz");
    const KernelSource source = kernel_sources().front();
    auto i32 = [](std::uint64_t v) { return LaunchArg::of_scalar(static_cast<std::int32_t>(v)); };
    for (std::uint32_t t = 0; t < problem.steps; ++t) {
      SplitLaunch ey_step;
      ey_step.kernel = "fdtd_ey";
      ey_step.args = {buffer_arg(ey), buffer_arg(hz), i32(ny),
                      i32(0),         i32(0),         LaunchArg::of_scalar(static_cast<float>(t))};
      ey_step.units = nx;
      ey_step.range = [ny](const Block& rows) { return ndrange_2d(ny, rows); };
      ey_step.accesses = [row](const Block& rows) {
        // Row 0 is set to fict unread; row i >= 1 reads ey row i and hz rows i - 1 and i.
        const std::uint64_t first = std::max<std::uint64_t>(rows.begin, 1);
        return std::map<std::size_t, BufferAccess>{
            {0, {unit_bytes(first, rows.end, row), unit_bytes(rows.begin, rows.end, row), {}}},
            {1, {unit_bytes(first - 1, first < rows.end ? rows.end : first - 1, row), {}, {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, ey_step);

      SplitLaunch ex_step;
      ex_step.kernel = "fdtd_ex";
      ex_step.args = {buffer_arg(ex), buffer_arg(hz), i32(ny), i32(0), i32(0)};
      ex_step.units = nx;
      ex_step.range = [ny](const Block& rows) { return ndrange_2d(ny, rows); };
      ex_step.accesses = [row](const Block& rows) {
        const IntervalSet own = unit_bytes(rows.begin, rows.end, row);
        return std::map<std::size_t, BufferAccess>{{0, {own, own, {}}}, {1, {own, {}, {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, ex_step);

      SplitLaunch hz_step;
      hz_step.kernel = "fdtd_hz";
      hz_step.args = {buffer_arg(hz), buffer_arg(ex), buffer_arg(ey), i32(nx),
                      i32(ny),        i32(0),         i32(0),         i32(0)};
      hz_step.units = nx;
      hz_step.range = [ny](const Block& rows) { return ndrange_2d(ny, rows); };
      hz_step.accesses = [nx, ny, row](const Block& rows) {
        const IntervalSet own = unit_bytes(rows.begin, rows.end, row);
        // ey rows i and i + 1 for i < nx - 1, columns 0 .. ny - 2: the own rows (over-approximated
        // to whole rows: this device wrote them) and the first ny - 1 floats of the row below.
        IntervalSet ey_reads = own;
        if (rows.end < nx) {
          ey_reads.insert(Interval(rows.end * row, rows.end * row + (ny - 1) * sizeof(float)));
        }
        return std::map<std::size_t, BufferAccess>{
            {0, {own, own, {}}}, {1, {own, {}, {}}}, {2, {ey_reads, {}, {}}}};
      };
      (void)launch_split(runtime, kernels, source, devices, hz_step);
    }
    return {{"ex", ex}, {"ey", ey}, {"hz", hz}};
  }
  std::map<std::string, HostKernel::Body> host_kernels() const override {
    HostKernelBodies bodies;
    bodies["fdtd_ey"] = [](const HostKernelContext& c) {
      float* ey = c.buffer<float>(0);
      const float* hz = c.buffer<const float>(1);
      const auto ny = c.scalar<std::int32_t>(2);
      const auto ey_base = c.scalar<std::int32_t>(3);
      const auto hz_base = c.scalar<std::int32_t>(4);
      const auto fict = c.scalar<float>(5);
      for_each_item(c, [&](int j, int i, int) {
        const int e = (i - ey_base) * ny + j;
        const int h = (i - hz_base) * ny + j;
        ey[e] = (i == 0) ? fict : ey[e] - 0.5f * (hz[h] - hz[h - ny]);
      });
    };
    bodies["fdtd_ex"] = [](const HostKernelContext& c) {
      float* ex = c.buffer<float>(0);
      const float* hz = c.buffer<const float>(1);
      const auto ny = c.scalar<std::int32_t>(2);
      const auto ex_base = c.scalar<std::int32_t>(3);
      const auto hz_base = c.scalar<std::int32_t>(4);
      for_each_item(c, [&](int j, int i, int) {
        const int x = (i - ex_base) * ny + j;
        const int h = (i - hz_base) * ny + j;
        const float old = ex[x];
        ex[x] = (j > 0) ? old - 0.5f * (hz[h] - hz[h - 1]) : old;
      });
    };
    bodies["fdtd_hz"] = [](const HostKernelContext& c) {
      float* hz = c.buffer<float>(0);
      const float* ex = c.buffer<const float>(1);
      const float* ey = c.buffer<const float>(2);
      const auto nx = c.scalar<std::int32_t>(3);
      const auto ny = c.scalar<std::int32_t>(4);
      const auto hz_base = c.scalar<std::int32_t>(5);
      const auto ex_base = c.scalar<std::int32_t>(6);
      const auto ey_base = c.scalar<std::int32_t>(7);
      for_each_item(c, [&](int j, int i, int) {
        const int h = (i - hz_base) * ny + j;
        const int x = (i - ex_base) * ny + j;
        const int e = (i - ey_base) * ny + j;
        const float old = hz[h];
        hz[h] = (i < nx - 1 && j < ny - 1)
                    ? old - 0.7f * (((ex[x + 1] - ex[x]) + ey[e + ny]) - ey[e])
                    : old;
      });
    };
    return bodies;
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
