// Deferred hazard records of cycle repeats (RuntimeCore::launch_partitioned, the comment above
// it): once a cycle's launches skip the directory steps and each runs after its device's previous
// kernel, a repeat waits for that kernel alone and its records wait until the next other
// operation, which records each launch's last run first. What must hold:
// - the deferral engages in a steady cycle (deferred_record_launches counts it) and never with
//   the fast path off;
// - an operation after the cycle waits for the cycle's last kernels: a host read of what the last
//   launch writes, and the release of what it reads, stay pending while that kernel is held back
//   by a gate, and the bytes are those the launches give in order;
// - a launch that is not a repeat after deferred ones sees the same;
// - the records kept are those the launches would have left (tracked_accesses equal to the
//   runtime without the fast path), and finish() and release work with records deferred.
// Host devices (one worker thread each): the gate holds a device's worker, so the next kernels of
// that device wait behind it as well.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "scale_launch.hpp"

namespace unimem {
namespace {

using testing::scale_flat;
using testing::scale_launch;
using testing::ScaleLaunch;

constexpr std::uint64_t kGrid = 256;

// A gate: the kernel run numbered `hold_run` (counting every run of gated kernels from 1) waits
// until open() before it computes.
struct Gate {
  std::atomic<int> runs{0};
  int hold_run = -1;
  std::promise<void> opened;
  std::shared_future<void> open_future = opened.get_future().share();
  void open() { opened.set_value(); }
};

// out[i] = 3 in[i] + c over the partition's range; `gate` may hold one run back.
std::shared_ptr<HostKernel> scale_kernel(std::shared_ptr<Gate> gate) {
  return std::make_shared<HostKernel>("scale", [gate](const HostKernelContext& ctx) {
    if (gate && gate->runs.fetch_add(1) + 1 == gate->hold_run) gate->open_future.wait();
    const auto* in = ctx.buffer<std::uint8_t>(0);
    auto* out = ctx.buffer<std::uint8_t>(1);
    const int c = ctx.scalar<int>(2);
    const std::uint64_t first = ctx.range().offset[0];
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
    }
  });
}

std::vector<std::uint8_t> initial(int seed) {
  std::vector<std::uint8_t> v(kGrid);
  for (std::uint64_t i = 0; i < kGrid; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + seed);
  return v;
}

void launch(Runtime& rt, const std::shared_ptr<const ScaleLaunch>& b, bool token = true) {
  rt.core().launch_partitioned(b->args, b->partitions, nullptr,
                               token ? std::shared_ptr<const void>(b) : nullptr);
}

// Whether `e` is still pending after a while (the gate is closed: it must be).
bool stays_pending(const Event& e) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return !e.is_complete();
}

// Ping-pong on `devices` host devices: A scales x into y (constant a), B y into x (constant b),
// `rounds` rounds, the last without B; A's last run is held at a gate. x and y follow on the host.
struct GatedPingPong {
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  Runtime rt;
  std::vector<std::uint8_t> x, y;
  BufferId bx, by;

  GatedPingPong(std::size_t devices, UpdateStrategy strategy, int rounds, int seed)
      : rt(make_host_devices(devices), RuntimeOptions{strategy}),
        x(initial(seed)),
        y(initial(seed + 1)),
        bx(rt.create_buffer(kGrid, "x")),
        by(rt.create_buffer(kGrid, "y")) {
    gate->hold_run = static_cast<int>(devices) * (2 * rounds - 1);  // A's last (last device)
    const auto kernel = scale_kernel(gate);
    rt.write_blocking(bx, 0, std::as_bytes(std::span(x)));
    rt.write_blocking(by, 0, std::as_bytes(std::span(y)));
    const int ca = seed + 2, cb = seed + 3;
    const auto a = scale_launch(bx, by, ca, devices, kGrid, kernel);
    const auto b = scale_launch(by, bx, cb, devices, kGrid, kernel);
    for (int r = 0; r < rounds; ++r) {
      launch(rt, a);
      scale_flat(x, y, ca);
      if (r + 1 < rounds) {
        launch(rt, b);
        scale_flat(y, x, cb);
      }
    }
  }
};

class DeferredRecordsConcurrencyTest : public ::testing::TestWithParam<std::size_t> {};

// A host read of y (A's output) after the cycle must wait for the held A and see its bytes.
TEST_P(DeferredRecordsConcurrencyTest, AHostReadAfterTheCycleWaitsForItsLastKernel) {
  GatedPingPong c(GetParam(), UpdateStrategy::lazy, 6, 1);
  EXPECT_GT(c.rt.core().deferred_record_launches(), 0U) << "the steady cycle deferred nothing";
  std::vector<std::uint8_t> out(kGrid);
  const Event read = c.rt.read(c.by, 0, std::as_writable_bytes(std::span(out)));
  const bool pending = stays_pending(read);
  c.gate->open();
  read.wait();
  EXPECT_TRUE(pending) << "the host read did not wait for the cycle's last kernel";
  EXPECT_EQ(out, c.y);
  std::vector<std::uint8_t> xs(kGrid);
  c.rt.read_blocking(c.bx, 0, std::as_writable_bytes(std::span(xs)));
  EXPECT_EQ(xs, c.x);
}

