// Tracing (RuntimeOptions::trace, UNIMEM_TRACE): a traced run writes Chrome trace JSON whose
// entries are the run's kernel partitions, copies, evictions and host accesses, and whose copy
// bytes equal the runtime's transfer statistics.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/runtime_core.hpp"
#include "device/host/host_platform.hpp"

namespace unimem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() /
          (name + "_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
      .string();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);  // throws (fails the test) on invalid JSON
}

// Adds one to bytes [offset, offset + global) of argument 0.
std::shared_ptr<HostKernel> increment_kernel() {
  return std::make_shared<HostKernel>("increment", [](const HostKernelContext& ctx) {
    auto* p = ctx.buffer<std::byte>(0);
    const auto first = ctx.range().offset[0];
    for (auto i = first; i < first + ctx.range().global[0]; ++i) {
      p[i] = static_cast<std::byte>(std::to_integer<int>(p[i]) + 1);
    }
  });
}

// One partition per device over [begin, end) of buffer b, each reading and writing its part.
std::vector<LaunchPartition> split(std::shared_ptr<HostKernel> k, std::size_t devices,
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

struct Summary {
  std::map<std::string, std::uint64_t> bytes;   // by direction
  std::map<std::string, std::uint64_t> copies;  // by direction
  std::map<std::string, int> by_category;
  std::vector<json> kernels;
  std::vector<json> evictions;
  std::map<int, std::string> process_names;
};

Summary summarize(const json& trace) {
  Summary s;
  EXPECT_TRUE(trace.contains("traceEvents"));
  for (const json& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      if (e.at("name") == "process_name") s.process_names[e.at("pid")] = e["args"]["name"];
      continue;
    }
    EXPECT_EQ(ph, "X") << e.dump();
    EXPECT_GE(e.at("ts").get<double>(), 0.0) << e.dump();
    EXPECT_GE(e.at("dur").get<double>(), 0.0) << e.dump();
    const std::string cat = e.at("cat");
    ++s.by_category[cat];
    if (cat.rfind("copy ", 0) == 0) {
      const std::string dir = e["args"].at("direction");
      EXPECT_EQ(cat, "copy " + dir);
      s.bytes[dir] += e["args"].at("bytes").get<std::uint64_t>();
      ++s.copies[dir];
    } else if (cat == "kernel") {
      s.kernels.push_back(e);
    } else if (cat == "eviction") {
      s.evictions.push_back(e);
    }
  }
  return s;
}

TEST(Trace, ATracedRunWritesEveryKernelCopyAndHostAccessWithTheStatsBytes) {
  const std::string path = temp_path("unimem_trace");
  fs::remove(path);
  TransferStats stats;
  {
    RuntimeOptions options;
    options.strategy = UpdateStrategy::lazy;
    options.trace = path;
    Runtime rt(make_host_devices(2), options);
    ASSERT_NE(rt.core().trace(), nullptr);
    const BufferId b = rt.create_buffer(4096, "grid");
    std::vector<std::byte> in(4096, std::byte{1});
    rt.write_blocking(b, 0, in);
    auto k = increment_kernel();
    std::vector<LaunchArg> args{LaunchArg::of_buffer(b, {}, {})};
    rt.core().launch_partitioned(args, split(k, 2, 0, 4096));  // h2d of each half
    rt.core().launch_partitioned(args, split(k, 1, 0, 4096));  // d2d of the upper half to d0
    std::vector<std::byte> out(4096);
    rt.read_blocking(b, 0, out);  // d2h of everything from d0
    EXPECT_EQ(std::to_integer<int>(out[0]), 3);
    EXPECT_EQ(std::to_integer<int>(out[4095]), 3);
    stats = rt.stats();
    EXPECT_EQ(rt.write_trace(), path);
  }  // the destructor writes the complete trace again
  const Summary s = summarize(read_json(path));
  EXPECT_EQ(s.process_names.at(0), "host");
  EXPECT_NE(s.process_names.at(1).find("device 0"), std::string::npos);
  EXPECT_NE(s.process_names.at(2).find("device 1"), std::string::npos);
  ASSERT_EQ(s.kernels.size(), 3u);  // two partitions, then one
  int on_device[2] = {0, 0};
  for (const json& k : s.kernels) {
    EXPECT_EQ(k.at("name"), "increment");
    EXPECT_EQ(k.at("tid"), static_cast<int>(TraceLane::kernels));
    ++on_device[k.at("pid").get<int>() - 1];
    // Host devices time each operation on the host clock.
    EXPECT_EQ(k["args"].at("timed_by"), "host clock around the operation");
  }
  EXPECT_EQ(on_device[0], 2);
  EXPECT_EQ(on_device[1], 1);
  EXPECT_EQ(s.by_category.at("host write"), 1);
  EXPECT_EQ(s.by_category.at("host read"), 1);
  EXPECT_EQ(s.bytes.at("h2d"), stats.host_to_device.bytes);
  EXPECT_EQ(s.bytes.at("d2h"), stats.device_to_host.bytes);
  EXPECT_EQ(s.bytes.at("d2d"), stats.device_to_device.bytes);
  EXPECT_EQ(s.copies.at("h2d"), stats.host_to_device.copies);
  EXPECT_EQ(s.copies.at("d2h"), stats.device_to_host.copies);
  EXPECT_EQ(s.copies.at("d2d"), stats.device_to_device.copies);
  EXPECT_EQ(stats.host_to_device.bytes, 4096u);
  EXPECT_EQ(stats.device_to_device.bytes, 2048u);
  EXPECT_EQ(stats.device_to_host.bytes, 4096u);
  fs::remove(path);
}

