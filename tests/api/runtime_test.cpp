#include "api/runtime_core.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "device/host/host_platform.hpp"

namespace unimem {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> bytes(std::size_t n, int start) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((start + static_cast<int>(i)) & 0xFF);
  return v;
}

// Adds `delta` to every byte of its write set [first, last) after reading it (read = write set).
std::shared_ptr<HostKernel> add_kernel(std::function<void()> before = {}) {
  return std::make_shared<HostKernel>("add", [before](const HostKernelContext& ctx) {
    if (before) before();
    auto* p = ctx.buffer<std::byte>(0);
    const auto first = ctx.scalar<std::uint64_t>(1);
    const auto last = ctx.scalar<std::uint64_t>(2);
    const auto delta = ctx.scalar<int>(3);
    for (auto i = first; i < last; ++i) {
      p[i] = static_cast<std::byte>((std::to_integer<int>(p[i]) + delta) & 0xFF);
    }
  });
}

Launch add(std::size_t device, BufferId b, std::uint64_t first, std::uint64_t last, int delta,
           std::shared_ptr<HostKernel> k = add_kernel()) {
  Launch l;
  l.device = device;
  l.kernel = std::move(k);
  const IntervalSet r{{first, last}};
  l.args = {LaunchArg::of_buffer(b, r, r), LaunchArg::of_scalar(first), LaunchArg::of_scalar(last),
            LaunchArg::of_scalar(delta)};
  return l;
}

// Copies bytes [first, last) of argument 0 to the same offsets of argument 1.
Launch copy_launch(std::size_t device, BufferId from, BufferId to, std::uint64_t first,
                   std::uint64_t last, std::function<void()> before = {}) {
  Launch l;
  l.device = device;
  l.kernel = std::make_shared<HostKernel>("copy", [before](const HostKernelContext& ctx) {
    if (before) before();
    const auto f = ctx.scalar<std::uint64_t>(2);
    const auto e = ctx.scalar<std::uint64_t>(3);
    for (auto i = f; i < e; ++i) ctx.buffer<std::byte>(1)[i] = ctx.buffer<std::byte>(0)[i];
  });
  const IntervalSet r{{first, last}};
  l.args = {LaunchArg::of_buffer(from, r, {}), LaunchArg::of_buffer(to, {}, r),
            LaunchArg::of_scalar(first), LaunchArg::of_scalar(last)};
  return l;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Runtime, HostWriteThenReadRoundTripsAndNewBuffersAreZero) {
  Runtime rt(make_host_devices(2));
  BufferId b = rt.create_buffer(100, "b");
  EXPECT_EQ(rt.buffer_size(b), 100u);
  std::vector<std::byte> out(100, std::byte{9});
  rt.read_blocking(b, 0, out);
  EXPECT_EQ(out, std::vector<std::byte>(100, std::byte{0}));
  auto data = bytes(30, 5);
  rt.write_blocking(b, 10, data);
  std::vector<std::byte> part(30);
  rt.read_blocking(b, 10, part);
  EXPECT_EQ(part, data);
}

TEST(Runtime, KernelsOnSeveralDevicesSeeEachOthersResults) {
  Runtime rt(make_host_devices(4), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(64, "b");
  rt.write_blocking(b, 0, bytes(64, 0));
  for (int round = 0; round < 3; ++round) {
    for (std::size_t d = 0; d < 4; ++d) rt.core().launch(add(d, b, 8 * d, 8 * d + 40, 1));
  }
  std::vector<std::byte> out(64);
  rt.read_blocking(b, 0, out);
  for (std::size_t i = 0; i < 64; ++i) {
    int hits = 0;
    for (std::size_t d = 0; d < 4; ++d) hits += (i >= 8 * d && i < 8 * d + 40) ? 3 : 0;
    EXPECT_EQ(std::to_integer<int>(out[i]), static_cast<int>(i) + hits) << i;
  }
  const TransferStats s = rt.stats();
  EXPECT_GT(s.device_to_device.copies, 0u);  // peers fetched from each other
  EXPECT_GT(s.device_to_host.bytes, 0u);     // the final read wrote back
}

// finish() waits for every access the buffers' trackers hold and then drops them all, without
// asking each event again (nor again when the buffer is released); later launches are still
// ordered and right.
TEST(Runtime, FinishDropsTheAccessesItWaitedFor) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(512, "b");
  rt.write_blocking(b, 0, bytes(512, 0));
  for (std::uint64_t i = 0; i < 40; ++i) rt.core().launch(add(i % 2, b, 8 * i, 8 * i + 8, 1));
  EXPECT_GT(rt.core().tracked_accesses(b), 0U);
  rt.finish();
  EXPECT_EQ(rt.core().tracked_accesses(b), 0U);
  for (std::uint64_t i = 0; i < 40; ++i) rt.core().launch(add(1 - i % 2, b, 8 * i, 8 * i + 12, 2));
  std::vector<std::byte> out(512);
  rt.read_blocking(b, 0, out);
  for (std::uint64_t i = 0; i < 512; ++i) {
    int expected = static_cast<int>(i) + (i < 320 ? 1 : 0);
    for (std::uint64_t k = 0; k < 40; ++k) expected += (i >= 8 * k && i < 8 * k + 12) ? 2 : 0;
    EXPECT_EQ(std::to_integer<int>(out[i]), expected & 0xFF) << i;
  }
}

