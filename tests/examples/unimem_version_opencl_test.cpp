// Every workload's unimem version on 1, 2 and 3 POCL devices through the OpenCL driver, running
// the same .cl kernels as the hand-written version: results match the CPU reference, and under the
// lazy strategy the runtime moves exactly bytes_min (adaptive: at most bytes_min plus speculative
// prefetch). POCL_DEVICES is set to three pthread devices before main (workloads_test.cpp).

#include <gtest/gtest.h>

#include <ostream>

#include "device/host/host_device.hpp"
#include "device/opencl/opencl_context.hpp"
#include "examples/opencl_kernel_provider.hpp"
#include "examples/unimem_version.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace {

struct Case {
  std::string workload;
  unsigned devices;
  UpdateStrategy strategy;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.workload << " on " << c.devices << " POCL devices, " << to_string(c.strategy);
}

class UnimemVersionOnOpenClDevices : public ::testing::TestWithParam<Case> {};

TEST_P(UnimemVersionOnOpenClDevices, MatchesTheReferenceAndMovesExactlyTheMinimumBytes) {
  const Case c = GetParam();
  DeviceRegistry registry = opencl::make_opencl_devices();
  if (registry.size() < c.devices) {
    GTEST_SKIP() << "only " << registry.size() << " OpenCL devices (POCL_DEVICES set elsewhere?)";
  }
  const std::unique_ptr<Workload> workload = find_workload(c.workload);
  const Problem problem = workload->small_problem();
  const std::uint64_t seed = 20261122;
  SCOPED_TRACE("workload=" + c.workload + " devices=" + std::to_string(c.devices) +
               " strategy=" + std::string(to_string(c.strategy)) +
               " size=" + std::to_string(problem.size) + " seed=" + std::to_string(seed));
  const Arrays inputs = workload->make_inputs(problem, seed);
  Runtime runtime(std::move(registry), RuntimeOptions{c.strategy});
  OpenClKernelProvider kernels(runtime);
  std::vector<std::size_t> devices;
  for (std::size_t d = 0; d < c.devices; ++d) devices.push_back(d);
  const UnimemResult got = run_unimem(*workload, runtime, kernels, devices, problem, inputs);

  const Comparison comparison =
      compare(got.outputs, workload->reference(problem, inputs), workload->tolerance());
  EXPECT_TRUE(comparison.ok) << comparison.mismatches << " mismatches, first "
                             << comparison.first_mismatch;
  const TransferBytes min = workload->bytes_min(problem, c.devices);
  const TransferBytes moved = transfer_bytes(got.moved);
  if (c.strategy == UpdateStrategy::lazy) {
    EXPECT_EQ(moved, min) << "moved " << to_string(moved) << ", minimum " << to_string(min)
                          << "; runtime stats " << got.moved.to_json();
  } else {
    EXPECT_GE(moved.total(true), min.total(true)) << got.moved.to_json();
    EXPECT_LE(moved.total(true) - min.total(true), got.moved.prefetch_bytes)
        << "moved " << to_string(moved) << ", minimum " << to_string(min) << "; runtime stats "
        << got.moved.to_json();
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& w : all_workloads()) {
    for (unsigned d = 1; d <= 3; ++d) cases.push_back({w->name(), d, UpdateStrategy::lazy});
    cases.push_back({w->name(), 2, UpdateStrategy::adaptive});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Workloads, UnimemVersionOnOpenClDevices, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           std::string name = param.param.workload + "_on_" +
                                              std::to_string(param.param.devices) + "_devices_" +
                                              std::string(to_string(param.param.strategy));
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(OpenClKernelProvider, RejectsADeviceThatIsNotAnOpenClDevice) {
  DeviceRegistry registry;
  registry.add(std::make_shared<HostDevice>("host:0"));
  Runtime runtime(std::move(registry));
  OpenClKernelProvider kernels(runtime);
  const std::unique_ptr<Workload> workload = find_workload("stencil2d");
  try {
    (void)kernels.kernel(0, workload->kernel_sources().front(), "stencil2d");
    FAIL() << "a host device was accepted as an OpenCL device";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("host:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace unimem::examples
