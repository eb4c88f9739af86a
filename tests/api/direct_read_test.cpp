// Host reads that copy the bytes only devices hold straight into the reader's memory
// (RuntimeOptions::direct_host_reads): byte-exact results, the copies counted (direct_read_bytes,
// home_read_bytes, d2h), the directory left as it was, and every ordering rule kept.
#include "api/runtime_core.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "device/host/host_platform.hpp"

namespace unimem {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> pattern(std::size_t n, int start) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::byte>((start + static_cast<int>(i)) & 0xFF);
  }
  return v;
}

// Adds `delta` (scalar 1) to every byte of [offset, offset + global) of argument 0, after
// `before` returns (a gate for tests that keep the kernel pending).
std::shared_ptr<HostKernel> add_kernel(std::function<void()> before = {}) {
  return std::make_shared<HostKernel>("add", [before](const HostKernelContext& ctx) {
    if (before) before();
    auto* p = ctx.buffer<std::byte>(0);
    const int delta = ctx.scalar<int>(1);
    const auto first = ctx.range().offset[0];
    for (auto i = first; i < first + ctx.range().global[0]; ++i) {
      p[i] = static_cast<std::byte>((std::to_integer<int>(p[i]) + delta) & 0xFF);
    }
  });
}

// One partition per device over [begin, end), each reading and writing its own part.
std::vector<LaunchPartition> split(const std::shared_ptr<HostKernel>& k, std::size_t devices,
                                   std::uint64_t begin, std::uint64_t end) {
  std::vector<LaunchPartition> parts(devices);
  const std::uint64_t each = (end - begin) / devices;
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t first = begin + d * each;
    const std::uint64_t last = d + 1 == devices ? end : first + each;
    parts[d].device = d;
    parts[d].kernel = k;
    parts[d].range.offset[0] = first;
    parts[d].range.global[0] = last - first;
    parts[d].accesses[0] = {IntervalSet{{first, last}}, IntervalSet{{first, last}}, {}};
  }
  return parts;
}

Event add_on(Runtime& rt, BufferId b, std::size_t devices, std::uint64_t begin, std::uint64_t end,
             int delta, std::shared_ptr<HostKernel> k = add_kernel()) {
  const std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {}), LaunchArg::of_scalar(delta)};
  return rt.core().launch_partitioned(args, split(k, devices, begin, end));
}

// `expected` after adding delta to bytes [begin, end).
void add_expected(std::vector<std::byte>& expected, std::uint64_t begin, std::uint64_t end,
                  int delta) {
  for (auto i = begin; i < end; ++i) {
    expected[i] = static_cast<std::byte>((std::to_integer<int>(expected[i]) + delta) & 0xFF);
  }
}

TransferStats since(const TransferStats& after, const TransferStats& before) {
  TransferStats d;
  d.host_to_device = {after.host_to_device.bytes - before.host_to_device.bytes,
                      after.host_to_device.copies - before.host_to_device.copies};
  d.device_to_host = {after.device_to_host.bytes - before.device_to_host.bytes,
                      after.device_to_host.copies - before.device_to_host.copies};
  d.device_to_device = {after.device_to_device.bytes - before.device_to_device.bytes,
                        after.device_to_device.copies - before.device_to_device.copies};
  d.direct_read_bytes = after.direct_read_bytes - before.direct_read_bytes;
  d.home_read_bytes = after.home_read_bytes - before.home_read_bytes;
  d.prefetch_bytes = after.prefetch_bytes - before.prefetch_bytes;
  return d;
}

RuntimeOptions options_with(UpdateStrategy strategy, bool direct = true) {
  RuntimeOptions o{strategy};
  o.direct_host_reads = direct;
  return o;
}

class DirectReadAfterSplitLaunch : public ::testing::TestWithParam<UpdateStrategy> {};