TEST(Runtime, MayWriteBytesAreFetchedSoUnwrittenOnesStayRight) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(16, "b");
  rt.write_blocking(b, 0, bytes(16, 100));
  Launch l;
  l.device = 1;
  l.kernel = std::make_shared<HostKernel>("evens", [](const HostKernelContext& ctx) {
    for (int i = 0; i < 16; i += 2) ctx.buffer<std::byte>(0)[i] = std::byte{0};
  });
  l.args = {LaunchArg::of_buffer(b, {}, {}, IntervalSet{{0, 16}})};
  rt.core().launch(l);
  std::vector<std::byte> out(16);
  rt.read_blocking(b, 0, out);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(std::to_integer<int>(out[i]), i % 2 == 0 ? 0 : 100 + i) << i;
  }
  EXPECT_EQ(rt.buffer_stats(b).host_to_device.bytes, 16u);
}

TEST(Runtime, ErrorsNameTheBufferDeviceKernelAndRange) {
  Runtime rt(make_host_devices(2));
  BufferId b = rt.create_buffer(32, "weights");
  std::vector<std::byte> buf(16);
  std::string e = error_of([&] { rt.write(b, 20, buf); });
  EXPECT_NE(e.find("'weights'"), std::string::npos) << e;
  EXPECT_NE(e.find("[20, 36)"), std::string::npos) << e;
  e = error_of([&] { rt.read(b, 40, std::span(buf.data(), 1)); });
  EXPECT_NE(e.find("[40, 41)"), std::string::npos) << e;

  Launch l = add(5, b, 0, 8, 1);
  e = error_of([&] { rt.core().launch(l); });
  EXPECT_NE(e.find("unknown device 5"), std::string::npos) << e;
  EXPECT_NE(e.find("'add'"), std::string::npos) << e;
  EXPECT_NE(e.find("2 devices"), std::string::npos) << e;

  l = add(0, b, 30, 40, 1);
  e = error_of([&] { rt.core().launch(l); });
  EXPECT_NE(e.find("'weights'"), std::string::npos) << e;
  EXPECT_NE(e.find("[30, 40)"), std::string::npos) << e;
  EXPECT_NE(e.find("argument 0"), std::string::npos) << e;

  l = add(0, BufferId{77}, 0, 1, 1);
  e = error_of([&] { rt.core().launch(l); });
  EXPECT_NE(e.find("unknown buffer #77"), std::string::npos) << e;

  l = add(0, b, 0, 8, 1);
  l.kernel = nullptr;
  EXPECT_THROW(rt.core().launch(l), PreconditionError);
  EXPECT_THROW(rt.create_buffer(0, "empty"), PreconditionError);
  EXPECT_THROW(Runtime(DeviceRegistry{}), PreconditionError);
  // A rejected launch changed nothing.
  EXPECT_EQ(rt.stats().total_copies(), 0u);
  EXPECT_EQ(rt.core().directory_segments(b).size(), 1u);
}

TEST(Runtime, PartitionedLaunchReadsThePreLaunchState) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(16, "b");
  rt.write_blocking(b, 0, bytes(16, 1));  // b[i] = i + 1
  // Each partition writes b[i] = b[15 - i] over its half: a mirror image only if both read the
  // state from before the launch.
  auto k = std::make_shared<HostKernel>("mirror", [](const HostKernelContext& ctx) {
    auto* p = ctx.buffer<std::byte>(0);
    const auto first = ctx.range().offset[0];
    const auto last = first + ctx.range().global[0];
    for (auto i = first; i < last; ++i) p[i] = p[15 - i];
  });
  std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {})};
  std::vector<LaunchPartition> parts(2);
  for (std::size_t p = 0; p < 2; ++p) {
    parts[p].device = p;
    parts[p].kernel = k;
    parts[p].range.offset[0] = 8 * p;
    parts[p].range.global[0] = 8;
    parts[p].accesses[0] = {
        IntervalSet{{8 - 8 * p, 16 - 8 * p}}, IntervalSet{{8 * p, 8 * p + 8}}, {}};
  }
  // d0 alone holds the lower half and d1 the upper: each partition fetches from the device
  // whose partition overwrites those bytes, so the copies must finish before those kernels run.
  rt.core().launch(add(0, b, 0, 8, 0));
  rt.core().launch(add(1, b, 8, 16, 0));
  rt.core().launch_partitioned(args, parts);
  std::vector<std::byte> out(16);
  rt.read_blocking(b, 0, out);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(std::to_integer<int>(out[i]), 16 - i) << i;
  EXPECT_EQ(rt.buffer_stats(b).device_to_device.bytes, 16u);

  parts[1].accesses[0].writes = IntervalSet{{4, 12}};
  std::string e = error_of([&] { rt.core().launch_partitioned(args, parts); });
  EXPECT_NE(e.find("both write"), std::string::npos) << e;
  parts[1].device = 0;
  parts[1].accesses[0].writes = IntervalSet{{8, 16}};
  EXPECT_THROW(rt.core().launch_partitioned(args, parts), PreconditionError);
}

