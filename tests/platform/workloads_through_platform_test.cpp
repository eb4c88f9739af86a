// The eight workloads as plain single-device OpenCL programs (examples/opencl_host), run through
// `unimem run` on 1, 2 and 3 POCL devices: verified against the CPU reference, the same output
// bytes as the same binary run directly on POCL, every kernel split over every device, and the
// bytes moved equal to the workload's minimum for that many devices (with the lazy strategy;
// adaptive, the runtime's default, may prefetch more).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/workload.hpp"
#include "run_command.hpp"

namespace {

namespace fs = std::filesystem;

using Output = unimem::testing::CommandOutput;
Output run(const std::string& command) { return unimem::testing::run_command(command); }

// The JSON report `unimem run --report` wrote (null when there is none), removing the file.
nlohmann::json take_report(const fs::path& report) {
  std::ifstream in(report);
  if (!in) return nullptr;
  auto r = nlohmann::json::parse(in);
  fs::remove(report);
  return r;
}

// A clean OpenCL environment for the child: the system's vendors, three POCL CPU devices.
const std::string kEnv =
    "env -u OCL_ICD_VENDORS -u OCL_ICD_FILENAMES -u UNIMEM_VENDOR_ICDS -u UNIMEM_DEVICES "
    "POCL_DEVICES='pthread pthread pthread' ";

struct Case {
  std::string workload;
  unsigned devices;
  std::string strategy;  ///< UNIMEM_STRATEGY of the platform's runtime
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.workload << " on " << c.devices << " device(s), " << c.strategy;
}

class WorkloadThroughPlatform : public ::testing::TestWithParam<Case> {};

TEST_P(WorkloadThroughPlatform, VerifiesSplitsEveryLaunchAndMovesTheMinimum) {
  const Case c = GetParam();
  const auto workload = unimem::examples::find_workload(c.workload);
  const Output direct = run(kEnv + UNIMEM_WORKLOAD_PROGRAM + std::string(" ") + c.workload);
  ASSERT_EQ(direct.status, 0) << direct.text;
  const auto want = nlohmann::json::parse(direct.text);
  ASSERT_TRUE(want.at("verified").get<bool>());

  const fs::path report =
      fs::temp_directory_path() / ("unimem-run-" + c.workload + "-" + std::to_string(c.devices) +
                                   "-" + c.strategy + "-" + std::to_string(::getpid()) + ".json");
  const std::string devices = c.devices == 1 ? "0" : "0-" + std::to_string(c.devices - 1);
  const Output through =
      run(kEnv + "UNIMEM_STRATEGY=" + c.strategy + " " + UNIMEM_CLI +
          std::string(" run --quiet --report ") + report.string() + " --devices " + devices +
          " -- " + UNIMEM_WORKLOAD_PROGRAM + " " + c.workload);
  ASSERT_EQ(through.status, 0) << through.text;
  const auto got = nlohmann::json::parse(through.text);
  EXPECT_EQ(got.at("platform"), "unimem");
  EXPECT_TRUE(got.at("verified").get<bool>());
  EXPECT_EQ(got.at("checksum"), want.at("checksum")) << "outputs differ from POCL's";

  const auto r = take_report(report);
  ASSERT_FALSE(r.is_null()) << "no report at " << report;
  const auto launches = r.at("launches").get<std::uint64_t>();
  EXPECT_GT(launches, 0u);
  EXPECT_EQ(r.at("devices").size(), c.devices);
#if UNIMEM_WITH_ANALYSIS
  EXPECT_TRUE(r.at("fallbacks").empty()) << r.at("fallbacks").dump();
  if (c.devices > 1) {
    EXPECT_EQ(r.at("split_launches").get<std::uint64_t>(), launches);
    for (const auto& [device, count] : r.at("partitions_per_device").items()) {
      EXPECT_EQ(count.get<std::uint64_t>(), launches) << device;
    }
  }
  unimem::examples::Problem problem = workload->small_problem();
  const unimem::examples::TransferBytes min = workload->bytes_min(problem, c.devices);
  const unimem::examples::TransferBytes moved{r.at("bytes_h2d").get<std::uint64_t>(),
                                              r.at("bytes_d2h").get<std::uint64_t>(),
                                              r.at("bytes_d2d").get<std::uint64_t>()};
  // lazy moves exactly the minimum; adaptive may also prefetch what it predicts (never less).
  if (c.strategy == "lazy") {
    EXPECT_EQ(moved, min) << "moved " << unimem::examples::to_string(moved) << ", minimum "
                          << unimem::examples::to_string(min);
  } else {
    EXPECT_GE(moved.total(true), min.total(true))
        << "moved " << unimem::examples::to_string(moved) << ", minimum "
        << unimem::examples::to_string(min);
  }
#else
  // Without the kernel analysis the platform cannot split kernels: each runs on one device.
  EXPECT_EQ(r.at("split_launches").get<std::uint64_t>(), 0u);
#endif
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& w : unimem::examples::all_workloads()) {
    for (unsigned d = 1; d <= 3; ++d) {
      for (const char* strategy : {"lazy", "adaptive"}) out.push_back({w->name(), d, strategy});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Workloads, WorkloadThroughPlatform, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string name = param_info.param.workload;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name + "_on_" + std::to_string(param_info.param.devices) + "_" +
                                  param_info.param.strategy;
                         });

// One context over the exposed devices, one buffer updated by each device in turn on its own
// queue: coherent for every way the platform exposes its devices.
// `unimem run --devices sim:k80:4`: the platform's runtime on four simulated K80s over the three
// POCL devices. The output bytes equal POCL's, the copies are exactly the minimum for four devices
// (lazy; four K80s of one socket copy peer to peer), and the report has the simulated time.
class WorkloadOnSimulatedDevices : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadOnSimulatedDevices, VerifiesWithPoclsBytesAndTheMinimumCopies) {
  const std::string name = GetParam();
  const auto workload = unimem::examples::find_workload(name);
  const Output direct = run(kEnv + UNIMEM_WORKLOAD_PROGRAM + std::string(" ") + name);
  ASSERT_EQ(direct.status, 0) << direct.text;
  const auto want = nlohmann::json::parse(direct.text);
  const fs::path report = fs::temp_directory_path() /
                          ("unimem-run-sim-" + name + "-" + std::to_string(::getpid()) + ".json");
  const Output through =
      run(kEnv + "UNIMEM_STRATEGY=lazy " + UNIMEM_CLI + std::string(" run --quiet --report ") +
          report.string() + " --devices sim:k80:4 -- " + UNIMEM_WORKLOAD_PROGRAM + " " + name);
  ASSERT_EQ(through.status, 0) << through.text;
  const auto got = nlohmann::json::parse(through.text);
  EXPECT_TRUE(got.at("verified").get<bool>());
  EXPECT_EQ(got.at("checksum"), want.at("checksum")) << "outputs differ from POCL's";
  const auto r = take_report(report);
  ASSERT_FALSE(r.is_null()) << "no report at " << report;
  ASSERT_EQ(r.at("devices").size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(r.at("devices")[i], "sim:k80#" + std::to_string(i));
  EXPECT_GT(r.at("simulated_seconds").get<double>(), 0.0);
#if UNIMEM_WITH_ANALYSIS
  const unimem::examples::TransferBytes min = workload->bytes_min(workload->small_problem(), 4);
  const unimem::examples::TransferBytes moved{r.at("bytes_h2d").get<std::uint64_t>(),
                                              r.at("bytes_d2h").get<std::uint64_t>(),
                                              r.at("bytes_d2d").get<std::uint64_t>()};
  EXPECT_EQ(moved, min) << "moved " << unimem::examples::to_string(moved) << ", minimum "
                        << unimem::examples::to_string(min);
#endif
}

std::vector<std::string> workload_names() {
  std::vector<std::string> out;
  for (const auto& w : unimem::examples::all_workloads()) out.push_back(w->name());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Workloads, WorkloadOnSimulatedDevices,
                         ::testing::ValuesIn(workload_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string id = param_info.param;
                           for (char& ch : id) {
                             if (ch == '-') ch = '_';
                           }
                           return id;
                         });

TEST(PlatformDevices, OneBufferStaysCoherentAcrossTheDevicesOfAContext) {
  const char* expected[] = {"1 devices", "2 devices", "3 devices"};
  const char* modes[] = {"aggregate", "each", "both"};
  for (int i = 0; i < 3; ++i) {
    const Output out =
        run(kEnv.substr(0, kEnv.find("POCL_DEVICES")) + "POCL_DEVICES='pthread pthread' " +
            UNIMEM_CLI + std::string(" run --quiet --platform-devices ") + modes[i] + " -- " +
            UNIMEM_EACH_DEVICE_PROGRAM);
    EXPECT_EQ(out.status, 0) << modes[i] << ": " << out.text;
    EXPECT_NE(out.text.find(expected[i]), std::string::npos) << modes[i] << ": " << out.text;
  }
}

}  // namespace