// Lazy and adaptive leave a kernel's output on its device: the read copies each device's part
// straight to the reader (one d2h copy per device, no home pass) and the home copy stays stale.
// Batch and balance write the output home after the kernel: the read copies it out of home.
TEST_P(DirectReadAfterSplitLaunch, EachDevicePartGoesStraightToTheReaderWhenHomeIsStale) {
  const UpdateStrategy strategy = GetParam();
  constexpr std::uint64_t n = 4096;
  for (std::size_t devices = 1; devices <= 4; ++devices) {
    SCOPED_TRACE(std::to_string(devices) + " devices");
    Runtime rt(make_host_devices(devices), options_with(strategy));
    const BufferId b = rt.create_buffer(n, "grid");
    std::vector<std::byte> expected = pattern(n, 3);
    rt.write_blocking(b, 0, expected);
    add_on(rt, b, devices, 0, n, 1);
    add_expected(expected, 0, n, 1);
    const TransferStats before = rt.stats();
    std::vector<std::byte> out(n);
    rt.read_blocking(b, 0, out);
    EXPECT_EQ(out, expected);
    const TransferStats moved = since(rt.stats(), before);
    if (strategy == UpdateStrategy::lazy || strategy == UpdateStrategy::adaptive) {
      EXPECT_EQ(moved.device_to_host.bytes, n);
      EXPECT_EQ(moved.device_to_host.copies, devices);
      EXPECT_EQ(moved.direct_read_bytes, n);
      EXPECT_EQ(moved.home_read_bytes, 0u);  // no memcpy out of the home copy
      EXPECT_EQ(moved.prefetch_bytes, 0u);
      // The directory is unchanged: each part is still current only on its device.
      for (std::size_t d = 0; d < devices; ++d) {
        EXPECT_EQ(rt.core().valid_agents(b, d * (n / devices)), AgentMask::of(agent_of_device(d)));
      }
    } else {
      EXPECT_EQ(moved.device_to_host.bytes, 0u);  // written back after the kernel already
      EXPECT_EQ(moved.direct_read_bytes, 0u);
      EXPECT_EQ(moved.home_read_bytes, n);
      EXPECT_TRUE(rt.core().valid_agents(b, 0).contains(kHostAgent));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, DirectReadAfterSplitLaunch,
                         ::testing::Values(UpdateStrategy::lazy, UpdateStrategy::balance,
                                           UpdateStrategy::batch, UpdateStrategy::adaptive),
                         [](const ::testing::TestParamInfo<UpdateStrategy>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST(DirectRead, OffCopiesStaleBytesHomeFirstThenOutOfTheHomeCopy) {
  constexpr std::uint64_t n = 1024;
  Runtime rt(make_host_devices(2), options_with(UpdateStrategy::lazy, false));
  const BufferId b = rt.create_buffer(n, "grid");
  std::vector<std::byte> expected = pattern(n, 9);
  rt.write_blocking(b, 0, expected);
  add_on(rt, b, 2, 0, n, 5);
  add_expected(expected, 0, n, 5);
  const TransferStats before = rt.stats();
  std::vector<std::byte> out(n);
  rt.read_blocking(b, 0, out);
  EXPECT_EQ(out, expected);
  const TransferStats moved = since(rt.stats(), before);
  EXPECT_EQ(moved.device_to_host.bytes, n);
  EXPECT_EQ(moved.direct_read_bytes, 0u);
  EXPECT_EQ(moved.home_read_bytes, n);
  EXPECT_TRUE(rt.core().valid_agents(b, 0).contains(kHostAgent));
  EXPECT_TRUE(rt.core().valid_agents(b, n - 1).contains(kHostAgent));
}

// A range over bytes current at home and bytes current only on a device: each part from where it
// is current, in one read. Reading it again copies the device part again (home stays stale).
TEST(DirectRead, ARangeStraddlingHomeAndDevicePartsTakesEachFromWhereItIsCurrent) {
  constexpr std::uint64_t n = 300;
  Runtime rt(make_host_devices(2), options_with(UpdateStrategy::lazy));
  const BufferId b = rt.create_buffer(n, "b");
  std::vector<std::byte> expected = pattern(n, 40);
  rt.write_blocking(b, 0, expected);
  add_on(rt, b, 1, 100, 160, 7);  // d0 holds [100, 160)
  add_expected(expected, 100, 160, 7);
  const std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {}), LaunchArg::of_scalar(2)};
  std::vector<LaunchPartition> on_d1 = split(add_kernel(), 1, 160, 200);
  on_d1[0].device = 1;  // d1 holds [160, 200)
  rt.core().launch_partitioned(args, on_d1);
  add_expected(expected, 160, 200, 2);
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    const TransferStats before = rt.stats();
    std::vector<std::byte> out(200);
    rt.read_blocking(b, 50, out);  // [50, 250): home, d0, d1, home
    EXPECT_EQ(out, std::vector<std::byte>(expected.begin() + 50, expected.begin() + 250));
    const TransferStats moved = since(rt.stats(), before);
    EXPECT_EQ(moved.direct_read_bytes, 100u);
    EXPECT_EQ(moved.device_to_host.bytes, 100u);
    EXPECT_EQ(moved.device_to_host.copies, 2u);
    EXPECT_EQ(moved.home_read_bytes, 100u);
  }
  EXPECT_EQ(rt.core().valid_agents(b, 120), AgentMask::of(agent_of_device(0)));
  EXPECT_EQ(rt.core().valid_agents(b, 199), AgentMask::of(agent_of_device(1)));
  EXPECT_EQ(rt.core().valid_agents(b, 99), AgentMask::of(kHostAgent));
  std::vector<std::byte> all(n);
  rt.read_blocking(b, 0, all);
  EXPECT_EQ(all, expected);
}

// The read waits for the kernel that writes its bytes (RAW), and the next kernel writing them on
// the same device waits for the read's copy (WAR): the reader sees exactly the first kernel's
// result. A host write after the read lands at home and the next read takes it from there.
TEST(DirectReadConcurrency, AReadWhileKernelsArePendingSeesExactlyTheStateAtItsSubmission) {
  constexpr std::uint64_t n = 2048;
  Runtime rt(make_host_devices(2), options_with(UpdateStrategy::lazy));
  const BufferId b = rt.create_buffer(n, "b");
  std::vector<std::byte> expected = pattern(n, 1);
  rt.write_blocking(b, 0, expected);
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  add_on(rt, b, 2, 0, n, 1, add_kernel([open] { open.wait(); }));
  add_expected(expected, 0, n, 1);
  std::vector<std::byte> out(n, std::byte{0});
  const Event read = rt.read(b, 0, out);
  add_on(rt, b, 2, 0, n, 10);  // overwrites what the read copies, on the same devices
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(read.is_complete());
  gate.set_value();
  read.wait();
  EXPECT_EQ(out, expected);
  add_expected(expected, 0, n, 10);
  const std::vector<std::byte> fresh = pattern(512, 77);
  rt.write(b, 256, fresh);  // lands at home; the bytes around it stay current on the devices
  std::copy(fresh.begin(), fresh.end(), expected.begin() + 256);
  const TransferStats before = rt.stats();
  std::vector<std::byte> all(n);
  rt.read_blocking(b, 0, all);
  EXPECT_EQ(all, expected);
  const TransferStats moved = since(rt.stats(), before);
  EXPECT_EQ(moved.home_read_bytes, 512u);
  EXPECT_EQ(moved.direct_read_bytes, n - 512);
}

// A kernel whose argument points into the buffer (a sub-buffer at offset 1000): the bytes it
// wrote are found at their buffer offsets and read directly; a read of part of them too.
TEST(DirectRead, BytesASubBufferLaunchWroteAreReadDirectly) {
  constexpr std::uint64_t n = 4000, at = 1000, len = 600;
  Runtime rt(make_host_devices(2), options_with(UpdateStrategy::lazy));
  const BufferId b = rt.create_buffer(n, "b");
  std::vector<std::byte> expected = pattern(n, 11);
  rt.write_blocking(b, 0, expected);
  LaunchArg sub = LaunchArg::of_buffer(b, {}, {});
  sub.offset = at;
  const std::vector<LaunchArg> args{sub, LaunchArg::of_scalar(3)};
  rt.core().launch_partitioned(args, split(add_kernel(), 2, 0, len));  // buffer [1000, 1600)
  add_expected(expected, at, at + len, 3);
  const TransferStats before = rt.stats();
  std::vector<std::byte> part(200);
  rt.read_blocking(b, at + 200, part);  // [1200, 1400): across the two partitions
  EXPECT_EQ(part, std::vector<std::byte>(expected.begin() + 1200, expected.begin() + 1400));
  const TransferStats moved = since(rt.stats(), before);
  EXPECT_EQ(moved.direct_read_bytes, 200u);
  EXPECT_EQ(moved.device_to_host.copies, 2u);
  EXPECT_EQ(moved.home_read_bytes, 0u);
  std::vector<std::byte> all(n);
  rt.read_blocking(b, 0, all);
  EXPECT_EQ(all, expected);
}

// Rows a device holds at a constant stride, the bytes between them current at home: one
// rectangular copy into the reader, the rest out of the home copy.
TEST(DirectRead, StridedRowsHeldByADeviceArriveAsOneRectCopy) {
  constexpr std::uint64_t rows = 16, pitch = 64, width = 24;
  Runtime rt(make_host_devices(1), options_with(UpdateStrategy::lazy));
  const BufferId b = rt.create_buffer(rows * pitch, "b");
  std::vector<std::byte> expected = pattern(rows * pitch, 5);
  rt.write_blocking(b, 0, expected);
  Launch l;
  l.device = 0;
  l.kernel = std::make_shared<HostKernel>("rows", [](const HostKernelContext& ctx) {
    for (std::uint64_t r = 0; r < rows; ++r) {
      for (std::uint64_t c = 0; c < width; ++c)
        ctx.buffer<std::byte>(0)[r * pitch + c] ^= std::byte{0xFF};
    }
  });
  IntervalSet touched;
  for (std::uint64_t r = 0; r < rows; ++r)
    touched = touched.unite(IntervalSet{{r * pitch, r * pitch + width}});
  l.args = {LaunchArg::of_buffer(b, touched, touched)};
  rt.core().launch(l);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < width; ++c) expected[r * pitch + c] ^= std::byte{0xFF};
  }
  const TransferStats before = rt.stats();
  std::vector<std::byte> out(rows * pitch);
  rt.read_blocking(b, 0, out);
  EXPECT_EQ(out, expected);
  const TransferStats moved = since(rt.stats(), before);
  EXPECT_EQ(moved.device_to_host.copies, 1u);
  EXPECT_EQ(moved.direct_read_bytes, rows * width);
  EXPECT_EQ(moved.home_read_bytes, rows * (pitch - width));
}

