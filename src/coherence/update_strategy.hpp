#pragma once

// The update strategies (DSOM section 4.2.3): the enum is public (<unimem/update_strategy.hpp>);
// its names are parsed and printed in update_strategy.cpp, and UpdatePolicy below gives each
// strategy's post-write copies.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unimem/update_strategy.hpp>

#include "coherence/adaptive_history.hpp"
#include "coherence/agent_mask.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// The bytes each device agent wrote in one kernel launch.
using DeviceWrites = std::span<const std::pair<Agent, IntervalSet>>;

/// One copy a strategy issues eagerly after a write: bytes are to be made current on agent now,
/// through the usual Table 1 read action (not as a demand read).
struct EagerCopy {
  Agent agent = kHostAgent;
  IntervalSet bytes;
  friend bool operator==(const EagerCopy&, const EagerCopy&) = default;
};

/// What a strategy does right after a write: the eager copies, in the order to issue them.
struct PostWriteActions {
  std::vector<EagerCopy> copies;
  /// adaptive: the copies replay a predicted sequence of reads (accounted as prefetches); set
  /// even when none of the prediction's entries fits the buffer any more.
  bool replay = false;
};

/// The post-write actions of the four update strategies for one buffer (DSOM section 4.2.3):
/// the strategy decides which copies to issue now; the buffer issues them.
class UpdatePolicy {
 public:
  /// A buffer of buffer_size bytes shared by the host and device_count devices.
  UpdatePolicy(std::uint64_t buffer_size, std::size_t device_count);

  /// Kernel `kernel` wrote `writes` (already recorded in the directory). batch writes them back
  /// and pushes them to every device; balance writes them back; lazy does nothing; adaptive
  /// opens a recording in history for the kernel and its writers and replays the history's
  /// prediction, if it has one, dropping entries that no longer fit the buffer.
  [[nodiscard]] PostWriteActions after_device_writes(UpdateStrategy strategy, DeviceWrites writes,
                                                     const std::string& kernel,
                                                     AdaptiveHistory& history) const;
  /// adaptive's half of after_device_writes without copying the prediction: opens the recording
  /// and returns the history's stored sequence to replay (null when it has none), valid until the
  /// history's next close() or open(). Its demands that fit (replays) are the copies
  /// after_device_writes lists, in that order.
  [[nodiscard]] const DemandSequence* adaptive_prediction(DeviceWrites writes,
                                                          const std::string& kernel,
                                                          AdaptiveHistory& history) const;
  /// Whether a demand of a prediction still fits the buffer and names a known agent.
  [[nodiscard]] bool replays(const Demand& d) const {
    return d.bytes.bounds().end <= buffer_size_ && d.agent <= device_count_;
  }
  /// The host wrote bytes (already recorded in the directory): batch pushes them to every
  /// device; the others do nothing.
  [[nodiscard]] PostWriteActions after_host_write(UpdateStrategy strategy,
                                                  const IntervalSet& bytes) const;

 private:
  std::uint64_t buffer_size_;
  std::size_t device_count_;
};

}  // namespace unimem
