// Launch cost of the unimem OpenCL platform: 20,000 launches of a small kernel through the
// platform's device against the same launches on one POCL device directly, in one process (the
// ICD loader sees both platforms; unimem's runs on the vendor underneath). Both sides pay the
// same: a context, a queue, one buffer written once, the kernel built and launched once before
// timing; each benchmark iteration enqueues 20,000 launches and waits for them (clFinish).
//
//   unimem_bench_platform_launch [--benchmark_...]
// BM_Launches/direct: POCL device 0; BM_Launches/unimem_1: the platform over that device alone
// (UNIMEM_DEVICES=0: the bookkeeping cost). With UNIMEM_BENCH_DEVICES=all in the environment the
// platform runs over every POCL device instead and the arm is BM_Launches/unimem_all: what an
// unmodified program gets from `unimem run`. Its launches use less than RuntimeOptions::
// min_split_bytes, so they run whole on one device; UNIMEM_MIN_SPLIT_BYTES=0 as well forces them
// to split (the loader reads its vendors once per process, hence a run per setting). Every unimem
// arm reports how many of its launches ran split and unsplit (the platform's run report), and
// how many took the lean repeat (`lean`: RuntimeCore::launch_again).
// UNIMEM_BENCH_LAUNCH_TIMES=1 adds a line per iteration on stderr (report_launch_times): where a
// slow round's time went (README, "The unimem platform": its slow rounds are the calling thread
// preempted by POCL's workers waking).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "device/opencl/opencl_discovery.hpp"

namespace {

namespace fs = std::filesystem;

bool all_devices() {
  const char* v = std::getenv("UNIMEM_BENCH_DEVICES");
  return v != nullptr && std::string(v) == "all";
}

constexpr int kLaunches = 20000;
constexpr std::size_t kItems = 256;

// Before the first OpenCL call: a vendor directory with the system's vendors and unimem.
const bool kEnvironment = [] {
  (void)unimem::opencl::use_private_vendor_directory(
      "unimem-bench-",
      unimem::opencl::other_vendor_libraries(unimem::opencl::IcdSearch::from_environment()),
      UNIMEM_PLATFORM_LIBRARY_BUILD);
  if (!all_devices()) ::setenv("UNIMEM_DEVICES", "0", 1);  // the platform over POCL's device 0
  return true;
}();

// The platform's launch counts so far (unimem_platform_launch_counts, exported by the platform
// library the loader has loaded): {launches, split launches}; nullopt when it cannot be asked.
std::optional<std::pair<std::uint64_t, std::uint64_t>> platform_launch_counts() {
  void* library = ::dlopen(UNIMEM_PLATFORM_LIBRARY_BUILD, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return std::nullopt;
  using Counts = void (*)(std::uint64_t*, std::uint64_t*);
  auto counts = reinterpret_cast<Counts>(::dlsym(library, "unimem_platform_launch_counts"));
  std::optional<std::pair<std::uint64_t, std::uint64_t>> out;
  if (counts != nullptr) {
    std::uint64_t launches = 0, split = 0;
    counts(&launches, &split);
    out.emplace(launches, split);
  }
  ::dlclose(library);
  return out;
}

// The platform's launches that took the lean repeat so far (unimem_platform_lean_launches); 0
// when it cannot be asked.
std::uint64_t platform_lean_launches() {
  void* library = ::dlopen(UNIMEM_PLATFORM_LIBRARY_BUILD, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return 0;
  using Count = std::uint64_t (*)();
  auto count = reinterpret_cast<Count>(::dlsym(library, "unimem_platform_lean_launches"));
  const std::uint64_t n = count != nullptr ? count() : 0;
  ::dlclose(library);
  return n;
}

// The voluntary and involuntary context switches of the process's threads other than the
// calling one (POCL's workers, the runtime's), from /proc/self/task/*/status.
std::pair<long, long> other_threads_switches() {
  long voluntary = 0, involuntary = 0;
  const std::string self = std::to_string(::gettid());
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    if (task.path().filename().string() == self) continue;
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("voluntary_ctxt_switches:")) voluntary += std::stol(line.substr(24));
      if (line.starts_with("nonvoluntary_ctxt_switches:")) {
        involuntary += std::stol(line.substr(27));
      }
    }
  }
  return {voluntary, involuntary};
}