namespace {

// clEnqueueCopyBuffer and clEnqueueCopyBufferRect run on the devices where the bytes are: with
// the lazy strategy on two devices, the bytes host->device are A's upload only, and the bytes
// device->host are what the host reads back that a device changed (all of B, C's copied rect).
TEST(PlatformCopies, CopiesBetweenBuffersStayOnTheDevices) {
  const fs::path report =
      fs::temp_directory_path() / ("unimem-run-copies-" + std::to_string(::getpid()) + ".json");
  const Output out = run(kEnv + "UNIMEM_STRATEGY=lazy " + UNIMEM_CLI +
                         std::string(" run --quiet --devices 0-1 --report ") + report.string() +
                         " -- " + UNIMEM_COPY_PROGRAM);
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("copy_between_buffers: ok"), std::string::npos) << out.text;
  const auto r = take_report(report);
  ASSERT_FALSE(r.is_null()) << "no report at " << report;
#if UNIMEM_WITH_ANALYSIS
  constexpr std::uint64_t grid = 256 * 256 * 4;
  constexpr std::uint64_t rect = 248 * 4 * 254;
  EXPECT_EQ(r.at("bytes_h2d").get<std::uint64_t>(), grid) << r.dump();
  EXPECT_EQ(r.at("bytes_d2h").get<std::uint64_t>(), grid + rect) << r.dump();
  // Both copies split like the kernels around them, so no byte crosses between the devices.
  EXPECT_EQ(r.at("bytes_d2d").get<std::uint64_t>(), 0u) << r.dump();
#else
  // Without the kernel analysis both kernels run whole on one device, each fallback reported
  // with its reason; the copies' bytes then follow from where those kernels ran, not a split.
  EXPECT_EQ(r.at("split_launches").get<std::uint64_t>(), 0u) << r.dump();
  EXPECT_EQ(r.at("fallbacks").size(), 2u) << r.dump();
  for (const auto& f : r.at("fallbacks")) {
    EXPECT_FALSE(f.at("reason").get<std::string>().empty()) << r.dump();
  }
#endif
}

}  // namespace

