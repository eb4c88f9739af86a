#include "device/host/host_device.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "device/host/host_platform.hpp"
#include "device/work_queue.hpp"

namespace unimem {
namespace {

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

std::vector<std::byte> iota_bytes(std::size_t n, int start = 0) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>((start + static_cast<int>(i)) & 0xFF);
  return out;
}

TEST(HostDevice, CopiesRoundTripThroughDeviceMemory) {
  HostDevice dev("host:0");
  auto a = dev.allocate(16);
  auto src = iota_bytes(16, 1);
  std::vector<std::byte> dst(16);
  Event up = dev.copy_host_to_device(src.data(), a, 0, 16, {});
  Event down = dev.copy_device_to_host(a, 4, dst.data(), 8, std::span(&up, 1));
  down.wait();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data() + 4, 8));
  dev.free(a);
  EXPECT_EQ(dev.allocated_bytes(), 0u);
}

TEST(HostDevice, FreshAllocationHoldsPoisonNotZeros) {
  HostDeviceOptions opt;
  opt.poison = std::byte{0xAB};
  HostDevice dev("host:0", opt);
  auto a = dev.allocate(4);
  std::vector<std::byte> out(4);
  dev.copy_device_to_host(a, 0, out.data(), 4, {}).wait();
  EXPECT_EQ(out, bytes_of({0xAB, 0xAB, 0xAB, 0xAB}));
  dev.free(a);
}

TEST(HostDevice, CapacityIsEnforcedWithClearError) {
  HostDeviceOptions opt;
  opt.capacity = 100;
  HostDevice dev("host:7", opt);
  auto a = dev.allocate(60);
  try {
    (void)dev.allocate(50);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("host:7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("40 of 100"), std::string::npos) << e.what();
  }
  dev.free(a);
  auto b = dev.allocate(100);
  dev.free(b);
}

TEST(HostDevice, OutOfRangeCopyThrowsPreconditionNamingRange) {
  HostDevice dev("host:0");
  auto a = dev.allocate(8);
  std::vector<std::byte> buf(16);
  try {
    (void)dev.copy_host_to_device(buf.data(), a, 4, 8, {});
    FAIL();
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 12)"), std::string::npos) << e.what();
  }
  HostDevice other("host:1");
  auto b = other.allocate(8);
  EXPECT_THROW((void)dev.copy_device_to_host(b, 0, buf.data(), 8, {}), PreconditionError);
  EXPECT_THROW(dev.free(b), DeviceError);
  dev.free(a);
  other.free(b);
}

TEST(HostDevice, DeviceToDeviceWithinOneDevice) {
  HostDevice dev("host:0");
  auto a = dev.allocate(8);
  auto b = dev.allocate(8);
  auto src = iota_bytes(8, 10);
  std::vector<std::byte> out(8);
  Event e1 = dev.copy_host_to_device(src.data(), a, 0, 8, {});
  Event e2 = dev.copy_device_to_device(a, 2, b, 0, 4, std::span(&e1, 1));
  dev.copy_device_to_host(b, 0, out.data(), 4, std::span(&e2, 1)).wait();
  EXPECT_EQ(0, std::memcmp(out.data(), src.data() + 2, 4));
  dev.free(a);
  dev.free(b);
}

TEST(HostDevice, PeerCopiesFollowOptions) {
  auto reg = make_host_devices(2);
  auto& d0 = dynamic_cast<HostDevice&>(reg.at(0));
  auto& d1 = dynamic_cast<HostDevice&>(reg.at(1));
  EXPECT_TRUE(d1.can_copy_from_peer(d0));
  auto a = d0.allocate(8);
  auto b = d1.allocate(8);
  auto src = iota_bytes(8, 3);
  std::vector<std::byte> out(8);
  Event e1 = d0.copy_host_to_device(src.data(), a, 0, 8, {});
  Event e2 = d1.copy_from_peer(d0, a, 0, b, 0, 8, std::span(&e1, 1));
  d1.copy_device_to_host(b, 0, out.data(), 8, std::span(&e2, 1)).wait();
  EXPECT_EQ(out, src);
  d0.free(a);
  d1.free(b);

  HostDeviceOptions no_peer;
  no_peer.peer_copies = false;
  auto reg2 = make_host_devices(2, no_peer);
  EXPECT_FALSE(reg2.at(1).can_copy_from_peer(reg2.at(0)));
  EXPECT_TRUE(reg2.at(1).can_copy_from_peer(reg2.at(1)));
  auto c = reg2.at(0).allocate(4);
  auto d = reg2.at(1).allocate(4);
  EXPECT_THROW((void)reg2.at(1).copy_from_peer(reg2.at(0), c, 0, d, 0, 4, {}), DeviceError);
  reg2.at(0).free(c);
  reg2.at(1).free(d);
}

