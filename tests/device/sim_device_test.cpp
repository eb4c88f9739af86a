// The sim driver (src/device/sim/): the timing model on the simulated clock, peer and host-link
// wiring, the selection syntax, and real execution giving the host driver's results.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/default_devices.hpp"
#include "device/host/host_platform.hpp"
#include "device/sim/sim_device.hpp"
#include "device/sim/sim_event.hpp"
#include "device/sim/sim_selection.hpp"
#include "selftest/coherence_selftest.hpp"

namespace unimem::sim {
namespace {

// A model with round numbers: 1 GB/s + 10 us host link, 2 GB/s + 4 us peer link, kernels
// 1 TFLOP/s, 100 GB/s, 2 us latency.
DeviceModel round_model() {
  DeviceModel m;
  m.compute_flops = 1e12;
  m.memory_bandwidth = 1e11;
  m.kernel_latency = 2e-6;
  m.capacity = 1 << 20;
  m.host_link = {1e9, 10e-6};
  m.peer_link = {2e9, 4e-6};
  return m;
}

struct Machine {
  explicit Machine(std::size_t count, DeviceModel model = round_model())
      : host(make_host_devices(count)), sim(make_sim_devices(model, "test", count, host)) {
    system = system_of(sim);
  }
  SimDevice& device(std::size_t i) const { return static_cast<SimDevice&>(sim.at(i)); }
  double end_of(const Event& e) const {
    return static_cast<const SimEventState&>(*e.state()).end();
  }
  DeviceRegistry host;
  DeviceRegistry sim;
  std::shared_ptr<SimSystem> system;
};

// A host-driver kernel that does nothing (its cost comes from SimSystem::set_kernel_cost).
std::shared_ptr<HostKernel> idle_kernel(const std::string& name) {
  return std::make_shared<HostKernel>(name, [](const HostKernelContext&) {});
}

constexpr double kTol = 1e-12;

TEST(SimModel, ACopyTakesLatencyPlusBytesOverBandwidth) {
  for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1000}, std::uint64_t{65536}}) {
    Machine m(1);
    SimDevice& d = m.device(0);
    const DeviceAllocation a = d.allocate(65536);
    std::vector<std::byte> data(65536, std::byte{7});
    const Event e = d.copy_host_to_device(data.data(), a, 0, bytes, {});
    e.wait();
    const double expected = 10e-6 + static_cast<double>(bytes) / 1e9;
    EXPECT_NEAR(m.end_of(e), expected, kTol) << bytes << " bytes";
    EXPECT_NEAR(m.system->clock().now(), expected, kTol);
    d.free(a);
  }
}

TEST(SimModel, LinkSecondsAndKernelRoofline) {
  const LinkModel link{4e9, 3e-6};
  EXPECT_NEAR(link.seconds(8e9), 3e-6 + 2.0, kTol);
  const DeviceModel model = round_model();
  // Compute-bound: 2e9 FLOP at 1e12 = 2 ms; 1e6 bytes at 1e11 = 10 us.
  EXPECT_NEAR(kernel_seconds(model, {2e9, 1e6}), 2e-6 + 2e-3, kTol);
  // Memory-bound: 1e3 FLOP, 1e9 bytes = 10 ms.
  EXPECT_NEAR(kernel_seconds(model, {1e3, 1e9}), 2e-6 + 1e-2, kTol);
  EXPECT_THROW((void)LinkModel{}.seconds(1), PreconditionError);
}

