// Kernel access analysis costs: analysis time per corpus program next to
// POCL's clBuildProgram of the same source, and range evaluation per launch partition.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS
#include "analysis/program_analyzer.hpp"
#include "analysis/range_generator.hpp"
#include "analysis/write_injectivity.hpp"
#if defined(UNIMEM_HAVE_OPENCL) && UNIMEM_HAVE_OPENCL
#include <CL/cl.h>
#endif

namespace {

using namespace unimem;

struct CorpusProgram {
  const char* file;
  const char* options;
};

// The (file, build options) pairs of tests/analysis/corpus/corpus.json.
const std::vector<CorpusProgram>& programs() {
  static const std::vector<CorpusProgram> p = {{"conditional.cl", ""},
                                               {"constant.cl", ""},
                                               {"defines.cl", "-D WIDTH=20 -DHEIGHT=4"},
                                               {"floyd.cl", ""},
                                               {"helpers.cl", ""},
                                               {"indirect.cl", ""},
                                               {"matmul.cl", "-DTILE=4"},
                                               {"nbody.cl", ""},
                                               {"reduce.cl", ""},
                                               {"stencil1d.cl", "-DRADIUS=2"},
                                               {"stencil2d.cl", ""},
                                               {"stencil3d.cl", ""},
                                               {"transpose.cl", "-DTDIM=8"},
                                               {"triangular.cl", ""},
                                               {"vector.cl", ""},
                                               {"clamped.cl", ""}};
  return p;
}

std::string corpus_source(const char* file) {
  const auto path =
      std::filesystem::path(__FILE__).parent_path() / ".." / "tests" / "analysis" / "corpus" / file;
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void BM_AnalyzeProgram(benchmark::State& state) {
  const CorpusProgram& p = programs().at(static_cast<std::size_t>(state.range(0)));
  const std::string source = corpus_source(p.file);
  std::size_t kernels = 0;
  for (auto _ : state) {
    const ProgramAccessInfo info = analyze_program(source, p.options);
    kernels = info.kernels.size();
    benchmark::DoNotOptimize(kernels);
  }
  state.SetLabel(std::string(p.file) + " (" + std::to_string(kernels) + " kernels)");
  state.counters["kernels"] = static_cast<double>(kernels);
}
BENCHMARK(BM_AnalyzeProgram)->DenseRange(0, 15)->Unit(benchmark::kMillisecond);

#if defined(UNIMEM_HAVE_OPENCL) && UNIMEM_HAVE_OPENCL
// clBuildProgram on the first OpenCL device with POCL's kernel cache off, so every iteration
// compiles (DESIGN.md pitfall: a warm ~/.cache/pocl would hide the compile).
void BM_OpenCLBuildProgram(benchmark::State& state) {
  setenv("POCL_KERNEL_CACHE", "0", 1);
  const CorpusProgram& p = programs().at(static_cast<std::size_t>(state.range(0)));
  const std::string source = corpus_source(p.file);
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    state.SkipWithError("no OpenCL device");
    return;
  }
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  for (auto _ : state) {
    const char* text = source.c_str();
    cl_program prog = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
    err = clBuildProgram(prog, 1, &device, p.options, nullptr, nullptr);
    if (err != CL_SUCCESS) state.SkipWithError("clBuildProgram failed");
    clReleaseProgram(prog);
  }
  state.SetLabel(p.file);
  clReleaseContext(ctx);
}
BENCHMARK(BM_OpenCLBuildProgram)->DenseRange(0, 15)->Unit(benchmark::kMillisecond);
#endif

struct LaunchCase {
  const char* file;
  const char* options;
  const char* kernel;
  NDRange range;
  std::vector<std::pair<std::uint32_t, std::int64_t>> scalars;
};

NDRange make_range(std::uint32_t dims, std::array<std::uint64_t, 3> g,
                   std::array<std::uint64_t, 3> l) {
  NDRange r;
  r.dims = dims;
  r.global = g;
  r.local = l;
  return r;
}

const std::vector<LaunchCase>& launches() {
  static const std::vector<LaunchCase> c = {
      {"vector.cl", "", "vector_add", make_range(1, {1 << 24, 1, 1}, {256, 1, 1}), {{3, 1 << 24}}},
      {"stencil2d.cl",
       "",
       "jacobi2d_5pt",
       make_range(2, {4096, 4096, 1}, {16, 16, 1}),
       {{2, 4096}, {3, 4096}}},
      {"matmul.cl", "", "matmul_naive", make_range(2, {2048, 2048, 1}, {16, 16, 1}), {{3, 2048}}},
      {"triangular.cl", "", "upper_row_sum", make_range(1, {4096, 1, 1}, {64, 1, 1}), {{2, 4096}}},
  };
  return c;
}

// One partition: the upper half of the work-groups along the slowest dimension (two devices).
void BM_LaunchRanges(benchmark::State& state) {
  const LaunchCase& c = launches().at(static_cast<std::size_t>(state.range(0)));
  const ProgramAccessInfo info = analyze_program(corpus_source(c.file), c.options);
  const KernelAccessInfo* k = info.find_kernel(c.kernel);
  if (k == nullptr) {
    state.SkipWithError("kernel not found");
    return;
  }
  const RangeGenerator gen(*k);
  LaunchArguments args;
  for (const auto& [i, v] : c.scalars) args.set_scalar(i, v);
  GroupBox half = GroupBox::all(c.range);
  const std::size_t d = c.range.dims - 1;
  half.begin[d] = half.end[d] / 2;
  std::size_t intervals = 0;
  for (auto _ : state) {
    const LaunchRanges r = gen.ranges(c.range, half, args);
    intervals = 0;
    for (const ArgumentRanges& a : r.args)
      intervals += a.read.interval_count() + a.write.interval_count();
    benchmark::DoNotOptimize(intervals);
  }
  state.SetLabel(std::string(c.kernel) + " (" + std::to_string(intervals) + " intervals)");
}
BENCHMARK(BM_LaunchRanges)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// Every kernel of every corpus program at a large size, upper half of the work-groups along the
// slowest dimension (a 2-device partition). The launch is synthetic: the dimension count is the
// highest one the patterns use, 2^24 / 4096^2 / 256^3 work-items, every integer scalar set to the
// per-dimension size (n, w, h, pitch, k, ...), every buffer 2^40 bytes.
struct CorpusKernelLaunch {
  std::shared_ptr<const ProgramAccessInfo> program;
  const KernelAccessInfo* kernel = nullptr;
  NDRange range;
  LaunchArguments args;
};

CorpusKernelLaunch corpus_launch(std::shared_ptr<const ProgramAccessInfo> program,
                                 const KernelAccessInfo& k) {
  CorpusKernelLaunch c;
  c.program = std::move(program);
  c.kernel = &k;
  const std::uint32_t dims = used_dimensions(k, /*writes_only=*/false);
  const std::uint64_t size = dims == 1 ? (1U << 24) : dims == 2 ? 4096 : 256;
  const std::uint64_t local = dims == 1 ? 256 : dims == 2 ? 16 : 8;
  c.range.dims = dims;
  for (std::uint32_t d = 0; d < 3; ++d) {
    c.range.global[d] = d < dims ? size : 1;
    c.range.local[d] = d < dims ? local : 1;
  }
  for (const ArgumentAccess& a : k.args) {
    if (a.is_buffer()) {
      c.args.set_buffer_size(a.index, std::uint64_t{1} << 40);
    } else if (a.kind == ArgKind::Scalar) {
      c.args.set_scalar(a.index, static_cast<std::int64_t>(size));
    }
  }
  return c;
}

void BM_CorpusLaunchRanges(benchmark::State& state, const CorpusKernelLaunch& c) {
  const RangeGenerator gen(*c.kernel);
  GroupBox half = GroupBox::all(c.range);
  const std::size_t d = c.range.dims - 1;
  half.begin[d] = half.end[d] / 2;
  std::size_t intervals = 0;
  try {
    for (auto _ : state) {
      const LaunchRanges r = gen.ranges(c.range, half, c.args);
      intervals = 0;
      for (const ArgumentRanges& a : r.args)
        intervals += a.read.interval_count() + a.write.interval_count();
      benchmark::DoNotOptimize(intervals);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["intervals"] = static_cast<double>(intervals);
  state.counters["dims"] = static_cast<double>(c.range.dims);
}

void register_corpus_launches() {
  static std::vector<CorpusKernelLaunch> launches;
  for (const CorpusProgram& p : programs()) {
    auto info = std::make_shared<const ProgramAccessInfo>(
        analyze_program(corpus_source(p.file), p.options));
    for (const KernelAccessInfo& k : info->kernels) launches.push_back(corpus_launch(info, k));
  }
  for (const CorpusKernelLaunch& c : launches) {
    benchmark::RegisterBenchmark(("BM_CorpusLaunchRanges/" + c.kernel->name).c_str(),
                                 [&c](benchmark::State& st) { BM_CorpusLaunchRanges(st, c); })
        ->Unit(benchmark::kMicrosecond);
  }
}

// Analysis-time cost of the parametric injectivity check (part of analyze_program).
void BM_ParametricInjectivity(benchmark::State& state) {
  const LaunchCase& c = launches().at(static_cast<std::size_t>(state.range(0)));
  const ProgramAccessInfo info = analyze_program(corpus_source(c.file), c.options);
  const KernelAccessInfo* k = info.find_kernel(c.kernel);
  std::string reason;
  WriteInjectivity w = WriteInjectivity::Parametric;
  for (auto _ : state) {
    w = parametric_write_injectivity(*k, &reason);
    benchmark::DoNotOptimize(w);
  }
  state.SetLabel(std::string(c.kernel) + ": " + to_string(w));
}
BENCHMARK(BM_ParametricInjectivity)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

// The launch-time injectivity answer for a fresh generator (the first launch with these
// parameters): free when the analysis decided it, one concrete isl check otherwise.
void BM_WriteInjectivityUncached(benchmark::State& state) {
  const LaunchCase& c = launches().at(static_cast<std::size_t>(state.range(0)));
  const ProgramAccessInfo info = analyze_program(corpus_source(c.file), c.options);
  const KernelAccessInfo* k = info.find_kernel(c.kernel);
  LaunchArguments args;
  for (const auto& [i, v] : c.scalars) args.set_scalar(i, v);
  for (auto _ : state) {
    const RangeGenerator gen(*k);  // fresh cache
    benchmark::DoNotOptimize(gen.splittable(c.range, args));
  }
  state.SetLabel(c.kernel);
}
BENCHMARK(BM_WriteInjectivityUncached)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace

#endif

int main(int argc, char** argv) {
#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS
  register_corpus_launches();
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