TEST(HostDevice, KernelSeesDevicePointersScalarsAndRange) {
  HostDevice dev("host:0");
  auto a = dev.allocate(16 * sizeof(int));
  auto kernel = std::make_shared<HostKernel>("fill", [](const HostKernelContext& ctx) {
    int* out = ctx.buffer<int>(0);
    const int base = ctx.scalar<int>(1);
    int* scratch = ctx.buffer<int>(2);
    scratch[0] = base;
    const auto& r = ctx.range();
    for (std::uint64_t i = r.offset[0]; i < r.offset[0] + r.global[0]; ++i) {
      out[i] = scratch[0] + static_cast<int>(i);
    }
  });
  std::vector<int> zeros(16, 0);
  Event init =
      dev.copy_host_to_device(reinterpret_cast<const std::byte*>(zeros.data()), a, 0, a.size, {});
  NDRange range;
  range.offset[0] = 4;
  range.global[0] = 8;
  std::vector<KernelArg> args{KernelArg::of_buffer(a), KernelArg::of_scalar(100),
                              KernelArg::of_local(sizeof(int))};
  Event k = dev.launch(*kernel, range, args, std::span(&init, 1));
  kernel.reset();  // the device keeps what it needs
  args.clear();
  std::vector<int> out(16);
  dev.copy_device_to_host(a, 0, reinterpret_cast<std::byte*>(out.data()), a.size, std::span(&k, 1))
      .wait();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], (i >= 4 && i < 12) ? 100 + i : 0) << i;
  }
  dev.free(a);
}

class ForeignKernel final : public CompiledKernel {
 public:
  [[nodiscard]] const std::string& name() const override { return name_; }

 private:
  std::string name_ = "foreign";
};

TEST(HostDevice, RejectsForeignKernelsAndForeignBuffers) {
  HostDevice dev("host:0");
  HostDevice other("host:1");
  ForeignKernel foreign;
  EXPECT_THROW((void)dev.launch(foreign, NDRange{}, {}, {}), DeviceError);
  auto b = other.allocate(4);
  HostKernel k("k", [](const HostKernelContext&) {});
  std::vector<KernelArg> args{KernelArg::of_buffer(b)};
  try {
    (void)dev.launch(k, NDRange{}, args, {});
    FAIL();
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0"), std::string::npos) << e.what();
  }
  other.free(b);
}

TEST(HostDevice, KernelExceptionFailsItsEventAndDependents) {
  HostDevice dev("host:0");
  HostKernel bad("bad", [](const HostKernelContext&) { throw std::runtime_error("boom"); });
  Event k = dev.launch(bad, NDRange{}, {}, {});
  EXPECT_THROW(k.wait(), std::runtime_error);
  auto a = dev.allocate(4);
  std::vector<std::byte> src(4);
  Event after = dev.copy_host_to_device(src.data(), a, 0, 4, std::span(&k, 1));
  EXPECT_THROW(after.wait(), std::runtime_error);
  dev.free(a);
}

TEST(HostDevice, OperationWaitsForManualDependency) {
  HostDevice dev("host:0");
  auto a = dev.allocate(4);
  auto [gate, gate_state] = Event::make_manual();
  auto src = iota_bytes(4, 7);
  Event up = dev.copy_host_to_device(src.data(), a, 0, 4, std::span(&gate, 1));
  // An independent operation is not stuck behind the gated one.
  std::vector<std::byte> out(4);
  HostKernel noop("noop", [](const HostKernelContext&) {});
  dev.launch(noop, NDRange{}, {}, {}).wait();
  EXPECT_FALSE(up.is_complete());
  gate_state->complete();
  dev.copy_device_to_host(a, 0, out.data(), 4, std::span(&up, 1)).wait();
  EXPECT_EQ(out, src);
  dev.finish();
  dev.free(a);
}

TEST(DeviceRegistry, IndexesNamesAndRejectsDuplicates) {
  auto reg = make_host_devices(16);
  EXPECT_EQ(reg.size(), 16u);
  EXPECT_EQ(reg.at(15).name(), "host:15");
  EXPECT_EQ(reg.index_of("host:3"), 3u);
  EXPECT_EQ(reg.at(0).driver(), "host");
  EXPECT_THROW((void)reg.at(16), PreconditionError);
  EXPECT_THROW((void)reg.index_of("nope"), PreconditionError);
  EXPECT_THROW(reg.add(std::make_shared<HostDevice>("host:0")), PreconditionError);
  EXPECT_THROW((void)make_host_devices(0), PreconditionError);
}

