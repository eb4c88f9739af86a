// The repeat fast path (RuntimeOptions::repeat_fast_path, RuntimeCore::launch_partitioned): a
// launch identical to the runtime's previous operation skips checks and, under the lazy strategy
// (and under adaptive once the buffers' histories say a repeat changes nothing), the directory
// steps. Randomized sequences of repeated and interleaved launches, host writes and host reads on
// POCL devices give the same bytes, the same transfers, the same directory and the same adaptive
// history counts with the fast path on and off, and equal a flat-memory oracle.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem {
namespace {

constexpr const char* kSource = R"CLC(
kernel void add_k(global int* data, int k) {
  const int i = get_global_id(0);
  data[i] += k;
}
kernel void accumulate(global int* sum, global const int* in) {
  const int i = get_global_id(0);
  sum[i] += in[i] + (i > 0 ? in[i - 1] : 0);
}
)CLC";

constexpr std::size_t kItems = 1024;
constexpr std::uint64_t kBytes = kItems * sizeof(int);

// Everything a run observed: the bytes of every host read, then the final contents, the
// transfers and the directories.
struct Observed {
  std::vector<std::vector<int>> reads;
  TransferStats stats;
  std::vector<std::vector<IntervalMap<AgentMask>::Segment>> directories;
  std::vector<int> history_counts;  // per buffer x kernel x writers (adaptive history)
  std::uint64_t repeats = 0;
  std::uint64_t directory_skips = 0;

  bool operator==(const Observed& o) const {
    return reads == o.reads && stats.to_json() == o.stats.to_json() &&
           directories == o.directories && history_counts == o.history_counts;
  }
};

// One random program, run on a fresh runtime over `devices`, and on a flat memory (`oracle`).
Observed run(std::uint32_t seed, UpdateStrategy strategy, bool fast_path, DeviceRegistry devices,
             std::vector<std::vector<int>>* oracle_reads) {
  RuntimeOptions options{strategy};
  options.repeat_fast_path = fast_path;
  Runtime rt(std::move(devices), options);
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  std::vector<BufferId> buffers{rt.create_buffer(kBytes, "a"), rt.create_buffer(kBytes, "b")};
  std::vector<std::vector<int>> flat(2, std::vector<int>(kItems, 0));
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t i = 0; i < kItems; ++i) flat[b][i] = static_cast<int>(i * (b + 1));
    rt.write_blocking(buffers[b], 0, std::as_bytes(std::span(flat[b])));
  }
  std::mt19937 random(seed);
  Observed seen;
  int op = 0;
  for (int step = 0; step < 120; ++step) {
    // Half the time the previous operation again: the fast path's case.
    if (step == 0 || random() % 2 == 0) op = static_cast<int>(random() % 7);
    const std::size_t b = op % 2;  // the buffer most operations use
    switch (op) {
      case 0:
      case 1: {  // add_k over the whole buffer, split over every device
        NDRange range;
        range.global[0] = kItems;
        range.local[0] = 64;
        program.launch("add_k", range, {Arg::buffer(buffers[b]), Arg::scalar(3)});
        for (int& v : flat[b]) v += 3;
        break;
      }
      case 2: {  // accumulate: b += a shifted; every partition reads a's bytes of its neighbour
        NDRange range;
        range.global[0] = kItems;
        range.local[0] = 32;
        program.launch("accumulate", range, {Arg::buffer(buffers[1]), Arg::buffer(buffers[0])});
        for (std::size_t i = 0; i < kItems; ++i) {
          flat[1][i] += flat[0][i] + (i > 0 ? flat[0][i - 1] : 0);
        }
        break;
      }
      case 3: {  // add_k on one device only, over the first half
        NDRange range;
        range.global[0] = kItems / 2;
        range.local[0] = 64;
        LaunchOptions one;
        one.device = 0;
        program.launch("add_k", range, {Arg::buffer(buffers[b]), Arg::scalar(-1)}, one);
        for (std::size_t i = 0; i < kItems / 2; ++i) flat[b][i] -= 1;
        break;
      }
      case 4:
      case 5: {  // a host write of a few values somewhere in the buffer
        const std::size_t at = random() % (kItems - 16);
        std::vector<int> values(1 + random() % 16);
        for (int& v : values) v = static_cast<int>(random() % 1000);
        rt.write_blocking(buffers[b], at * sizeof(int), std::as_bytes(std::span(values)));
        std::copy(values.begin(), values.end(), flat[b].begin() + static_cast<std::ptrdiff_t>(at));
        break;
      }
      default: {  // a host read of a range
        const std::size_t at = random() % (kItems - 64);
        std::vector<int> out(64);
        rt.read_blocking(buffers[b], at * sizeof(int), std::as_writable_bytes(std::span(out)));
        seen.reads.push_back(out);
        if (oracle_reads != nullptr) {
          oracle_reads->emplace_back(flat[b].begin() + static_cast<std::ptrdiff_t>(at),
                                     flat[b].begin() + static_cast<std::ptrdiff_t>(at + 64));
        }
        break;
      }
    }
  }
  for (std::size_t b = 0; b < 2; ++b) {
    std::vector<int> out(kItems);
    rt.read_blocking(buffers[b], 0, std::as_writable_bytes(std::span(out)));
    seen.reads.push_back(out);
    if (oracle_reads != nullptr) oracle_reads->push_back(flat[b]);
  }
  rt.finish();
  seen.stats = rt.stats();
  for (const BufferId id : buffers) seen.directories.push_back(rt.core().directory_segments(id));
  const AgentMask both = AgentMask::of(1).with(2);
  for (const BufferId id : buffers) {
    for (const char* kernel : {"add_k", "accumulate"}) {
      for (const AgentMask writers : {both, AgentMask::of(1), AgentMask::of(2)}) {
        seen.history_counts.push_back(rt.core().history_repeat_count(id, kernel, writers));
      }
    }
  }
  seen.repeats = rt.core().repeated_launches();
  seen.directory_skips = rt.core().repeats_leaving_directory();
  return seen;
}

