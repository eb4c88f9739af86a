#pragma once

// What a team kernel (include/unimem/team.h: master / worker mode with shared variables in team
// memory, Bercea et al., 003_f274930815df8cd3.txt section 5.2) costs per work-group, read from the
// name of its spill parameter. UM_TEAM_PARAM(n) names that parameter um_team_spill_v<n>_s<slots>,
// so the host sizes the spill area from what the device compiled; the kernel analysis, the build
// report and Program::launch all read it through this one function.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace unimem {

/// The shared variables of one team kernel and where they live.
struct TeamFootprint {
  std::uint32_t argument = 0;          ///< index of the spill parameter (the kernel's last)
  std::uint32_t shared_variables = 0;  ///< n of UM_TEAM_PARAM(n)
  std::uint32_t slots = 0;             ///< UM_TEAM_SLOTS the kernel was built with

  static constexpr std::uint64_t kWordBytes = 8;  ///< one shared variable (a 64-bit word)

  /// Team (__local) memory per work-group: every slot is preallocated, as in the paper.
  [[nodiscard]] std::uint64_t team_memory_bytes() const { return slots * kWordBytes; }
  /// Variables beyond the slots, in the spill area.
  [[nodiscard]] std::uint32_t spilled_variables() const {
    return shared_variables > slots ? shared_variables - slots : 0;
  }
  /// Global-memory spill per work-group.
  [[nodiscard]] std::uint64_t spill_bytes_per_group() const {
    return spilled_variables() * kWordBytes;
  }
  /// "21 shared variables: 20 in team memory (160 B per work-group), 1 spilled (8 B per
  /// work-group)".
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const TeamFootprint&, const TeamFootprint&) = default;
};

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
