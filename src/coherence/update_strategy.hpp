#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coherence/adaptive_history.hpp"
#include "coherence/agent_mask.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// When results move after a kernel writes them (DSOM section 4.2.3; DESIGN.md). A strategy only
/// decides when copies happen, never whether the result is right.
enum class UpdateStrategy {
  batch,     ///< after each write: write back to the host and update every device
  balance,   ///< after each write: write back to the host only
  lazy,      ///< copy only when a reader needs the bytes (minimal bytes)
  adaptive,  ///< lazy, plus replaying a copy sequence seen twice after the same kernel
};

[[nodiscard]] std::string_view to_string(UpdateStrategy s);
/// "batch" / "balance" / "lazy" / "adaptive"; nullopt for anything else.
[[nodiscard]] std::optional<UpdateStrategy> parse_update_strategy(std::string_view text);

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
  /// The host wrote bytes (already recorded in the directory): batch pushes them to every
  /// device; the others do nothing.
  [[nodiscard]] PostWriteActions after_host_write(UpdateStrategy strategy,
                                                  const IntervalSet& bytes) const;

 private:
  std::uint64_t buffer_size_;
  std::size_t device_count_;
};

}  // namespace unimem