class RepeatLaunchTest : public ::testing::TestWithParam<UpdateStrategy> {};

TEST_P(RepeatLaunchTest,
       RepeatedLaunchesGiveTheSameBytesTransfersAndDirectoryWithAndWithoutTheFastPath) {
  if (opencl::make_opencl_devices("").size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
  std::uint32_t first_seed = std::random_device{}();
  if (const char* s = std::getenv("UNIMEM_TEST_SEED"))
    first_seed = static_cast<std::uint32_t>(std::stoul(s));
  std::uint64_t repeats = 0;
  std::uint64_t directory_skips = 0;
  for (std::uint32_t seed = first_seed; seed < first_seed + 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED reproduces it)");
    std::vector<std::vector<int>> oracle;
    const Observed fast = run(seed, GetParam(), true, opencl::make_opencl_devices(""), &oracle);
    const Observed slow = run(seed, GetParam(), false, opencl::make_opencl_devices(""), nullptr);
    EXPECT_EQ(fast.reads, oracle);
    EXPECT_EQ(slow.reads, oracle);
    EXPECT_TRUE(fast == slow) << "fast: " << fast.stats.to_json()
                              << "\nslow: " << slow.stats.to_json();
    EXPECT_EQ(slow.repeats, 0u);
    repeats += fast.repeats;
    directory_skips += fast.directory_skips;
  }
  EXPECT_GT(repeats, 0u) << "no launch took the fast path";
  // The directory steps are skipped under lazy and adaptive (once the history has seen the
  // repeat twice), never under batch (which copies eagerly after every write).
  if (GetParam() == UpdateStrategy::batch) {
    EXPECT_EQ(directory_skips, 0u);
  } else {
    EXPECT_GT(directory_skips, 0u) << "no repeat skipped the directory steps";
  }
}

