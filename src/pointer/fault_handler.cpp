#include "pointer/fault_handler.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

// Async-signal-safety of the SIGSEGV path (on_fault below), step by step:
//
// 1. Deciding whether a fault is ours reads only the range table: a fixed array of
//    std::atomic<uintptr_t> pairs and an atomic high-water mark, written by register_range under
//    the caller's lock (end first, then begin with release order; unregister clears begin first).
//    Lock-free atomics are async-signal-safe (the standard allows them in handlers), and the table
//    never allocates or moves. A foreign fault therefore reaches the previous handler without
//    having taken a lock or called malloc, even when it happened inside malloc or while any lock
//    was held.
// 2. For our faults the handler claims one of kSlots request slots with a compare-exchange,
//    stores the address and kind, bumps a sequence word and wakes the service thread with a raw
//    futex syscall, then sleeps in FUTEX_WAIT on the slot until the service thread marks it done.
//    The handler calls nothing but atomics and the futex / sched_yield / write / sigaction /
//    raise / abort system calls (raw syscalls and functions POSIX lists as async-signal-safe).
// 3. The work (finding the allocation, fetching the block from the devices, mprotect, bookkeeping
//    that allocates) runs on the service thread, which is never interrupted by this handler: it
//    only touches shadow views, never application views. So it may lock and allocate freely; the
//    faulting thread is parked in a system call meanwhile, and whatever locks it holds are not
//    ones the service needs (unimem never touches an application view while holding its own
//    locks: copies go through the shadow view; I/O functions prepare ranges before the call).
// 4. A SIGSEGV from an access to unimem memory is synchronous: it is delivered to the faulting
//    thread at the faulting instruction, so it cannot interrupt unimem's own code half way.
// The exceptions are documented limits: a fault raised while the service thread is gone (after
// fork() in the child) would wait forever, so the child must not touch shared memory.

