#include "coherence/update_strategy.hpp"

namespace unimem {

std::string_view to_string(UpdateStrategy s) {
  switch (s) {
    case UpdateStrategy::batch:
      return "batch";
    case UpdateStrategy::balance:
      return "balance";
    case UpdateStrategy::lazy:
      return "lazy";
    case UpdateStrategy::adaptive:
      return "adaptive";
  }
  return "unknown";
}

std::optional<UpdateStrategy> parse_update_strategy(std::string_view text) {
  for (UpdateStrategy s : {UpdateStrategy::batch, UpdateStrategy::balance, UpdateStrategy::lazy,
                           UpdateStrategy::adaptive}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

UpdatePolicy::UpdatePolicy(std::uint64_t buffer_size, std::size_t device_count)
    : buffer_size_(buffer_size), device_count_(device_count) {}

PostWriteActions UpdatePolicy::after_device_writes(UpdateStrategy strategy, DeviceWrites writes,
                                                   const std::string& kernel,
                                                   AdaptiveHistory& history) const {
  PostWriteActions out;
  switch (strategy) {
    case UpdateStrategy::lazy:
      break;
    case UpdateStrategy::balance:
      for (const auto& [agent, bytes] : writes) out.copies.push_back({kHostAgent, bytes});
      break;
    case UpdateStrategy::batch:
      for (const auto& [agent, bytes] : writes) {
        out.copies.push_back({kHostAgent, bytes});
        for (std::size_t d = 0; d < device_count_; ++d) {
          out.copies.push_back({agent_of_device(d), bytes});
        }
      }
      break;
    case UpdateStrategy::adaptive: {
      const DemandSequence* replay = adaptive_prediction(writes, kernel, history);
      if (replay == nullptr) break;
      // Issued right away, the copies depend on the kernel's events, so they start the moment it
      // completes and overlap whatever runs next.
      out.replay = true;
      for (const Demand& d : *replay) {
        if (replays(d)) out.copies.push_back({d.agent, d.bytes});
      }
      break;
    }
  }
  return out;
}

const DemandSequence* UpdatePolicy::adaptive_prediction(DeviceWrites writes,
                                                        const std::string& kernel,
                                                        AdaptiveHistory& history) const {
  AgentMask writers;
  for (const auto& [agent, bytes] : writes) writers = writers.with(agent);
  return history.open_prediction(kernel, writers);
}

PostWriteActions UpdatePolicy::after_host_write(UpdateStrategy strategy,
                                                const IntervalSet& bytes) const {
  PostWriteActions out;
  if (strategy == UpdateStrategy::batch) {
    for (std::size_t d = 0; d < device_count_; ++d) {
      out.copies.push_back({agent_of_device(d), bytes});
    }
  }
  return out;
}

}  // namespace unimem
