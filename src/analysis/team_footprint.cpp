#include "analysis/team_footprint.hpp"

#include <stdexcept>

namespace unimem {

namespace {

// Digits at the front of text (at most 7 of them), consumed.
std::optional<std::uint32_t> take_count(std::string_view& text) {
  std::uint32_t value = 0;
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (digits == 7) return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(text[digits] - '0');
    ++digits;
  }
  if (digits == 0 || value >= (1U << 20)) return std::nullopt;
  text.remove_prefix(digits);
  return value;
}

}  // namespace

std::string TeamFootprint::to_string() const {
  return std::to_string(shared_variables) +
         (shared_variables == 1 ? " shared variable: " : " shared variables: ") +
         std::to_string(shared_variables - spilled_variables()) + " in team memory (" +
         std::to_string(slots) + " slots, " + std::to_string(team_memory_bytes()) +
         " B per work-group), " + std::to_string(spilled_variables()) + " spilled (" +
         std::to_string(spill_bytes_per_group()) + " B per work-group)";
}

std::optional<TeamFootprint> parse_team_spill_name(std::string_view name) {
  if (!name.starts_with(kTeamSpillPrefix)) return std::nullopt;
  name.remove_prefix(kTeamSpillPrefix.size());
  const std::optional<std::uint32_t> shared = take_count(name);
  if (!shared || !name.starts_with("_s")) return std::nullopt;
  name.remove_prefix(2);
  const std::optional<std::uint32_t> slots = take_count(name);
  if (!slots || !name.empty()) return std::nullopt;
  TeamFootprint f;
  f.shared_variables = *shared;
  f.slots = *slots;
  return f;
}

std::optional<TeamFootprint> team_footprint(const std::string& kernel,
                                            std::span<const std::string> parameters) {
  for (std::size_t i = 0; i + 1 < parameters.size(); ++i) {
    if (parse_team_spill_name(parameters[i])) {
      throw std::invalid_argument("kernel '" + kernel + "': parameter " + std::to_string(i) +
                                  " ('" + parameters[i] +
                                  "') is a team spill parameter but not the last one; "
                                  "UM_TEAM_PARAM must be the kernel's last parameter");
    }
  }
  if (parameters.empty()) return std::nullopt;
  std::optional<TeamFootprint> f = parse_team_spill_name(parameters.back());
  if (f) f->argument = static_cast<std::uint32_t>(parameters.size() - 1);
  return f;
}

}  // namespace unimem