TEST(SimModel, EnginesOverlapAndEachEngineSerializes) {
  Machine m(1);
  SimDevice& d = m.device(0);
  const DeviceAllocation a = d.allocate(4000);
  std::vector<std::byte> host(4000);
  const double copy = 10e-6 + 1000 / 1e9;
  // Up and down are separate engines: both start at 0.
  const Event up = d.copy_host_to_device(host.data(), a, 0, 1000, {});
  const Event down = d.copy_device_to_host(a, 1000, host.data() + 1000, 1000, {});
  EXPECT_NEAR(m.end_of(up), copy, kTol);
  EXPECT_NEAR(m.end_of(down), copy, kTol);
  // A second upload waits for the first on the same engine.
  const Event up2 = d.copy_host_to_device(host.data() + 2000, a, 2000, 1000, {});
  EXPECT_NEAR(m.end_of(up2), 2 * copy, kTol);
  // A kernel (compute engine) overlaps the copies; with a dependency it starts after it.
  m.system->set_kernel_cost("k", [](const NDRange&, std::span<const KernelArg>) {
    return KernelWork{1e6, 0};  // 1 us at 1 TFLOP/s
  });
  const auto k = idle_kernel("k");
  const double kernel = 2e-6 + 1e-6;
  const Event free_kernel = d.launch(*k, NDRange{}, {}, {});
  EXPECT_NEAR(m.end_of(free_kernel), kernel, kTol);
  const Event deps[] = {up2};
  const Event after = d.launch(*k, NDRange{}, {}, deps);
  EXPECT_NEAR(m.end_of(after), 2 * copy + kernel, kTol);
  wait_all(std::vector<Event>{up, down, up2, free_kernel, after});
  EXPECT_NEAR(m.system->clock().now(), 2 * copy + kernel, kTol);
  const auto counters = m.system->counters();
  EXPECT_EQ(counters[0].kernels, 2U);
  EXPECT_DOUBLE_EQ(counters[0].host_to_device_bytes, 2000);
  EXPECT_DOUBLE_EQ(counters[0].device_to_host_bytes, 1000);
  d.free(a);
}

TEST(SimModel, DevicesSharingAHostLinkSerializeTheirCopies) {
  for (unsigned per_link : {1U, 2U}) {
    DeviceModel model = round_model();
    model.devices_per_host_link = per_link;
    Machine m(2, model);
    std::vector<std::byte> host(2000);
    const DeviceAllocation a0 = m.device(0).allocate(1000);
    const DeviceAllocation a1 = m.device(1).allocate(1000);
    const Event e0 = m.device(0).copy_host_to_device(host.data(), a0, 0, 1000, {});
    const Event e1 = m.device(1).copy_host_to_device(host.data() + 1000, a1, 0, 1000, {});
    wait_all(std::vector<Event>{e0, e1});
    const double copy = 10e-6 + 1000 / 1e9;
    EXPECT_NEAR(m.end_of(e1), per_link == 1 ? copy : 2 * copy, kTol) << per_link;
    m.device(0).free(a0);
    m.device(1).free(a1);
  }
}

TEST(SimModel, PeerCopiesOnlyWithinAGroupOnThePeerLink) {
  DeviceModel model = round_model();
  model.peer_group_size = 2;
  Machine m(4, model);
  EXPECT_TRUE(m.device(1).can_copy_from_peer(m.device(0)));
  EXPECT_FALSE(m.device(2).can_copy_from_peer(m.device(1)));
  EXPECT_TRUE(m.device(3).can_copy_from_peer(m.device(2)));
  std::vector<std::byte> host(512);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::byte>(i * 7);
  const DeviceAllocation a0 = m.device(0).allocate(512);
  const DeviceAllocation a1 = m.device(1).allocate(512);
  m.device(0).copy_host_to_device(host.data(), a0, 0, 512, {}).wait();
  const double t0 = m.system->clock().now();
  const Event peer = m.device(1).copy_from_peer(m.device(0), a0, 0, a1, 0, 512, {});
  std::vector<std::byte> back(512);
  const Event deps[] = {peer};
  m.device(1).copy_device_to_host(a1, 0, back.data(), 512, deps).wait();
  EXPECT_EQ(back, host);  // the real bytes moved
  EXPECT_NEAR(m.end_of(peer), t0 + 4e-6 + 512 / 2e9, kTol);
  EXPECT_DOUBLE_EQ(m.system->counters()[1].peer_in_bytes, 512);
  const DeviceAllocation a2 = m.device(2).allocate(16);
  try {
    (void)m.device(2).copy_from_peer(m.device(1), a1, 0, a2, 0, 16, {});
    FAIL() << "a copy across peer groups was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("sim:test#2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sim:test#1"), std::string::npos) << e.what();
  }
  DeviceModel no_peer = round_model();
  no_peer.peer_link = {};
  Machine n(2, no_peer);
  EXPECT_FALSE(n.device(1).can_copy_from_peer(n.device(0)));
  for (auto [d, a] : {std::pair{0, a0}, std::pair{1, a1}, std::pair{2, a2}}) {
    m.device(static_cast<std::size_t>(d)).free(a);
  }
}