// One line on stderr: the enqueue calls' time in total and at percentiles, how many took over
// 5 and 20 us and in how many runs of consecutive slow calls, the final clFinish, and the context
// switches {voluntary, involuntary} of the calling thread and of the others during the calls.
void report_launch_times(std::vector<std::int64_t> times, std::int64_t calls_ns,
                         std::int64_t finish_ns, std::pair<long, long> caller,
                         std::pair<long, long> others) {
  std::size_t slow = 0, very_slow = 0, slow_runs = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (times[i] > 5000) {
      ++slow;
      if (i == 0 || times[i - 1] <= 5000) ++slow_runs;
    }
    if (times[i] > 20000) ++very_slow;
  }
  std::sort(times.begin(), times.end());
  const auto at = [&](double q) {
    return times.empty()
               ? 0
               : times[static_cast<std::size_t>(q * static_cast<double>(times.size() - 1))];
  };
  std::fprintf(
      stderr,
      "launch times: calls %.2f ms (%.2f us/launch), p50 %lld ns, p90 %lld ns, p99 %lld "
      "ns, max %lld ns, >5us %zu in %zu runs, >20us %zu; clFinish %.2f ms; context switches "
      "during the calls: calling thread %ld voluntary, %ld involuntary; other threads %ld "
      "voluntary, %ld involuntary\n",
      static_cast<double>(calls_ns) / 1e6,
      static_cast<double>(calls_ns) / 1e3 / static_cast<double>(times.size()),
      static_cast<long long>(at(0.5)), static_cast<long long>(at(0.9)),
      static_cast<long long>(at(0.99)), static_cast<long long>(at(1.0)), slow, slow_runs, very_slow,
      static_cast<double>(finish_ns) / 1e6, caller.first, caller.second, others.first,
      others.second);
}

void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(e));
}

cl_platform_id find_platform(bool unimem) {
  cl_uint n = 0;
  check(clGetPlatformIDs(0, nullptr, &n), "clGetPlatformIDs");
  std::vector<cl_platform_id> all(n);
  check(clGetPlatformIDs(n, all.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id p : all) {
    char name[128] = {};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if ((std::string(name) == "unimem") == unimem) return p;
  }
  throw std::runtime_error(unimem ? "no unimem platform" : "no vendor platform");
}

// How a launch is enqueued. plain: as a program would (no event, in-order queue). The others run
// directly on POCL too and show what POCL itself costs for what unimem's driver needs underneath:
// event: every launch returns an event (released at once); chained: an out-of-order queue where
// every launch waits for the previous one's event and is flushed; driver: chained on a profiling
// queue, asking the previous event's status before each launch, as unimem's opencl driver does
// under the platform (whose devices profile).
enum class Direct { plain, event, chained, driver };

// One side of the comparison: a context on one device of the platform, a queue, the kernel
// built, its buffer written once and one launch run before any timing.
struct LaunchSetup {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem buffer = nullptr;
  std::vector<int> host = std::vector<int>(kItems, 0);
  std::size_t global = kItems, local = 64;

  LaunchSetup(bool unimem, cl_command_queue_properties properties) {
    cl_platform_id platform = find_platform(unimem);
    cl_device_id device = nullptr;
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
    cl_int e = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
    check(e, "clCreateContext");
    queue = clCreateCommandQueue(context, device, properties, &e);
    check(e, "clCreateCommandQueue");
    const char* source =
        "__kernel void add_one(__global int* data) { data[get_global_id(0)] += 1; }";
    program = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
    check(e, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, "", nullptr, nullptr), "clBuildProgram");
    kernel = clCreateKernel(program, "add_one", &e);
    check(e, "clCreateKernel");
    buffer = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, kItems * sizeof(int), host.data(), &e);
    check(e, "clCreateBuffer");
    check(clSetKernelArg(kernel, 0, sizeof buffer, &buffer), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    check(clFinish(queue), "clFinish");
  }
  LaunchSetup(const LaunchSetup&) = delete;
  LaunchSetup& operator=(const LaunchSetup&) = delete;
  ~LaunchSetup() {
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  // Whether every element was incremented `launched` times.
  [[nodiscard]] bool holds(std::uint64_t launched) {
    check(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, kItems * sizeof(int), host.data(), 0,
                              nullptr, nullptr),
          "clEnqueueReadBuffer");
    return std::all_of(host.begin(), host.end(),
                       [&](int v) { return v == static_cast<int>(launched); });
  }
};