// Releasing x (what the held A reads) must wait for A before its memory goes (a release waits
// for the accesses its trackers hold).
TEST_P(DeferredRecordsConcurrencyTest, ReleasingABufferAfterTheCycleWaitsForItsLastReader) {
  GatedPingPong c(GetParam(), UpdateStrategy::lazy, 5, 3);
  EXPECT_GT(c.rt.core().deferred_record_launches(), 0U);
  std::future<void> released = std::async(std::launch::async, [&] { c.rt.release_buffer(c.bx); });
  const bool pending =
      released.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout;
  c.gate->open();
  released.get();
  EXPECT_TRUE(pending) << "x was released while the cycle's last kernel still read it";
  std::vector<std::uint8_t> ys(kGrid);
  c.rt.read_blocking(c.by, 0, std::as_writable_bytes(std::span(ys)));
  EXPECT_EQ(ys, c.y);
}

// After deferred repeats, a launch that is not a repeat (no token) reading A's output waits for
// the held A.
TEST_P(DeferredRecordsConcurrencyTest, ALaunchThatIsNotARepeatWaitsForTheCycle) {
  const std::size_t devices = GetParam();
  GatedPingPong c(devices, UpdateStrategy::adaptive, 4, 5);
  EXPECT_GT(c.rt.core().deferred_record_launches(), 0U);
  std::vector<std::uint8_t> z(kGrid, 0);
  const BufferId bz = c.rt.create_buffer(kGrid, "z");
  c.rt.write_blocking(bz, 0, std::as_bytes(std::span(z)));
  // y -> z on the devices in the reverse order (partition d on device devices-1-d): its
  // partitions read bytes the held A wrote on another device when there are two.
  const auto later =
      scale_launch(c.by, bz, 7, devices, kGrid, scale_kernel(nullptr), /*reversed=*/true);
  launch(c.rt, later, /*token=*/false);
  scale_flat(c.y, z, 7);
  std::vector<std::uint8_t> out(kGrid);
  const Event read = c.rt.read(bz, 0, std::as_writable_bytes(std::span(out)));
  const bool pending = stays_pending(read);
  c.gate->open();
  read.wait();
  EXPECT_TRUE(pending);
  EXPECT_EQ(out, z);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeferredRecordsConcurrencyTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return std::to_string(p.param) + "_device" + (p.param == 1 ? "" : "s");
                         });

// Runs a cycle of three launches (x -> y, y -> z, z -> x) for `launches` launches, then some
// other operation, with the fast path on or off; returns the records the trackers hold, the
// bytes, and the deferred count.
struct Outcome {
  std::vector<std::size_t> records;
  std::vector<std::vector<std::uint8_t>> bytes;
  std::uint64_t deferred = 0;
};

enum class After : std::uint8_t { nothing, finish, release_z };

Outcome run_cycle(std::size_t devices, bool fast_path, int launches, After after) {
  RuntimeOptions options{UpdateStrategy::lazy};
  options.repeat_fast_path = fast_path;
  Runtime rt(make_host_devices(devices), options);
  const auto kernel = scale_kernel(nullptr);
  std::vector<BufferId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(rt.create_buffer(kGrid, "b" + std::to_string(i)));
    const std::vector<std::uint8_t> v = initial(10 + i);
    rt.write_blocking(ids.back(), 0, std::as_bytes(std::span(v)));
  }
  std::vector<std::shared_ptr<const ScaleLaunch>> cycle;
  for (int i = 0; i < 3; ++i)
    cycle.push_back(scale_launch(ids[i], ids[(i + 1) % 3], i, devices, kGrid, kernel));
  for (int n = 0; n < launches; ++n) launch(rt, cycle[n % 3]);
  Outcome o;
  o.deferred = rt.core().deferred_record_launches();
  if (after == After::finish) rt.finish();
  if (after == After::release_z) {
    rt.release_buffer(ids[2]);
    ids.pop_back();
  }
  for (const BufferId id : ids) o.records.push_back(rt.core().tracked_accesses(id));
  for (const BufferId id : ids) {
    std::vector<std::uint8_t> v(kGrid);
    rt.read_blocking(id, 0, std::as_writable_bytes(std::span(v)));
    o.bytes.push_back(std::move(v));
  }
  return o;
}

TEST(DeferredRecords, TheRecordsKeptAreThoseOfEveryLaunch) {
  for (const std::size_t devices : {1U, 2U, 3U}) {
    for (const int launches : {3, 4, 5, 6, 7, 11, 30}) {
      for (const After after : {After::nothing, After::finish, After::release_z}) {
        SCOPED_TRACE(std::to_string(devices) + " device(s), " + std::to_string(launches) +
                     " launches, after " + std::to_string(static_cast<int>(after)));
        const Outcome fast = run_cycle(devices, true, launches, after);
        const Outcome slow = run_cycle(devices, false, launches, after);
        EXPECT_EQ(slow.deferred, 0U);
        if (launches >= 6) {
          EXPECT_GT(fast.deferred, 0U);
        }
        EXPECT_EQ(fast.bytes, slow.bytes);
        if (after != After::finish) {
          EXPECT_EQ(fast.records, slow.records);
        }
      }
    }
  }
}

}  // namespace
}  // namespace unimem
