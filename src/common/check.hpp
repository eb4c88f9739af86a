#pragma once

#include <string>

#include <unimem/errors.hpp>

/// Precondition and invariant checks.
///
/// UNIMEM_REQUIRE checks an argument precondition in every build and throws
/// unimem::PreconditionError naming the failed condition: bad input is reported, never undefined.
/// UNIMEM_INVARIANT checks an internal invariant; it is compiled only with UNIMEM_CHECK_INVARIANTS
/// (Debug builds and the test configurations), and throws unimem::InvariantError so tests see it.

namespace unimem {

namespace detail {
[[noreturn]] void throw_precondition(const char* message, const char* condition, const char* file,
                                     int line);
[[noreturn]] void throw_invariant(const std::string& message, const char* file, int line);
}  // namespace detail

}  // namespace unimem

#define UNIMEM_REQUIRE(cond, message)                                                      \
  do {                                                                                     \
    if (!(cond)) ::unimem::detail::throw_precondition(message, #cond, __FILE__, __LINE__); \
  } while (false)

#if defined(UNIMEM_CHECK_INVARIANTS) && UNIMEM_CHECK_INVARIANTS
#define UNIMEM_INVARIANTS_ENABLED 1
#define UNIMEM_INVARIANT(cond, message)                                          \
  do {                                                                           \
    if (!(cond)) ::unimem::detail::throw_invariant(message, __FILE__, __LINE__); \
  } while (false)
#else
#define UNIMEM_INVARIANTS_ENABLED 0
#define UNIMEM_INVARIANT(cond, message) \
  do {                                  \
  } while (false)
#endif