TEST(Runtime, StatsAreCountedPerBufferAndPrintedAsJson) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId a = rt.create_buffer(32, "a\"q");
  BufferId b = rt.create_buffer(8, "b");
  rt.write_blocking(a, 0, bytes(32, 0));
  rt.core().launch(add(0, a, 0, 32, 1));  // h2d 32
  rt.core().launch(add(1, a, 0, 16, 1));  // d2d 16
  std::vector<std::byte> out(32);
  rt.read_blocking(a, 0, out);  // d2h 16 from d1, 16 from d0
  const TransferStats sa = rt.buffer_stats(a);
  EXPECT_EQ(sa.host_to_device, (CopyCount{32, 1}));
  EXPECT_EQ(sa.device_to_device, (CopyCount{16, 1}));
  EXPECT_EQ(sa.device_to_host, (CopyCount{32, 2}));
  EXPECT_EQ(rt.buffer_stats(b).total_bytes(), 0u);
  EXPECT_EQ(rt.stats().total_bytes(), 80u);
  const std::string json = rt.stats_json();
  EXPECT_NE(json.find("\"total\":{\"h2d\":{\"bytes\":32,\"copies\":1}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"a\\\"q\""), std::string::npos) << json;
  rt.release_buffer(a);
  EXPECT_EQ(rt.stats().total_bytes(), 80u);  // released buffers still count
  EXPECT_THROW((void)rt.buffer_stats(a), PreconditionError);
}

TEST(Runtime, KernelFailureSurfacesInItsEventAndFinish) {
  Runtime rt(make_host_devices(1));
  BufferId b = rt.create_buffer(8, "b");
  Launch l = add(0, b, 0, 8, 1);
  l.kernel = std::make_shared<HostKernel>(
      "bad", [](const HostKernelContext&) { throw std::runtime_error("kernel bad exploded"); });
  Event e = rt.core().launch(l);
  EXPECT_THROW(e.wait(), std::runtime_error);
  EXPECT_THROW(rt.finish(), std::runtime_error);
}

// A kernel that blocks until released: lets tests observe what waits for what.
struct Gate {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  std::atomic<bool> entered{false};
  std::function<void()> body() {
    return [this] {
      entered = true;
      opened.wait();
    };
  }
};

TEST(RuntimeConcurrency, IndependentLaunchesOnDifferentDevicesOverlap) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId a = rt.create_buffer(16, "a");
  BufferId b = rt.create_buffer(16, "b");
  Gate gate;
  Event first = rt.core().launch(add(0, a, 0, 16, 1, add_kernel(gate.body())));
  // Touches other bytes on another device: must run while the first one is still blocked.
  Event second = rt.core().launch(add(1, b, 0, 16, 1));
  EXPECT_NO_THROW(second.wait());
  EXPECT_FALSE(first.is_complete());
  gate.open.set_value();
  first.wait();
}