TEST(SimModel, TheHostWaitingMovesHostTimeAndLaterOperationsStartAfterIt) {
  Machine m(2);
  std::vector<std::byte> host(1000);
  const DeviceAllocation a0 = m.device(0).allocate(1000);
  const DeviceAllocation a1 = m.device(1).allocate(1000);
  const Event e = m.device(0).copy_host_to_device(host.data(), a0, 0, 1000, {});
  // Not complete for the host until it waited: the runtime would otherwise drop it as a
  // dependency while simulated time has not reached its end.
  while (!static_cast<const SimEventState&>(*e.state()).real().is_complete()) {
  }
  EXPECT_FALSE(e.is_complete());
  e.wait();
  EXPECT_TRUE(e.is_complete());
  EXPECT_NEAR(m.system->clock().host_time(), m.end_of(e), kTol);
  // Device 1's idle link still starts after what the host has seen.
  const Event later = m.device(1).copy_host_to_device(host.data(), a1, 0, 1000, {});
  EXPECT_NEAR(m.end_of(later), 2 * m.end_of(e), kTol);
  later.wait();
  m.device(0).free(a0);
  m.device(1).free(a1);
}

TEST(SimModel, CopyBytesModelScalesModelledBytesOnly) {
  Machine m(1);
  m.system->set_copy_bytes_model([](std::uint64_t b) { return 4.0 * static_cast<double>(b); });
  std::vector<std::byte> host(1000, std::byte{3});
  std::vector<std::byte> back(1000);
  const DeviceAllocation a = m.device(0).allocate(1000);
  const Event up = m.device(0).copy_host_to_device(host.data(), a, 0, 1000, {});
  const Event deps[] = {up};
  m.device(0).copy_device_to_host(a, 0, back.data(), 1000, deps).wait();
  EXPECT_EQ(back, host);
  EXPECT_NEAR(m.end_of(up), 10e-6 + 4000 / 1e9, kTol);
  EXPECT_DOUBLE_EQ(m.system->counters()[0].host_to_device_bytes, 4000);
  m.device(0).free(a);
}

TEST(SimModel, ARectangularCopyIsOneCopyOfItsBytes) {
  Machine m(1);
  SimDevice& d = m.device(0);
  // A 3 x 2 block of 4-byte elements out of an 8 x 4 row-major array.
  std::vector<std::byte> host(128);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::byte>(i);
  const DeviceAllocation a = d.allocate(128);
  RectCopy rect;
  rect.src_origin = {8, 1, 0};
  rect.dst_origin = {8, 1, 0};
  rect.region = {12, 2, 1};
  rect.src_row_pitch = rect.dst_row_pitch = 32;
  rect.src_slice_pitch = rect.dst_slice_pitch = 128;
  const Event up = d.copy_host_to_device_rect(host.data(), a, rect, {});
  std::vector<std::byte> back(128, std::byte{0});
  const Event deps[] = {up};
  const Event down = d.copy_device_to_host_rect(a, back.data(), rect, deps);
  down.wait();
  for (std::size_t row = 1; row < 3; ++row) {
    for (std::size_t x = 8; x < 20; ++x) EXPECT_EQ(back[row * 32 + x], host[row * 32 + x]);
  }
  EXPECT_EQ(back[0], std::byte{0});  // outside the block: untouched
  // One latency for the whole block, not one per row.
  EXPECT_NEAR(m.end_of(up), 10e-6 + 24 / 1e9, kTol);
  EXPECT_NEAR(m.end_of(down), m.end_of(up) + 10e-6 + 24 / 1e9, kTol);
  d.free(a);
}

