#pragma once

// Scalar kernel-argument values given as text (`unimem analyze --arg NAME=VALUE`), checked against
// the parameter's OpenCL C type.

#include <cstdint>
#include <string>

#include "analysis/access_pattern.hpp"

namespace unimem {

struct ScalarArgumentValue {
  bool floating = false;
  std::int64_t integer = 0;  ///< the value of an integer parameter
  double real = 0;           ///< the value of a floating-point parameter (as given, in double)
};

/// Parses text as a value of the scalar parameter arg: an integer (decimal, 0x hex or 0 octal)
/// within the range of an integer parameter's type (signedness from its base type name: uchar,
/// ushort, uint, ulong, size_t and "unsigned ..." are unsigned), or any decimal / hexadecimal
/// floating-point number within the range of a float, double or half parameter.
/// Throws std::invalid_argument naming the argument, the text and the type when the text is not
/// such a number, does not fit, or arg is not a scalar.
[[nodiscard]] ScalarArgumentValue parse_scalar_argument(const ArgumentAccess& arg,
                                                        const std::string& text);

}  // namespace unimem
