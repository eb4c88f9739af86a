// The events a periodic replay (RuntimeCore::replay_period_step, "Periodic cycles" in
// runtime_core.cpp) leaves to the operations after it. A replay keeps each step's kernels in the
// step's list, written over the previous replay's, and leaves the devices' last kernels to the
// materialization. What must hold, seen in the wait lists the device is given:
// - the cycle's first launch after a materialized replay waits for kernels of the last round
//   only (its device's last kernel is the last replayed one, not one from before the replay);
// - a replayed launch whose kernel fails leaves the trackers as if it had not run: the next
//   writer of what it would have written waits for that buffer's last reader, not for the
//   step's previous run alone (no older replay's event is taken for this one's);
// - a replayed launch failing on its second device after its first device's kernel was enqueued
//   leaves that kernel as the last writer of its bytes;
// - the bytes are those of the launches that ran, in order.
// Host devices behind a recording device (one worker thread each).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unimem/errors.hpp>
#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "forwarding_device.hpp"
#include "scale_launch.hpp"

namespace unimem {
namespace {

using testing::scale_flat;
using testing::scale_launch;
using testing::ScaleLaunch;

constexpr std::uint64_t kGrid = 256;

// Records every kernel launch's wait list and event; throws DeviceError instead of launching
// while fail_launches is set, and instead of copying (to, from or within the device) while
// fail_copies is set.
class RecordingDevice final : public testing::ForwardingDevice {
 public:
  explicit RecordingDevice(std::shared_ptr<Device> inner)
      : ForwardingDevice(std::move(inner), "recording") {}

  struct Launch {
    std::vector<Event> waits;
    Event event;
  };
  std::vector<Launch> launches;
  std::atomic<bool> fail_launches{false};
  std::atomic<bool> fail_copies{false};

  Event copy_host_to_device(const std::byte* src, DeviceAllocation dst, std::uint64_t dst_offset,
                            std::uint64_t bytes, std::span<const Event> deps) override {
    if (fail_copies) throw DeviceError("copy failed (on purpose)");
    return ForwardingDevice::copy_host_to_device(src, dst, dst_offset, bytes, deps);
  }
  Event copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                            std::uint64_t bytes, std::span<const Event> deps) override {
    if (fail_copies) throw DeviceError("copy failed (on purpose)");
    return ForwardingDevice::copy_device_to_host(src, src_offset, dst, bytes, deps);
  }
  Event copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset, DeviceAllocation dst,
                              std::uint64_t dst_offset, std::uint64_t bytes,
                              std::span<const Event> deps) override {
    if (fail_copies) throw DeviceError("copy failed (on purpose)");
    return ForwardingDevice::copy_device_to_device(src, src_offset, dst, dst_offset, bytes, deps);
  }
  Event copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                       DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                       std::span<const Event> deps) override {
    if (fail_copies) throw DeviceError("copy failed (on purpose)");
    return ForwardingDevice::copy_from_peer(source, src, src_offset, dst, dst_offset, bytes, deps);
  }

  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override {
    return recorded(deps, [&] { return ForwardingDevice::launch(kernel, range, args, deps); });
  }
  Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                             std::span<const KernelArg> args,
                             std::span<const Event> deps) override {
    return recorded(
        deps, [&] { return ForwardingDevice::launch_without_times(kernel, range, args, deps); });
  }

 private:
  template <typename Run>
  Event recorded(std::span<const Event> deps, Run run) {
    if (fail_launches) throw DeviceError("kernel launch failed (on purpose)");
    Event e = run();
    launches.push_back({std::vector<Event>(deps.begin(), deps.end()), e});
    return e;
  }
};

// Holds back every run of a partition from its `hold_from`-th on (counted from 0 per partition)
// until open(): a held kernel stays pending, so the trackers keep its event (they drop finished
// ones) and the wait lists name it.
struct Gate {
  static constexpr std::size_t kPartitions = 2;
  std::array<std::atomic<int>, kPartitions> runs{};
  int hold_from = 0;
  std::promise<void> opened;
  std::shared_future<void> open_future = opened.get_future().share();
  bool is_open = false;
  void open() {
    if (!std::exchange(is_open, true)) opened.set_value();
  }
};