TEST(SimDevice, CapacityIsTheModelsAndErrorsNameTheDevice) {
  DeviceModel model = round_model();
  model.capacity = 4096;
  Machine m(1, model);
  EXPECT_EQ(m.device(0).capacity(), 4096U);
  EXPECT_EQ(m.device(0).driver(), "sim");
  const DeviceAllocation a = m.device(0).allocate(4000);
  try {
    (void)m.device(0).allocate(100);
    FAIL() << "allocation over the simulated capacity accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("sim:test#0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("96 of 4096"), std::string::npos) << e.what();
  }
  m.device(0).free(a);
  m.device(0).free(m.device(0).allocate(4096));
}

TEST(SimDevice, KernelsRunForRealOnTheUnderlyingDevice) {
  Machine m(3);  // host devices 0..2 underneath
  auto square = std::make_shared<HostKernel>("square", [](const HostKernelContext& ctx) {
    auto* p = ctx.buffer<std::int32_t>(0);
    for (std::uint64_t i = ctx.range().offset[0]; i < ctx.range().offset[0] + ctx.range().global[0];
         ++i) {
      p[i] = p[i] * p[i];
    }
  });
  std::vector<std::int32_t> values(64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(i) - 20;
  std::vector<std::int32_t> got(values.size());
  SimDevice& d = m.device(2);
  const DeviceAllocation a = d.allocate(values.size() * 4);
  const Event up =
      d.copy_host_to_device(reinterpret_cast<const std::byte*>(values.data()), a, 0, 256, {});
  NDRange range;
  range.global = {64, 1, 1};
  const KernelArg args[] = {KernelArg::of_buffer(a)};
  const Event deps[] = {up};
  const Event k = d.launch(*square, range, args, deps);
  const Event deps2[] = {k};
  d.copy_device_to_host(a, 0, reinterpret_cast<std::byte*>(got.data()), 256, deps2).wait();
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], values[i] * values[i]) << i;
  // Default cost: 16 FLOP per work-item and 4 bytes per buffer argument.
  const KernelWork w = default_kernel_work(range, args);
  EXPECT_DOUBLE_EQ(w.flops, 16.0 * 64);
  EXPECT_DOUBLE_EQ(w.bytes, 4.0 * 64);
  d.free(a);
}

TEST(SimDevice, RandomProgramsGiveTheHostDriversResults) {
  // The randomized differential check (selftest/coherence_selftest.hpp) on simulated devices:
  // every host read and the final contents equal one flat memory's, as they do on the host driver.
  for (const char* preset : {"k80", "pcie", "nvlink"}) {
    for (UpdateStrategy strategy : {UpdateStrategy::batch, UpdateStrategy::balance,
                                    UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
      for (std::size_t devices : {std::size_t{1}, std::size_t{3}, std::size_t{12}}) {
        CoherenceSelftestOptions o;
        o.seed = 20261125 + devices;
        o.ops = 150;
        o.devices = devices;
        o.strategy = strategy;
        o.sim_preset = preset;
        const CoherenceSelftestResult sim = run_coherence_selftest(o);
        EXPECT_TRUE(sim.ok) << sim.to_json(o);
        o.sim_preset.clear();
        const CoherenceSelftestResult host = run_coherence_selftest(o);
        ASSERT_TRUE(host.ok) << host.to_json(o);
        // The same program: the same number of reads, writes and launches.
        EXPECT_EQ(sim.launches, host.launches) << "seed " << o.seed;
        EXPECT_EQ(sim.host_reads, host.host_reads) << "seed " << o.seed;
      }
    }
  }
}

TEST(SimSelection, ParsesPresetCountAndUnderlyingAndRejectsBadInput) {
  EXPECT_FALSE(parse_sim_selection("0,1").has_value());
  EXPECT_FALSE(parse_sim_selection("").has_value());
  const auto s = parse_sim_selection("sim:k80:16");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->preset, "k80");
  EXPECT_EQ(s->count, 16U);
  EXPECT_EQ(s->underlying, "");
  const auto t = parse_sim_selection("sim:pcie:3:type=cpu");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->count, 3U);
  EXPECT_EQ(t->underlying, "type=cpu");
  for (const char* bad : {"sim:k80", "sim:k80:0", "sim:k80:65", "sim:k80:x", "sim:nosuch:2"}) {
    try {
      (void)parse_sim_selection(bad);
      FAIL() << bad << " accepted";
    } catch (const PreconditionError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find(bad) != std::string::npos || what.find("nosuch") != std::string::npos)
          << what;
    }
  }
  EXPECT_EQ(find_preset("k80").device.peer_group_size, 8U);
  EXPECT_THROW((void)find_preset("gpu"), PreconditionError);
}