namespace {

// A kernel reading get_global_size (through a helper function), get_num_groups, get_global_offset
// and get_group_id splits over two devices through the platform, with and without a global
// offset of its own, and reads the same values as the same binary run directly on POCL.
TEST(PlatformLaunchShape, KernelsReadingTheLaunchSizesSplitAndMatchPocl) {
  const Output direct = run(kEnv + UNIMEM_GLOBAL_SIZES_PROGRAM);
  ASSERT_EQ(direct.status, 0) << direct.text;
  ASSERT_NE(direct.text.find("global_sizes: ok"), std::string::npos) << direct.text;
  const fs::path report =
      fs::temp_directory_path() / ("unimem-run-sizes-" + std::to_string(::getpid()) + ".json");
  const Output through =
      run(kEnv + UNIMEM_CLI + std::string(" run --quiet --devices 0-1 --report ") +
          report.string() + " -- " + UNIMEM_GLOBAL_SIZES_PROGRAM);
  ASSERT_EQ(through.status, 0) << through.text;
  EXPECT_EQ(through.text, direct.text);
  const auto r = take_report(report);
  ASSERT_FALSE(r.is_null()) << "no report at " << report;
#if UNIMEM_WITH_ANALYSIS
  for (const auto& f : r.at("fallbacks")) {
    EXPECT_NE(f.at("kernel").get<std::string>(), "shape") << r.dump();
  }
  EXPECT_GE(r.at("split_launches").get<std::uint64_t>(), 2u) << r.dump();
#endif
}

// Kernels reading get_group_id (one program) and get_num_groups (another) in launches that
// leave the work-group size to the implementation, with and without a global offset of their own
// (1-D and 2-D): through `unimem run` on 1, 2 and 3 devices the platform chooses a work-group size
// and every launch splits over every device (no fallback), and the program prints exactly what it
// prints run directly on POCL (values that do not depend on the size chosen).
class GroupIdsThroughPlatform : public ::testing::TestWithParam<unsigned> {};

TEST_P(GroupIdsThroughPlatform, DriverChosenWorkGroupSizesSplitAndMatchPocl) {
  const unsigned devices = GetParam();
  const Output direct = run(kEnv + UNIMEM_GROUP_IDS_PROGRAM);
  ASSERT_EQ(direct.status, 0) << direct.text;
  ASSERT_NE(direct.text.find("group_ids: ok"), std::string::npos) << direct.text;
  const fs::path report =
      fs::temp_directory_path() / ("unimem-run-group-ids-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(devices) + ".json");
  const std::string spec = devices == 1 ? "0" : "0-" + std::to_string(devices - 1);
  const Output through = run(kEnv + UNIMEM_CLI + std::string(" run --quiet --devices ") + spec +
                             " --report " + report.string() + " -- " + UNIMEM_GROUP_IDS_PROGRAM);
  ASSERT_EQ(through.status, 0) << through.text;
  EXPECT_EQ(through.text, direct.text);
  const auto r = take_report(report);
  ASSERT_FALSE(r.is_null()) << "no report at " << report;
  ASSERT_EQ(r.at("devices").size(), devices);
  // 10 launches: ranks and counts 4 times each, ranks2 twice (the fills are not launches).
  EXPECT_EQ(r.at("launches").get<std::uint64_t>(), 10u) << r.dump();
#if UNIMEM_WITH_ANALYSIS
  if (devices > 1) {
    EXPECT_EQ(r.at("fallbacks").size(), 0u) << r.dump();
    EXPECT_EQ(r.at("split_launches").get<std::uint64_t>(), 10u) << r.dump();
    EXPECT_EQ(r.at("partitions_per_device").size(), devices) << r.dump();
    for (const auto& [device, count] : r.at("partitions_per_device").items()) {
      EXPECT_GE(count.get<std::uint64_t>(), 10u) << device << ": " << r.dump();
    }
  }
#endif
}

INSTANTIATE_TEST_SUITE_P(OneToThreeDevices, GroupIdsThroughPlatform, ::testing::Values(1u, 2u, 3u),
                         [](const ::testing::TestParamInfo<unsigned>& param_info) {
                           return "on_" + std::to_string(param_info.param) + "_devices";
                         });

}  // namespace

namespace {

// The names in `dir` that start with `prefix`.
std::vector<std::string> entries_named(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) out.push_back(name);
  }
  return out;
}