TEST(RuntimeConcurrency, ConflictingLaunchesWaitRawWarWaw) {
  Runtime rt(make_host_devices(3), RuntimeOptions{UpdateStrategy::lazy});
  BufferId a = rt.create_buffer(16, "a");
  BufferId b = rt.create_buffer(16, "b");
  rt.write_blocking(a, 0, bytes(16, 10));
  rt.write_blocking(b, 0, bytes(16, 50));
  Gate gate;
  // d0 copies a -> b over [0, 8) but is held at the gate.
  Event writer = rt.core().launch(copy_launch(0, a, b, 0, 8, gate.body()));
  Event raw = rt.core().launch(add(1, b, 4, 12, 1));         // reads b[4, 8) written by d0
  Event war = rt.core().launch(add(2, a, 0, 4, 100));        // writes a[0, 4) that d0 reads
  Event waw = rt.core().launch(copy_launch(1, a, b, 6, 8));  // writes b[6, 8) after d0 and raw
  Event independent = rt.core().launch(add(2, b, 12, 16, 1));
  independent.wait();
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(raw.is_complete());
  EXPECT_FALSE(waw.is_complete());
  gate.open.set_value();
  rt.finish();
  std::vector<std::byte> out_a(16), out_b(16);
  rt.read_blocking(a, 0, out_a);
  rt.read_blocking(b, 0, out_b);
  // Sequential semantics: b[0,8) = a_old; b[4,12) += 1; a[0,4) += 100; b[6,8) = a_new; b[12,16) +=
  // 1
  for (int i = 0; i < 16; ++i) {
    const int a_old = 10 + i;
    const int a_new = i < 4 ? a_old + 100 : a_old;
    int bv = 50 + i;
    if (i < 8) bv = a_old;
    if (i >= 4 && i < 12) bv += 1;
    if (i >= 6 && i < 8) bv = a_new;
    if (i >= 12) bv += 1;
    EXPECT_EQ(std::to_integer<int>(out_a[i]), a_new & 0xFF) << "a " << i;
    EXPECT_EQ(std::to_integer<int>(out_b[i]), bv & 0xFF) << "b " << i;
  }
  (void)war;
}

TEST(RuntimeConcurrency, HostAccessIsOrderedWithEarlierLaunches) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId b = rt.create_buffer(8, "b");
  Gate gate;
  rt.core().launch(add(0, b, 0, 8, 5, add_kernel(gate.body())));
  std::vector<std::byte> out(8, std::byte{0xEE});
  Event read = rt.read(b, 0, out);  // non-blocking: must see the kernel's result
  auto data = bytes(4, 200);
  Event write = rt.write(b, 0, data);  // after the read, before the next launch
  rt.core().launch(add(1, b, 0, 8, 1));
  EXPECT_FALSE(read.is_complete());
  gate.open.set_value();
  read.wait();
  write.wait();
  EXPECT_EQ(out, std::vector<std::byte>(8, std::byte{5}));
  std::vector<std::byte> final_bytes(8);
  rt.read_blocking(b, 0, final_bytes);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(std::to_integer<int>(final_bytes[i]), i < 4 ? 201 + i : 6) << i;
  }
}

