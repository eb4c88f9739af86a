#include "device/sim/sim_selection.hpp"

#include <charconv>

#include <unimem/errors.hpp>
#include "device/sim/sim_model.hpp"

namespace unimem::sim {

std::optional<SimSelection> parse_sim_selection(std::string_view selection) {
  constexpr std::string_view prefix = "sim:";
  if (selection.substr(0, prefix.size()) != prefix) return std::nullopt;
  const auto fail = [&](const std::string& why) {
    std::string message = "device selection '";
    message += selection;
    message += "': ";
    message += why;
    message += " (syntax: sim:PRESET:COUNT[:UNDERLYING], e.g. sim:k80:16)";
    throw PreconditionError(message);
  };
  std::string_view rest = selection.substr(prefix.size());
  const std::size_t colon = rest.find(':');
  if (colon == std::string_view::npos) fail("no device count");
  SimSelection out;
  out.preset = std::string(rest.substr(0, colon));
  (void)find_preset(out.preset);  // throws, listing the presets
  rest = rest.substr(colon + 1);
  const std::size_t colon2 = rest.find(':');
  const std::string_view count = rest.substr(0, colon2);
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), out.count);
  if (ec != std::errc() || end != count.data() + count.size() || out.count < 1 || out.count > 64) {
    fail("the device count must be a number in 1..64");
  }
  if (colon2 != std::string_view::npos) out.underlying = std::string(rest.substr(colon2 + 1));
  return out;
}

}  // namespace unimem::sim