TEST(WorkQueue, TimingRecordsWhenEachOperationRanOnlyWhileOn) {
  detail::WorkQueue q("timed");
  Event untimed = q.submit([] {}, {});
  untimed.wait();
  EXPECT_FALSE(untimed.times().has_value());
  q.set_timing(true);
  Event timed = q.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, {});
  timed.wait();
  ASSERT_TRUE(timed.times().has_value());
  EXPECT_TRUE(timed.times()->host_clock);
  EXPECT_GE(timed.times()->end - timed.times()->start, 2'000'000);
}

TEST(WorkQueue, DestroyingFailsOperationsStillWaiting) {
  auto [gate, gate_state] = Event::make_manual();
  Event pending;
  {
    detail::WorkQueue q("q");
    pending = q.submit([] {}, std::span(&gate, 1));
  }
  gate_state->complete();
  EXPECT_THROW(pending.wait(), DeviceError);
}

// Sixteen devices pass a token around a ring through peer copies, each hop a kernel that adds
// its index: the result proves both ordering through events and that workers run in parallel.
TEST(HostDeviceConcurrency, SixteenDevicesRingOfDependentKernels) {
  constexpr std::size_t kDevices = 16;
  constexpr int kRounds = 4;
  auto reg = make_host_devices(kDevices);
  std::vector<DeviceAllocation> mem;
  for (std::size_t i = 0; i < kDevices; ++i) mem.push_back(reg.at(i).allocate(sizeof(long)));
  HostKernel add("add",
                 [](const HostKernelContext& ctx) { *ctx.buffer<long>(0) += ctx.scalar<long>(1); });
  long zero = 0;
  Event last = reg.at(0).copy_host_to_device(reinterpret_cast<const std::byte*>(&zero), mem[0], 0,
                                             sizeof(long), {});
  long expected = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < kDevices; ++i) {
      std::vector<KernelArg> args{KernelArg::of_buffer(mem[i]),
                                  KernelArg::of_scalar(static_cast<long>(i + 1))};
      last = reg.at(i).launch(add, NDRange{}, args, std::span(&last, 1));
      expected += static_cast<long>(i + 1);
      const std::size_t next = (i + 1) % kDevices;
      last = reg.at(next).copy_from_peer(reg.at(i), mem[i], 0, mem[next], 0, sizeof(long),
                                         std::span(&last, 1));
    }
  }
  long out = -1;
  reg.at(0)
      .copy_device_to_host(mem[0], 0, reinterpret_cast<std::byte*>(&out), sizeof(long),
                           std::span(&last, 1))
      .wait();
  EXPECT_EQ(out, expected);
  for (std::size_t i = 0; i < kDevices; ++i) reg.at(i).free(mem[i]);
}

TEST(HostDeviceConcurrency, ManyThreadsSubmitIndependentWork) {
  auto reg = make_host_devices(4);
  constexpr int kThreads = 4;
  constexpr int kOps = 50;
  std::atomic<int> ran{0};
  HostKernel count("count", [&ran](const HostKernelContext&) { ran.fetch_add(1); });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<Event> events;
      for (int i = 0; i < kOps; ++i) {
        Device& d = reg.at(rng() % reg.size());
        events.push_back(
            d.launch(count, NDRange{}, {},
                     events.empty() ? std::span<const Event>{} : std::span(&events.back(), 1)));
      }
      wait_all(events);
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < reg.size(); ++i) reg.at(i).finish();
  EXPECT_EQ(ran.load(), kThreads * kOps);
}

// Two devices whose operations wait on each other's events in both directions must not deadlock.
TEST(HostDeviceConcurrency, CrossDependenciesDoNotDeadlock) {
  auto reg = make_host_devices(2);
  std::vector<int> order;
  std::mutex m;
  auto step = [&](int id) {
    return HostKernel("step", [&, id](const HostKernelContext&) {
      std::lock_guard lock(m);
      order.push_back(id);
    });
  };
  auto [gate, gate_state] = Event::make_manual();
  HostKernel k1 = step(1), k2 = step(2), k3 = step(3), k4 = step(4);
  Event e1 = reg.at(0).launch(k1, NDRange{}, {}, std::span(&gate, 1));
  Event e2 = reg.at(1).launch(k2, NDRange{}, {}, std::span(&e1, 1));
  Event e3 = reg.at(0).launch(k3, NDRange{}, {}, std::span(&e2, 1));
  Event e4 = reg.at(1).launch(k4, NDRange{}, {}, std::span(&e3, 1));
  gate_state->complete();
  e4.wait();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace unimem