TEST(RuntimeConcurrency, ManyThreadsSubmittingToOneRuntime) {
  Runtime rt(make_host_devices(4), RuntimeOptions{UpdateStrategy::adaptive});
  constexpr int kThreads = 4;
  constexpr int kRounds = 25;
  std::vector<BufferId> bufs;
  for (int t = 0; t < kThreads; ++t) bufs.push_back(rt.create_buffer(32, "t" + std::to_string(t)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        rt.core().launch(add(static_cast<std::size_t>((t + r) % 4), bufs[t], 0, 32, 1));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    std::vector<std::byte> out(32);
    rt.read_blocking(bufs[t], 0, out);
    EXPECT_EQ(out, std::vector<std::byte>(32, std::byte{kRounds})) << t;
  }
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

std::uint64_t allocated_on(Runtime& rt, std::size_t device) {
  return dynamic_cast<HostDevice&>(rt.core().device(device)).allocated_bytes();
}

// Released buffers hand their mirrors and home copies to the next buffer of the same size
// (memory/allocation_cache.hpp); the recycled memory holds the old buffer's bytes, which must
// never show through: a new buffer reads zeros on the host and on every device.
// Matz et al.'s overhead method: beta (no_transfers) keeps the bookkeeping but issues no copy;
// the mode can be switched between runs only when no buffer is live, and a normal run first
// leaves real data in the recycled mirrors that the beta run then computes on.
TEST(Runtime, MeasurementModesSwitchBetweenRunsAndBetaIssuesNoCopies) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  auto run = [&rt] {
    const BufferId b = rt.create_buffer(64, "run buffer");
    rt.write_blocking(b, 0, bytes(64, 10));
    rt.core().launch(add(0, b, 0, 32, 1));
    rt.core().launch(add(1, b, 16, 64, 2));
    std::vector<std::byte> out(64);
    rt.read_blocking(b, 0, out);
    rt.release_buffer(b);
    return out;
  };
  const std::vector<std::byte> normal = run();
  for (std::size_t i = 0; i < 64; ++i) {
    const int want = 10 + static_cast<int>(i) + (i < 32 ? 1 : 0) + (i >= 16 ? 2 : 0);
    EXPECT_EQ(std::to_integer<int>(normal[i]), want) << i;
  }
  const TransferStats after_normal = rt.stats();
  EXPECT_GT(after_normal.total_bytes(), 0u);

  const BufferId live = rt.create_buffer(8, "still live");
  const std::string error = error_of([&] { rt.set_measurement(MeasurementMode::no_transfers); });
  EXPECT_NE(error.find("still live"), std::string::npos) << error;
  EXPECT_EQ(rt.measurement(), MeasurementMode::normal);
  rt.release_buffer(live);

  rt.set_measurement(MeasurementMode::no_transfers);
  EXPECT_EQ(rt.measurement(), MeasurementMode::no_transfers);
  (void)run();  // results are meaningless in beta; what counts is that nothing is copied
  EXPECT_EQ(rt.stats().total_bytes(), after_normal.total_bytes());

  rt.set_measurement(MeasurementMode::normal);
  EXPECT_EQ(run(), normal);
  EXPECT_EQ(rt.stats().total_bytes(), 2 * after_normal.total_bytes());
}

TEST(Runtime, RecycledMemoryOfReleasedBuffersNeverLeaksItsBytes) {
  for (UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::batch,
                                  UpdateStrategy::balance, UpdateStrategy::adaptive}) {
    SCOPED_TRACE(to_string(strategy));
    Runtime rt(make_host_devices(2), RuntimeOptions{strategy});
    constexpr std::uint64_t n = 4096;
    BufferId a = rt.create_buffer(n, "a");
    rt.write_blocking(a, 0, bytes(n, 7));
    rt.core().launch(add(0, a, 0, n, 1));
    rt.core().launch(add(1, a, 0, n / 2, 1));
    std::vector<std::byte> out(n);
    rt.read_blocking(a, 0, out);
    rt.release_buffer(a);
    EXPECT_EQ(allocated_on(rt, 0), n);      // kept for reuse
    EXPECT_EQ(allocated_on(rt, 1), n / 2);  // partial residency: the half device 1 used

    // Host read of a buffer on recycled home memory: zeros.
    BufferId b = rt.create_buffer(n, "b");
    rt.read_blocking(b, 0, out);
    EXPECT_EQ(out, std::vector<std::byte>(n, std::byte{0}));
    // A kernel on a recycled allocation reads zeros too (device 1's box held a's bytes).
    rt.core().launch(add(1, b, 0, n / 2, 3));
    rt.read_blocking(b, 0, out);
    std::vector<std::byte> halves(n, std::byte{0});
    std::fill(halves.begin(), halves.begin() + n / 2, std::byte{3});
    EXPECT_EQ(out, halves);
    EXPECT_EQ(allocated_on(rt, 1), n / 2);  // reused, not allocated again
    rt.release_buffer(b);

    // A partial host write: the rest still reads zero, on the host and on a device.
    BufferId c = rt.create_buffer(n, "c");
    rt.write_blocking(c, 100, bytes(50, 1));
    rt.core().launch(add(0, c, 0, n, 0));
    rt.read_blocking(c, 0, out);
    std::vector<std::byte> want(n, std::byte{0});
    const std::vector<std::byte> written = bytes(50, 1);
    std::copy(written.begin(), written.end(), want.begin() + 100);
    EXPECT_EQ(out, want);
  }
}

TEST(Runtime, RecycleBudgetZeroFreesMemoryAtRelease) {
  RuntimeOptions options;
  options.recycle_bytes = 0;
  Runtime rt(make_host_devices(1), options);
  BufferId a = rt.create_buffer(1000, "a");
  rt.core().launch(add(0, a, 0, 1000, 1));
  rt.finish();
  EXPECT_EQ(allocated_on(rt, 0), 1000u);
  rt.release_buffer(a);
  EXPECT_EQ(allocated_on(rt, 0), 0u);
}

TEST(Runtime, MemoryKeptForReuseIsFreedWhenTheDeviceRunsOut) {
  HostDeviceOptions small;
  small.capacity = 10000;
  Runtime rt(make_host_devices(1, small));
  BufferId a = rt.create_buffer(6000, "a");
  rt.core().launch(add(0, a, 0, 6000, 1));
  rt.release_buffer(a);
  EXPECT_EQ(allocated_on(rt, 0), 6000u);  // kept
  // 5000 more do not fit next to the kept 6000: the kept memory goes, the launch runs.
  BufferId b = rt.create_buffer(5000, "b");
  rt.write_blocking(b, 0, bytes(5000, 9));
  rt.core().launch(add(0, b, 0, 5000, 1));
  std::vector<std::byte> out(5000);
  rt.read_blocking(b, 0, out);
  EXPECT_EQ(out, bytes(5000, 10));
  EXPECT_EQ(allocated_on(rt, 0), 5000u);
  // A buffer that does not fit even on an empty device still fails, naming the device.
  BufferId c = rt.create_buffer(20000, "c");
  EXPECT_THROW(rt.core().launch(add(0, c, 0, 20000, 1)), DeviceError);
}

