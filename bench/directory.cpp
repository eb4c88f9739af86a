// Costs of the coherence bookkeeping: directory updates and queries as the number of
// segments grows, and the bookkeeping of one launch over 1, 4 and 16 host devices, next to a raw
// device launch without any bookkeeping (Matz et al.'s gamma, seed 002_aa84334820ddd8b5.txt).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "api/runtime_core.hpp"
#include "coherence/directory.hpp"
#include "device/host/host_platform.hpp"

namespace {

using namespace unimem;

constexpr Agent kAgents = 5;

// A directory of about `segments` segments: every other 8-byte block modified on some device.
Directory fragmented(std::uint64_t segments) {
  const std::uint64_t size = segments * 8;
  Directory dir(size, kAgents);
  for (std::uint64_t i = 0; i < segments / 2; ++i) {
    dir.apply_device_write(static_cast<Agent>(1 + i % 3), IntervalSet{{i * 16, i * 16 + 8}});
  }
  return dir;
}

std::vector<std::uint64_t> random_offsets(std::uint64_t size, std::size_t n) {
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> out(n);
  for (auto& o : out) o = rng() % (size - 8);
  return out;
}

void BM_DirectoryUpdate(benchmark::State& state) {
  const auto segments = static_cast<std::uint64_t>(state.range(0));
  Directory dir = fragmented(segments);
  const auto offsets = random_offsets(segments * 8, 4096);
  const PeerPolicy peer = [](Agent, Agent) { return true; };
  std::size_t i = 0;
  for (auto _ : state) {
    const std::uint64_t o = offsets[i++ % offsets.size()];
    // A read miss then a write by another device: split, merge, and a transfer list.
    auto t = dir.apply_device_read(4, IntervalSet{{o, o + 8}}, peer);
    benchmark::DoNotOptimize(t);
    dir.apply_device_write(static_cast<Agent>(1 + i % 3), IntervalSet{{o, o + 8}});
  }
  state.counters["segments"] = static_cast<double>(dir.segment_count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2);
}
BENCHMARK(BM_DirectoryUpdate)->RangeMultiplier(8)->Range(8, 1 << 18);

void BM_DirectoryQuery(benchmark::State& state) {
  const auto segments = static_cast<std::uint64_t>(state.range(0));
  const Directory dir = fragmented(segments);
  const auto offsets = random_offsets(segments * 8, 4096);
  std::size_t i = 0;
  for (auto _ : state) {
    const std::uint64_t o = offsets[i++ % offsets.size()];
    benchmark::DoNotOptimize(dir.missing_on(4, IntervalSet{{o, o + 64}}));
  }
  state.counters["segments"] = static_cast<double>(dir.segment_count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_DirectoryQuery)->RangeMultiplier(8)->Range(8, 1 << 18);

std::shared_ptr<HostKernel> noop_kernel() {
  return std::make_shared<HostKernel>("noop", [](const HostKernelContext&) {});
}

// One launch split over all devices, stencil-like: each partition writes its slice and reads it
// plus a 64-byte halo on each side, so each launch moves 2 halos per inner boundary by peer copy.
void BM_LaunchSplitOverDevices(benchmark::State& state) {
  const auto devices = static_cast<std::size_t>(state.range(0));
  constexpr std::uint64_t kSlice = 1 << 16;
  constexpr std::uint64_t kHalo = 64;
  Runtime rt(make_host_devices(devices), RuntimeOptions{UpdateStrategy::lazy});
  const std::uint64_t size = kSlice * devices;
  BufferId b = rt.create_buffer(size, "grid");
  auto k = noop_kernel();
  std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {})};
  std::vector<LaunchPartition> parts(devices);
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t lo = d * kSlice, hi = lo + kSlice;
    parts[d].device = d;
    parts[d].kernel = k;
    parts[d].accesses[0] = {IntervalSet{{lo >= kHalo ? lo - kHalo : 0, std::min(size, hi + kHalo)}},
                            IntervalSet{{lo, hi}},
                            {}};
  }
  rt.core().launch_partitioned(args, parts);  // warm-up: mirrors allocated, slices fetched
  rt.finish();
  std::size_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt.core().launch_partitioned(args, parts));
    if (++n % 64 == 0) rt.finish();  // keep the queues short; counted in the time
  }
  rt.finish();
  state.counters["devices"] = static_cast<double>(devices);
  state.counters["d2d_per_launch"] = static_cast<double>(rt.stats().device_to_device.copies) /
                                     static_cast<double>(state.iterations() + 1);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_LaunchSplitOverDevices)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();

// A single-device launch (all reads hit) in a runtime of 1, 4 or 16 devices.
void BM_LaunchOneDeviceBookkeeping(benchmark::State& state) {
  const auto devices = static_cast<std::size_t>(state.range(0));
  Runtime rt(make_host_devices(devices), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(1 << 16, "b");
  Launch l;
  l.kernel = noop_kernel();
  l.args = {LaunchArg::of_buffer(b, IntervalSet{{0, 4096}}, IntervalSet{{0, 4096}})};
  rt.core().launch(l);
  rt.finish();
  std::size_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rt.core().launch(l));
    if (++n % 64 == 0) rt.finish();
  }
  rt.finish();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_LaunchOneDeviceBookkeeping)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();

// The same no-op kernel launched on the device directly: no directory, no hazard tracking.
void BM_RawDeviceLaunch(benchmark::State& state) {
  auto reg = make_host_devices(1);
  Device& dev = reg.at(0);
  DeviceAllocation a = dev.allocate(1 << 16);
  auto k = noop_kernel();
  std::vector<KernelArg> args{KernelArg::of_buffer(a)};
  Event last;
  std::size_t n = 0;
  for (auto _ : state) {
    last = dev.launch(*k, NDRange{}, args, std::span(&last, 1));
    if (++n % 64 == 0) dev.finish();
  }
  dev.finish();
  dev.free(a);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_RawDeviceLaunch)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
