#pragma once

// Kernel pointers that do not start at their allocation's first byte. An OpenCL kernel receives a
// buffer and indexes it from its start; rewrite_for_offsets turns every `__global T* name`
// parameter of every kernel into `__global T* name__um_base, ulong name__um_offset` and declares
// `name` at the top of the body as base + offset (bytes), so the kernel's code is unchanged.
// Two users:
// - the pointer layer (GMAC-style C API): a pointer into the middle of an allocation reaches the
//   kernel as buffer + offset (built only when a launch passes an interior pointer);
// - partial residency (RuntimeCore, ProgramCore): a device allocation that holds only the bytes
//   [base, base + n) of a buffer is passed with offset -base (64-bit wraparound), so the kernel
//   still indexes the buffer from its start (runtime_core.hpp says why that is correct).

#include <map>
#include <string>
#include <vector>

namespace unimem {

struct RewrittenSource {
  std::string source;
  /// Per kernel, per original parameter: whether it is a rewritten __global pointer (it then takes
  /// two arguments: the buffer, then its byte offset as a ulong).
  std::map<std::string, std::vector<bool>> global_pointers;
};

/// Throws PreconditionError naming the kernel when a kernel's parameter list cannot be read
/// ("cannot rewrite kernel 'k' to take buffer + offset: ...").
[[nodiscard]] RewrittenSource rewrite_for_offsets(const std::string& source);

}  // namespace unimem
