// Event chaining of the OpenCL driver: native events, foreign events bridged by user events, and
// failures travelling along dependencies.
#if UNIMEM_HAVE_OPENCL
#include <gmock/gmock.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "device/opencl/opencl_event.hpp"
#include "opencl_test_devices.hpp"

namespace unimem::opencl {
namespace {

using ::testing::HasSubstr;
using testing::kVectorAddSource;
using testing::OpenCLDevices;
using testing::random_bytes;

using OpenCLEvents = OpenCLDevices;
using OpenCLEventsConcurrency = OpenCLDevices;

TEST_F(OpenCLEvents, ReturnedEventsWrapClEventsAndRunCallbacks) {
  OpenCLDevice& d = device(0);
  DeviceAllocation a = d.allocate(1 << 20);
  const auto data = random_bytes(1 << 20, 7);
  Event up = d.copy_host_to_device(data.data(), a, 0, a.size, {});
  ASSERT_NE(dynamic_cast<ClEventState*>(up.state().get()), nullptr);
  std::atomic<int> calls{0};
  up.on_complete([&] { ++calls; });
  up.wait();
  up.wait();  // idempotent
  EXPECT_TRUE(up.is_complete());
  up.on_complete([&] { ++calls; });  // already finished: runs inline
  d.finish();
  // The first callback runs on POCL's notification thread, possibly a moment after wait().
  for (int i = 0; i < 1000 && calls.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(calls.load(), 2);
  d.free(a);
}

TEST_F(OpenCLEvents, ForeignManualEventCompletedLaterFromAnotherThreadGatesTheCopy) {
  OpenCLDevice& d = device(0);
  constexpr std::size_t n = 4096;
  const auto first = random_bytes(n, 8);
  const auto second = random_bytes(n, 9);
  DeviceAllocation a = d.allocate(n);
  d.copy_host_to_device(first.data(), a, 0, n, {}).wait();

  auto [gate, gate_state] = Event::make_manual();
  Event gated = d.copy_host_to_device(second.data(), a, 0, n, {&gate, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(gated.is_complete()) << "the copy ran before its foreign dependency completed";
  // With an out-of-order queue, an unrelated read is not held up by the gated copy.
  std::vector<std::byte> seen(n);
  if (d.out_of_order()) {
    d.copy_device_to_host(a, 0, seen.data(), n, {}).wait();
    EXPECT_EQ(seen, first);
  }
  std::thread completer([state = gate_state] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    state->complete();
  });
  gated.wait();
  completer.join();
  d.copy_device_to_host(a, 0, seen.data(), n, {}).wait();
  EXPECT_EQ(seen, second);
  d.free(a);
}

TEST_F(OpenCLEvents, AnInOrderQueueHonoursDepsToo) {
  auto in_order = open_devices("0", QueueOrder::in_order);
  ASSERT_EQ(in_order.size(), 1U);
  OpenCLDevice& d = *in_order[0];
  EXPECT_FALSE(d.out_of_order());
  constexpr std::size_t n = 1024;
  const auto data = random_bytes(n, 12);
  DeviceAllocation a = d.allocate(n);
  auto [gate, gate_state] = Event::make_manual();
  Event up = d.copy_host_to_device(data.data(), a, 0, n, {&gate, 1});
  std::vector<std::byte> seen(n);
  Event down = d.copy_device_to_host(a, 0, seen.data(), n, {&up, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(down.is_complete());
  gate_state->complete();
  down.wait();
  EXPECT_EQ(seen, data);
  d.free(a);
}

TEST_F(OpenCLEvents, AFailedForeignDependencyFailsTheOperation) {
  OpenCLDevice& d = device(0);
  DeviceAllocation a = d.allocate(64);
  const auto data = random_bytes(64, 10);

  // Failing after submission: the bridged user event gets an error status.
  auto [later, later_state] = Event::make_manual();
  Event pending = d.copy_host_to_device(data.data(), a, 0, 64, {&later, 1});
  std::thread failer([state = later_state] {
    state->fail(std::make_exception_ptr(DeviceError("upstream copy failed")));
  });
  failer.join();
  EXPECT_THROW(pending.wait(), DeviceError);
  EXPECT_TRUE(pending.is_complete());

  // Already failed at submission: the operation is not enqueued and carries the original error.
  auto [failed, failed_state] = Event::make_manual();
  failed_state->fail(std::make_exception_ptr(DeviceError("earlier failure")));
  Event skipped = d.copy_host_to_device(data.data(), a, 0, 64, {&failed, 1});
  try {
    skipped.wait();
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "earlier failure");
  }
  // A failure propagates along native events too.
  Event after = d.copy_device_to_host(a, 0, std::vector<std::byte>(64).data(), 0, {&pending, 1});
  EXPECT_THROW(after.wait(), DeviceError);
  d.finish();
  d.free(a);
}

TEST_F(OpenCLEvents, EventsOfAnotherContextAreBridged) {
  auto other = open_devices("0");
  ASSERT_EQ(other.size(), 1U);
  OpenCLDevice& here = device(0);
  OpenCLDevice& there = *other[0];
  ASSERT_NE(here.context(), there.context());
  constexpr std::size_t n = 1 << 18;
  const auto data = random_bytes(n, 11);
  DeviceAllocation src = there.allocate(n);
  DeviceAllocation dst = here.allocate(n);
  std::vector<std::byte> staging(n);
  // Through the host: there -> staging -> here, chained only by events of two contexts.
  Event up = there.copy_host_to_device(data.data(), src, 0, n, {});
  Event down = there.copy_device_to_host(src, 0, staging.data(), n, {&up, 1});
  Event across = here.copy_host_to_device(staging.data(), dst, 0, n, {&down, 1});
  std::vector<std::byte> result(n);
  here.copy_device_to_host(dst, 0, result.data(), n, {&across, 1}).wait();
  EXPECT_EQ(result, data);
  there.free(src);
  here.free(dst);
}

// Kernels without a cl_event of their own (launch_without_times, KernelQueue): two vadds in a
// row, the second reading the first's output, held back by a gate before the first.
class QueuedKernels : public OpenCLDevices {
 protected:
  static constexpr std::size_t kItems = 1024;
  static constexpr std::uint64_t kBytes = kItems * sizeof(int);
  void SetUp() override {
    OpenCLDevices::SetUp();
    if (devices_.empty()) return;
    vadd_ = device(0).build_program(kVectorAddSource)->kernel("vadd");
    for (std::size_t i = 0; i < kItems; ++i) {
      x_[i] = static_cast<int>(i);
      y_[i] = static_cast<int>(3 * i + 1);
    }
    OpenCLDevice& d = device(0);
    a_ = d.allocate(kBytes);
    b_ = d.allocate(kBytes);
    c_ = d.allocate(kBytes);
    e_ = d.allocate(kBytes);
    d.copy_host_to_device(reinterpret_cast<const std::byte*>(x_.data()), a_, 0, kBytes, {}).wait();
    d.copy_host_to_device(reinterpret_cast<const std::byte*>(y_.data()), b_, 0, kBytes, {}).wait();
  }
  void TearDown() override {
    if (devices_.empty()) return;
    OpenCLDevices::TearDown();
    for (DeviceAllocation m : {a_, b_, c_, e_}) device(0).free(m);
  }
  NDRange range() const {
    NDRange r;
    r.global[0] = kItems;
    return r;
  }
  // vadd's arguments for c = a + b and for e = c + b.
  std::array<KernelArg, 3> c_from_a_and_b() const {
    return {KernelArg::of_buffer(a_), KernelArg::of_buffer(b_), KernelArg::of_buffer(c_)};
  }
  std::array<KernelArg, 3> e_from_c_and_b() const {
    return {KernelArg::of_buffer(c_), KernelArg::of_buffer(b_), KernelArg::of_buffer(e_)};
  }
  // c = a + b, then e = c + b: the second waits for the first (as the runtime would ask), or,
  // with `second_waits` false, only through the kernel queue.
  std::pair<Event, Event> two_kernels(std::span<const Event> first_deps, bool second_waits = true) {
    OpenCLDevice& d = device(0);
    const auto first = c_from_a_and_b();
    const auto second = e_from_c_and_b();
    Event k1 = d.launch_without_times(*vadd_, range(), first, first_deps);
    Event k2 = d.launch_without_times(*vadd_, range(), second,
                                      second_waits ? std::span(&k1, 1) : std::span<Event>());
    return {k1, k2};
  }
  std::vector<int> read(DeviceAllocation m, std::span<const Event> deps) {
    std::vector<int> out(kItems, -1);
    device(0)
        .copy_device_to_host(m, 0, reinterpret_cast<std::byte*>(out.data()), kBytes, deps)
        .wait();
    return out;
  }
  bool holds_a_plus_2b(const std::vector<int>& e) const {
    for (std::size_t i = 0; i < kItems; ++i) {
      if (e[i] != x_[i] + 2 * y_[i]) return false;
    }
    return true;
  }

  std::shared_ptr<const CompiledKernel> vadd_;
  std::vector<int> x_ = std::vector<int>(kItems), y_ = std::vector<int>(kItems);
  DeviceAllocation a_, b_, c_, e_;
};
using QueuedKernelsConcurrency = QueuedKernels;

TEST_F(QueuedKernels, AKernelWaitingOnlyForItsQueuesKernelsHasNoClEvent) {
  auto [k1, k2] = two_kernels({});
  ASSERT_NE(dynamic_cast<QueuedKernelEventState*>(k1.state().get()), nullptr);
  ASSERT_NE(dynamic_cast<QueuedKernelEventState*>(k2.state().get()), nullptr);
  EXPECT_FALSE(k2.state()->times().has_value());
  k2.wait();
  EXPECT_TRUE(k2.is_complete());
  EXPECT_TRUE(holds_a_plus_2b(read(e_, {})));
}

TEST_F(QueuedKernels, TheKernelQueueRunsAKernelAfterTheEarlierOnesWithoutAWaitList) {
  auto [gate, gate_state] = Event::make_manual();
  // The first waits for a foreign event: it keeps its own cl_event; the second waits for
  // nothing, so only the queue holds it behind the first.
  auto [k1, k2] = two_kernels({&gate, 1}, false);
  EXPECT_NE(dynamic_cast<ClEventState*>(k1.state().get()), nullptr);
  ASSERT_NE(dynamic_cast<QueuedKernelEventState*>(k2.state().get()), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(k1.is_complete());
  EXPECT_FALSE(k2.is_complete()) << "the second kernel ran before the first";
  EXPECT_FALSE(k2.state()->known_complete());
  gate_state->complete();
  k2.wait();
  EXPECT_TRUE(k1.is_complete());
  EXPECT_TRUE(holds_a_plus_2b(read(e_, {})));
}

TEST_F(QueuedKernels, ACopyWaitsForAQueuedKernelThroughAMarker) {
  auto [gate, gate_state] = Event::make_manual();
  auto [k1, k2] = two_kernels({&gate, 1}, false);
  ASSERT_NE(dynamic_cast<QueuedKernelEventState*>(k2.state().get()), nullptr);
  // The copy goes to the device's other queue: it must wait for the marker standing for k2.
  std::vector<int> out(kItems, -1);
  Event down = device(0).copy_device_to_host(e_, 0, reinterpret_cast<std::byte*>(out.data()),
                                             kBytes, {&k2, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(down.is_complete()) << "the copy ran before the kernel it waits for";
  gate_state->complete();
  down.wait();
  EXPECT_TRUE(holds_a_plus_2b(out));
}

TEST_F(QueuedKernels, AFinishedMarkerAnswersForEveryEarlierKernelWithoutTheDriver) {
  std::vector<Event> kernels;
  for (int i = 0; i < 20; ++i) {
    auto [k1, k2] = two_kernels({});
    kernels.push_back(k1);
    kernels.push_back(k2);
  }
  // Nothing asked yet: no marker, so nothing is known finished.
  for (const Event& k : kernels) EXPECT_FALSE(k.state()->known_complete());
  kernels.back().wait();
  // One marker after the last kernel stands for all of them.
  for (const Event& k : kernels) EXPECT_TRUE(k.state()->known_complete());
  EXPECT_TRUE(holds_a_plus_2b(read(e_, {})));
}

TEST_F(QueuedKernels, FinishLeavesEveryQueuedKernelKnownComplete) {
  auto [k1, k2] = two_kernels({});
  device(0).finish();
  EXPECT_TRUE(k1.state()->known_complete());
  EXPECT_TRUE(k2.state()->known_complete());
}

TEST_F(QueuedKernels, AKernelWaitingForAFailedOneFailsToo) {
  auto [gate, gate_state] = Event::make_manual();
  auto [k1, k2] = two_kernels({&gate, 1});
  // Both wait for something that may fail: both keep their own cl_events, whose wait lists
  // carry the failure (a marker on the in-order queue would not).
  EXPECT_NE(dynamic_cast<ClEventState*>(k2.state().get()), nullptr);
  gate_state->fail(std::make_exception_ptr(DeviceError("upstream failed")));
  EXPECT_THROW(k1.wait(), DeviceError);
  EXPECT_THROW(k2.wait(), DeviceError);
  // A command of another queue waiting for it fails as well.
  std::vector<int> out(kItems);
  Event down = device(0).copy_device_to_host(e_, 0, reinterpret_cast<std::byte*>(out.data()),
                                             kBytes, {&k2, 1});
  EXPECT_THROW(down.wait(), DeviceError);
}

TEST_F(QueuedKernels, ATimedLaunchKeepsItsOwnEventWithTimes) {
  device(0).set_profiling(true);
  const auto args = c_from_a_and_b();
  Event timed = device(0).launch(*vadd_, range(), args, {});
  ASSERT_NE(dynamic_cast<ClEventState*>(timed.state().get()), nullptr);
  timed.wait();
  EXPECT_TRUE(timed.state()->times().has_value());
  Event untimed = device(0).launch_without_times(*vadd_, range(), args, {});
  untimed.wait();
  EXPECT_FALSE(untimed.state()->times().has_value());
  device(0).set_profiling(false);
}

TEST_F(QueuedKernels, AKernelAfterATimedOneOfItsQueueNeedsNeitherAWaitListNorAClEvent) {
  device(0).set_profiling(true);
  auto [gate, gate_state] = Event::make_manual();
  const auto first = c_from_a_and_b();
  const auto second = e_from_c_and_b();
  // The queue is held behind a kernel waiting for the gate, so the timed kernel after it (an
  // empty wait list) is still running when the next one is enqueued: the next one used to put
  // it in its wait list and so get a cl_event of its own, and the kernel after that one too,
  // for as long as the host stayed ahead of the device.
  Event held = device(0).launch_without_times(*vadd_, range(), first, {&gate, 1});
  Event timed = device(0).launch(*vadd_, range(), first, {});
  ASSERT_NE(dynamic_cast<ClEventState*>(timed.state().get()), nullptr);
  EXPECT_TRUE(device(0).orders_after(timed));
  Event next = device(0).launch_without_times(*vadd_, range(), second, {&timed, 1});
  EXPECT_NE(dynamic_cast<QueuedKernelEventState*>(next.state().get()), nullptr)
      << "the kernel after a timed kernel of its queue got a wait list";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(next.is_complete()) << "the kernel ran before the ones before it in its queue";
  gate_state->complete();
  next.wait();
  EXPECT_TRUE(held.is_complete());
  EXPECT_TRUE(timed.is_complete());
  EXPECT_TRUE(timed.state()->times().has_value());
  EXPECT_TRUE(holds_a_plus_2b(read(e_, {})));
  device(0).set_profiling(false);
}

TEST_F(QueuedKernels, AKernelAfterATimedOneThatWaitedStillCarriesItsFailure) {
  device(0).set_profiling(true);
  auto [gate, gate_state] = Event::make_manual();
  const auto first = c_from_a_and_b();
  const auto second = e_from_c_and_b();
  // The timed kernel waits for something that may fail: it is no plain kernel of the queue, so
  // the next one keeps it in its wait list (and a cl_event), and its failure reaches the next.
  Event timed = device(0).launch(*vadd_, range(), first, {&gate, 1});
  EXPECT_FALSE(device(0).orders_after(timed));
  Event next = device(0).launch_without_times(*vadd_, range(), second, {&timed, 1});
  EXPECT_NE(dynamic_cast<ClEventState*>(next.state().get()), nullptr);
  gate_state->fail(std::make_exception_ptr(DeviceError("upstream failed")));
  EXPECT_THROW(timed.wait(), DeviceError);
  EXPECT_THROW(next.wait(), DeviceError);
  device(0).set_profiling(false);
}

// Profiling turned on while kernels wait (the unimem platform does so at its first profiling
// queue): later kernels go to a new queue, yet still run after the earlier ones, whose numbers
// stay valid and are continued.
TEST_F(QueuedKernels, TurningProfilingOnKeepsTheKernelsInLaunchOrder) {
  OpenCLDevice& d = device(0);
  auto [gate, gate_state] = Event::make_manual();
  // k1 waits for the gate, k2 (e = a + 2b) and the third (c = e + b) only behind it in the queue.
  auto [k1, k2] = two_kernels({&gate, 1}, false);
  const KernelArg third[] = {KernelArg::of_buffer(e_), KernelArg::of_buffer(b_),
                             KernelArg::of_buffer(c_)};
  const std::uint64_t before = d.launch_in_order(*vadd_, range(), third);
  d.set_profiling(true);
  // e = c + b = a + 4b: it waits for nothing but the device's earlier kernels.
  const KernelArg fourth[] = {KernelArg::of_buffer(c_), KernelArg::of_buffer(b_),
                              KernelArg::of_buffer(e_)};
  const std::uint64_t after = d.launch_in_order(*vadd_, range(), fourth);
  EXPECT_EQ(after, before + 1) << "the new kernel queue does not continue the numbering";
  Event last = d.in_order_event(after);
  Event earlier = d.in_order_event(before);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(last.is_complete()) << "a kernel after the switch ran before the earlier ones";
  EXPECT_FALSE(earlier.is_complete());
  EXPECT_FALSE(d.in_order_finished(before));
  gate_state->complete();
  last.wait();
  EXPECT_TRUE(earlier.is_complete());
  EXPECT_TRUE(d.in_order_finished(before));
  EXPECT_TRUE(k2.is_complete());
  const std::vector<int> e = read(e_, {});
  for (std::size_t i = 0; i < kItems; ++i) {
    ASSERT_EQ(e[i], x_[i] + 4 * y_[i]) << "item " << i;
  }
  // What came after the switch is profiled.
  const auto first = c_from_a_and_b();
  Event timed = d.launch(*vadd_, range(), first, {});
  timed.wait();
  EXPECT_TRUE(timed.state()->times().has_value());
  d.set_profiling(false);
  Event untimed = d.launch(*vadd_, range(), first, {});
  untimed.wait();
  EXPECT_FALSE(untimed.state()->times().has_value());
  d.finish();
}

TEST_F(QueuedKernels, AKernelOnAnotherDeviceWaitsForAQueuedKernel) {
  if (!need_two_peers()) GTEST_SKIP() << "needs two devices in one OpenCL context";
  auto [gate, gate_state] = Event::make_manual();
  auto [k1, k2] = two_kernels({&gate, 1}, false);
  ASSERT_NE(dynamic_cast<QueuedKernelEventState*>(k2.state().get()), nullptr);
  // Device 1 reads e (device 0's allocation, one context) after k2, into its own copy.
  OpenCLDevice& other = device(1);
  DeviceAllocation there = other.allocate(kBytes);
  Event across = other.copy_from_peer(device(0), e_, 0, there, 0, kBytes, {&k2, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(across.is_complete());
  gate_state->complete();
  std::vector<int> out(kItems, -1);
  other
      .copy_device_to_host(there, 0, reinterpret_cast<std::byte*>(out.data()), kBytes, {&across, 1})
      .wait();
  EXPECT_TRUE(holds_a_plus_2b(out));
  other.free(there);
}

// Threads launching, querying and waiting for queued kernels of one device at once (TSan).
TEST_F(QueuedKernelsConcurrency, ThreadsQueryAndWaitForQueuedKernelsWhileOthersLaunch) {
  constexpr int kThreads = 3, kRounds = 60;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      OpenCLDevice& d = device(0);
      DeviceAllocation out = d.allocate(kBytes);
      const KernelArg args[] = {KernelArg::of_buffer(a_), KernelArg::of_buffer(b_),
                                KernelArg::of_buffer(out)};
      for (int r = 0; r < kRounds; ++r) {
        Event k = d.launch_without_times(*vadd_, range(), args, {});
        if (r % 3 == 0) (void)k.is_complete();
        if (r % 5 == 0) k.wait();
        if (r % 7 == 0) {
          std::vector<int> seen(kItems);
          d.copy_device_to_host(out, 0, reinterpret_cast<std::byte*>(seen.data()), kBytes, {&k, 1})
              .wait();
          for (std::size_t i = 0; i < kItems; ++i) wrong[t] += seen[i] != x_[i] + y_[i];
        }
      }
      d.finish();
      d.free(out);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST_F(OpenCLEventsConcurrency, ThreadsLaunchingOneKernelOnTwoDevicesDoNotMixArguments) {
  const std::size_t devices = std::min<std::size_t>(devices_.size(), 2);
  auto vadd = device(0).build_program(kVectorAddSource)->kernel("vadd");
  const bool shared_context = devices == 2 && devices_[1]->context() == devices_[0]->context();
  constexpr std::size_t n = 256;
  constexpr int rounds = 20;
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (std::size_t t = 0; t < 4; ++t) {
    OpenCLDevice& d = (shared_context && t % 2 == 1) ? device(1) : device(0);
    threads.emplace_back([&, t, dptr = &d] {
      const std::uint64_t bytes = n * sizeof(int);
      DeviceAllocation a = dptr->allocate(bytes), b = dptr->allocate(bytes),
                       c = dptr->allocate(bytes);
      std::vector<int> x(n), y(n), z(n);
      for (int r = 0; r < rounds; ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          x[i] = static_cast<int>(t * 100000 + r * 1000 + i);
          y[i] = static_cast<int>(t);
        }
        const Event ready[] = {
            dptr->copy_host_to_device(reinterpret_cast<std::byte*>(x.data()), a, 0, bytes, {}),
            dptr->copy_host_to_device(reinterpret_cast<std::byte*>(y.data()), b, 0, bytes, {})};
        NDRange range;
        range.global[0] = n;
        const KernelArg args[] = {KernelArg::of_buffer(a), KernelArg::of_buffer(b),
                                  KernelArg::of_buffer(c)};
        Event ran = dptr->launch(*vadd, range, args, ready);
        dptr->copy_device_to_host(c, 0, reinterpret_cast<std::byte*>(z.data()), bytes, {&ran, 1})
            .wait();
        for (std::size_t i = 0; i < n; ++i) mismatches[t] += z[i] != x[i] + y[i];
      }
      dptr->free(a);
      dptr->free(b);
      dptr->free(c);
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace unimem::opencl
#endif
