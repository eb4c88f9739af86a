// Event chaining of the OpenCL driver: native events, foreign events bridged by user events, and
// failures travelling along dependencies.
#if UNIMEM_HAVE_OPENCL
#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

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
