#include "analysis/scalar_argument.hpp"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace unimem {

namespace {

bool is_unsigned_type(const std::string& type) {
  return type.rfind("unsigned", 0) == 0 || type == "uchar" || type == "ushort" || type == "uint" ||
         type == "ulong" || type == "size_t" || type == "uintptr_t" || type == "bool";
}

/// Largest finite value of the floating-point parameter type of the given width.
double largest_finite(std::uint32_t bits) {
  if (bits == 16) return 65504.0;  // IEEE 754 binary16 (OpenCL half)
  if (bits == 32) return static_cast<double>(FLT_MAX);
  return DBL_MAX;
}

}  // namespace

ScalarArgumentValue parse_scalar_argument(const ArgumentAccess& arg, const std::string& text) {
  const std::string type = arg.base_type_name.empty() ? arg.type_name : arg.base_type_name;
  const std::string what = "argument '" + arg.name + "' (" + arg.type_name + ")";
  if (arg.kind != ArgKind::scalar || arg.scalar_bits == 0) {
    throw std::invalid_argument(what + " is not a scalar parameter");
  }
  const bool blank = text.empty() || text.find_first_of(" \t\n") != std::string::npos;
  ScalarArgumentValue out;
  out.floating = arg.scalar_floating;
  if (arg.scalar_floating) {
    char* end = nullptr;
    errno = 0;
    const double v = blank ? 0.0 : std::strtod(text.c_str(), &end);
    if (blank || end != text.c_str() + text.size()) {
      throw std::invalid_argument(what + ": '" + text + "' is not a number");
    }
    if ((errno == ERANGE && std::isinf(v)) ||
        (std::isfinite(v) && std::fabs(v) > largest_finite(arg.scalar_bits))) {
      throw std::invalid_argument(what + ": " + text + " does not fit a " +
                                  std::to_string(arg.scalar_bits) + "-bit " + type);
    }
    out.real = v;
    return out;
  }
  char* end = nullptr;
  errno = 0;
  const bool negative = !blank && text[0] == '-';
  const bool is_unsigned = is_unsigned_type(type);
  // Magnitude in 64 bits unsigned, then the type's range.
  const std::string digits = negative || (!blank && text[0] == '+') ? text.substr(1) : text;
  const unsigned long long magnitude =
      blank || digits.empty() || digits[0] == '-' || digits[0] == '+'
          ? 0
          : std::strtoull(digits.c_str(), &end, 0);
  if (blank || digits.empty() || end != digits.c_str() + digits.size()) {
    throw std::invalid_argument(what + ": '" + text + "' is not an integer");
  }
  const std::uint32_t bits = arg.scalar_bits;
  const bool overflow = errno == ERANGE;
  // Representable range: [-2^(bits-1), 2^(bits-1) - 1] signed, [0, 2^bits - 1] unsigned; the
  // analysis computes in int64, so a ulong above INT64_MAX does not fit either.
  const unsigned long long max_positive =
      is_unsigned
          ? (bits >= 64 ? static_cast<unsigned long long>(INT64_MAX) : (1ULL << bits) - 1ULL)
          : (1ULL << (bits - 1)) - 1ULL;
  const unsigned long long max_negative =
      is_unsigned ? 0ULL : (1ULL << (bits - 1));  // magnitude of the most negative value
  if (overflow || (!negative && magnitude > max_positive) ||
      (negative && magnitude > max_negative)) {
    throw std::invalid_argument(what + ": " + text + " does not fit a " + std::to_string(bits) +
                                "-bit " + (is_unsigned ? "unsigned " : "signed ") + type);
  }
  out.integer = negative ? (magnitude == (1ULL << 63) ? std::numeric_limits<std::int64_t>::min()
                                                      : -static_cast<std::int64_t>(magnitude))
                         : static_cast<std::int64_t>(magnitude);
  return out;
}

}  // namespace unimem
