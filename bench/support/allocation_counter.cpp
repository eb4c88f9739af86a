#include "allocation_counter.hpp"

#include <cstdlib>
#include <new>

// A translation unit of its own: inlined next to a caller's new, the free() in delete draws GCC's
// -Wmismatched-new-delete.

namespace {
thread_local std::uint64_t allocations = 0;
}  // namespace

std::uint64_t unimem::bench::thread_allocations() { return allocations; }

void* operator new(std::size_t bytes) {
  ++allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
