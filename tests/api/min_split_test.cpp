// RuntimeOptions::min_split_bytes / UNIMEM_MIN_SPLIT_BYTES: a launch left to every device whose
// buffers hold fewer bytes than the threshold runs whole on the device holding most of them
// current (no extra copies, the same results); larger launches, an explicit device list and a
// threshold of 0 split as before; a bad environment value is refused naming the variable.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unimem/errors.hpp>
#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/program_core.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem {
namespace {

constexpr const char* kSource = R"CLC(
kernel void add_one(global int* data) { data[get_global_id(0)] += 1; }
)CLC";

NDRange range_of(std::uint64_t items) {
  NDRange r;
  r.global[0] = items;
  r.local[0] = 64;
  return r;
}

// A runtime over the POCL devices (at least two) with the threshold given (nullopt: option unset).
std::unique_ptr<Runtime> two_devices(std::optional<std::uint64_t> min_split_bytes) {
  DeviceRegistry devices = opencl::make_opencl_devices("");
  if (devices.size() < 2) return nullptr;
  RuntimeOptions options{UpdateStrategy::lazy};
  options.min_split_bytes = min_split_bytes;
  return std::make_unique<Runtime>(std::move(devices), options);
}

// Launches add_one `times` times over `items` ints (from zero) and checks every value. Builds
// without the kernel analysis split only described launches: there, add_one's access (each
// work-item its own int) is given as a descriptor, so the threshold is tested the same way.
std::size_t partitions_of_launches(Runtime& rt, std::uint64_t items, int times,
                                   LaunchOptions options = {}) {
#if !defined(UNIMEM_WITH_ANALYSIS)
  options.accesses = {
      AccessDescriptor::affine(0, AccessMode::read_write, {row_major_piece(sizeof(int), {1})})};
#endif
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  const BufferId b = rt.create_buffer(items * sizeof(int), "data");
  std::vector<int> host(items, 0);
  rt.write_blocking(b, 0, std::as_bytes(std::span(host)));
  for (int t = 0; t < times; ++t)
    program.launch("add_one", range_of(items), {Arg::buffer(b)}, options);
  rt.read_blocking(b, 0, std::as_writable_bytes(std::span(host)));
  for (std::uint64_t i = 0; i < items; ++i) EXPECT_EQ(host[i], times) << "item " << i;
  return program.core().last_plan().partitions.size();
}

TEST(MinSplitBytes, ASmallLaunchRunsWholeOnOneDeviceByDefault) {
  auto rt = two_devices(std::nullopt);
  if (!rt) GTEST_SKIP() << "needs two OpenCL devices";
  if (std::getenv("UNIMEM_MIN_SPLIT_BYTES") != nullptr)
    GTEST_SKIP() << "UNIMEM_MIN_SPLIT_BYTES set";
  EXPECT_EQ(rt->core().min_split_bytes(), RuntimeOptions::kDefaultMinSplitBytes);
  // 256 ints: 1 KiB, under the default.
  EXPECT_EQ(partitions_of_launches(*rt, 256, 5), 1u);
  // The whole kernel ran on one device: its 1 KiB went there once and came back once.
  const TransferStats s = rt->stats();
  EXPECT_EQ(s.host_to_device.bytes, 1024u);
  EXPECT_EQ(s.device_to_host.bytes, 1024u);
  EXPECT_EQ(s.device_to_device.bytes, 0u);
}

TEST(MinSplitBytes, LargerLaunchesAndAZeroThresholdSplit) {
  auto rt = two_devices(std::nullopt);
  if (!rt) GTEST_SKIP() << "needs two OpenCL devices";
  if (std::getenv("UNIMEM_MIN_SPLIT_BYTES") != nullptr)
    GTEST_SKIP() << "UNIMEM_MIN_SPLIT_BYTES set";
  // 1024 ints: 4 KiB, not under the default: one partition per device (2 or more of them).
  const std::size_t n = rt->device_count();
  EXPECT_EQ(partitions_of_launches(*rt, 1024, 3), n);
  auto always = two_devices(0);
  ASSERT_TRUE(always);
  EXPECT_EQ(partitions_of_launches(*always, 256, 3), n);
  // An explicit device list is the caller's choice: split even when small.
  auto small = two_devices(1 << 20);
  ASSERT_TRUE(small);
  LaunchOptions both;
  both.devices = {0, 1};
  EXPECT_EQ(partitions_of_launches(*small, 256, 2, both), 2u);
  EXPECT_EQ(partitions_of_launches(*small, 1024, 2), 1u);
}

TEST(MinSplitBytes, TheSmallLaunchRunsWhereItsBytesAre) {
  auto rt = two_devices(std::nullopt);
  if (!rt) GTEST_SKIP() << "needs two OpenCL devices";
  Program program(*rt, kSource);
  program.set_log([](const std::string&) {});
  const BufferId b = rt->create_buffer(256 * sizeof(int), "data");
  std::vector<int> host(256, 0);
  rt->write_blocking(b, 0, std::as_bytes(std::span(host)));
  LaunchOptions on_second;
  on_second.device = 1;
  program.launch("add_one", range_of(256), {Arg::buffer(b)}, on_second);  // device 1 holds it
  program.launch("add_one", range_of(256), {Arg::buffer(b)});             // left to every device
  LaunchPlan plan = program.core().last_plan();
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_EQ(plan.partitions[0].device, 1u);
  rt->finish();
  EXPECT_EQ(rt->stats().host_to_device.bytes, 1024u);  // nothing went to device 0
  EXPECT_EQ(rt->stats().device_to_device.bytes, 0u);
  // After a host write of every byte no device holds any: the first device it is. (The device
  // is chosen when a launch is planned; the same Program reuses the plan of an identical launch,
  // so a new one plans it.)
  rt->write_blocking(b, 0, std::as_bytes(std::span(host)));
  Program fresh(*rt, kSource);
  fresh.set_log([](const std::string&) {});
  fresh.launch("add_one", range_of(256), {Arg::buffer(b)});
  plan = fresh.core().last_plan();
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_EQ(plan.partitions[0].device, 0u);
  rt->read_blocking(b, 0, std::as_writable_bytes(std::span(host)));
  for (int v : host) ASSERT_EQ(v, 1);
}

// The environment variable sets the threshold when the option is unset; a bad value is refused
// with its name.
TEST(MinSplitBytes, TheEnvironmentVariableSetsTheThreshold) {
  if (opencl::make_opencl_devices("").size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
  const char* old = std::getenv("UNIMEM_MIN_SPLIT_BYTES");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("UNIMEM_MIN_SPLIT_BYTES", "0", 1);
  EXPECT_EQ(two_devices(std::nullopt)->core().min_split_bytes(), 0u);
  setenv("UNIMEM_MIN_SPLIT_BYTES", "8K", 1);
  EXPECT_EQ(two_devices(std::nullopt)->core().min_split_bytes(), 8192u);
  EXPECT_EQ(two_devices(100)->core().min_split_bytes(), 100u);  // the option wins
  setenv("UNIMEM_MIN_SPLIT_BYTES", "lots", 1);
  try {
    (void)two_devices(std::nullopt);
    ADD_FAILURE() << "a bad UNIMEM_MIN_SPLIT_BYTES was accepted";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("UNIMEM_MIN_SPLIT_BYTES"), std::string::npos) << e.what();
  }
  if (saved) {
    setenv("UNIMEM_MIN_SPLIT_BYTES", saved->c_str(), 1);
  } else {
    unsetenv("UNIMEM_MIN_SPLIT_BYTES");
  }
}

}  // namespace
}  // namespace unimem