// out[i] = 3 in[i] + c over the partition's range (partition `first * devices / kGrid`).
std::shared_ptr<HostKernel> scale_kernel(std::shared_ptr<Gate> gate, std::size_t devices) {
  return std::make_shared<HostKernel>("scale", [gate, devices](const HostKernelContext& ctx) {
    const std::uint64_t first = ctx.range().offset[0];
    if (gate->runs[first * devices / kGrid].fetch_add(1) >= gate->hold_from) {
      gate->open_future.wait();
    }
    const auto* in = ctx.buffer<std::uint8_t>(0);
    auto* out = ctx.buffer<std::uint8_t>(1);
    const int c = ctx.scalar<int>(2);
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
    }
  });
}

bool holds(const std::vector<Event>& list, const Event& e) {
  return std::find(list.begin(), list.end(), e) != list.end();
}

// Ping-pong on `devices` recording host devices: A scales x into y, B y into x, `rounds` whole
// rounds (A then B) through the repeat path, so that the later rounds are replayed; the last
// round's kernels and every later one are held at the gate until open(). x and y follow on the
// host.
struct ReplayedPingPong {
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::vector<std::shared_ptr<RecordingDevice>> devices;
  Runtime rt;
  std::vector<std::uint8_t> x, y;
  BufferId bx, by;
  std::shared_ptr<const ScaleLaunch> a, b;
  static constexpr int kA = 5, kB = 11;

  ReplayedPingPong(std::size_t count, int rounds)
      : devices(recording(count)),
        rt(registry(devices), RuntimeOptions{UpdateStrategy::lazy}),
        x(kGrid),
        y(kGrid),
        bx(rt.create_buffer(kGrid, "x")),
        by(rt.create_buffer(kGrid, "y")),
        a(scale_launch(bx, by, kA, count, kGrid, scale_kernel(gate, count))),
        b(scale_launch(by, bx, kB, count, kGrid, scale_kernel(gate, count))) {
    gate->hold_from = 2 * (rounds - 1);
    for (std::uint64_t i = 0; i < kGrid; ++i) {
      x[i] = static_cast<std::uint8_t>(i * 7 + 1);
      y[i] = static_cast<std::uint8_t>(i * 5 + 2);
    }
    rt.write_blocking(bx, 0, std::as_bytes(std::span(x)));
    rt.write_blocking(by, 0, std::as_bytes(std::span(y)));
    for (int r = 0; r < rounds; ++r) {
      run_a();
      run_b();
    }
  }
  ReplayedPingPong(const ReplayedPingPong&) = delete;
  ReplayedPingPong& operator=(const ReplayedPingPong&) = delete;
  ~ReplayedPingPong() { gate->open(); }  // (before the runtime waits for its kernels)
  static std::vector<std::shared_ptr<RecordingDevice>> recording(std::size_t count) {
    const DeviceRegistry hosts = make_host_devices(count);
    std::vector<std::shared_ptr<RecordingDevice>> out;
    for (std::size_t d = 0; d < count; ++d) {
      out.push_back(std::make_shared<RecordingDevice>(hosts.shared(d)));
    }
    return out;
  }
  static DeviceRegistry registry(const std::vector<std::shared_ptr<RecordingDevice>>& devices) {
    DeviceRegistry r;
    for (const auto& d : devices) r.add(d);
    return r;
  }
  void launch(const std::shared_ptr<const ScaleLaunch>& l, bool token = true) {
    rt.core().launch_partitioned(l->args, l->partitions, nullptr,
                                 token ? std::shared_ptr<const void>(l) : nullptr);
  }
  void run_a() {
    launch(a);
    scale_flat(x, y, kA);
  }
  void run_b() {
    launch(b);
    scale_flat(y, x, kB);
  }
  void expect_bytes() {
    gate->open();
    std::vector<std::uint8_t> out(kGrid);
    rt.read_blocking(bx, 0, std::as_writable_bytes(std::span(out)));
    EXPECT_EQ(out, x) << "x";
    rt.read_blocking(by, 0, std::as_writable_bytes(std::span(out)));
    EXPECT_EQ(out, y) << "y";
  }
  RecordingDevice::Launch& last(std::size_t device, std::size_t back = 0) {
    auto& l = devices[device]->launches;
    return l[l.size() - 1 - back];
  }
};

