#include "examples/program_version.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>

#include "common/check.hpp"

namespace unimem::examples {

// Defined in examples/<name>/unimem_program.cpp.
ProgramSubmitFunction submit_stencil2d_program;
ProgramSubmitFunction submit_heat3d_program;
ProgramSubmitFunction submit_fdtd2d_program;
ProgramSubmitFunction submit_floyd_warshall_program;
ProgramSubmitFunction submit_matmul_program;
ProgramSubmitFunction submit_nbody_program;
ProgramSubmitFunction submit_blackscholes_program;
ProgramSubmitFunction submit_hotspot_program;

ProgramSubmit program_version(std::string_view name) {
  static const std::map<std::string, ProgramSubmit, std::less<>> versions = {
      {"stencil2d", submit_stencil2d_program},
      {"heat3d", submit_heat3d_program},
      {"fdtd2d", submit_fdtd2d_program},
      {"floyd-warshall", submit_floyd_warshall_program},
      {"matmul", submit_matmul_program},
      {"nbody", submit_nbody_program},
      {"blackscholes", submit_blackscholes_program},
      {"hotspot", submit_hotspot_program},
  };
  auto it = versions.find(name);
  if (it == versions.end()) {
    throw PreconditionError("no unimem Program version of workload '" + std::string(name) + "'");
  }
  return it->second;
}

AffinePiece grid_piece(std::int64_t pitch, std::int64_t constant, std::vector<VarBound> bounds,
                       std::uint64_t element_size) {
  return row_major_piece(element_size, {1, pitch}, constant, std::move(bounds));
}

BufferId scratch_buffer(Runtime& runtime, std::map<std::string, BufferId>& buffers,
                        const std::string& name, std::uint64_t bytes) {
  if (buffers.contains(name)) {
    throw PreconditionError("scratch_buffer: buffer '" + name + "' exists already");
  }
  const BufferId b = runtime.create_buffer(bytes, name);
  buffers[name] = b;
  return b;
}

std::array<BufferId, 2> pingpong_buffers(Runtime& runtime, std::map<std::string, BufferId>& buffers,
                                         const std::string& name) {
  const BufferId first = buffers.at(name);
  return {first, scratch_buffer(runtime, buffers, name + " b", runtime.buffer_size(first))};
}

NDRange ndrange(std::initializer_list<std::uint64_t> global) {
  UNIMEM_REQUIRE(global.size() >= 1 && global.size() <= 3, "ndrange: 1 to 3 extents");
  NDRange range;
  range.dims = static_cast<std::uint32_t>(global.size());
  range.global = {1, 1, 1};
  std::copy(global.begin(), global.end(), range.global.begin());
  return range;
}

std::unique_ptr<Program> build_program(const Workload& workload, Runtime& runtime) {
  const std::vector<KernelSource> sources = workload.kernel_sources();
  UNIMEM_REQUIRE(sources.size() == 1, "run_program_version: one kernel source per workload");
  return std::make_unique<Program>(runtime, std::string(sources.front().text),
                                   sources.front().options);
}

ProgramRunResult run_program_version(const Workload& workload, Runtime& runtime,
                                     const Problem& problem, const Arrays& inputs,
                                     const LaunchOptions& options) {
  const std::unique_ptr<Program> program = build_program(workload, runtime);
  return run_program_version(workload, runtime, *program, problem, inputs, options);
}

ProgramRunResult run_program_version(const Workload& workload, Runtime& runtime, Program& program,
                                     const Problem& problem, const Arrays& inputs,
                                     const LaunchOptions& options) {
  const ProgramSubmit submit = program_version(workload.name());
  auto log = std::make_shared<std::pair<std::mutex, std::vector<std::string>>>();
  program.set_log([log](const std::string& m) {
    std::lock_guard lock(log->first);
    log->second.push_back(m);
  });

  runtime.finish();
  const TransferStats before = runtime.stats();
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, BufferId> buffers;
  for (const auto& [name, values] : inputs) {
    const BufferId b = runtime.create_buffer(values.size() * sizeof(float), name);
    runtime.write(b, 0, std::as_bytes(std::span(values)));
    buffers[name] = b;
  }
  const std::map<std::string, BufferId> outputs =
      submit(runtime, program, options, problem, buffers);
  ProgramRunResult result;
  for (const auto& [name, b] : outputs) {
    std::vector<float> values(runtime.buffer_size(b) / sizeof(float));
    runtime.read(b, 0, std::as_writable_bytes(std::span(values)));
    result.outputs[name] = std::move(values);
  }
  runtime.finish();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  result.seconds = elapsed.count();
  const TransferStats after = runtime.stats();
  auto minus = [](CopyCount a, const CopyCount& b) {
    a.bytes -= b.bytes;
    a.copies -= b.copies;
    return a;
  };
  result.moved.host_to_device = minus(after.host_to_device, before.host_to_device);
  result.moved.device_to_host = minus(after.device_to_host, before.device_to_host);
  result.moved.device_to_device = minus(after.device_to_device, before.device_to_device);
  result.moved.prefetch_bytes = after.prefetch_bytes - before.prefetch_bytes;
  result.moved.prefetch_unread_bytes = after.prefetch_unread_bytes - before.prefetch_unread_bytes;
  result.moved.replays = after.replays - before.replays;
  result.moved.mispredictions = after.mispredictions - before.mispredictions;
  result.moved.evicted_bytes = after.evicted_bytes - before.evicted_bytes;
  result.moved.eviction_writeback_bytes =
      after.eviction_writeback_bytes - before.eviction_writeback_bytes;
  result.moved.reloaded_bytes = after.reloaded_bytes - before.reloaded_bytes;
  result.moved.relocated_bytes = after.relocated_bytes - before.relocated_bytes;
  result.moved.direct_read_bytes = after.direct_read_bytes - before.direct_read_bytes;
  result.moved.home_read_bytes = after.home_read_bytes - before.home_read_bytes;
  for (const auto& [name, b] : buffers) runtime.release_buffer(b);
  {
    std::lock_guard lock(log->first);
    result.log = log->second;
  }
  return result;
}

}  // namespace unimem::examples
