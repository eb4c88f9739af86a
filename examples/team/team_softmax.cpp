// The team-kernel example: host code is a plain Program::launch (no spill buffer, no team setup:
// unimem recognises the team kernel and passes its spill area), and the CPU reference.
#include "examples/team/team_softmax.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "api/program_core.hpp"

namespace unimem::examples {

namespace embedded {
extern const char team_softmax_cl[];
}  // namespace embedded

TeamSoftmaxRun team_softmax(Runtime& runtime, const std::vector<float>& in, std::uint64_t rows,
                            std::uint64_t cols, const LaunchOptions& options) {
  Program program(runtime, embedded::team_softmax_cl);
  const BufferId in_buf = runtime.create_buffer(in.size() * sizeof(float), "in");
  const BufferId out_buf = runtime.create_buffer(in.size() * sizeof(float), "out");
  runtime.write_blocking(in_buf, 0, std::as_bytes(std::span(in)));
  NDRange range;
  range.global = {rows * kSoftmaxTeam, 1, 1};
  range.local = {kSoftmaxTeam, 1, 1};
  program.launch(
      "team_softmax", range,
      {Arg::buffer(in_buf), Arg::buffer(out_buf), Arg::scalar(static_cast<std::int32_t>(cols))},
      options);
  TeamSoftmaxRun run;
  run.out.resize(in.size());
  runtime.read_blocking(out_buf, 0, std::as_writable_bytes(std::span(run.out)));
  run.partitions = program.core().last_plan().partitions.size();
  run.footprint = program.build_report().teams.at("team_softmax");
  runtime.release_buffer(in_buf);
  runtime.release_buffer(out_buf);
  return run;
}

std::vector<float> team_softmax_reference(const std::vector<float>& in, std::uint64_t rows,
                                          std::uint64_t cols) {
  std::vector<float> out(in.size());
  for (std::uint64_t i = 0; i < rows; ++i) {
    const float* row = in.data() + i * cols;
    std::array<float, kSoftmaxTeam> partial_max{};
    std::array<float, kSoftmaxTeam> partial_sum{};
    for (std::uint64_t r = 0; r < kSoftmaxTeam; ++r) {
      partial_max[r] = -std::numeric_limits<float>::infinity();
      for (std::uint64_t j = r; j < cols; j += kSoftmaxTeam) {
        partial_max[r] = std::fmax(partial_max[r], row[j]);
      }
    }
    float m = -std::numeric_limits<float>::infinity();
    for (const float p : partial_max) m = std::fmax(m, p);
    for (std::uint64_t r = 0; r < kSoftmaxTeam; ++r) {
      partial_sum[r] = 0.0f;
      for (std::uint64_t j = r; j < cols; j += kSoftmaxTeam) partial_sum[r] += std::exp(row[j] - m);
    }
    float s = 0.0f;
    for (const float p : partial_sum) s += p;
    for (std::uint64_t j = 0; j < cols; ++j) out[i * cols + j] = std::exp(row[j] - m) / s;
  }
  return out;
}

}  // namespace unimem::examples
