#include "examples/unimem_version.hpp"

#include <chrono>
#include <cstring>
#include <set>

#include "common/check.hpp"

namespace unimem::examples {

HostKernelProvider::HostKernelProvider(const Workload& workload)
    : workload_(workload.name()), bodies_(workload.host_kernels()) {}

std::shared_ptr<const CompiledKernel> HostKernelProvider::kernel(std::size_t,
                                                                 const KernelSource& source,
                                                                 const std::string& name) {
  const auto made = made_.find(name);
  if (made != made_.end()) return made->second;
  const auto body = bodies_.find(name);
  if (body == bodies_.end()) {
    throw PreconditionError("workload " + workload_ + ": kernel '" + name + "' of " + source.file +
                            " has no host twin");
  }
  auto kernel = std::make_shared<const HostKernel>(name, body->second);
  made_[name] = kernel;
  return kernel;
}

IntervalSet unit_bytes(std::uint64_t begin, std::uint64_t end, std::uint64_t bytes_per_unit) {
  if (begin >= end) return {};
  return IntervalSet(Interval(begin * bytes_per_unit, end * bytes_per_unit));
}

Event launch_split(Runtime& runtime, KernelProvider& kernels, const KernelSource& source,
                   std::span<const std::size_t> devices, const SplitLaunch& launch) {
  UNIMEM_REQUIRE(!devices.empty(), "launch_split needs at least one device");
  const std::vector<Block> blocks =
      split_evenly(launch.units, static_cast<unsigned>(devices.size()));
  std::vector<LaunchPartition> partitions;
  partitions.reserve(blocks.size());
  for (std::size_t d = 0; d < blocks.size(); ++d) {
    LaunchPartition p;
    p.device = devices[d];
    p.kernel = kernels.kernel(devices[d], source, launch.kernel);
    p.range = launch.range(blocks[d]);
    p.accesses = launch.accesses(blocks[d]);
    partitions.push_back(std::move(p));
  }
  return runtime.launch_partitioned(launch.args, partitions);
}

NDRange ndrange_1d(const Block& block) {
  NDRange r;
  r.dims = 1;
  r.offset = {block.begin, 0, 0};
  r.global = {block.size(), 1, 1};
  return r;
}

NDRange ndrange_2d(std::uint64_t cols, const Block& rows) {
  NDRange r;
  r.dims = 2;
  r.offset = {0, rows.begin, 0};
  r.global = {cols, rows.size(), 1};
  return r;
}

NDRange ndrange_3d(std::uint64_t nx, std::uint64_t ny, const Block& planes) {
  NDRange r;
  r.dims = 3;
  r.offset = {0, 0, planes.begin};
  r.global = {nx, ny, planes.size()};
  return r;
}

BufferId upload(Runtime& runtime, const std::string& name, const std::vector<float>& values) {
  const BufferId id = runtime.create_buffer(values.size() * sizeof(float), name);
  runtime.write_blocking(id, 0, std::as_bytes(std::span(values)));
  return id;
}

BufferId scratch(Runtime& runtime, const std::string& name, std::uint64_t floats) {
  return runtime.create_buffer(floats * sizeof(float), name);
}

std::vector<float> download(Runtime& runtime, BufferId buffer) {
  std::vector<float> values(runtime.buffer_size(buffer) / sizeof(float));
  runtime.read_blocking(buffer, 0, std::as_writable_bytes(std::span(values)));
  return values;
}

TransferBytes transfer_bytes(const TransferStats& stats) {
  return {stats.host_to_device.bytes, stats.device_to_host.bytes, stats.device_to_device.bytes};
}

namespace {

CopyCount minus(const CopyCount& a, const CopyCount& b) {
  return {a.bytes - b.bytes, a.copies - b.copies};
}

}  // namespace

UnimemResult run_unimem(const Workload& workload, Runtime& runtime, KernelProvider& kernels,
                        std::span<const std::size_t> devices, const Problem& problem,
                        const Arrays& inputs) {
  workload.validate(problem, static_cast<unsigned>(devices.size()));
  runtime.finish();
  const TransferStats before = runtime.stats();
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, BufferId> buffers;
  for (const auto& [name, values] : inputs) buffers[name] = upload(runtime, name, values);
  const std::map<std::string, BufferId> outputs =
      workload.submit_unimem(runtime, kernels, devices, problem, buffers);
  UnimemResult result;
  for (const auto& [name, id] : outputs) result.outputs[name] = download(runtime, id);
  runtime.finish();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  result.seconds = elapsed.count();
  const TransferStats after = runtime.stats();
  result.moved.host_to_device = minus(after.host_to_device, before.host_to_device);
  result.moved.device_to_host = minus(after.device_to_host, before.device_to_host);
  result.moved.device_to_device = minus(after.device_to_device, before.device_to_device);
  result.moved.prefetch_bytes = after.prefetch_bytes - before.prefetch_bytes;
  result.moved.replays = after.replays - before.replays;
  result.moved.mispredictions = after.mispredictions - before.mispredictions;
  std::set<std::uint32_t> released;
  for (const auto& [name, id] : buffers) {
    if (released.insert(id.value).second) runtime.release_buffer(id);
  }
  for (const auto& [name, id] : outputs) {
    if (released.insert(id.value).second) runtime.release_buffer(id);
  }
  return result;
}

}  // namespace unimem::examples
