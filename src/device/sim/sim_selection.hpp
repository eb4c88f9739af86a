#pragma once

// How simulated devices are named in a device selection (UNIMEM_DEVICES, --devices):
//   sim:PRESET:COUNT[:UNDERLYING]
// COUNT simulated devices of preset PRESET (sim_model.hpp presets()), running for real on the
// devices UNDERLYING selects (the OpenCL selection syntax; empty: every device).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace unimem::sim {

struct SimSelection {
  std::string preset;
  std::size_t count = 0;
  std::string underlying;  ///< selection of the real devices ("" = all)
};

/// nullopt when `selection` does not start with "sim:"; otherwise the parsed selection. Throws
/// PreconditionError naming the selection for an unknown preset or a count outside 1..64.
[[nodiscard]] std::optional<SimSelection> parse_sim_selection(std::string_view selection);

}  // namespace unimem::sim
