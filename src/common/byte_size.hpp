#pragma once

// Byte counts written by people: "4096", "64K", "256M", "2G" (binary multiples, an optional
// trailing "B" or "iB": "256MiB"), for UNIMEM_DEVICE_MEMORY and --device-memory.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace unimem {

/// The byte count text denotes, or the reason it denotes none ("'12X': unknown suffix 'X' (use
/// K, M or G)"). Zero, negative numbers, fractions, other suffixes and values beyond 2^64 - 1 are
/// rejected; surrounding blanks are ignored.
struct ByteSizeParse {
  std::optional<std::uint64_t> bytes;
  std::string error;  ///< empty when bytes is set
};
[[nodiscard]] ByteSizeParse parse_byte_size(std::string_view text);

/// parse_byte_size that throws PreconditionError "<what>: <error>" on a bad value.
[[nodiscard]] std::uint64_t require_byte_size(std::string_view text, const std::string& what);

}  // namespace unimem