// Adaptive: a kernel followed by a host read, run after run, keeps reading directly; it never
// learns to bring the output home (the read would then copy it a second time).
TEST(DirectRead, AdaptiveDoesNotReplayDirectReadsIntoTheHomeCopy) {
  constexpr std::uint64_t n = 1024;
  Runtime rt(make_host_devices(2), options_with(UpdateStrategy::adaptive));
  const BufferId b = rt.create_buffer(n, "b");
  for (int run = 0; run < 5; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<std::byte> expected = pattern(n, run);
    rt.write_blocking(b, 0, expected);
    add_on(rt, b, 2, 0, n, 1);
    add_expected(expected, 0, n, 1);
    const TransferStats before = rt.stats();
    std::vector<std::byte> out(n);
    rt.read_blocking(b, 0, out);
    EXPECT_EQ(out, expected);
    const TransferStats moved = since(rt.stats(), before);
    EXPECT_EQ(moved.direct_read_bytes, n);
    EXPECT_EQ(moved.home_read_bytes, 0u);
  }
  EXPECT_EQ(rt.stats().prefetch_bytes, 0u);
}

// Beta (bookkeeping without copies) issues no direct copy either. Gamma (no directory) makes no
// pass through the home copy with direct reads on, as alpha and beta make none for kernel output;
// with them off it copies out of home, as alpha and beta do.
TEST(DirectRead, MeasurementModesMatchAlphasHostWork) {
  constexpr std::uint64_t n = 512;
  for (bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "direct reads" : "reads through home");
    for (MeasurementMode mode : {MeasurementMode::no_transfers, MeasurementMode::no_coherence}) {
      SCOPED_TRACE(measurement_name(mode));
      RuntimeOptions o = options_with(UpdateStrategy::lazy, direct);
      o.measurement = mode;
      Runtime rt(make_host_devices(2), o);
      const BufferId b = rt.create_buffer(n, "b");
      rt.write_blocking(b, 0, pattern(n, 0));
      add_on(rt, b, 2, 0, n, 1);
      std::vector<std::byte> out(n);
      rt.read_blocking(b, 0, out);
      rt.finish();
      const TransferStats s = rt.stats();
      EXPECT_EQ(s.total_bytes(), 0u);
      EXPECT_EQ(s.direct_read_bytes, 0u);
      // Without direct reads beta marks the stale bytes home (copying nothing) and both modes
      // copy everything out of the home copy, as alpha does.
      EXPECT_EQ(s.home_read_bytes, direct ? 0u : n);
    }
  }
}

}  // namespace
}  // namespace unimem