TEST(Trace, EvictionsAppearOnTheDeviceLaneWithTheirBytes) {
  const std::string path = temp_path("unimem_trace_evict");
  fs::remove(path);
  TransferStats stats;
  std::uint64_t evictions = 0;
  {
    RuntimeOptions options;
    options.strategy = UpdateStrategy::lazy;
    options.trace = path;
    options.device_memory = 6000;  // one 4096-byte buffer at a time
    options.recycle_bytes = 0;
    Runtime rt(make_host_devices(1), options);
    const BufferId a = rt.create_buffer(4096, "a");
    const BufferId b = rt.create_buffer(4096, "b");
    auto k = increment_kernel();
    for (int round = 0; round < 3; ++round) {
      for (BufferId id : {a, b}) {
        std::vector<LaunchArg> args{LaunchArg::of_buffer(id, {}, {})};
        rt.core().launch_partitioned(args, split(k, 1, 0, 4096));
      }
    }
    rt.finish();
    stats = rt.stats();
    evictions = rt.core().device_memory().at(0).memory.evictions;
  }
  const Summary s = summarize(read_json(path));
  ASSERT_GT(evictions, 0u);
  ASSERT_EQ(s.evictions.size(), evictions);
  std::uint64_t evicted = 0;
  std::uint64_t written_back = 0;
  for (const json& e : s.evictions) {
    EXPECT_EQ(e.at("pid"), 1);
    EXPECT_EQ(e.at("tid"), static_cast<int>(TraceLane::evictions));
    evicted += e["args"].at("evicted_bytes").get<std::uint64_t>();
    written_back += e["args"].at("writeback_bytes").get<std::uint64_t>();
  }
  EXPECT_EQ(evicted, stats.evicted_bytes);
  EXPECT_EQ(written_back, stats.eviction_writeback_bytes);
  EXPECT_GT(written_back, 0u);
  EXPECT_EQ(s.bytes.at("d2h"), stats.device_to_host.bytes);
  EXPECT_EQ(s.bytes.at("h2d"), stats.host_to_device.bytes);
  EXPECT_EQ(s.kernels.size(), 6u);
  fs::remove(path);
}

TEST(Trace, TheEnvironmentVariableTurnsTracingOnAndNothingIsRecordedWithoutIt) {
  const std::string path = temp_path("unimem_trace_env");
  fs::remove(path);
  ::unsetenv("UNIMEM_TRACE");
  {
    Runtime rt(make_host_devices(1));
    EXPECT_EQ(rt.core().trace(), nullptr);
    EXPECT_EQ(rt.write_trace(), "");
  }
  ::setenv("UNIMEM_TRACE", path.c_str(), 1);
  {
    Runtime rt(make_host_devices(1));
    const BufferId b = rt.create_buffer(64, "small");
    std::vector<std::byte> in(64, std::byte{7});
    rt.write_blocking(b, 0, in);
  }
  ::unsetenv("UNIMEM_TRACE");
  const Summary s = summarize(read_json(path));
  EXPECT_EQ(s.by_category.at("host write"), 1);
  fs::remove(path);
}

TEST(Trace, AnUnwritableTraceFileIsAnErrorNamingIt) {
  RuntimeOptions options;
  options.trace = "/nonexistent-dir/unimem/trace.json";
  Runtime rt(make_host_devices(1), options);
  try {
    (void)rt.write_trace();
    FAIL() << "no error";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/unimem/trace.json"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace unimem
