// The cost of the pointer layer's page-protection coherence (issue 11), side by side in one run:
//  - BM_ProtectedPageRoundTrip: the operating system's part alone: a store to a read-only page,
//    SIGSEGV to a handler that mprotects the page read-write, return, the store completes.
//  - BM_WriteFaultOnCleanBlock: a store to a clean (read-only) block of shared memory: unimem's
//    handler, the hand-off to the fault service thread and back, mprotect (no copy).
//  - BM_ReadFaultWithFetch/<block bytes>: a load from an invalid block: the same plus fetching the
//    block from the devices' side (Runtime::read_blocking into the shadow view).
// The ratio of the first two is unimem's overhead per fault over a bare protected-page trip.

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>

#include <unimem/unimem.h>
#include "pointer/pointer_runtime.hpp"

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kPages = 4096;  // faults between two (untimed) re-protections
char* g_raw = nullptr;

void unprotect_on_fault(int, siginfo_t* info, void*) {
  auto* at = static_cast<char*>(info->si_addr);
  if (at < g_raw || at >= g_raw + kPages * kPage) return;
  auto* page = g_raw + (at - g_raw) / kPage * kPage;
  mprotect(page, kPage, PROT_READ | PROT_WRITE);
}

void BM_ProtectedPageRoundTrip(benchmark::State& state) {
  g_raw = static_cast<char*>(
      mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (std::size_t p = 0; p < kPages; ++p) g_raw[p * kPage] = 0;  // pages populated first
  struct sigaction mine {};
  struct sigaction previous {};
  mine.sa_sigaction = &unprotect_on_fault;
  mine.sa_flags = SA_SIGINFO;
  sigemptyset(&mine.sa_mask);
  sigaction(SIGSEGV, &mine, &previous);  // unimem's handler (if installed) is put back below
  std::size_t next = kPages;
  for (auto _ : state) {
    if (next == kPages) {
      state.PauseTiming();
      mprotect(g_raw, kPages * kPage, PROT_READ);  // like unimem's clean blocks
      next = 0;
      state.ResumeTiming();
    }
    *static_cast<volatile char*>(g_raw + next * kPage) = 1;
    ++next;
  }
  sigaction(SIGSEGV, &previous, nullptr);
  munmap(g_raw, kPages * kPage);
}
BENCHMARK(BM_ProtectedPageRoundTrip)->UseRealTime();

void BM_WriteFaultOnCleanBlock(benchmark::State& state) {
  um_set_protocol(UM_PROTOCOL_LAZY);
  um_set_block_size(kPage);
  constexpr std::size_t kBlocks = kPages;
  auto* a = static_cast<char*>(um_alloc(kBlocks * kPage));  // every block clean: read-only
  auto& rt = unimem::pointer::PointerRuntime::instance();
  std::size_t next = 0;
  for (auto _ : state) {
    if (next == kBlocks) {  // make every block clean again: publish, fetch (read fault)
      state.PauseTiming();
      rt.invalidate_host(a, kBlocks * kPage);
      for (std::size_t b = 0; b < kBlocks; ++b) benchmark::DoNotOptimize(a[b * kPage]);
      next = 0;
      state.ResumeTiming();
    }
    *static_cast<volatile char*>(a + next * kPage) = 1;
    ++next;
  }
  um_free(a);
  um_set_block_size(std::size_t{512} << 10);
}
BENCHMARK(BM_WriteFaultOnCleanBlock)->UseRealTime();

void BM_ReadFaultWithFetch(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  um_set_protocol(UM_PROTOCOL_LAZY);
  um_set_block_size(block);
  const std::size_t blocks = std::max<std::size_t>(16, (std::size_t{64} << 20) / block);
  auto* a = static_cast<char*>(um_alloc(blocks * block));
  auto& rt = unimem::pointer::PointerRuntime::instance();
  std::size_t next = blocks;
  for (auto _ : state) {
    if (next == blocks) {
      state.PauseTiming();
      rt.invalidate_host(a, blocks * block);
      next = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(*static_cast<volatile char*>(a + next * block));
    ++next;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * block));
  um_free(a);
  um_set_block_size(std::size_t{512} << 10);
}
BENCHMARK(BM_ReadFaultWithFetch)->Arg(4096)->Arg(64 << 10)->Arg(512 << 10)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
