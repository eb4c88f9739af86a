// The submitting thread's bookkeeping per launch for the access shapes of two workloads, in Matz et
// al.'s beta (directory and trackers, no copies) and gamma (no coherence) configurations (seed
// 002_aa84334820ddd8b5.txt section 9.2): beta minus gamma is what `unimem bench` reports as
// bookkeeping_cpu_fraction. Kernels are no-ops on two host devices, so the time is the runtime's.
//   floyd-warshall: per launch, each half of the rows reads itself and row k, writes itself.
//   floyd-warshall, held: the same launches, but every device's first kernel of a run waits at a
//   gate opened only after all n launches were submitted, so no kernel finishes while the host
//   submits: the trackers keep every unfinished record, as when `unimem bench floyd-warshall`
//   submits its 1024 launches far ahead of the devices.
//   fdtd2d (fdtd_ey then fdtd_hz): each half writes its rows of ey, then reads its rows of ey and
//   the row below, every row without its last column (one interval per row), and writes hz.
//   ping-pong: stencil2d's short launches on one device, two grids in turn, with and without the
//   repeat path for cycles; and the same through Program on the first OpenCL device.
// Each also reports the submitting thread's heap allocations per iteration ("allocations").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "api/runtime_core.hpp"
#include "coherence/hazard_tracker.hpp"
// The tracker before its interval tree, kept as the tests' oracle: measured side by side.
#include "../tests/coherence/linear_hazard_tracker.hpp"
#include "device/host/host_platform.hpp"
#include "support/allocation_counter.hpp"
#if UNIMEM_HAVE_OPENCL
#include <span>

#include <unimem/program.hpp>
#include "device/opencl/opencl_context.hpp"
#endif

