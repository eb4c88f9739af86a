#include "examples/workload.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include <chrono>

#include "common/check.hpp"
#include "examples/manual_opencl.hpp"

namespace unimem::examples {

namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw PreconditionError(message);
}

}  // namespace

std::string to_string(const TransferBytes& bytes) {
  std::ostringstream out;
  out << "{h2d " << bytes.h2d << ", d2h " << bytes.d2h << ", d2d " << bytes.d2d << "}";
  return out.str();
}

Comparison compare(const Arrays& got, const Arrays& want, Tolerance tolerance) {
  Comparison result;
  auto fail = [&](std::string message) {
    if (result.ok) result.first_mismatch = std::move(message);
    result.ok = false;
  };
  for (const auto& [name, expected] : want) {
    const auto it = got.find(name);
    if (it == got.end()) {
      fail("array '" + name + "' missing from the result");
      continue;
    }
    const std::vector<float>& actual = it->second;
    if (actual.size() != expected.size()) {
      fail("array '" + name + "' has " + std::to_string(actual.size()) + " elements, want " +
           std::to_string(expected.size()));
      continue;
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const float g = actual[i];
      const float w = expected[i];
      const double error = std::fabs(static_cast<double>(g) - static_cast<double>(w));
      bool equal = false;
      if (tolerance.bitwise()) {
        equal = std::bit_cast<std::uint32_t>(g) == std::bit_cast<std::uint32_t>(w);
      } else {
        equal = std::isfinite(g) && std::isfinite(w) &&
                error <= tolerance.max_abs + tolerance.max_rel * std::fabs(static_cast<double>(w));
      }
      if (std::isfinite(error) && error > result.max_abs_error) result.max_abs_error = error;
      if (!equal) {
        ++result.mismatches;
        std::ostringstream message;
        message.precision(9);
        message << name << "[" << i << "]: got " << g << " want " << w;
        fail(message.str());
      }
    }
  }
  return result;
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float low, float high) {
  // splitmix64: tiny, fast, and fully specified, so inputs are identical everywhere.
  std::uint64_t state = seed;
  std::vector<float> values(count);
  for (float& v : values) {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) * 0x1.0p-24f;  // [0, 1) in steps of 2^-24
    v = low + (high - low) * unit;
  }
  return values;
}

std::vector<Block> split_evenly(std::uint64_t total, unsigned parts) {
  UNIMEM_REQUIRE(parts >= 1, "split_evenly needs at least one part");
  UNIMEM_REQUIRE(total >= parts, "split_evenly: fewer units than parts would leave a part empty");
  std::vector<Block> blocks;
  blocks.reserve(parts);
  const std::uint64_t base = total / parts;
  const std::uint64_t larger = total % parts;
  std::uint64_t begin = 0;
  for (unsigned p = 0; p < parts; ++p) {
    const std::uint64_t size = base + (p < larger ? 1 : 0);
    blocks.push_back({begin, begin + size});
    begin += size;
  }
  return blocks;
}

TransferBytes whole_buffer_bytes(const BufferPlan& plan, unsigned devices) {
  UNIMEM_REQUIRE(devices >= 1, "whole_buffer_bytes needs at least one device");
  // Agent 0 is the host, 1..devices the devices; valid[buffer] = agents holding a valid copy.
  std::map<std::string, std::set<unsigned>> valid;
  for (const auto& [name, bytes] : plan.buffer_bytes) valid[name] = {0};
  auto size_of = [&](const std::string& name) {
    const auto it = plan.buffer_bytes.find(name);
    UNIMEM_REQUIRE(it != plan.buffer_bytes.end(), "BufferPlan names a buffer it does not declare");
    return it->second;
  };
  TransferBytes moved;
  for (const BufferPlan::Launch& launch : plan.launches) {
    std::set<std::string> used(launch.reads.begin(), launch.reads.end());
    used.insert(launch.writes.begin(), launch.writes.end());
    for (const std::string& name : used) {
      const std::uint64_t bytes = size_of(name);
      std::set<unsigned>& holders = valid.at(name);
      for (unsigned d = 1; d <= devices; ++d) {
        if (holders.contains(d)) continue;
        if (holders.contains(0)) {
          moved.h2d += bytes;
        } else {
          moved.d2d += bytes;
        }
        holders.insert(d);
      }
    }
    for (const std::string& name : launch.writes) {
      const std::uint64_t bytes = size_of(name);
      if (devices == 1) {
        valid[name] = {1};
      } else {
        moved.d2h += devices * bytes;
        valid[name] = {0};
      }
    }
  }
  for (const std::string& name : plan.host_reads) {
    if (!valid.at(name).contains(0)) moved.d2h += size_of(name);
  }
  return moved;
}