// `unimem run` keeps its loader directory and its report in a temporary directory: it removes
// both at exit unless the user asked for the report (then only the report stays, where the user
// put it). The platform tests' own vendor directory (this process's) goes at exit too. Each
// leaked a directory per run before.
TEST(PlatformRun, LeavesNothingInTheTemporaryDirectory) {
  const fs::path tmp =
      fs::temp_directory_path() / ("unimem-tmpdir-test-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string in_tmp = "TMPDIR=" + tmp.string() + " ";

  const Output plain = run(kEnv + in_tmp + UNIMEM_CLI + std::string(" run --quiet -- ") +
                           UNIMEM_EACH_DEVICE_PROGRAM);
  EXPECT_EQ(plain.status, 0) << plain.text;
  EXPECT_EQ(entries_named(tmp, "unimem-"), std::vector<std::string>{}) << "after `unimem run`";

  const fs::path report = tmp / "report.json";
  const Output reported =
      run(kEnv + in_tmp + "UNIMEM_REPORT=" + report.string() + " " + UNIMEM_CLI +
          std::string(" run --quiet -- ") + UNIMEM_EACH_DEVICE_PROGRAM);
  EXPECT_EQ(reported.status, 0) << reported.text;
  EXPECT_FALSE(take_report(report).is_null()) << "UNIMEM_REPORT's file is the user's: kept";
  EXPECT_EQ(entries_named(tmp, "unimem-"), std::vector<std::string>{})
      << "after `unimem run` with UNIMEM_REPORT";

  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const Output listed = run(in_tmp + self + " --gtest_list_tests");
  EXPECT_EQ(listed.status, 0) << listed.text;
  EXPECT_EQ(entries_named(tmp, "unimem-"), std::vector<std::string>{})
      << "after the platform tests' own process";
  fs::remove_all(tmp);
}

}  // namespace