TEST(PeriodicReplay, TheCyclesFirstLaunchAfterAReplayWaitsForKernelsOfItsLastRoundOnly) {
  ReplayedPingPong c(1, 12);
  ASSERT_GT(c.rt.core().periodic_replays(), 4U) << "the ping-pong was not replayed";
  const Event last_a = c.last(0, 1).event;
  const Event last_b = c.last(0).event;
  // A query makes the replayed state real; it is no operation, so A still repeats (and may skip
  // its directory steps: then it waits for its device's last kernel too).
  (void)c.rt.core().stats();
  EXPECT_EQ(c.rt.core().periodic_materializations(), 1U);
  c.run_a();
  const std::vector<Event>& waits = c.last(0).waits;
  EXPECT_TRUE(holds(waits, last_b)) << "A did not wait for B's last run (x's last writer)";
  for (const Event& e : waits) {
    EXPECT_TRUE(e == last_a || e == last_b)
        << "A waited for a kernel from before the last round (" << waits.size() << " events)";
  }
  c.run_b();
  c.expect_bytes();
}

TEST(PeriodicReplay, AReplayedLaunchWhoseKernelFailsLeavesItsBuffersLastReaderToBeWaitedFor) {
  ReplayedPingPong c(1, 12);
  ASSERT_GT(c.rt.core().periodic_replays(), 4U) << "the ping-pong was not replayed";
  EXPECT_EQ(c.rt.core().periodic_materializations(), 0U);
  const Event last_b = c.last(0).event;  // y's last reader
  c.devices[0]->fail_launches = true;
  EXPECT_THROW(c.launch(c.a), DeviceError);
  c.devices[0]->fail_launches = false;
  EXPECT_EQ(c.rt.core().periodic_materializations(), 1U) << "the failed launch was no replay";
  // A launch that is no repeat (ordered by the trackers alone) writing y from another buffer:
  // it must wait for B, which read y last (and which it waits for through nothing else).
  std::vector<std::uint8_t> z(kGrid, 9);
  const BufferId bz = c.rt.create_buffer(kGrid, "z");
  c.rt.write_blocking(bz, 0, std::as_bytes(std::span(z)));
  const auto overwrite_y = scale_launch(bz, c.by, 7, 1, kGrid, scale_kernel(c.gate, 1));
  c.launch(overwrite_y, /*token=*/false);
  scale_flat(z, c.y, 7);
  EXPECT_TRUE(holds(c.last(0).waits, last_b))
      << "the next writer of y did not wait for y's last reader (" << c.last(0).waits.size()
      << " events)";
  c.expect_bytes();
}

TEST(PeriodicReplay, AReplayedLaunchFailingOnItsSecondDeviceLeavesItsFirstKernelAsTheLastWriter) {
  ReplayedPingPong c(2, 12);
  ASSERT_GT(c.rt.core().periodic_replays(), 4U) << "the ping-pong was not replayed";
  c.devices[1]->fail_launches = true;
  EXPECT_THROW(c.launch(c.a), DeviceError);
  c.devices[1]->fail_launches = false;
  EXPECT_EQ(c.rt.core().periodic_materializations(), 1U);
  // A's partition on device 0 ran: y's first half is A's, the second half is as before.
  const Event first_half = c.last(0).event;
  std::vector<std::uint8_t> y = c.y;
  scale_flat(c.x, y, ReplayedPingPong::kA);
  std::copy(y.begin(), y.begin() + kGrid / 2, c.y.begin());
  // B, no repeat, reads y: on device 0 after the kernel that wrote its half.
  c.launch(c.b, /*token=*/false);
  scale_flat(c.y, c.x, ReplayedPingPong::kB);
  EXPECT_TRUE(holds(c.last(0).waits, first_half))
      << "B did not wait for the failed replay's kernel that wrote its bytes";
  c.expect_bytes();
}

