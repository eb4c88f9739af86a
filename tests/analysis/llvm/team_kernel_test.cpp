// Team kernels (include/unimem/team.h) through the kernel analysis: the spill area is written in
// one disjoint slice per work-group (so team kernels stay splittable), and the per-team result a
// master writes at um_team_num() is the work-group's own element.
#include <gtest/gtest.h>

#include "analysis/test_support.hpp"
#include "api/device_library.hpp"

namespace unimem {
namespace {

using test::execute;
using test::Item;
using test::nd;
using test::Touched;

constexpr const char* kTeamSource = R"CLC(
#include <unimem/team.h>
#define NV 100
kernel void share(global const int* in, global int* sums, UM_TEAM_PARAM(NV)) {
  UM_TEAM_BEGIN(team, NV);
  UM_MASTER(team)
    for (uint v = 0; v < NV; ++v) um_share_int(team, v, in[um_team_num(team) * NV + v]);
  UM_END_MASTER(team);
  UM_PARALLEL(team)
    int s = 0;
    for (uint v = 0; v < NV; ++v) s += um_shared_int(team, v);
    if (um_team_is_master(team)) sums[um_team_num(team)] = s;
  UM_END_PARALLEL(team);
  UM_TEAM_END(team);
}
)CLC";

TEST(TeamKernel, SpillSlicesAreDisjointPerWorkGroupAndTheKernelSplits) {
  const std::string options = detail::device_library_build_options();
  const KernelAccessInfo info = test::analyze_kernel(kTeamSource, "share", options);
  ASSERT_EQ(info.args.size(), 3U);
  EXPECT_EQ(info.args[2].name, "um_team_spill_v100_s20");
  const KernelRangeGenerator gen(info);
  const NDRange range = nd({8 * 16, 1, 1}, {16, 1, 1}, 1);
  EXPECT_TRUE(gen.splittable(range, {}));
  // Variables 20..99 of team g live at spill words g * 80 + (v - 20); its inputs at in[g * 100 +
  // v].
  const auto mirror = [](const Item& it, Touched& t) {
    const std::int64_t g = it.group_id[0];
    if (it.local_id[0] == 0) {
      for (std::int64_t v = 0; v < 100; ++v) t.load("in", g * 100 + v, 4);
      for (std::int64_t v = 20; v < 100; ++v) {
        t.store("um_team_spill_v100_s20", g * 80 + v - 20, 8);
      }
      t.store("sums", g, 4);
    }
    for (std::int64_t v = 20; v < 100; ++v) {
      t.load("um_team_spill_v100_s20", g * 80 + v - 20, 8);
    }
  };
  for (const Box<3>& g : test::random_group_boxes(range, 7, 6)) {
    SCOPED_TRACE(test::describe(7, g));
    test::expect_matches(gen.ranges(range, g, {}), execute(range, g, mirror), test::Claim::safe);
  }
}

}  // namespace
}  // namespace unimem
