#pragma once

// What a team kernel (include/unimem/team.h: master / worker mode with shared variables in team
// memory, Bercea et al., 003_f274930815df8cd3.txt section 5.2) costs per work-group
// (<unimem/team_footprint.hpp>), read from the name of its spill parameter. UM_TEAM_PARAM(n) names
// that parameter um_team_spill_v<n>_s<slots>, so the host sizes the spill area from what the device
// compiled; the kernel analysis, the build report and Program::launch all read it through this one
// function.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <unimem/team_footprint.hpp>

namespace unimem {

/// The prefix of a spill parameter's name.
inline constexpr std::string_view kTeamSpillPrefix = "um_team_spill_v";

/// The footprint a spill parameter name describes (argument left 0), or nullopt when name is not
/// one ("um_team_spill_v<digits>_s<digits>", each count below 2^20).
[[nodiscard]] std::optional<TeamFootprint> parse_team_spill_name(std::string_view name);

/// The footprint of a kernel with these parameter names: a team kernel's last parameter is its
/// spill parameter. nullopt for other kernels. Throws std::invalid_argument when a parameter
/// other than the last is a spill parameter (UM_TEAM_PARAM must come last).
[[nodiscard]] std::optional<TeamFootprint> team_footprint(const std::string& kernel,
                                                          std::span<const std::string> parameters);

}  // namespace unimem