// out[i] = in[i - 1] + 2 in[i] + in[i + 1] + c (the neighbours inside the grid only), split
// evenly over the devices: each partition reads one byte of its neighbours' halves.
std::shared_ptr<const ScaleLaunch> halo_launch(BufferId in, BufferId out, int c,
                                               std::size_t devices) {
  const auto kernel = std::make_shared<HostKernel>("halo", [](const HostKernelContext& ctx) {
    const std::uint64_t first = ctx.range().offset[0];
    const auto* src = ctx.buffer<std::uint8_t>(0);
    auto* dst = ctx.buffer<std::uint8_t>(1);
    const int add = ctx.scalar<int>(2);
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      const int left = i > 0 ? src[i - 1] : 0;
      const int right = i + 1 < kGrid ? src[i + 1] : 0;
      dst[i] = static_cast<std::uint8_t>((left + 2 * src[i] + right + add) & 0xFF);
    }
  });
  auto l = std::const_pointer_cast<ScaleLaunch>(scale_launch(in, out, c, devices, kGrid, kernel));
  for (LaunchPartition& p : l->partitions) {
    const std::uint64_t first = p.range.offset[0];
    const std::uint64_t last = first + p.range.global[0];
    p.accesses[0].reads = IntervalSet{{first > 0 ? first - 1 : 0, std::min(last + 1, kGrid)}};
  }
  return l;
}

void halo_flat(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out, int c,
               std::uint64_t first = 0, std::uint64_t last = kGrid) {
  for (std::uint64_t i = first; i < last; ++i) {
    const int left = i > 0 ? in[i - 1] : 0;
    const int right = i + 1 < kGrid ? in[i + 1] : 0;
    out[i] = static_cast<std::uint8_t>((left + 2 * in[i] + right + c) & 0xFF);
  }
}

// A replayed halo ping-pong whose step fails on its second device: the first device's kernel ran
// and rewrote its half of y, including the byte device 1 holds as its halo from the step before.
// That copy must no longer count as current (publish_failed_launch_locked): the next launch on
// device 1 would read the old value.
TEST(PeriodicReplay, AFailedReplayPublishesTheWritesOfTheKernelsThatRan) {
  const std::vector<std::shared_ptr<RecordingDevice>> devices = ReplayedPingPong::recording(2);
  Runtime rt(ReplayedPingPong::registry(devices), RuntimeOptions{UpdateStrategy::lazy});
  std::vector<std::uint8_t> x(kGrid), y(kGrid);
  for (std::uint64_t i = 0; i < kGrid; ++i) {
    x[i] = static_cast<std::uint8_t>(i * 7 + 1);
    y[i] = static_cast<std::uint8_t>(i * 5 + 2);
  }
  const BufferId bx = rt.create_buffer(kGrid, "x");
  const BufferId by = rt.create_buffer(kGrid, "y");
  rt.write_blocking(bx, 0, std::as_bytes(std::span(x)));
  rt.write_blocking(by, 0, std::as_bytes(std::span(y)));
  const auto a = halo_launch(bx, by, 5, 2);
  const auto b = halo_launch(by, bx, 11, 2);
  const auto launch = [&rt](const std::shared_ptr<const ScaleLaunch>& l, bool token) {
    rt.core().launch_partitioned(l->args, l->partitions, nullptr,
                                 token ? std::shared_ptr<const void>(l) : nullptr);
  };
  for (int r = 0; r < 12; ++r) {
    launch(a, true);
    halo_flat(x, y, 5);
    launch(b, true);
    halo_flat(y, x, 11);
  }
  ASSERT_GT(rt.core().periodic_replays(), 4U) << "the ping-pong was not replayed";
  // (No query before the failed launch: it would make the replayed state real.)
  devices[1]->fail_launches = true;
  EXPECT_THROW(launch(a, true), DeviceError);
  devices[1]->fail_launches = false;
  EXPECT_EQ(rt.core().periodic_materializations(), 1U) << "the failed launch was no replay";
  halo_flat(x, y, 5, 0, kGrid / 2);  // device 0's half ran
  EXPECT_FALSE(rt.core().valid_agents(by, kGrid / 2 - 1).contains(agent_of_device(1)))
      << "device 1's halo copy of a byte the failed launch rewrote is still current";
  launch(b, false);  // the full path: device 1 reads its halo byte of y
  halo_flat(y, x, 11);
  std::vector<std::uint8_t> out(kGrid);
  rt.read_blocking(bx, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, x) << "x";
  rt.read_blocking(by, 0, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, y) << "y";
}

