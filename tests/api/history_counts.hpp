// The adaptive history's repeat counts of every (buffer, kernel, set of writing devices), in one
// fixed order: what the repeat-path tests compare between a run with a shortcut and one without.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"

namespace unimem::testing {

inline std::vector<int> history_counts(Runtime& rt, std::span<const BufferId> buffers,
                                       std::initializer_list<const char*> kernels,
                                       std::size_t devices) {
  std::vector<AgentMask> writer_sets;  // every non-empty set of devices
  for (std::uint64_t bits = 1; bits < (std::uint64_t{1} << devices); ++bits) {
    AgentMask writers;
    for (std::size_t d = 0; d < devices; ++d) {
      if ((bits >> d & 1U) != 0) writers = writers.with(static_cast<Agent>(d + 1));
    }
    writer_sets.push_back(writers);
  }
  std::vector<int> counts;
  for (const BufferId id : buffers) {
    for (const char* kernel : kernels) {
      for (const AgentMask writers : writer_sets) {
        counts.push_back(rt.core().history_repeat_count(id, kernel, writers));
      }
    }
  }
  return counts;
}

}  // namespace unimem::testing