void BM_Launches(benchmark::State& state, bool unimem, Direct direct = Direct::plain) {
  (void)kEnvironment;
  cl_command_queue_properties properties = 0;
  if (direct == Direct::chained) properties = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
  if (direct == Direct::driver) {
    properties = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE;
  }
  LaunchSetup setup(unimem, properties);
  cl_command_queue queue = setup.queue;
  cl_kernel kernel = setup.kernel;
  const std::size_t global = setup.global, local = setup.local;
  std::uint64_t launched = 1;
  cl_event last = nullptr;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> counts_before;
  const std::uint64_t lean_before = unimem ? platform_lean_launches() : 0;
  if (unimem) {
    counts_before = platform_launch_counts();
    if (!counts_before) {
      state.SkipWithError("cannot ask the platform how its launches ran");
      return;
    }
  }
  // UNIMEM_BENCH_LAUNCH_TIMES=1: each launch's enqueue call timed, and per iteration a line on
  // stderr with their percentiles, the slow ones and the final clFinish (where the slow rounds'
  // time goes: in the calls, or waiting for the device at the end).
  const bool launch_times = std::getenv("UNIMEM_BENCH_LAUNCH_TIMES") != nullptr;
  std::vector<std::int64_t> times;
  if (launch_times) times.reserve(kLaunches);
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  for (auto _ : state) {
    const std::int64_t round_start = launch_times ? now_ns() : 0;
    rusage before{};
    std::pair<long, long> others_before;
    if (launch_times) {
      ::getrusage(RUSAGE_THREAD, &before);
      others_before = other_threads_switches();
    }
    times.clear();
    for (int i = 0; i < kLaunches; ++i) {
      const std::int64_t call_start = launch_times ? now_ns() : 0;
      switch (direct) {
        case Direct::plain:
          clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
          break;
        case Direct::event: {
          cl_event done = nullptr;
          clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, &done);
          clReleaseEvent(done);
          break;
        }
        case Direct::chained:
        case Direct::driver: {
          if (direct == Direct::driver && last != nullptr) {
            cl_int status = CL_COMPLETE;
            clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           nullptr);
          }
          cl_event done = nullptr;
          clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, last ? 1 : 0,
                                 last ? &last : nullptr, &done);
          clFlush(queue);
          if (last != nullptr) clReleaseEvent(last);
          last = done;
          break;
        }
      }
      if (launch_times) times.push_back(now_ns() - call_start);
    }
    const std::int64_t finish_start = launch_times ? now_ns() : 0;
    rusage after{};
    std::pair<long, long> others_after;
    if (launch_times) {
      ::getrusage(RUSAGE_THREAD, &after);
      others_after = other_threads_switches();
    }
    check(clFinish(queue), "clFinish");
    launched += kLaunches;
    if (launch_times) {
      report_launch_times(
          times, finish_start - round_start, now_ns() - finish_start,
          {after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw},
          {others_after.first - others_before.first, others_after.second - others_before.second});
    }
  }
  if (last != nullptr) clReleaseEvent(last);
  if (!setup.holds(launched)) state.SkipWithError("wrong result: the launches did not all run");
  if (unimem) {
    const auto after = platform_launch_counts();
    const std::uint64_t all = after->first - counts_before->first;
    const std::uint64_t split = after->second - counts_before->second;
    state.counters["split"] = static_cast<double>(split);
    state.counters["unsplit"] = static_cast<double>(all - split);
    state.counters["lean"] = static_cast<double>(platform_lean_launches() - lean_before);
  }
  state.counters["launches"] = static_cast<double>(launched - 1);
  state.counters["us_per_launch"] = benchmark::Counter(
      static_cast<double>(launched - 1), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Rounds of POCL directly and of the platform in turns, in one process, each on its own context
// (both set up before the first round): a pair of rounds sees the same machine, which the
// separate arms above (every repetition of one arm, then every repetition of the next) do not.
// Each round is 20,000 plain launches and clFinish; the order within a pair alternates. Counters:
// the medians per launch of each side over the pairs, `ratio` = their quotient, and per pair
// the platform's round over POCL's (`pair_ratio_median`, `pair_ratio_max`, `pairs_over_1_10`).
void BM_Interleaved(benchmark::State& state) {
  (void)kEnvironment;
  LaunchSetup direct(false, 0), platform(true, 0);
  const bool launch_times = std::getenv("UNIMEM_BENCH_LAUNCH_TIMES") != nullptr;
  const auto round = [](LaunchSetup& s) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) {
      clEnqueueNDRangeKernel(s.queue, s.kernel, 1, nullptr, &s.global, &s.local, 0, nullptr,
                             nullptr);
    }
    check(clFinish(s.queue), "clFinish");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e6 /
           kLaunches;
  };
  std::vector<double> direct_us, platform_us, pair_ratio;
  std::uint64_t launched = 1;
  const std::uint64_t lean_before = platform_lean_launches();
  for (auto _ : state) {
    const bool platform_first = pair_ratio.size() % 2 == 1;
    double d = 0, u = 0;
    if (platform_first) u = round(platform);
    d = round(direct);
    if (!platform_first) u = round(platform);
    launched += kLaunches;
    state.SetIterationTime((d + u) * kLaunches / 1e6);
    direct_us.push_back(d);
    platform_us.push_back(u);
    pair_ratio.push_back(u / d);
    if (launch_times) {
      std::fprintf(stderr, "pair %zu: POCL directly %.3f us/launch, the platform %.3f (%.2f)\n",
                   pair_ratio.size(), d, u, u / d);
    }
  }
  if (!direct.holds(launched) || !platform.holds(launched)) {
    state.SkipWithError("wrong result: the launches did not all run");
    return;
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  const double md = median(direct_us), mu = median(platform_us);
  state.counters["direct_us"] = md;
  state.counters["unimem_us"] = mu;
  state.counters["ratio"] = mu / md;
  state.counters["pair_ratio_median"] = median(pair_ratio);
  state.counters["pair_ratio_max"] = *std::max_element(pair_ratio.begin(), pair_ratio.end());
  state.counters["pairs_over_1_10"] = static_cast<double>(
      std::count_if(pair_ratio.begin(), pair_ratio.end(), [](double r) { return r > 1.10; }));
  state.counters["pairs"] = static_cast<double>(pair_ratio.size());
  state.counters["lean"] = static_cast<double>(platform_lean_launches() - lean_before);
}

BENCHMARK_CAPTURE(BM_Launches, direct, false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Launches, direct_event, false, Direct::event)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Launches, direct_chained, false, Direct::chained)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Launches, direct_driver, false, Direct::driver)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark(all_devices() ? "BM_Launches/unimem_all" : "BM_Launches/unimem_1",
                               [](benchmark::State& state) { BM_Launches(state, true); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::RegisterBenchmark(
      all_devices() ? "BM_Interleaved/unimem_all" : "BM_Interleaved/unimem_1", BM_Interleaved)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime()
      ->Iterations(20);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
