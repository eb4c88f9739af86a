#pragma once

// The process's SIGSEGV handler for unimem's application views (GMAC detects host accesses by
// page protection: Gelado et al. 004_b9980231408668ca.txt section 3.2, and seeds/README.md:
// "a SIGSEGV handler tells read from write faults").
//
// The handler itself does almost nothing: it decides, lock-free, whether the faulting address
// lies in a registered range, hands the fault to a service thread through a fixed array of request
// slots and sleeps on a futex until the service thread has fetched the block and changed its
// protection. Everything that allocates, locks or talks to devices runs on the service thread,
// in ordinary (non-signal) context. fault_handler.cpp argues the async-signal-safety in detail.
//
// Process-wide by necessity (a signal disposition is per process): the only global state of the
// pointer layer besides the C API's runtime (pointer_runtime.hpp).

#include <cstddef>
#include <cstdint>

namespace unimem::pointer {

enum class FaultKind : std::uint8_t { read, write, unknown };

/// Handles one fault on the service thread; returns false when the address is not unimem's after
/// all (the fault is then chained to the previous handler). May throw: the message is printed and
/// the process aborts (a fault cannot report an error to the code that faulted).
using FaultService = bool (*)(void* context, std::byte* address, FaultKind kind);

/// Installs the handler (once per process: later calls only replace the service) and starts the
/// service thread. The previous SIGSEGV disposition is kept and faults outside registered ranges
/// go to it (or to the default action). Not async-signal-safe; call from ordinary code.
void install_fault_handler(FaultService service, void* context);

/// Registers [begin, begin + size) as unimem's (before the range can fault). The caller serialises
/// register / unregister; lookups may run concurrently. Throws std::length_error when the table
/// (65,536 ranges) is full.
void register_range(const std::byte* begin, std::size_t size);
/// Unregisters the range starting at begin (before it is unmapped).
void unregister_range(const std::byte* begin);
/// Whether p lies in a registered range: lock-free, async-signal-safe.
[[nodiscard]] bool in_registered_range(const void* p);

/// Faults the handler took on registered ranges since the start (lock-free counter).
[[nodiscard]] std::uint64_t handled_faults();

}  // namespace unimem::pointer
