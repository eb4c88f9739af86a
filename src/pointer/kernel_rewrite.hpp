#pragma once

// Interior pointers as kernel arguments. GMAC passes a device pointer straight to a CUDA kernel;
// an OpenCL kernel receives a buffer and indexes it from its start, so a pointer into the middle
// of an allocation has to reach the kernel as buffer + offset. rewrite_for_offsets turns every
// `__global T* name` parameter of every kernel into `__global T* name__um_base, ulong
// name__um_offset` and declares `name` at the top of the body as base + offset (bytes), so the
// kernel's code is unchanged. The pointer layer builds this variant only when a launch passes an
// interior pointer (offsets of zero use the program as written).

#include <map>
#include <string>
#include <vector>

namespace unimem::pointer {

struct RewrittenSource {
  std::string source;
  /// Per kernel, per original parameter: whether it is a rewritten __global pointer (it then takes
  /// two arguments: the buffer, then its byte offset as a ulong).
  std::map<std::string, std::vector<bool>> global_pointers;
};

/// Throws PreconditionError naming the kernel when a kernel's parameter list cannot be read.
[[nodiscard]] RewrittenSource rewrite_for_offsets(const std::string& source);

}  // namespace unimem::pointer
