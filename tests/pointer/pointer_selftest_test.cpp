// The pointer layer's randomized differential check (selftest/pointer_selftest.hpp) over seeds,
// protocols and 1..3 devices (as many of them as the environment has: two with
// POCL_DEVICES="pthread pthread"; the CLI tests in tests/CMakeLists.txt run three).

#include <algorithm>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include <unimem/unimem.h>
#include "selftest/pointer_selftest.hpp"

namespace {

using Params = std::tuple<std::string, std::size_t, std::uint64_t>;  // protocol, devices, seed

class PointerSelftest : public ::testing::TestWithParam<Params> {};

TEST_P(PointerSelftest, HostAccessesAndLaunchesMatchAFlatMemory) {
  const auto& [protocol, devices, seed] = GetParam();
  const std::size_t available = um_device_count();
  ASSERT_GT(available, 0u) << um_last_error_text();
  unimem::PointerSelftestOptions o;
  o.seed = seed;
  o.ops = 150;
  o.devices = std::min(devices, available);
  o.protocol = protocol;
  o.block_size = seed % 2 == 0 ? 4096 : 16384;
  const auto r = unimem::run_pointer_selftest(o);
  EXPECT_TRUE(r.ok) << "reproduce: unimem selftest pointer --seed " << seed << " --ops 150"
                    << " --devices " << o.devices << " --protocol " << protocol << " --block-size "
                    << o.block_size << "\n"
                    << r.to_json(o);
  EXPECT_EQ(r.mismatched_bytes, 0u);
  EXPECT_GT(r.host_checks, 0u);
  EXPECT_GT(r.launches, 0u);
  EXPECT_GT(r.io_calls, 0u);
  EXPECT_GT(r.faults, 0u);
  EXPECT_GT(r.bytes_copied, 0u);
}

TEST(PointerSelftestOptions, BadOptionsAreRejectedByName) {
  unimem::PointerSelftestOptions o;
  o.protocol = "eager";
  EXPECT_THROW(
      {
        try {
          unimem::run_pointer_selftest(o);
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find("'eager'"), std::string::npos) << e.what();
          throw;
        }
      },
      std::exception);
  o.protocol = "lazy";
  o.devices = 1000;
  EXPECT_THROW(unimem::run_pointer_selftest(o), std::exception);
}

std::string name(const ::testing::TestParamInfo<Params>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "dev_seed" +
         std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Sweep, PointerSelftest,
                         ::testing::Combine(::testing::Values("batch", "lazy", "rolling"),
                                            ::testing::Values(1, 2, 3),
                                            ::testing::Values(11, 12, 13)),
                         name);

}  // namespace
