// Strided rows as one rectangular copy or one copy per row (RuntimeOptions::rect_copies; BBMM's
// boxes of a 2-D array, 001_9219257c3045faa0.txt section 6). A kernel on the first OpenCL device
// (POCL here) doubles a column block of a row-major grid of 2048 rows: each iteration the host
// rewrites the input (so the device copy is stale), the launch fetches the block's rows
// host->device, and the host reads the output back (its rows device->host). Both arms run the
// same program, buffers and launches in one process; only the copy path differs. Counters:
// copies per iteration and bytes per iteration (equal in both arms).
//
//   unimem_bench_rect_copies [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>

#if UNIMEM_HAVE_OPENCL
#include <cstdint>
#include <span>
#include <vector>

#include <unimem/program.hpp>
#include <unimem/runtime.hpp>

#include "device/opencl/opencl_context.hpp"

namespace {

constexpr std::uint64_t kWidth = 4096;  // floats per row
constexpr std::uint64_t kRows = 2048;

void BM_ColumnBlock(benchmark::State& state) {
  const bool rect = state.range(0) != 0;
  const std::uint64_t block = static_cast<std::uint64_t>(state.range(1));
  unimem::RuntimeOptions options{unimem::UpdateStrategy::lazy};
  options.rect_copies = rect;
  unimem::Runtime rt(unimem::opencl::make_opencl_devices("0"), options);
  unimem::Program program(rt, R"CLC(
kernel void column_block(global const float* in, global float* out, int width) {
  const int x = get_global_id(0), y = get_global_id(1);
  out[y * width + x] = 2.0f * in[y * width + x];
}
)CLC");
  std::vector<float> in(kWidth * kRows, 1.5f), out(kWidth * kRows);
  const unimem::BufferId a = rt.create_buffer(in.size() * sizeof(float));
  const unimem::BufferId b = rt.create_buffer(in.size() * sizeof(float));
  unimem::NDRange r;
  r.dims = 2;
  r.global = {block, kRows, 1};
  const auto step = [&] {
    rt.write_blocking(a, 0, std::as_bytes(std::span(in)));
    program.launch("column_block", r,
                   {unimem::Arg::buffer(a), unimem::Arg::buffer(b),
                    unimem::Arg::scalar(static_cast<std::int32_t>(kWidth))});
    rt.read_blocking(b, 0, std::as_writable_bytes(std::span(out)));
  };
  step();  // warm-up: kernel compiled, allocations made, pages touched (both arms alike)
  const unimem::TransferStats before = rt.stats();
  for (auto _ : state) step();
  const unimem::TransferStats after = rt.stats();
  const auto n = static_cast<double>(state.iterations());
  state.counters["copies"] =
      static_cast<double>(after.host_to_device.copies + after.device_to_host.copies -
                          before.host_to_device.copies - before.device_to_host.copies) /
      n;
  state.counters["bytes"] =
      static_cast<double>(after.host_to_device.bytes + after.device_to_host.bytes -
                          before.host_to_device.bytes - before.device_to_host.bytes) /
      n;
}
BENCHMARK(BM_ColumnBlock)
    ->ArgNames({"rect", "block"})
    ->Args({1, 64})
    ->Args({0, 64})
    ->Args({1, 1024})
    ->Args({0, 1024})
    ->Unit(benchmark::kMillisecond);

}  // namespace
#endif

BENCHMARK_MAIN();
