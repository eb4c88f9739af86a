#pragma once
// Counts the heap allocations (operator new) each thread makes, for benchmarks that report
// allocations per operation: a count that, unlike a time, does not move with the machine's load.
// Linked into a benchmark program, allocation_counter.cpp replaces the global operator new and
// delete of that program (only of that program: the library is not built with it).

#include <cstdint>

namespace unimem::bench {

/// operator new calls made by the calling thread so far.
std::uint64_t thread_allocations();

}  // namespace unimem::bench
