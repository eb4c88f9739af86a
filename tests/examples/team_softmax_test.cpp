// The team-kernel example (examples/team/): row-wise softmax with one team per row equals its CPU
// reference on 1, 2 and 3 POCL devices and splits over all of them.
#include "examples/team/team_softmax.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "device/opencl/opencl_context.hpp"

namespace unimem::examples {
namespace {

const bool kPoclRequested = [] {
  setenv("POCL_DEVICES", "pthread pthread pthread", 0);
  return true;
}();

TEST(TeamSoftmax, EqualsTheReferenceOnOneToThreeDevices) {
  ASSERT_TRUE(kPoclRequested);
  DeviceRegistry devices = opencl::make_opencl_devices("");
  if (devices.size() == 0) GTEST_SKIP() << "needs an OpenCL device";
  Runtime runtime(std::move(devices));
  const std::uint64_t rows = 12;
  const std::uint64_t cols = 77;  // not a multiple of the team size
  std::vector<float> in(rows * cols);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 53) % 97) / 7.0f;
  const std::vector<float> ref = team_softmax_reference(in, rows, cols);
  for (std::size_t n = 1; n <= std::min<std::size_t>(3, runtime.device_count()); ++n) {
    LaunchOptions options;
    for (std::size_t d = 0; d < n; ++d) options.devices.push_back(d);
    const TeamSoftmaxRun run = team_softmax(runtime, in, rows, cols, options);
#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS
    EXPECT_EQ(run.partitions, n);  // the analysis gives in and out their bytes per partition
#endif
    EXPECT_EQ(run.footprint.shared_variables, 34U);
    EXPECT_EQ(run.footprint.spill_bytes_per_group(), 14U * 8);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      // exp in OpenCL may differ from libm by a few ulp.
      ASSERT_NEAR(run.out[i], ref[i], 1e-6 + 1e-5 * std::fabs(ref[i]))
          << "element " << i << " on " << n << " devices";
    }
  }
}

}  // namespace
}  // namespace unimem::examples