// A repeat holds its buffers, which makes them the most recently used. Under a cap of two
// buffers, P, Q, P, P, P then R must evict Q (used least recently), and P must stay resident:
// its next launch reloads nothing.
TEST(RepeatLaunchMemory, ARepeatHoldsItsBuffersSoTheLeastRecentlyUsedIsEvicted) {
  if (opencl::make_opencl_devices("").empty()) GTEST_SKIP() << "needs an OpenCL device";
  auto devices = opencl::make_opencl_devices("0");
  RuntimeOptions options{UpdateStrategy::lazy};
  options.device_memory = 2 * kBytes;
  Runtime rt(std::move(devices), options);
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  const BufferId p = rt.create_buffer(kBytes, "p"), q = rt.create_buffer(kBytes, "q"),
                 r = rt.create_buffer(kBytes, "r");
  const std::vector<int> zeros(kItems, 0);
  for (const BufferId b : {p, q, r}) rt.write_blocking(b, 0, std::as_bytes(std::span(zeros)));
  NDRange range;
  range.global[0] = kItems;
  range.local[0] = 64;
  const auto add = [&](BufferId b) {
    program.launch("add_k", range, {Arg::buffer(b), Arg::scalar(1)});
  };
  add(p);
  add(q);
  add(p);  // repeats: each holds P
  add(p);
  add(p);
  add(r);  // evicts the least recently used: Q
  const std::uint64_t reloaded = rt.stats().reloaded_bytes;
  add(p);
  EXPECT_EQ(rt.stats().reloaded_bytes, reloaded) << "P was evicted although used after Q";
  std::vector<int> out(kItems);
  rt.read_blocking(p, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, std::vector<int>(kItems, 5));
  rt.read_blocking(q, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, std::vector<int>(kItems, 1));
  rt.read_blocking(r, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, std::vector<int>(kItems, 1));
}

// The runtime asks its drivers for kernel events with times only when the caller takes the
// partitions' events (the platform's profiled commands) or a trace runs: on profiling OpenCL
// devices, those events report when they ran, and a plain launch's kernel that waits only for
// finished work has no cl_event (its event, without times, is the driver's queued kernel event).
TEST(RepeatLaunchEvents, OnlyACallerTakingThePartitionsEventsGetsKernelTimes) {
  if (opencl::make_opencl_devices("").empty()) GTEST_SKIP() << "needs an OpenCL device";
  DeviceRegistry devices = opencl::make_opencl_devices("0");
  devices.at(0).set_profiling(true);
  Runtime rt(std::move(devices));
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  const BufferId b = rt.create_buffer(kBytes, "b");
  const std::vector<int> zeros(kItems, 0);
  rt.write_blocking(b, 0, std::as_bytes(std::span(zeros)));
  NDRange range;
  range.global[0] = kItems;
  range.local[0] = 64;
  const std::vector<Arg> args{Arg::buffer(b), Arg::scalar(2)};
  for (int round = 0; round < 3; ++round) {  // the first launches, then the repeat path
    Event plain = program.core().launch("add_k", range, args);
    plain.wait();
    // (The first waits for the copy of the host's bytes: a kernel waiting for anything but its
    // device's earlier kernels keeps a cl_event, which on a profiling device has times.)
    if (round > 0) {
      EXPECT_FALSE(plain.state()->times().has_value()) << "round " << round;
    }
    std::shared_ptr<const LaunchPlan> plan;
    std::vector<Event> partitions;
    program.core().launch("add_k", range, args, {}, &plan, &partitions);
    ASSERT_FALSE(partitions.empty());
    for (const Event& e : partitions) {
      e.wait();
      EXPECT_TRUE(e.state()->times().has_value()) << "round " << round;
    }
  }
  std::vector<int> out(kItems);
  rt.read_blocking(b, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, std::vector<int>(kItems, 12));
}

INSTANTIATE_TEST_SUITE_P(Strategies, RepeatLaunchTest,
                         ::testing::Values(UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                           UpdateStrategy::batch),
                         [](const auto& p) { return std::string(to_string(p.param)); });

}  // namespace
}  // namespace unimem