namespace {

using namespace unimem;

std::shared_ptr<HostKernel> noop_kernel() {
  return std::make_shared<HostKernel>("noop", [](const HostKernelContext&) {});
}

// The submitting thread's heap allocations per timed iteration since `before` (the pauses'
// finish() included): steadier than the times on a loaded machine.
void report_allocations(benchmark::State& state, std::uint64_t before) {
  state.counters["allocations"] =
      static_cast<double>(bench::thread_allocations() - before) /
      static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
}

MeasurementMode mode_of(const benchmark::State& state) {
  return state.range(0) == 0 ? MeasurementMode::no_transfers : MeasurementMode::no_coherence;
}

// Rows [first, last) of an n x n float matrix, columns [0, columns).
IntervalSet rows(std::uint64_t n, std::uint64_t first, std::uint64_t last, std::uint64_t columns) {
  std::vector<Interval> out;
  if (columns == n) return IntervalSet(Interval{first * n * 4, last * n * 4});
  for (std::uint64_t r = first; r < last; ++r) out.emplace_back(r * n * 4, (r * n + columns) * 4);
  return IntervalSet::from_normalized(std::move(out));
}

// A kernel that blocks its device's worker until open() (so everything queued behind it waits).
class Gate {
 public:
  std::shared_ptr<HostKernel> kernel() {
    return std::make_shared<HostKernel>("gate", [this](const HostKernelContext&) {
      std::unique_lock lock(mutex_);
      opened_.wait(lock, [this] { return open_; });
    });
  }
  void open() {
    const std::lock_guard lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  void close() {
    const std::lock_guard lock(mutex_);
    open_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// held: the first launch of every run of n is gated (see the top of the file).
void floyd_warshall_launches(benchmark::State& state, bool held) {
  constexpr std::uint64_t n = 1024;
  RuntimeOptions options{UpdateStrategy::adaptive};
  options.measurement = mode_of(state);
  Runtime rt(make_host_devices(2), options);
  const BufferId dist = rt.create_buffer(n * n * 4, "dist");
  const auto kernel = noop_kernel();
  const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist, {}, {})};
  // One plan per k, made before timing (the plan cache's part is not bookkeeping).
  std::vector<std::vector<LaunchPartition>> plans(n, std::vector<LaunchPartition>(2));
  for (std::uint64_t k = 0; k < n; ++k) {
    for (std::size_t d = 0; d < 2; ++d) {
      LaunchPartition& p = plans[k][d];
      p.device = d;
      p.kernel = kernel;
      const IntervalSet own = rows(n, d * n / 2, (d + 1) * n / 2, n);
      p.accesses[0] = {own.unite(rows(n, k, k + 1, n)), own, {}};
    }
  }
  Gate gate;
  if (held) {
    // One untimed run first: the devices' allocations grow to every row k read, so no later run
    // relocates one (which would wait for the held kernels still using the old allocation).
    for (const auto& plan : plans) rt.core().launch_partitioned(args, plan);
    rt.finish();
    for (LaunchPartition& p : plans[0]) p.kernel = gate.kernel();
  }
  std::uint64_t k = 0;
  const std::uint64_t allocations_before = bench::thread_allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt.core().launch_partitioned(args, plans[k]));
    if (++k == n) {
      k = 0;
      state.PauseTiming();
      gate.open();
      rt.finish();
      gate.close();
      state.ResumeTiming();
    }
  }
  report_allocations(state, allocations_before);
  gate.open();
  rt.finish();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_FloydWarshallLaunch(benchmark::State& state) { floyd_warshall_launches(state, false); }
BENCHMARK(BM_FloydWarshallLaunch)->ArgName("gamma")->Arg(0)->Arg(1);

void BM_FloydWarshallLaunchHeld(benchmark::State& state) { floyd_warshall_launches(state, true); }
// Whole runs of n launches (a partial run would hold fewer records): 8 runs per configuration.
BENCHMARK(BM_FloydWarshallLaunchHeld)->ArgName("gamma")->Arg(0)->Arg(1)->Iterations(8 * 1024);

// The trackers alone under floyd-warshall's launches: per launch and device, the calls
// submit_kernels makes (deps of the bytes read and written, then record the read of row k when it
// lies in the other half, and the write of the own half), with no event finishing before the end
// of each run of n launches. Time per launch (both devices); Linear: the tracker before its tree.
template <typename Tracker>
void BM_HazardTrackersFloydWarshall(benchmark::State& state) {
  constexpr std::uint64_t n = 1024;
  std::vector<IntervalSet> own(2);
  std::vector<std::vector<IntervalSet>> needed(2, std::vector<IntervalSet>(n));
  std::vector<std::vector<IntervalSet>> read_only(2, std::vector<IntervalSet>(n));
  for (std::size_t d = 0; d < 2; ++d) {
    own[d] = rows(n, d * n / 2, (d + 1) * n / 2, n);
    for (std::uint64_t k = 0; k < n; ++k) {
      needed[d][k] = own[d].unite(rows(n, k, k + 1, n));
      read_only[d][k] = needed[d][k].subtract(own[d]);
    }
  }
  std::vector<Tracker> trackers(2);
  std::vector<std::shared_ptr<ManualEventState>> unfinished;
  unfinished.reserve(2 * n);
  std::uint64_t k = 0;
  std::size_t deps_seen = 0;
  for (auto _ : state) {
    for (std::size_t d = 0; d < 2; ++d) {
      EventList deps;
      trackers[d].deps_for_read(needed[d][k], deps);
      trackers[d].deps_for_write(own[d], deps);
      deps_seen += deps.size();
      auto [e, s] = Event::make_manual();
      unfinished.push_back(std::move(s));
      if (!read_only[d][k].empty()) trackers[d].record_read(read_only[d][k], e);
      trackers[d].record_write(own[d], e);
    }
    if (++k == n) {
      k = 0;
      state.PauseTiming();
      for (auto& s : unfinished) s->complete();
      unfinished.clear();
      state.ResumeTiming();
    }
  }
  for (auto& s : unfinished) s->complete();
  benchmark::DoNotOptimize(deps_seen);
  state.counters["records"] = static_cast<double>(trackers[0].record_count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_HazardTrackersFloydWarshall<HazardTracker>)->Iterations(16 * 1024);
BENCHMARK(BM_HazardTrackersFloydWarshall<test::LinearHazardTracker>)->Iterations(16 * 1024);

void BM_Fdtd2dLaunchPair(benchmark::State& state) {
  constexpr std::uint64_t n = 2048;
  RuntimeOptions options{UpdateStrategy::adaptive};
  options.measurement = mode_of(state);
  Runtime rt(make_host_devices(2), options);
  const BufferId ey = rt.create_buffer(n * n * 4, "ey");
  const BufferId hz = rt.create_buffer(n * n * 4, "hz");
  const auto kernel = noop_kernel();
  const std::vector<LaunchArg> args{LaunchArg::of_buffer(ey, {}, {}),
                                    LaunchArg::of_buffer(hz, {}, {})};
  std::vector<LaunchPartition> write_ey(2);
  std::vector<LaunchPartition> read_ey(2);
  for (std::size_t d = 0; d < 2; ++d) {
    const std::uint64_t first = d * n / 2;
    const std::uint64_t last = (d + 1) * n / 2;
    write_ey[d].device = read_ey[d].device = d;
    write_ey[d].kernel = read_ey[d].kernel = kernel;
    write_ey[d].accesses[0] = {{}, rows(n, first, last, n), {}};
    read_ey[d].accesses[0] = {rows(n, first, std::min(last + 1, n), n - 1), {}, {}};
    read_ey[d].accesses[1] = {rows(n, first, last, n), rows(n, first, last, n), {}};
  }
  std::size_t i = 0;
  const std::uint64_t allocations_before = bench::thread_allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt.core().launch_partitioned(args, write_ey));
    benchmark::DoNotOptimize(rt.core().launch_partitioned(args, read_ey));
    if (++i % 64 == 0) {
      state.PauseTiming();
      rt.finish();
      state.ResumeTiming();
    }
  }
  rt.finish();
  report_allocations(state, allocations_before);  // per pair
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2);
}
BENCHMARK(BM_Fdtd2dLaunchPair)->ArgName("gamma")->Arg(0)->Arg(1);

