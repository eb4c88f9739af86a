#include "common/byte_size.hpp"

#include <cctype>
#include <limits>

#include <unimem/errors.hpp>

namespace unimem {

ByteSizeParse parse_byte_size(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  auto fail = [&](const std::string& why) {
    return ByteSizeParse{std::nullopt, quoted + ": " + why};
  };
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty()) return fail("empty, expected a byte count such as 4096, 64K, 256M or 2G");
  if (text.front() == '-') return fail("must not be negative");
  if (text.front() == '+') text.remove_prefix(1);
  std::uint64_t value = 0;
  std::size_t i = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) return fail("larger than 2^64 - 1 bytes");
    value = value * 10 + digit;
  }
  if (i == 0) return fail("not a number, expected a byte count such as 4096, 64K, 256M or 2G");
  std::string suffix;
  for (char c : text.substr(i))
    suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    shift = suffix[0] == 'K' ? 10 : suffix[0] == 'M' ? 20 : 30;
    suffix.erase(0, 1);
    if (suffix == "IB" || suffix == "B") suffix.clear();
  } else if (suffix == "B") {
    suffix.clear();
  }
  if (!suffix.empty()) {
    return fail("unknown suffix '" + std::string(text.substr(i)) + "' (use K, M or G)");
  }
  if (shift != 0 && value > (kMax >> shift)) return fail("larger than 2^64 - 1 bytes");
  value <<= shift;
  if (value == 0) return fail("must be positive");
  return ByteSizeParse{value, {}};
}

std::uint64_t require_byte_size(std::string_view text, const std::string& what) {
  ByteSizeParse p = parse_byte_size(text);
  if (!p.bytes) throw PreconditionError(what + ": " + p.error);
  return *p.bytes;
}

}  // namespace unimem