// Several host threads submitting copies to two devices that share one host link: every copy
// still gets its own slot on the link (no two overlap) and the clock ends after all of them.
TEST(SimConcurrency, CopiesFromManyThreadsNeverOverlapOnOneLink) {
  DeviceModel model = round_model();
  model.devices_per_host_link = 2;
  Machine m(2, model);
  constexpr int kThreads = 4;
  constexpr int kCopies = 50;
  std::vector<std::byte> host(kThreads * kCopies * 64, std::byte{1});
  const DeviceAllocation a0 = m.device(0).allocate(host.size());
  const DeviceAllocation a1 = m.device(1).allocate(host.size());
  std::vector<std::vector<Event>> events(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      SimDevice& d = m.device(static_cast<std::size_t>(t % 2));
      const DeviceAllocation a = t % 2 == 0 ? a0 : a1;
      for (int i = 0; i < kCopies; ++i) {
        const std::uint64_t offset = static_cast<std::uint64_t>(t * kCopies + i) * 64;
        events[static_cast<std::size_t>(t)].push_back(
            d.copy_host_to_device(host.data() + offset, a, offset, 64, {}));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> ends;
  for (const auto& list : events) {
    wait_all(list);
    for (const Event& e : list) ends.push_back(m.end_of(e));
  }
  std::sort(ends.begin(), ends.end());
  const double copy = 10e-6 + 64 / 1e9;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    EXPECT_NEAR(ends[i], copy * static_cast<double>(i + 1), 1e-9) << "copy " << i;
  }
  EXPECT_NEAR(m.system->clock().now(), copy * kThreads * kCopies, 1e-9);
  m.device(0).free(a0);
  m.device(1).free(a1);
}

#if defined(UNIMEM_HAVE_OPENCL)
// UNIMEM_DEVICES=sim:PRESET:COUNT[:UNDERLYING] gives a Runtime's default devices simulated ones.
TEST(SimSelection, UnimemDevicesSelectsSimulatedDevicesOverOpenCL) {
  const char* old = std::getenv("UNIMEM_DEVICES");
  const std::string saved = old == nullptr ? "" : old;
  setenv("UNIMEM_DEVICES", "sim:pcie:3:0", 1);
  DeviceRegistry devices;
  std::string error;
  try {
    devices = default_devices();
  } catch (const DeviceError& e) {
    error = e.what();
  }
  setenv("UNIMEM_DEVICES", "sim:nosuch:3", 1);
  EXPECT_THROW((void)default_devices(), PreconditionError);
  if (old == nullptr) {
    unsetenv("UNIMEM_DEVICES");
  } else {
    setenv("UNIMEM_DEVICES", saved.c_str(), 1);
  }
  if (!error.empty()) GTEST_SKIP() << "no OpenCL device: " << error;
  ASSERT_EQ(devices.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(devices.at(i).name(), "sim:pcie#" + std::to_string(i));
    EXPECT_EQ(devices.at(i).driver(), "sim");
  }
  ASSERT_NE(system_of(devices), nullptr);
  EXPECT_EQ(system_of(devices)->model().capacity, find_preset("pcie").device.capacity);
}
#endif

}  // namespace
}  // namespace unimem::sim
