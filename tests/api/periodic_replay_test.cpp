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
#include <atomic>
#include <cstdint>
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

namespace unimem {
namespace {

constexpr std::uint64_t kGrid = 256;

// Records every kernel launch's wait list and event; throws DeviceError instead of launching
// while fail_launches is set.
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

std::shared_ptr<HostKernel> scale_kernel() {
  return std::make_shared<HostKernel>("scale", [](const HostKernelContext& ctx) {
    const auto* in = ctx.buffer<std::uint8_t>(0);
    auto* out = ctx.buffer<std::uint8_t>(1);
    const int c = ctx.scalar<int>(2);
    const std::uint64_t first = ctx.range().offset[0];
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
    }
  });
}

struct Built {
  std::vector<LaunchArg> args;
  std::vector<LaunchPartition> partitions;
};

// out = 3 in + c, split evenly over `devices` (partition d on device d).
std::shared_ptr<const Built> scale_launch(BufferId in, BufferId out, int c, std::size_t devices) {
  auto b = std::make_shared<Built>();
  b->args = {LaunchArg::of_buffer(in, {}, {}), LaunchArg::of_buffer(out, {}, {}),
             LaunchArg::of_scalar(c)};
  const auto kernel = scale_kernel();
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t first = kGrid * d / devices;
    const std::uint64_t last = kGrid * (d + 1) / devices;
    LaunchPartition p;
    p.device = d;
    p.kernel = kernel;
    p.range.dims = 1;
    p.range.offset[0] = first;
    p.range.global[0] = last - first;
    const IntervalSet own{{first, last}};
    p.accesses[0] = AccessBytes{own, {}, {}};
    p.accesses[1] = AccessBytes{{}, own, {}};
    b->partitions.push_back(std::move(p));
  }
  return b;
}

void scale_flat(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out, int c) {
  for (std::uint64_t i = 0; i < kGrid; ++i) {
    out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
  }
}

bool holds(const std::vector<Event>& list, const Event& e) {
  return std::find(list.begin(), list.end(), e) != list.end();
}

// Ping-pong on `devices` recording host devices: A scales x into y, B y into x, `rounds` whole
// rounds (A then B) through the repeat path, so that the later rounds are replayed. x and y
// follow on the host.
struct ReplayedPingPong {
  std::vector<std::shared_ptr<RecordingDevice>> devices;
  Runtime rt;
  std::vector<std::uint8_t> x, y;
  BufferId bx, by;
  std::shared_ptr<const Built> a, b;
  static constexpr int kA = 5, kB = 11;

  ReplayedPingPong(std::size_t count, int rounds)
      : devices(recording(count)),
        rt(registry(devices), RuntimeOptions{UpdateStrategy::lazy}),
        x(kGrid),
        y(kGrid),
        bx(rt.create_buffer(kGrid, "x")),
        by(rt.create_buffer(kGrid, "y")),
        a(scale_launch(bx, by, kA, count)),
        b(scale_launch(by, bx, kB, count)) {
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
  void launch(const std::shared_ptr<const Built>& l, bool token = true) {
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
  // Any other operation makes the replayed state real (this one waits for no kernel).
  (void)c.rt.create_buffer(kGrid, "unrelated");
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
  const std::uint64_t replays = c.rt.core().periodic_replays();
  const Event last_b = c.last(0).event;  // y's last reader
  c.devices[0]->fail_launches = true;
  EXPECT_THROW(c.launch(c.a), DeviceError);
  c.devices[0]->fail_launches = false;
  EXPECT_EQ(c.rt.core().periodic_replays(), replays) << "the failed launch was not a replay";
  EXPECT_EQ(c.rt.core().periodic_materializations(), 1U);
  // A launch that is no repeat (ordered by the trackers alone) writing y: B read y last.
  c.launch(c.a, /*token=*/false);
  scale_flat(c.x, c.y, ReplayedPingPong::kA);
  EXPECT_TRUE(holds(c.last(0).waits, last_b))
      << "the next writer of y did not wait for y's last reader";
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

}  // namespace
}  // namespace unimem
