#pragma once

// A kernel's arguments as the analysis describes them (name, OpenCL C type, buffer or scalar kind,
// from the kernel_arg_* metadata Clang emits), and which pointers reach shared memory.

#include <vector>

#include "analysis/access_pattern.hpp"

namespace llvm {
class Function;
class Value;
}  // namespace llvm

namespace unimem {

/// SPIR address spaces of OpenCL C's __global, __constant and __local.
inline constexpr unsigned kGlobalAddressSpace = 1;
inline constexpr unsigned kConstantAddressSpace = 2;
inline constexpr unsigned kLocalAddressSpace = 3;

/// Every argument of kernel, by index, with no access recorded yet.
[[nodiscard]] std::vector<ArgumentAccess> describe_kernel_arguments(const llvm::Function& kernel);

/// Whether v is a pointer into __global or __constant memory (the memory unimem shares).
[[nodiscard]] bool is_global_pointer(const llvm::Value* v);

}  // namespace unimem