// A replayed halo ping-pong whose launch fails at its first copy (its halo's, before its kernels):
// nothing of it ran, so it publishes nothing. Its catch takes the kernels the replay enqueued
// (none), not the count the launch before it left (kernels_issued_ is reset before the copies).
// Its state is then the one after the launch before it: a twin runtime that stopped there has
// the same directories, and both read the same bytes.
TEST(PeriodicReplay, AReplayWhoseFirstCopyFailsPublishesNothing) {
  struct PingPong {
    std::vector<std::shared_ptr<RecordingDevice>> devices = ReplayedPingPong::recording(2);
    Runtime rt{ReplayedPingPong::registry(devices), RuntimeOptions{UpdateStrategy::lazy}};
    BufferId bx = rt.create_buffer(kGrid, "x");
    BufferId by = rt.create_buffer(kGrid, "y");
    std::shared_ptr<const ScaleLaunch> a = halo_launch(bx, by, 5, 2);
    std::shared_ptr<const ScaleLaunch> b = halo_launch(by, bx, 11, 2);
    void launch(const std::shared_ptr<const ScaleLaunch>& l) const {
      rt.core().launch_partitioned(l->args, l->partitions, nullptr, l);
    }
    std::vector<std::uint8_t> read(BufferId id) {
      std::vector<std::uint8_t> out(kGrid);
      rt.read_blocking(id, 0, std::as_writable_bytes(std::span(out)));
      return out;
    }
  };
  std::vector<std::uint8_t> x(kGrid);
  std::vector<std::uint8_t> y(kGrid);
  for (std::uint64_t i = 0; i < kGrid; ++i) {
    x[i] = static_cast<std::uint8_t>(i * 7 + 1);
    y[i] = static_cast<std::uint8_t>(i * 5 + 2);
  }
  PingPong failed;
  PingPong twin;
  for (PingPong* p : {&failed, &twin}) {
    p->rt.write_blocking(p->bx, 0, std::as_bytes(std::span(x)));
    p->rt.write_blocking(p->by, 0, std::as_bytes(std::span(y)));
    for (int r = 0; r < 12; ++r) {
      p->launch(p->a);
      p->launch(p->b);
    }
  }
  for (int r = 0; r < 12; ++r) {
    halo_flat(x, y, 5);
    halo_flat(y, x, 11);
  }
  ASSERT_GT(failed.rt.core().periodic_replays(), 4U) << "the ping-pong was not replayed";
  // (No query before the failed launch: it would make the replayed state real.)
  const std::array<std::size_t, 2> launches{failed.devices[0]->launches.size(),
                                            failed.devices[1]->launches.size()};
  for (const auto& d : failed.devices) d->fail_copies = true;
  EXPECT_THROW(failed.launch(failed.a), DeviceError);
  for (const auto& d : failed.devices) d->fail_copies = false;
  EXPECT_EQ(failed.rt.core().periodic_materializations(), 1U) << "the failed launch was no replay";
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(failed.devices[d]->launches.size(), launches[d])
        << "a kernel of the failed launch was enqueued on device " << d;
  }
  for (const BufferId id : {failed.bx, failed.by}) {
    EXPECT_TRUE(failed.rt.core().directory_segments(id) == twin.rt.core().directory_segments(id))
        << (id == failed.bx ? "x" : "y")
        << ": the directory after the failed launch is not the one the launch before it left";
  }
  EXPECT_EQ(failed.read(failed.bx), x) << "x";
  EXPECT_EQ(failed.read(failed.by), y) << "y";
  EXPECT_EQ(twin.read(twin.bx), x) << "x (twin)";
  EXPECT_EQ(twin.read(twin.by), y) << "y (twin)";
}

}  // namespace
}  // namespace unimem
