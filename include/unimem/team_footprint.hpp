#pragma once

// What a team kernel (the OpenCL C device library <unimem/team.h>: master / worker mode with
// shared variables in team memory, Bercea et al., 003_f274930815df8cd3.txt section 5.2) costs per
// work-group. Program::build_report() lists one per team kernel; `unimem analyze` prints them.

#include <cstdint>
#include <string>

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
  /// "21 shared variables: 20 in team memory (20 slots, 160 B per work-group), 1 spilled (8 B per
  /// work-group)".
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const TeamFootprint&, const TeamFootprint&) = default;
};

}  // namespace unimem
