#pragma once

// Number options of the unimem command. CLI11 converts "-5" for an unsigned option by wrapping it
// (to 18446744073709551611), so a negative value would surface later as "too large", or not at
// all: every unsigned option checks the sign of its text first.

#include <CLI/CLI.hpp>

#include <string>

#include "common/byte_size.hpp"

namespace unimem::tools {

/// "must not be negative, got -5" when text is written with a minus sign, else "". Only the sign
/// is looked at: whether the rest is a number is left to the conversion.
inline std::string negative_number_error(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos || text[first] != '-') return {};
  return "must not be negative, got " + text.substr(first);
}

/// Check every unsigned option with this, before any range check:
/// `cmd->add_option("--size", size, "...")->check(not_negative)`. CLI11 puts the option's name
/// in front of the message: "--size: must not be negative, got -5".
inline const CLI::Validator not_negative{negative_number_error, "", "NOT_NEGATIVE"};

/// A byte count with an optional K, M or G suffix ("4096", "64K", "256M"; common/byte_size.hpp):
/// `->check(not_negative)->check(byte_size)`, then parse_byte_size(text) in the callback.
inline const CLI::Validator byte_size{[](const std::string& text) {
                                        const ByteSizeParse p = parse_byte_size(text);
                                        return p.bytes ? std::string() : p.error;
                                      },
                                      "BYTES", "BYTE_SIZE"};

}  // namespace unimem::tools
