// The runtime's in-flight list (RuntimeCore::track): every operation stays in it until it has
// been seen finished (finish() and the destructor wait for it), and a finished one leaves it at
// the next pruning, which comes every RuntimeCore::kPruneInflightEvery operations whatever the
// list's length (it used to follow the length, so a drained backlog stayed until the list had
// doubled). What must hold, with a backlog of launches held behind a gate on a host device:
// - while the gate is closed, no launch behind it leaves the list;
// - after the gate opens and finish(), one period of launches leaves only those launches;
// - the results are those of the launches in order.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kBytes = 64;

// The first run waits until `open` is set; every run adds 1 to each byte of its buffer.
struct GatedIncrement {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  std::atomic<int> runs{0};
  std::shared_ptr<HostKernel> kernel =
      std::make_shared<HostKernel>("increment", [this](const HostKernelContext& ctx) {
        if (runs.fetch_add(1) == 0) opened.wait();
        auto* data = ctx.buffer<std::uint8_t>(0);
        for (std::uint64_t i = 0; i < kBytes; ++i) ++data[i];
      });
};

struct Built {
  std::vector<LaunchArg> args;
  std::vector<LaunchPartition> partitions;
};

std::shared_ptr<const Built> increment_launch(BufferId buffer,
                                              const std::shared_ptr<HostKernel>& kernel) {
  auto b = std::make_shared<Built>();
  b->args = {LaunchArg::of_buffer(buffer, {}, {})};
  LaunchPartition p;
  p.device = 0;
  p.kernel = kernel;
  p.range.dims = 1;
  p.range.global[0] = kBytes;
  const IntervalSet all{{0, kBytes}};
  p.accesses[0] = AccessBytes{all, all, {}};
  b->partitions.push_back(std::move(p));
  return b;
}

// A one-device runtime with a zeroed buffer and the gated increment launch of it.
struct GatedCounts {
  GatedIncrement gated;
  Runtime rt{make_host_devices(1)};
  BufferId buffer = zeroed(rt);
  std::shared_ptr<const Built> launch = increment_launch(buffer, gated.kernel);
  RuntimeCore& core = rt.core();

  static BufferId zeroed(Runtime& rt) {
    const BufferId id = rt.create_buffer(kBytes, "counts");
    const std::vector<std::uint8_t> zeros(kBytes, 0);
    rt.write_blocking(id, 0, std::as_bytes(std::span(zeros)));
    return id;
  }
  void launch_times(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      core.launch_partitioned(launch->args, launch->partitions, nullptr, launch);
    }
  }
  // Every byte was incremented `runs` times (mod 256).
  void expect_runs(std::size_t runs) {
    std::vector<std::uint8_t> host(kBytes);
    rt.read_blocking(buffer, 0, std::as_writable_bytes(std::span(host)));
    const auto expected = static_cast<std::uint8_t>(runs & 0xFF);
    for (std::uint64_t i = 0; i < kBytes; ++i) ASSERT_EQ(host[i], expected) << "byte " << i;
  }
};

TEST(InflightList, KeepsRunningLaunchesAndDropsFinishedOnesWithinOnePeriod) {
  GatedCounts t;
  const std::size_t period = RuntimeCore::kPruneInflightEvery;
  // A backlog of several periods behind the gated first run: none of it may leave the list.
  const std::size_t backlog = 5 * period + 7;
  t.launch_times(backlog);
  EXPECT_GE(t.core.inflight_operations(), backlog) << "a launch still running left the list";
  t.gated.open.set_value();
  t.rt.finish();
  // Everything has finished: one period of launches later only launches of that period remain.
  t.launch_times(period);
  EXPECT_LE(t.core.inflight_operations(), period)
      << "finished operations stayed in the list past the next pruning";
  t.expect_runs(backlog + period);
  EXPECT_EQ(t.gated.runs.load(), static_cast<int>(backlog + period));
}

TEST(InflightList, FinishLeavesNothingInFlightAndTheNextLaunchesRunAfterIt) {
  GatedCounts t;
  const std::size_t backlog = 3 * RuntimeCore::kPruneInflightEvery + 5;
  t.launch_times(backlog);
  t.gated.open.set_value();
  t.rt.finish();
  // finish() waited for every operation and dropped them: none is left for a pruning.
  EXPECT_EQ(t.core.inflight_operations(), 0u) << "finish() left finished operations in the list";
  // Twice more: the list's storage goes back and forth (finish() swaps it with a spare one).
  for (int round = 0; round < 2; ++round) {
    t.launch_times(backlog);
    EXPECT_GT(t.core.inflight_operations(), 0u);
    t.rt.finish();
    EXPECT_EQ(t.core.inflight_operations(), 0u);
  }
  t.expect_runs(3 * backlog);
}

TEST(InflightList, AFailedLaunchIsReportedByEveryFinishUntilAPruningDropsIt) {
  Runtime rt(make_host_devices(1));
  const BufferId buffer = rt.create_buffer(kBytes, "b");
  auto bad = std::make_shared<HostKernel>(
      "bad", [](const HostKernelContext&) { throw std::runtime_error("kernel bad exploded"); });
  const auto launch = increment_launch(buffer, bad);
  RuntimeCore& core = rt.core();
  core.launch_partitioned(launch->args, launch->partitions, nullptr, launch);
  EXPECT_THROW(rt.finish(), std::runtime_error);
  // The failed operation went back into the list: the next finish() reports it again.
  EXPECT_EQ(core.inflight_operations(), 1u);
  EXPECT_THROW(rt.finish(), std::runtime_error);
}

}  // namespace
}  // namespace unimem
