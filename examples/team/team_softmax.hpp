#pragma once

// The team-kernel example (examples/team/team_softmax.cl): row-wise softmax with one team per
// row, run through Program::launch like any other kernel, and its CPU reference.

#include <cstdint>
#include <string>
#include <vector>

#include <unimem/program.hpp>

namespace unimem::examples {

/// Work-items per team in team_softmax.cl.
inline constexpr std::uint64_t kSoftmaxTeam = 16;

struct TeamSoftmaxRun {
  std::vector<float> out;
  std::size_t partitions = 0;  ///< devices the launch ran on
  TeamFootprint footprint;     ///< from the program's build report
};

/// Softmax of each row of in (rows x cols, row-major) on runtime's devices (all of them by
/// default, or those in options).
[[nodiscard]] TeamSoftmaxRun team_softmax(Runtime& runtime, const std::vector<float>& in,
                                          std::uint64_t rows, std::uint64_t cols,
                                          const LaunchOptions& options = {});

/// The CPU reference, in the kernel's order of operations.
[[nodiscard]] std::vector<float> team_softmax_reference(const std::vector<float>& in,
                                                        std::uint64_t rows, std::uint64_t cols);

}  // namespace unimem::examples
