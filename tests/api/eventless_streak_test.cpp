// The eventless streak (RuntimeCore::launch_again with eventless; "The eventless streak" in
// runtime_core.cpp) at its edges: a streak whose close fails while the runtime is destroyed, and
// close_eventless once the streak's kernels are known finished. The device is an OpenCL device
// behind a forwarding device whose in-order events can be made to fail (a failing flush).

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unimem/errors.hpp>
#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "device/opencl/opencl_context.hpp"
#include "forwarding_device.hpp"

namespace unimem {
namespace {

constexpr std::uint32_t kItems = 1024;

constexpr const char* kSource = R"(
__kernel void add_one(__global uint* x) {
  const size_t i = get_global_id(0);
  x[i] = x[i] + 1u;
}
)";

// Every hook forwards to `inner`; in_order_event throws while fail_in_order_events is set, and
// the in-order launches and finish() calls are counted.
class FlushFailingDevice final : public testing::ForwardingDevice {
 public:
  explicit FlushFailingDevice(std::shared_ptr<Device> inner)
      : ForwardingDevice(std::move(inner), "flush failing") {}

  std::atomic<bool> fail_in_order_events{false};
  std::atomic<int> in_order_launches{0};
  std::atomic<int> in_order_events{0};
  std::atomic<int> finishes{0};

  std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                std::span<const KernelArg> args) override {
    ++in_order_launches;
    return ForwardingDevice::launch_in_order(kernel, range, args);
  }
  std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                      std::span<const KernelArg> args) override {
    ++in_order_launches;
    return ForwardingDevice::launch_in_order_again(kernel, range, args);
  }
  Event in_order_event(std::uint64_t sequence) override {
    ++in_order_events;
    if (fail_in_order_events) throw DeviceError("clFlush failed (on purpose)");
    return ForwardingDevice::in_order_event(sequence);
  }
  void finish() override {
    ++finishes;
    ForwardingDevice::finish();
  }
};

struct Streaks {
  explicit Streaks(std::shared_ptr<FlushFailingDevice> device)
      : rt(registry(std::move(device)), options()), program(rt, kSource) {
    program.set_log([](const std::string&) {});
    std::vector<std::uint32_t> init(kItems);
    for (std::uint32_t i = 0; i < kItems; ++i) init[i] = i;
    x = rt.create_buffer(kItems * sizeof(std::uint32_t));
    rt.write_blocking(x, 0, std::as_bytes(std::span(init)));
    range.global[0] = kItems;
    range.local[0] = 64;
    // A first launch, finished: the next one then waits for no event (an unfinished kernel with
    // a cl_event of its own, such as one that waited for the write, would be waited for by
    // every lean repeat after it, each getting one too, and none would go eventless).
    launch(1);
    rt.finish();
  }
  static DeviceRegistry registry(std::shared_ptr<FlushFailingDevice> device) {
    DeviceRegistry r;
    r.add(std::move(device));
    return r;
  }
  static RuntimeOptions options() {
    RuntimeOptions o{UpdateStrategy::lazy};
    o.min_split_bytes = 0;
    return o;
  }
  // `times` launches of add_one as the OpenCL platform makes them: the lean repeat when the
  // runtime takes it (eventless), the full launch otherwise. Returns how many went eventless.
  int launch(int times) {
    int eventless = 0;
    for (int t = 0; t < times; ++t) {
      if (ticket) {
        const std::optional<Event> e = program.core().launch_again(ticket, true);
        if (e) {
          eventless += e->is_null() ? 1 : 0;
          continue;
        }
      }
      program.core().launch("add_one", range, std::vector<Arg>{Arg::buffer(x)}, {}, nullptr,
                            nullptr, &ticket);
    }
    return eventless;
  }

  Runtime rt;
  Program program;
  BufferId x;
  NDRange range;
  std::shared_ptr<const void> ticket;
};

std::shared_ptr<FlushFailingDevice> failing_device() {
  DeviceRegistry found = opencl::make_opencl_devices("0");
  if (found.empty()) return nullptr;
  return std::make_shared<FlushFailingDevice>(found.shared(0));
}

// ~RuntimeCore closes an open streak; when that close throws (in_order_event's flush failed),
// the destructor must neither throw nor end the process: it waits for the streak's kernels
// (the device finishes) and goes on.
TEST(EventlessStreakEdges, ADestructorWhoseStreakFailsToCloseWaitsForItsKernels) {
  const std::shared_ptr<FlushFailingDevice> device = failing_device();
  if (!device) GTEST_SKIP() << "needs an OpenCL device";
  int eventless = 0;
  int finishes_before = 0;
  {
    Streaks s(device);
    eventless = s.launch(40);
    finishes_before = device->finishes.load();
    device->fail_in_order_events = true;
    ASSERT_GE(eventless, 38) << "the launches did not run as an eventless streak";
    ASSERT_EQ(device->in_order_events.load(), 0) << "the streak closed before the destructor";
  }  // ~Program, ~Runtime: the streak's close fails here
  EXPECT_GE(device->in_order_events.load(), 1) << "the destructor did not try to close the streak";
  EXPECT_GT(device->finishes.load(), finishes_before) << "the streak's kernels were not waited for";
  EXPECT_EQ(device->in_order_launches.load(), eventless);
}

// close_eventless gives an event for the eventless launches that may still run, and none once
// they are known finished (an event of them was waited for): a later clFinish makes no event
// for a device whose streak is done, until its next eventless launch.
TEST(EventlessStreakEdges, CloseEventlessForgetsKernelsKnownFinished) {
  const std::shared_ptr<FlushFailingDevice> device = failing_device();
  if (!device) GTEST_SKIP() << "needs an OpenCL device";
  Streaks s(device);
  int launched = s.launch(30);
  ASSERT_GE(launched, 28) << "the launches did not run as an eventless streak";
  const Event first = s.rt.core().close_eventless();
  ASSERT_FALSE(first.is_null());
  first.wait();
  const int events = device->in_order_events.load();
  EXPECT_TRUE(s.rt.core().close_eventless().is_null())
      << "an event again for kernels known finished";
  EXPECT_EQ(device->in_order_events.load(), events) << "an in-order event made for them";
  // A new streak: its kernels are waited for again.
  const int more = s.launch(10);
  launched += more;
  ASSERT_GE(more, 8);
  const Event second = s.rt.core().close_eventless();
  ASSERT_FALSE(second.is_null()) << "the new streak's kernels were forgotten";
  second.wait();
  EXPECT_TRUE(s.rt.core().close_eventless().is_null());
  std::vector<std::uint32_t> out(kItems);
  s.rt.read_blocking(s.x, 0, std::as_writable_bytes(std::span(out)));
  for (std::uint32_t i = 0; i < kItems; ++i) {
    ASSERT_EQ(out[i], i + 41u) << "item " << i << " after 41 launches (" << launched
                               << " eventless)";
  }
}

}  // namespace
}  // namespace unimem