BufferPlan pingpong_plan(const std::string& kernel, const std::string& grid,
                         std::uint64_t grid_bytes, std::uint32_t steps,
                         const std::map<std::string, std::uint64_t>& read_only,
                         const std::map<std::string, std::uint64_t>& read_write) {
  BufferPlan plan;
  const std::string a = grid + " a";
  const std::string b = grid + " b";
  plan.buffer_bytes = {{a, grid_bytes}, {b, grid_bytes}};
  plan.buffer_bytes.insert(read_only.begin(), read_only.end());
  plan.buffer_bytes.insert(read_write.begin(), read_write.end());
  for (std::uint32_t step = 0; step < steps; ++step) {
    BufferPlan::Launch launch{kernel, {step % 2 == 0 ? a : b}, {step % 2 == 0 ? b : a}};
    for (const auto& [name, bytes] : read_only) launch.reads.push_back(name);
    for (const auto& [name, bytes] : read_write) {
      launch.reads.push_back(name);
      launch.writes.push_back(name);
    }
    plan.launches.push_back(std::move(launch));
  }
  plan.host_reads = {steps % 2 == 0 ? a : b};
  for (const auto& [name, bytes] : read_write) plan.host_reads.push_back(name);
  return plan;
}

void Workload::validate(const Problem& problem, unsigned devices) const {
  const SizeRules rules = size_rules();
  const std::string who = name();
  const std::string size = "size " + std::to_string(problem.size);
  require(devices >= 1, who + " needs at least one device");
  require(!rules.iterative || problem.steps >= 1, who + " needs at least one step");
  require(problem.size >= rules.min_size,
          who + ": " + size + " is too small (at least " + std::to_string(rules.min_size) + ")");
  require(problem.size >= devices, who + ": " + size + " has fewer " + std::string(rules.units) +
                                       " than the " + std::to_string(devices) +
                                       " devices (each device needs at least one)");
  require(problem.size <= rules.max_size, who + ": " + size + " is too large (at most " +
                                              std::to_string(rules.max_size) +
                                              ": the kernels use 32-bit indices)");
}

ManualSession::ManualSession() = default;
ManualSession::ManualSession(ManualSession&&) noexcept = default;
ManualSession& ManualSession::operator=(ManualSession&&) noexcept = default;
ManualSession::~ManualSession() = default;

ManualSession Workload::manual_session(const ClPlatformDevices& platform,
                                       std::span<const cl_device_id> devices) const {
  const std::vector<KernelSource> sources = kernel_sources();
  if (sources.size() != 1) {
    throw PreconditionError(name() + ": the manual version builds one kernel source");
  }
  ManualSession session;
  session.context = std::make_unique<ManualContext>(platform, devices);
  session.program = std::make_unique<ClProgram>(
      session.context->build(sources.front().text, sources.front().options, sources.front().file));
  return session;
}

ManualResult Workload::run_manual(ManualSession& session, const Problem& problem,
                                  const Arrays& inputs) const {
  ManualContext& context = *session.context;
  validate(problem, context.device_count());
  context.begin_run();
  const auto start = std::chrono::steady_clock::now();
  Arrays outputs = manual_version(context, *session.program, problem, inputs);
  context.finish_all();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {std::move(outputs), context.transfers(), elapsed.count(), context.fresh_allocations(),
          context.create_buffer_seconds()};
}

ManualResult Workload::run_manual(const ClPlatformDevices& platform,
                                  std::span<const cl_device_id> devices, const Problem& problem,
                                  const Arrays& inputs) const {
  validate(problem, static_cast<unsigned>(devices.size()));
  ManualSession session = manual_session(platform, devices);
  return run_manual(session, problem, inputs);
}

std::vector<std::unique_ptr<Workload>> all_workloads() {
  std::vector<std::unique_ptr<Workload>> all;
  all.push_back(make_stencil2d());
  all.push_back(make_heat3d());
  all.push_back(make_fdtd2d());
  all.push_back(make_floyd_warshall());
  all.push_back(make_matmul());
  all.push_back(make_nbody());
  all.push_back(make_blackscholes());
  all.push_back(make_hotspot());
  return all;
}

std::unique_ptr<Workload> find_workload(std::string_view name) {
  std::string known;
  for (auto& workload : all_workloads()) {
    if (workload->name() == name) return std::move(workload);
    known += (known.empty() ? "" : ", ") + workload->name();
  }
  throw PreconditionError("unknown workload '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace unimem::examples