// The fault test of issue 10, end to end: the driver itself refuses an allocation in the middle
// of a run, under unimem's own accounting (another user of the device took memory behind its
// back), while another buffer's only current bytes are on the device. The refusal is recovered
// by evicting that buffer (its Modified bytes written home first); when nothing can be evicted
// (the launch itself needs everything unimem holds), the launch fails naming the device and the
// driver's refusal, and every buffer's bytes stay as they were.
TEST(Runtime, ADriverRefusalMidRunLosesNoByte) {
  HostDeviceOptions small;
  small.capacity = 12000;
  DeviceRegistry devices = make_host_devices(1, small);
  const std::shared_ptr<Device> device = devices.shared(0);
  Runtime rt(std::move(devices));
  const BufferId a = rt.create_buffer(6000, "a");
  rt.write_blocking(a, 0, bytes(6000, 1));
  rt.core().launch(add(0, a, 0, 6000, 2));  // a's current bytes: only on the device now
  rt.finish();
  const DeviceAllocation other = device->allocate(3000);  // another user of the device
  const BufferId b = rt.create_buffer(5000, "b");
  rt.write_blocking(b, 0, bytes(5000, 7));
  // unimem counts 6000 + 5000 <= 12000, the driver has 3000 fewer: it refuses, a is evicted.
  rt.core().launch(add(0, b, 0, 5000, 1));
  rt.finish();
  EXPECT_EQ(rt.core().device_memory()[0].memory.refusals, 1u);
  EXPECT_EQ(rt.core().device_memory()[0].memory.evictions, 1u);
  std::vector<std::byte> out_a(6000), out_b(5000);
  rt.read_blocking(a, 0, out_a);
  rt.read_blocking(b, 0, out_b);
  EXPECT_EQ(out_a, bytes(6000, 3));
  EXPECT_EQ(out_b, bytes(5000, 8));
  // Copying 5000 bytes of a into b needs a box of a next to b's: 3000 + 5000 + 5000 > 12000,
  // and b is the launch's own: nothing can be evicted.
  try {
    rt.core().launch(copy_launch(0, a, b, 0, 5000));
    rt.finish();
    ADD_FAILURE() << "the copy ran although the driver had no room for it";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
    EXPECT_NE(what.find("refused"), std::string::npos) << what;
  }
  rt.read_blocking(a, 0, out_a);
  rt.read_blocking(b, 0, out_b);
  EXPECT_EQ(out_a, bytes(6000, 3));
  EXPECT_EQ(out_b, bytes(5000, 8));
  device->free(other);
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// out[i] = in[i - 1] + in[i] + in[i + 1] for i in [first, last): reads [first - 1, last + 1).
Launch halo_step(std::size_t device, BufferId in, BufferId out, std::uint64_t first,
                 std::uint64_t last) {
  Launch l;
  l.device = device;
  l.kernel = std::make_shared<HostKernel>("halo", [](const HostKernelContext& ctx) {
    const auto* src = ctx.buffer<std::byte>(0);
    auto* dst = ctx.buffer<std::byte>(1);
    const auto lo = ctx.scalar<std::uint64_t>(2);
    const auto hi = ctx.scalar<std::uint64_t>(3);
    for (auto i = lo; i < hi; ++i) {
      dst[i] =
          static_cast<std::byte>((std::to_integer<int>(src[i - 1]) + std::to_integer<int>(src[i]) +
                                  std::to_integer<int>(src[i + 1])) &
                                 0xFF);
    }
  });
  l.args = {LaunchArg::of_buffer(in, IntervalSet{{first - 1, last + 1}}, {}),
            LaunchArg::of_buffer(out, {}, IntervalSet{{first, last}}), LaunchArg::of_scalar(first),
            LaunchArg::of_scalar(last)};
  return l;
}

// A buffer's first box on a device covers the partition's boxes of its same-size buffers when
// that adds at most an eighth: a ping-pong stencil's output box holds the halo from the start, so
// when the buffers swap roles no box grows (no merge, no relocated byte, no second box).
TEST(Runtime, APingPongStencilsFirstBoxesHoldTheHaloSoTheyNeverGrow) {
  constexpr std::uint64_t n = 1000, first = 400, last = 600;
  Runtime rt(make_host_devices(1), RuntimeOptions{UpdateStrategy::lazy});
  const BufferId a = rt.create_buffer(n, "a");
  const BufferId b = rt.create_buffer(n, "b");
  std::vector<std::byte> want = bytes(n, 1);
  rt.write_blocking(a, 0, want);
  rt.write_blocking(b, 0, want);
  std::vector<std::byte> other = want;
  for (int step = 0; step < 6; ++step) {
    const bool forward = step % 2 == 0;
    rt.core().launch(halo_step(0, forward ? a : b, forward ? b : a, first, last));
    std::vector<std::byte>& src = forward ? want : other;
    std::vector<std::byte>& dst = forward ? other : want;
    for (auto i = first; i < last; ++i) {
      dst[i] =
          static_cast<std::byte>((std::to_integer<int>(src[i - 1]) + std::to_integer<int>(src[i]) +
                                  std::to_integer<int>(src[i + 1])) &
                                 0xFF);
    }
  }
  std::vector<std::byte> got(n);
  rt.read_blocking(a, 0, got);
  EXPECT_EQ(got, want);
  rt.read_blocking(b, 0, got);
  EXPECT_EQ(got, other);
  EXPECT_EQ(rt.stats().relocated_bytes, 0u);
  // Both boxes are [384, 601): the halo, from a 128-byte aligned start.
  const DeviceMemoryReport m = rt.core().device_memory()[0];
  EXPECT_EQ(m.memory.held_bytes, 2 * (last + 1 - 384));
  EXPECT_EQ(m.memory.peak_held_bytes, 2 * (last + 1 - 384));
}

// A box merged away while a kernel still runs on it is freed only after that kernel, in every
// measurement mode: the launch that grows it does not wait (the host is not stalled), and in
// gamma, where kernels are in no tracker, the device's last kernel keeps the old box.
TEST(Runtime, AGrownBoxIsFreedOnlyAfterTheKernelStillUsingItInEveryMode) {
  for (MeasurementMode mode :
       {MeasurementMode::normal, MeasurementMode::no_transfers, MeasurementMode::no_coherence}) {
    SCOPED_TRACE(measurement_name(mode));
    RuntimeOptions options{UpdateStrategy::lazy};
    options.measurement = mode;
    Runtime rt(make_host_devices(1), options);
    const BufferId a = rt.create_buffer(1024, "a");
    rt.write_blocking(a, 0, bytes(1024, 0));
    std::promise<void> gate;
    std::shared_future<void> open = gate.get_future().share();
    rt.core().launch(add(0, a, 0, 128, 1, add_kernel([open] { open.wait(); })));
    rt.core().launch(add(0, a, 64, 512, 1));  // grows the box [0, 128) to [0, 512)
    DeviceMemoryStats m = rt.core().device_memory()[0].memory;
    EXPECT_EQ(m.retiring_bytes, 128u);  // the first kernel still runs on it
    EXPECT_EQ(m.held_bytes, 128u + 512u);
    gate.set_value();
    rt.finish();
    m = rt.core().device_memory()[0].memory;
    EXPECT_EQ(m.retiring_bytes, 0u);
    EXPECT_EQ(m.held_bytes, 512u);
    if (mode == MeasurementMode::normal) {
      std::vector<std::byte> got(1024);
      rt.read_blocking(a, 0, got);
      for (std::size_t i = 0; i < 1024; ++i) {
        const int hits = (i < 128 ? 1 : 0) + (i >= 64 && i < 512 ? 1 : 0);
        EXPECT_EQ(std::to_integer<int>(got[i]), static_cast<int>((i + hits) & 0xFF)) << i;
      }
    }
  }
}

// The widening stops at an eighth: a kernel reading all of one buffer and writing a fifth of
// another of the same size keeps the written box to its bytes.
TEST(Runtime, AFirstBoxIsNotWidenedByMoreThanAnEighth) {
  constexpr std::uint64_t n = 1024, first = 512, last = 512 + 205;
  Runtime rt(make_host_devices(1), RuntimeOptions{UpdateStrategy::lazy});
  const BufferId in = rt.create_buffer(n, "in");
  const BufferId out = rt.create_buffer(n, "out");
  rt.write_blocking(in, 0, bytes(n, 3));
  Launch l = copy_launch(0, in, out, first, last);
  l.args[0] = LaunchArg::of_buffer(in, IntervalSet{{0, n}}, {});  // reads all of `in`
  rt.core().launch(l);
  std::vector<std::byte> got(last - first);
  rt.read_blocking(out, first, got);
  const std::vector<std::byte> all = bytes(n, 3);
  EXPECT_EQ(got, std::vector<std::byte>(all.begin() + first, all.begin() + last));
  EXPECT_EQ(rt.core().device_memory()[0].memory.held_bytes, n + (last - first));
}

// Partial residency under a cap that holds both boxes of a ping-pong stencil but not a growing
// box twice: each buffer's box grows once (its old box is boxed out: no room for both), and then
// the launch's boxes stay put. Before the launch's own boxes were held first, each step evicted
// the other buffer's box to make room and the next step the other way round.
TEST(Runtime, APingPongStencilUnderATightCapStopsEvictingOnceItsBoxesHaveGrown) {
  constexpr std::uint64_t n = 1000, first = 400, last = 600;
  RuntimeOptions options{UpdateStrategy::lazy};
  options.device_memory = 2 * (last - first + 2) + 100;  // < both boxes + a grown one
  Runtime rt(make_host_devices(1), options);
  const BufferId a = rt.create_buffer(n, "a");
  const BufferId b = rt.create_buffer(n, "b");
  std::vector<std::byte> want = bytes(n, 1);
  rt.write_blocking(a, 0, want);
  rt.write_blocking(b, 0, want);
  std::vector<std::byte> other = want;
  for (int step = 0; step < 20; ++step) {
    const bool forward = step % 2 == 0;
    rt.core().launch(halo_step(0, forward ? a : b, forward ? b : a, first, last));
    std::vector<std::byte>& src = forward ? want : other;
    std::vector<std::byte>& dst = forward ? other : want;
    for (auto i = first; i < last; ++i) {
      dst[i] =
          static_cast<std::byte>((std::to_integer<int>(src[i - 1]) + std::to_integer<int>(src[i]) +
                                  std::to_integer<int>(src[i + 1])) &
                                 0xFF);
    }
  }
  std::vector<std::byte> got(n);
  rt.read_blocking(a, 0, got);
  EXPECT_EQ(got, want);
  rt.read_blocking(b, 0, got);
  EXPECT_EQ(got, other);
  const DeviceMemoryReport m = rt.core().device_memory()[0];
  EXPECT_LE(m.memory.peak_held_bytes, options.device_memory);
  // The grown boxes replaced their old ones: each buffer's old box was boxed out at most once
  // (a box-out forced by a merge counts as an eviction).
  EXPECT_LE(m.memory.evictions, 2u);
  // At most each buffer's old box went home once: [first, last) of b (a's box was read-only).
  EXPECT_LE(rt.stats().evicted_bytes, 2 * (last - first));
}

// Several boxes per buffer (RuntimeCore::split_uses): an out-of-core chunk whose two arguments
// point into one buffer at bytes far apart holds them in two boxes, not in one bounding box, and
// each argument reaches its own bytes; a partition that is not a chunk keeps one box per buffer.
TEST(Runtime, AChunkHoldsArgumentsFarApartInOneBufferInABoxEach) {
  for (const bool chunk : {true, false}) {
    Runtime rt(make_host_devices(1), RuntimeOptions{UpdateStrategy::lazy});
    const BufferId b = rt.create_buffer(4096, "b");
    rt.write_blocking(b, 0, bytes(4096, 7));
    rt.core().reset_device_memory_peaks();
    // Copies bytes [3000, 3100) read through argument 0 to [100, 200) through argument 1.
    auto k = std::make_shared<HostKernel>("far", [](const HostKernelContext& ctx) {
      const auto* from = ctx.buffer<std::byte>(0);
      auto* to = ctx.buffer<std::byte>(1);
      for (int i = 0; i < 100; ++i) to[100 + i] = from[3000 + i];
    });
    std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {}), LaunchArg::of_buffer(b, {}, {})};
    LaunchPartition p;
    p.device = 0;
    p.kernel = k;
    p.out_of_core = chunk;
    p.accesses[0] = {IntervalSet{{3000, 3100}}, {}, {}};
    p.accesses[1] = {{}, IntervalSet{{100, 200}}, {}};
    const PartitionFootprint f = rt.core().footprint(args, p);
    ASSERT_EQ(f.boxes.size(), chunk ? 2U : 1U);
    if (chunk) {
      EXPECT_EQ(f.boxes[0].args, std::vector<std::uint32_t>{1});  // lowest bytes first
      EXPECT_EQ(f.boxes[1].args, std::vector<std::uint32_t>{0});
      EXPECT_LE(f.total, 2U * 228U);  // each box-aligned: [2944, 3100) and [0, 200)
    } else {
      EXPECT_EQ(f.boxes[0].args, (std::vector<std::uint32_t>{0, 1}));
      EXPECT_EQ(f.total, 3100U);
    }
    rt.core().launch_partitioned(args, std::span(&p, 1));
    std::vector<std::byte> out(4096);
    rt.read_blocking(b, 0, out);
    const std::vector<std::byte> in = bytes(4096, 7);
    for (int i = 0; i < 4096; ++i) {
      const std::byte want = i >= 100 && i < 200 ? in[2900 + i] : in[i];
      ASSERT_EQ(out[i], want) << "chunk " << chunk << " byte " << i;
    }
    EXPECT_EQ(rt.core().device_memory()[0].memory.peak_held_bytes, f.total);
  }
}

}  // namespace
}  // namespace unimem
