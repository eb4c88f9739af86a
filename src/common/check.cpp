#include "common/check.hpp"

#include <string>

namespace unimem::detail {

void throw_precondition(const char* message, const char* condition, const char* file, int line) {
  throw PreconditionError(std::string(message) + " (failed: " + condition + " at " + file + ":" +
                          std::to_string(line) + ")");
}

void throw_invariant(const std::string& message, const char* file, int line) {
  throw InvariantError("unimem invariant violated: " + message + " (" + file + ":" +
                       std::to_string(line) + ")");
}

}  // namespace unimem::detail
