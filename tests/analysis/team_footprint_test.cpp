// The footprint of a team kernel read from its spill parameter's name (UM_TEAM_PARAM in
// include/unimem/team.h): counts, bytes, malformed names, and the parameter's place.
#include "analysis/team_footprint.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace unimem {
namespace {

TEST(TeamFootprint, ASpillParameterNameGivesVariablesSlotsAndBytes) {
  const auto f = parse_team_spill_name("um_team_spill_v21_s20");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->shared_variables, 21U);
  EXPECT_EQ(f->slots, 20U);
  EXPECT_EQ(f->team_memory_bytes(), 160U);
  EXPECT_EQ(f->spilled_variables(), 1U);
  EXPECT_EQ(f->spill_bytes_per_group(), 8U);
  EXPECT_EQ(f->to_string(),
            "21 shared variables: 20 in team memory (20 slots, 160 B per work-group), 1 spilled "
            "(8 B per work-group)");
  const auto few = parse_team_spill_name("um_team_spill_v3_s20");
  ASSERT_TRUE(few.has_value());
  EXPECT_EQ(few->spill_bytes_per_group(), 0U);
  const auto none = parse_team_spill_name("um_team_spill_v100_s0");
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->team_memory_bytes(), 0U);
  EXPECT_EQ(none->spill_bytes_per_group(), 800U);
}

TEST(TeamFootprint, OtherNamesAreNotSpillParameters) {
  for (const char* name :
       {"", "a", "um_team_spill_v", "um_team_spill_v21", "um_team_spill_v21_s",
        "um_team_spill_vx_s20", "um_team_spill_v21_s20x", "um_team_spill_v-1_s2",
        "um_team_spill_v99999999_s20", "um_team_spill_v2000000_s20", "xum_team_spill_v1_s1"}) {
    EXPECT_FALSE(parse_team_spill_name(name).has_value()) << name;
  }
}

TEST(TeamFootprint, OnlyTheLastParameterMayBeTheSpillParameter) {
  const std::vector<std::string> team = {"in", "out", "um_team_spill_v4_s20"};
  const auto f = team_footprint("k", team);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->argument, 2U);
  EXPECT_FALSE(team_footprint("k", std::vector<std::string>{"in", "out"}).has_value());
  EXPECT_FALSE(team_footprint("k", std::vector<std::string>{}).has_value());
  const std::vector<std::string> misplaced = {"um_team_spill_v4_s20", "out"};
  EXPECT_THROW((void)team_footprint("k", misplaced), std::invalid_argument);
}

}  // namespace
}  // namespace unimem
