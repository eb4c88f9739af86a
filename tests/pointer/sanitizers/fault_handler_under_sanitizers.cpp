// The pointer layer's fault handler and double mapping under ASan and TSan, without the rest of
// unimem (scripts/pointer_sanitizers.sh builds this file with fault_handler.cpp and
// host_mapping.cpp under each sanitizer; a full sanitizer build of libunimem runs the pointer
// tests themselves). Four threads fault on the blocks of one mapping at once, through plain
// stores, loads and memcpy (an ASan / TSan interceptor); the service marks blocks readable or
// writable like PointerRuntime does (here: no device side, a block just becomes accessible).
// Then a fault outside the mapping must reach the sanitizer's own SIGSEGV report.
// Exit 0 with "ok" when every fault was served and every byte is right.

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "pointer/fault_handler.hpp"
#include "pointer/host_mapping.hpp"

using unimem::pointer::FaultKind;
using unimem::pointer::HostMapping;
using unimem::pointer::Protection;

namespace {

constexpr std::size_t kBlock = 4096;
constexpr std::size_t kBlocks = 256;
HostMapping* g_mapping = nullptr;
std::mutex g_mutex;
std::vector<int> g_state(kBlocks, 0);  // 0 none, 1 read, 2 read-write
std::atomic<int> g_served{0};

bool serve(void*, std::byte* address, FaultKind kind) {
  const std::lock_guard lock(g_mutex);
  if (address < g_mapping->app() || address >= g_mapping->app() + g_mapping->mapped_size()) {
    return false;
  }
  const std::size_t b = static_cast<std::size_t>(address - g_mapping->app()) / kBlock;
  const int want = kind == FaultKind::read ? 1 : 2;
  if (g_state[b] < want) {
    g_state[b] = want;
    g_mapping->protect(b * kBlock, kBlock, want == 1 ? Protection::read : Protection::read_write);
  }
  g_served.fetch_add(1);
  return true;
}

}  // namespace

int main(int argc, char**) {
  HostMapping mapping(kBlocks * kBlock, Protection::none);
  g_mapping = &mapping;
  unimem::pointer::install_fault_handler(&serve, nullptr);
  unimem::pointer::register_range(mapping.app(), mapping.mapped_size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &mapping] {
      unsigned char pattern[kBlock / 4];
      std::memset(pattern, t + 1, sizeof pattern);
      for (std::size_t b = 0; b < kBlocks; ++b) {  // each thread its quarter of every block
        auto* at =
            reinterpret_cast<unsigned char*>(mapping.app()) + b * kBlock + t * sizeof pattern;
        if (b % 3 == 0) {
          volatile unsigned char sink = at[0];  // read fault first
          (void)sink;
        }
        if (b % 2 == 0) {
          std::memcpy(at, pattern, sizeof pattern);  // through the sanitizer's interceptor
        } else {
          for (std::size_t i = 0; i < sizeof pattern; ++i) at[i] = pattern[i];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kBlocks * kBlock; ++i) {
    const auto expect = static_cast<unsigned char>((i % kBlock) / (kBlock / 4) + 1);
    if (reinterpret_cast<unsigned char*>(mapping.shadow())[i] != expect) ++wrong;
  }
  std::printf("served %d faults, %zu wrong bytes: %s\n", g_served.load(), wrong,
              wrong == 0 ? "ok" : "FAILED");
  std::fflush(stdout);
  if (argc > 1) {  // a fault that is not ours: the sanitizer's handler must report it
    *static_cast<volatile int*>(nullptr) = 1;
  }
  return wrong == 0 ? 0 : 1;
}
