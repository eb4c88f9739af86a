#include "examples/side_by_side.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/check.hpp"

namespace unimem::examples {

SideBySide run_side_by_side(const Workload& workload, Runtime& runtime, KernelProvider& kernels,
                            const ClPlatformDevices& platform, unsigned count,
                            const Problem& problem, int repeats) {
  UNIMEM_REQUIRE(repeats >= 1, "run_side_by_side needs at least one timed run");
  UNIMEM_REQUIRE(count >= 1 && count <= runtime.device_count() && count <= platform.devices.size(),
                 "run_side_by_side: more devices asked for than the runtime or platform has");
  workload.validate(problem, count);
  SideBySide r;
  r.workload = workload.name();
  r.devices = count;
  r.strategy = std::string(to_string(runtime.strategy()));
  r.problem = problem;
  const Arrays inputs = workload.make_inputs(problem, 1);
  const Arrays want = workload.reference(problem, inputs);

  std::vector<std::size_t> devices(count);
  for (unsigned d = 0; d < count; ++d) devices[d] = d;
  UnimemResult unimem = run_unimem(workload, runtime, kernels, devices, problem, inputs);
  r.seconds = 1e300;
  for (int i = 0; i < repeats; ++i) {
    unimem = run_unimem(workload, runtime, kernels, devices, problem, inputs);
    r.seconds = std::min(r.seconds, unimem.seconds);
  }
  const std::vector<cl_device_id> ids(platform.devices.begin(), platform.devices.begin() + count);
  ManualResult manual = workload.run_manual(platform, ids, problem, inputs);
  r.manual_seconds = 1e300;
  for (int i = 0; i < repeats; ++i) {
    manual = workload.run_manual(platform, ids, problem, inputs);
    r.manual_seconds = std::min(r.manual_seconds, manual.seconds);
  }

  const Comparison u = compare(unimem.outputs, want, workload.tolerance());
  const Comparison m = compare(manual.outputs, want, workload.tolerance());
  r.unimem_verified = u.ok;
  r.manual_verified = m.ok;
  r.first_mismatch = !u.ok ? "unimem: " + u.first_mismatch
                           : (!m.ok ? "manual: " + m.first_mismatch : std::string());
  r.bytes = transfer_bytes(unimem.moved);
  r.manual_bytes = manual.moved;
  for (unsigned a = 0; a < count; ++a) {
    for (unsigned b = 0; b < count; ++b) {
      if (a != b && !runtime.device(a).can_copy_from_peer(runtime.device(b))) {
        r.peer_to_peer = false;
      }
    }
  }
  r.bytes_min = workload.bytes_min(problem, count).total(r.peer_to_peer);
  r.bytes_whole_buffer = workload.bytes_whole_buffer(problem, count).total(r.peer_to_peer);
  return r;
}

std::string to_json(const SideBySide& r) {
  auto u = [](std::uint64_t v) { return std::to_string(v); };
  char seconds[64];
  char manual_seconds[64];
  std::snprintf(seconds, sizeof(seconds), "%.6f", r.seconds);
  std::snprintf(manual_seconds, sizeof(manual_seconds), "%.6f", r.manual_seconds);
  std::string json = "{";
  json += "\"workload\": \"" + r.workload + "\", ";
  json += "\"devices\": " + u(r.devices) + ", ";
  json += "\"strategy\": \"" + r.strategy + "\", ";
  json += "\"size\": " + u(r.problem.size) + ", ";
  json += "\"steps\": " + u(r.problem.steps) + ", ";
  json += std::string("\"verified\": ") +
          (r.unimem_verified && r.manual_verified ? "true" : "false") + ", ";
  json += "\"bytes_h2d\": " + u(r.bytes.h2d) + ", ";
  json += "\"bytes_d2h\": " + u(r.bytes.d2h) + ", ";
  json += "\"bytes_d2d\": " + u(r.bytes.d2d) + ", ";
  json += "\"bytes\": " + u(r.bytes.total(r.peer_to_peer)) + ", ";
  json += "\"manual_bytes\": " + u(r.manual_bytes.total(r.peer_to_peer)) + ", ";
  json += "\"bytes_min\": " + u(r.bytes_min) + ", ";
  json += "\"bytes_whole_buffer\": " + u(r.bytes_whole_buffer) + ", ";
  json += std::string("\"seconds\": ") + seconds + ", ";
  json += std::string("\"manual_seconds\": ") + manual_seconds + "}";
  return json;
}

}  // namespace unimem::examples
