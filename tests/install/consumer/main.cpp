// A program built against the installed unimem (find_package or pkg-config), with only the public
// headers. It exits 0 only when every call behaves as documented.
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <unimem/unimem.hpp>

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "consumer: %s\n", what);
      ++failures;
    }
  };
  expect(!unimem::version().empty(), "version() is empty");

  // An event completed by hand runs its callback and waits without blocking.
  auto [event, state] = unimem::Event::make_manual();
  bool ran = false;
  event.on_complete([&ran] { ran = true; });
  expect(!event.is_complete(), "a fresh manual event is already complete");
  state->complete();
  event.wait();
  expect(event.is_complete() && ran, "a completed manual event did not run its callback");

  // Library exceptions are catchable by their public types.
  try {
    throw unimem::PreconditionError("buffer 'x': range [4, 8) outside its 4 bytes");
  } catch (const std::invalid_argument& e) {
    expect(std::string(e.what()).find("buffer 'x'") != std::string::npos, "message lost");
  }
  // A runtime over the devices of the environment: a buffer written and read back through it.
  try {
    unimem::Runtime runtime;
    expect(runtime.device_count() >= 1, "a runtime without devices");
    const unimem::BufferId buffer = runtime.create_buffer(64, "consumer");
    std::vector<std::byte> in(64), out(64);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 3);
    runtime.write_blocking(buffer, 0, in);
    runtime.read_blocking(buffer, 0, out);
    expect(in == out, "a buffer read back differs from what was written");
    expect(runtime.stats_json().find("\"total\"") != std::string::npos, "stats_json has no total");

    // A kernel launched through a Program, split over every device by the kernel analysis (or
    // on one device when unimem is built without it): each element gets its index added.
    unimem::Program program(runtime, R"(
      __kernel void add_index(__global int* data, int scale) {
        const size_t i = get_global_id(0);
        data[i] += (int)i * scale;
      })");
    std::vector<int> values(1024), result(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int>(7 * i);
    const unimem::BufferId ints = runtime.create_buffer(values.size() * sizeof(int), "ints");
    runtime.write_blocking(ints, 0, std::as_bytes(std::span<const int>(values)));
    unimem::NDRange range;
    range.global[0] = values.size();
    range.local[0] = 64;
    program.set_log(
        [](const std::string& message) { std::fprintf(stderr, "%s\n", message.c_str()); });
    program.launch("add_index", range, {unimem::Arg::buffer(ints), unimem::Arg::scalar(3)}).wait();
    runtime.read_blocking(ints, 0, std::as_writable_bytes(std::span<int>(result)));
    bool kernel_ok = true;
    for (std::size_t i = 0; i < values.size(); ++i) {
      kernel_ok = kernel_ok && result[i] == static_cast<int>(7 * i + 3 * i);
    }
    expect(kernel_ok, "the kernel's result differs from the reference");
    std::printf("consumer: kernel on %zu device(s), analysis %s\n", runtime.device_count(),
                program.analyzed() ? "used" : "not built");

    // A team kernel: <unimem/team.h> comes from the installed tree (the library finds it from its
    // own path); 21 shared variables, so one of them lives in the spill area unimem passes.
    unimem::Program team_program(runtime, R"(
      #include <unimem/team.h>
      __kernel void team_offsets(__global int* data, UM_TEAM_PARAM(21)) {
        UM_TEAM_BEGIN(team, 21);
        UM_MASTER(team)
          for (uint v = 0; v < 21; ++v) um_share_int(team, v, (int)(um_team_num(team) + v));
        UM_END_MASTER(team);
        UM_PARALLEL(team)
          data[get_global_id(0)] = um_shared_int(team, 20);
        UM_END_PARALLEL(team);
        UM_TEAM_END(team);
      })");
    const auto footprint = team_program.build_report().teams.find("team_offsets");
    expect(footprint != team_program.build_report().teams.end() &&
               footprint->second.spill_bytes_per_group() == 8,
           "the build report has no team footprint of 8 spill bytes for team_offsets");
    team_program.launch("team_offsets", range, {unimem::Arg::buffer(ints)}).wait();
    runtime.read_blocking(ints, 0, std::as_writable_bytes(std::span<int>(result)));
    bool team_ok = true;
    for (std::size_t i = 0; i < values.size(); ++i) {
      team_ok = team_ok && result[i] == static_cast<int>(i / 64 + 20);
    }
    expect(team_ok, "the team kernel's result differs from the reference");
    runtime.release_buffer(ints);
    runtime.release_buffer(buffer);
  } catch (const unimem::DeviceError& e) {
    std::fprintf(stderr, "consumer: no runtime: %s\n", e.what());
    ++failures;
  }
  std::printf("unimem %s consumer: %s\n", std::string(unimem::version()).c_str(),
              failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
