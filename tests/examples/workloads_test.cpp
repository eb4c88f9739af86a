// Every workload's hand-written multi-device OpenCL version on 1, 2 and 3 POCL devices: its
// results match the CPU reference (bitwise, or within the workload's documented tolerance) and the
// bytes it moves equal the workload's bytes_min.

#include <gtest/gtest.h>

#include <ostream>

#include <unimem/errors.hpp>
#include "device/opencl/opencl_discovery.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace {

// The ICD loader reads POCL_DEVICES once, at the first OpenCL call: ask for three pthread devices
// before main (unless the environment already chose) and use subsets of 1, 2 and 3.
const bool kPoclRequested = [] {
  (void)opencl::request_pocl_devices(3);
  return true;
}();

const ClPlatformDevices& platform() {
  static const ClPlatformDevices devices = discover_opencl_devices();
  return devices;
}

struct Case {
  std::string workload;
  unsigned devices;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.workload << " on " << c.devices << " devices";
}

class ManualVersion : public ::testing::TestWithParam<Case> {};

TEST_P(ManualVersion, MatchesTheReferenceAndMovesExactlyTheMinimumBytes) {
  ASSERT_TRUE(kPoclRequested);
  const Case c = GetParam();
  if (platform().devices.size() < c.devices) {
    GTEST_SKIP() << "platform " << platform().platform_name << " has only "
                 << platform().devices.size() << " devices (POCL_DEVICES set elsewhere?)";
  }
  const std::unique_ptr<Workload> workload = find_workload(c.workload);
  const Problem problem = workload->small_problem();
  const std::uint64_t seed = 20261122;
  SCOPED_TRACE("workload=" + c.workload + " devices=" + std::to_string(c.devices) +
               " size=" + std::to_string(problem.size) + " steps=" + std::to_string(problem.steps) +
               " seed=" + std::to_string(seed));
  const Arrays inputs = workload->make_inputs(problem, seed);
  const Arrays want = workload->reference(problem, inputs);
  const std::vector<cl_device_id> devices(platform().devices.begin(),
                                          platform().devices.begin() + c.devices);
  const ManualResult got = workload->run_manual(platform(), devices, problem, inputs);

  const Comparison comparison = compare(got.outputs, want, workload->tolerance());
  EXPECT_TRUE(comparison.ok) << comparison.mismatches << " mismatches, first "
                             << comparison.first_mismatch << ", max abs error "
                             << comparison.max_abs_error;
  EXPECT_EQ(got.moved, workload->bytes_min(problem, c.devices))
      << "moved " << to_string(got.moved) << ", minimum "
      << to_string(workload->bytes_min(problem, c.devices));
  // Whole-buffer coherence never moves less than the minimum.
  EXPECT_GE(workload->bytes_whole_buffer(problem, c.devices).total(true), got.moved.total(true));
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& w : all_workloads()) {
    for (unsigned d = 1; d <= 3; ++d) cases.push_back({w->name(), d});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Workloads, ManualVersion, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           std::string name = param.param.workload + "_on_" +
                                              std::to_string(param.param.devices) + "_devices";
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(ManualContext, ReportsABuildFailureWithTheErrorNameAndTheCompilerLog) {
  ASSERT_TRUE(kPoclRequested);
  const std::vector<cl_device_id> one(platform().devices.begin(), platform().devices.begin() + 1);
  ManualContext context(platform(), one);
  try {
    (void)context.build("kernel void broken(global float* x) { x[0] = undeclared_name; }", "",
                        "broken.cl");
    FAIL() << "building a kernel with an undeclared name succeeded";
  } catch (const DeviceError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), CL_BUILD_PROGRAM_FAILURE);
    EXPECT_NE(message.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << message;
    EXPECT_NE(message.find("broken.cl"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
  }
}

TEST(ManualContext, NamesOpenClErrorsAndCountsEveryTransfer) {
  ASSERT_TRUE(kPoclRequested);
  if (platform().devices.size() < 2) GTEST_SKIP() << "needs two devices";
  const std::vector<cl_device_id> two(platform().devices.begin(), platform().devices.begin() + 2);
  ManualContext context(platform(), two);
  std::vector<float> data{1, 2, 3, 4, 5, 6, 7, 8};
  const ClMem a = context.allocate(0, 32, "a");
  const ClMem b = context.allocate(1, 32, "b");
  const ClEvent up = context.write(0, a, 0, data.data(), 32);
  const ClEvent waits[] = {up};
  const ClEvent peer = context.copy(1, a, 8, b, 0, 16, waits);
  std::vector<float> back(4, 0.0f);
  const ClEvent peer_done[] = {peer};
  (void)context.read(1, b, 0, back.data(), 16, peer_done);
  context.finish_all();
  EXPECT_EQ(back, (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(context.transfers(), (TransferBytes{32, 16, 16}));
  // Reading past the end of a buffer is reported by name, not as a number.
  try {
    (void)context.read(0, a, 24, back.data(), 16);
    FAIL() << "an out-of-range read succeeded";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_INVALID_VALUE") << e.what();
  }
}

}  // namespace
}  // namespace unimem::examples