namespace unimem::pointer {

namespace {

constexpr std::size_t kTableSize = std::size_t{1} << 16;
constexpr std::size_t kSlots = 64;

struct RangeEntry {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
};

// Zero-initialised statics: no constructor runs, so the handler may read them at any time.
std::array<RangeEntry, kTableSize> g_table;
std::atomic<std::size_t> g_high_water{0};
std::atomic<std::uint64_t> g_faults{0};

enum SlotState : std::uint32_t { kFree = 0, kClaimed = 1, kPosted = 2, kDone = 3 };

struct RequestSlot {
  std::atomic<std::uint32_t> state{kFree};
  std::atomic<std::uintptr_t> address{0};
  std::atomic<std::uint8_t> kind{0};
  std::atomic<std::uint8_t> handled{0};
};

std::array<RequestSlot, kSlots> g_slots;
std::atomic<std::uint32_t> g_posted{0};  // bumped on every post; the service thread sleeps on it
std::atomic<long> g_service_tid{0};

struct sigaction g_previous;  // written once before the handler is installed
std::atomic<FaultService> g_service{nullptr};
std::atomic<void*> g_context{nullptr};
std::once_flag g_install_once;

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value) {
  // std::atomic<uint32_t> has the size and representation of uint32_t on Linux (lock-free).
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

void write_stderr(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  [[maybe_unused]] const auto written = ::write(2, text, n);
}

bool table_contains(std::uintptr_t a) {
  const std::size_t n = g_high_water.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uintptr_t b = g_table[i].begin.load(std::memory_order_acquire);
    if (b != 0 && b <= a && a < g_table[i].end.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

FaultKind kind_of(void* context) {
#if defined(__x86_64__)
  // Bit 1 of the page-fault error code: the access was a write.
  const auto* uc = static_cast<const ucontext_t*>(context);
  return (uc->uc_mcontext.gregs[REG_ERR] & 0x2) != 0 ? FaultKind::write : FaultKind::read;
#else
  (void)context;
  return FaultKind::unknown;  // the service infers it from the block state (fault again on write)
#endif
}

// Passes a fault that is not unimem's to the disposition that was there before.
void chain(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: restore it; the faulting instruction runs again and the kernel terminates
  // the process as it would have without unimem. A signal sent by kill() is raised again.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  if (info->si_code <= 0) raise(sig);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (info->si_code <= 0 || !table_contains(address)) {
    chain(sig, info, context);
    return;
  }
  if (syscall(SYS_gettid) == g_service_tid.load(std::memory_order_relaxed)) {
    write_stderr("unimem: the fault service thread touched an application view (a bug)\n");
    abort();
  }
  g_faults.fetch_add(1, std::memory_order_relaxed);
  RequestSlot* slot = nullptr;
  while (slot == nullptr) {
    for (auto& s : g_slots) {
      std::uint32_t expected = kFree;
      if (s.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) {
        slot = &s;
        break;
      }
    }
    if (slot == nullptr) syscall(SYS_sched_yield);  // more than kSlots threads faulting at once
  }
  slot->address.store(address, std::memory_order_relaxed);
  slot->kind.store(static_cast<std::uint8_t>(kind_of(context)), std::memory_order_relaxed);
  slot->state.store(kPosted, std::memory_order_release);
  g_posted.fetch_add(1, std::memory_order_release);
  futex(&g_posted, FUTEX_WAKE_PRIVATE, 1);
  while (slot->state.load(std::memory_order_acquire) != kDone) {
    futex(&slot->state, FUTEX_WAIT_PRIVATE, kPosted);
  }
  const bool handled = slot->handled.load(std::memory_order_relaxed) != 0;
  slot->state.store(kFree, std::memory_order_release);
  if (!handled) chain(sig, info, context);
}

void serve(RequestSlot& slot) {
  bool handled = false;
  try {
    FaultService service = g_service.load(std::memory_order_acquire);
    handled = service(g_context.load(std::memory_order_acquire),
                      reinterpret_cast<std::byte*>(slot.address.load(std::memory_order_relaxed)),
                      static_cast<FaultKind>(slot.kind.load(std::memory_order_relaxed)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unimem: cannot serve a fault on shared memory at %p: %s\n",
                 reinterpret_cast<void*>(slot.address.load()), e.what());
    std::abort();
  }
  slot.handled.store(handled ? 1 : 0, std::memory_order_relaxed);
  slot.state.store(kDone, std::memory_order_release);
  futex(&slot.state, FUTEX_WAKE_PRIVATE, 1);
}

[[noreturn]] void service_loop() {
  g_service_tid.store(syscall(SYS_gettid), std::memory_order_relaxed);
  for (;;) {
    const std::uint32_t seen = g_posted.load(std::memory_order_acquire);
    bool any = false;
    for (auto& s : g_slots) {
      if (s.state.load(std::memory_order_acquire) == kPosted) {
        serve(s);
        any = true;
      }
    }
    if (!any) futex(&g_posted, FUTEX_WAIT_PRIVATE, seen);
  }
}

}  // namespace

void install_fault_handler(FaultService service, void* context) {
  g_context.store(context, std::memory_order_release);
  g_service.store(service, std::memory_order_release);
  std::call_once(g_install_once, [] {
    std::thread(service_loop).detach();
    struct sigaction action {};
    action.sa_sigaction = &on_fault;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, &g_previous) != 0) {
      write_stderr("unimem: sigaction(SIGSEGV) failed\n");
      std::abort();
    }
  });
}

void register_range(const std::byte* begin, std::size_t size) {
  const std::size_t n = g_high_water.load(std::memory_order_relaxed);
  std::size_t index = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (g_table[i].begin.load(std::memory_order_relaxed) == 0) {
      index = i;
      break;
    }
  }
  if (index == kTableSize) throw std::length_error("unimem: more than 65536 live allocations");
  const auto b = reinterpret_cast<std::uintptr_t>(begin);
  g_table[index].end.store(b + size, std::memory_order_relaxed);
  g_table[index].begin.store(b, std::memory_order_release);
  if (index == n) g_high_water.store(n + 1, std::memory_order_release);
}

void unregister_range(const std::byte* begin) {
  const auto b = reinterpret_cast<std::uintptr_t>(begin);
  const std::size_t n = g_high_water.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) {
    if (g_table[i].begin.load(std::memory_order_relaxed) == b) {
      g_table[i].begin.store(0, std::memory_order_release);
      return;
    }
  }
}

bool in_registered_range(const void* p) {
  return table_contains(reinterpret_cast<std::uintptr_t>(p));
}

std::uint64_t handled_faults() { return g_faults.load(std::memory_order_relaxed); }

}  // namespace unimem::pointer