// stencil2d's 20,000 short launches (`unimem bench stencil2d --size 16`): on one device, two
// 16 x 16 float grids in turn, each launch reading one grid and writing the other (every cell:
// the borders are clamped), each behind its repeat token as Program passes them. cycle 1: the
// repeat path for cycles (RuntimeOptions::repeat_fast_path); 0: without it, every launch checked
// and published.
void BM_PingPongLaunch(benchmark::State& state) {
  constexpr std::uint64_t n = 16;
  RuntimeOptions options{UpdateStrategy::adaptive};
  options.measurement = mode_of(state);
  options.repeat_fast_path = state.range(1) != 0;
  Runtime rt(make_host_devices(1), options);
  const BufferId grids[2] = {rt.create_buffer(n * n * 4, "a"), rt.create_buffer(n * n * 4, "b")};
  const auto kernel = noop_kernel();
  struct Step {
    std::vector<LaunchArg> args;
    std::vector<LaunchPartition> partitions;
  };
  std::shared_ptr<Step> steps[2];
  for (std::size_t s = 0; s < 2; ++s) {
    steps[s] = std::make_shared<Step>();
    steps[s]->args = {LaunchArg::of_buffer(grids[s], {}, {}),
                      LaunchArg::of_buffer(grids[1 - s], {}, {})};
    LaunchPartition p;
    p.device = 0;
    p.kernel = kernel;
    p.accesses[0] = {IntervalSet(Interval{0, n * n * 4}), {}, {}};
    p.accesses[1] = {{}, IntervalSet(Interval{0, n * n * 4}), {}};
    steps[s]->partitions = {p};
  }
  std::size_t i = 0;
  const std::uint64_t allocations_before = bench::thread_allocations();
  for (auto _ : state) {
    const std::shared_ptr<Step>& step = steps[i % 2];
    benchmark::DoNotOptimize(
        rt.core().launch_partitioned(step->args, step->partitions, nullptr, step));
    if (++i % 256 == 0) {
      state.PauseTiming();
      rt.finish();
      state.ResumeTiming();
    }
  }
  rt.finish();
  report_allocations(state, allocations_before);
  state.counters["cycle_repeats"] = static_cast<double>(rt.core().cycle_repeats());
  state.counters["directory_skips"] = static_cast<double>(rt.core().repeats_leaving_directory());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_PingPongLaunch)->ArgNames({"gamma", "cycle"})->ArgsProduct({{0, 1}, {0, 1}});

#if UNIMEM_HAVE_OPENCL
// The same ping-pong through Program on the first OpenCL device (POCL here), with a real 16 x 16
// five-point stencil: what `unimem bench stencil2d --size 16 --steps 20000 --devices 1` times,
// without the rest of the bench. The kernels' events are the driver's (cl_event), so the
// dependency lists cost what they cost there. Counter: events per kernel passed to the driver.
void BM_PingPongLaunchOpenCL(benchmark::State& state) {
  constexpr std::int32_t n = 16;
  RuntimeOptions options{UpdateStrategy::adaptive};
  options.measurement = mode_of(state);
  Runtime rt(opencl::make_opencl_devices("0"), options);
  Program program(rt, R"CLC(
kernel void relax(global const float* in, global float* out, int n) {
  const int x = get_global_id(0), y = get_global_id(1);
  const float up = y > 0 ? in[(y - 1) * n + x] : 0.0f;
  const float down = y < n - 1 ? in[(y + 1) * n + x] : 0.0f;
  const float left = x > 0 ? in[y * n + x - 1] : 0.0f;
  const float right = x < n - 1 ? in[y * n + x + 1] : 0.0f;
  out[y * n + x] = 0.5f * in[y * n + x] + 0.125f * (up + down + left + right);
}
)CLC");
  const std::vector<float> init(n * n, 1.0f);
  const BufferId grids[2] = {rt.create_buffer(n * n * 4, "a"), rt.create_buffer(n * n * 4, "b")};
  rt.write_blocking(grids[0], 0, std::as_bytes(std::span(init)));
  NDRange range;
  range.dims = 2;
  range.global = {n, n, 1};
  std::size_t i = 0;
  const auto launch = [&] {
    program.launch("relax", range,
                   {Arg::buffer(grids[i % 2]), Arg::buffer(grids[1 - i % 2]), Arg::scalar(n)});
    ++i;
  };
  for (int k = 0; k < 512; ++k) launch();  // warm-up: compiled, allocated, cycle found
  rt.finish();
  const RuntimeCore::KernelWaits before = rt.core().kernel_waits();
  for (auto _ : state) {
    launch();
    if (i % 256 == 0) {
      state.PauseTiming();
      rt.finish();
      state.ResumeTiming();
    }
  }
  rt.finish();
  const RuntimeCore::KernelWaits after = rt.core().kernel_waits();
  state.counters["events_per_kernel"] =
      static_cast<double>(after.events - before.events) /
      static_cast<double>(std::max<std::uint64_t>(1, after.kernels - before.kernels));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_PingPongLaunchOpenCL)->ArgName("gamma")->Arg(0)->Arg(1);
#endif

}  // namespace

BENCHMARK_MAIN();
