// The OpenCL driver's hot paths on the machine's real devices (POCL here): copy bandwidth
// host->device, device->host, within a device and peer to peer, and the latency of a kernel
// launch (enqueue to completion) and of an event chain across two devices.
#include <benchmark/benchmark.h>

#if UNIMEM_HAVE_OPENCL
#include <memory>
#include <vector>

#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_program.hpp"

namespace {

using unimem::DeviceAllocation;
using unimem::Event;
using unimem::KernelArg;
using unimem::NDRange;
using unimem::opencl::OpenCLDevice;

std::vector<std::unique_ptr<OpenCLDevice>>& devices() {
  static auto opened = unimem::opencl::open_devices("");
  return opened;
}

void report_bytes(benchmark::State& state, std::uint64_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_CopyHostToDevice(benchmark::State& state) {
  if (devices().empty()) return state.SkipWithError("no OpenCL device");
  OpenCLDevice& d = *devices()[0];
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  std::vector<std::byte> host(bytes, std::byte{1});
  DeviceAllocation a = d.allocate(bytes);
  for (auto _ : state) d.copy_host_to_device(host.data(), a, 0, bytes, {}).wait();
  report_bytes(state, bytes);
  d.free(a);
}

void BM_CopyDeviceToHost(benchmark::State& state) {
  if (devices().empty()) return state.SkipWithError("no OpenCL device");
  OpenCLDevice& d = *devices()[0];
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  std::vector<std::byte> host(bytes, std::byte{1});
  DeviceAllocation a = d.allocate(bytes);
  d.copy_host_to_device(host.data(), a, 0, bytes, {}).wait();
  for (auto _ : state) d.copy_device_to_host(a, 0, host.data(), bytes, {}).wait();
  report_bytes(state, bytes);
  d.free(a);
}

void BM_CopyDeviceToDevice(benchmark::State& state) {
  if (devices().empty()) return state.SkipWithError("no OpenCL device");
  OpenCLDevice& d = *devices()[0];
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  std::vector<std::byte> host(bytes, std::byte{1});
  DeviceAllocation a = d.allocate(bytes), b = d.allocate(bytes);
  d.copy_host_to_device(host.data(), a, 0, bytes, {}).wait();
  for (auto _ : state) d.copy_device_to_device(a, 0, b, 0, bytes, {}).wait();
  report_bytes(state, bytes);
  d.free(a);
  d.free(b);
}

void BM_CopyPeerToPeer(benchmark::State& state) {
  if (devices().size() < 2 || !devices()[1]->can_copy_from_peer(*devices()[0])) {
    return state.SkipWithError("needs two devices in one context");
  }
  OpenCLDevice& from = *devices()[0];
  OpenCLDevice& to = *devices()[1];
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  std::vector<std::byte> host(bytes, std::byte{1});
  DeviceAllocation a = from.allocate(bytes), b = to.allocate(bytes);
  from.copy_host_to_device(host.data(), a, 0, bytes, {}).wait();
  for (auto _ : state) to.copy_from_peer(from, a, 0, b, 0, bytes, {}).wait();
  report_bytes(state, bytes);
  from.free(a);
  to.free(b);
}

constexpr const char* kTouchSource = R"CLC(
__kernel void touch(__global int* x) { x[get_global_id(0)] += 1; }
)CLC";

void BM_KernelLaunchLatency(benchmark::State& state) {
  if (devices().empty()) return state.SkipWithError("no OpenCL device");
  OpenCLDevice& d = *devices()[0];
  auto kernel = d.build_program(kTouchSource)->kernel("touch");
  const auto items = static_cast<std::uint64_t>(state.range(0));
  DeviceAllocation a = d.allocate(items * sizeof(int));
  std::vector<int> zeros(items);
  d.copy_host_to_device(reinterpret_cast<std::byte*>(zeros.data()), a, 0, a.size, {}).wait();
  NDRange range;
  range.global[0] = items;
  const KernelArg args[] = {KernelArg::of_buffer(a)};
  d.launch(*kernel, range, args, {}).wait();  // the first launch compiles the kernel
  for (auto _ : state) d.launch(*kernel, range, args, {}).wait();
  d.free(a);
}

// A chain of `length` launches alternating between two devices (each on its own buffer), each
// waiting for the previous one: the cost of event chaining across devices.
void BM_EventChainAcrossTwoDevices(benchmark::State& state) {
  if (devices().size() < 2) return state.SkipWithError("needs two devices");
  OpenCLDevice& a = *devices()[0];
  OpenCLDevice& b = *devices()[1];
  if (!b.can_copy_from_peer(a)) return state.SkipWithError("needs two devices in one context");
  auto kernel = a.build_program(kTouchSource)->kernel("touch");
  std::vector<int> zeros(64);
  DeviceAllocation buffers[2] = {a.allocate(64 * sizeof(int)), b.allocate(64 * sizeof(int))};
  OpenCLDevice* on[2] = {&a, &b};
  NDRange range;
  range.global[0] = 64;
  for (int i = 0; i < 2; ++i) {
    on[i]
        ->copy_host_to_device(reinterpret_cast<std::byte*>(zeros.data()), buffers[i], 0,
                              buffers[i].size, {})
        .wait();
    const KernelArg args[] = {KernelArg::of_buffer(buffers[i])};
    on[i]->launch(*kernel, range, args, {}).wait();
  }
  const auto length = state.range(0);
  for (auto _ : state) {
    Event last;
    for (std::int64_t i = 0; i < length; ++i) {
      const KernelArg args[] = {KernelArg::of_buffer(buffers[i % 2])};
      last = on[i % 2]->launch(*kernel, range, args, {&last, 1});
    }
    last.wait();
  }
  state.SetItemsProcessed(state.iterations() * length);
  a.free(buffers[0]);
  b.free(buffers[1]);
}

BENCHMARK(BM_CopyHostToDevice)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_CopyDeviceToHost)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_CopyDeviceToDevice)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_CopyPeerToPeer)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_KernelLaunchLatency)->Arg(64)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_EventChainAcrossTwoDevices)->Arg(16)->UseRealTime();

}  // namespace
#endif

BENCHMARK_MAIN();
