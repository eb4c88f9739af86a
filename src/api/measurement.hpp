#pragma once

// Matz et al.'s overhead measurement (002_aa84334820ddd8b5.txt section 9.2), in one place: the
// three configurations a Runtime can run in, what each leaves out, the ordering the gamma
// configuration keeps instead of coherence, and the formulas that turn three timings into the
// overhead and transfer fractions.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <unimem/event.hpp>

namespace unimem {

/// How much of the runtime works. Only `normal` gives correct results; the others exist only to
/// measure overhead:
/// - normal (alpha): everything.
/// - no_transfers (beta): dependency resolution and directory/tracker updates, but no copy is
///   issued (nor counted).
/// - no_coherence (gamma): neither: kernels run on each device's mirrors, ordered only after the
///   previous kernel of the same device; host reads and writes touch the home copy only.
enum class MeasurementMode : std::uint8_t { normal, no_transfers, no_coherence };

/// "alpha", "beta", "gamma".
[[nodiscard]] const char* measurement_name(MeasurementMode mode);

/// Median times of the three configurations over the same work, and what they give.
struct OverheadTimes {
  double alpha = 0.0;  ///< normal
  double beta = 0.0;   ///< no_transfers
  double gamma = 0.0;  ///< no_coherence

  /// (beta - gamma) / alpha: the share of the run spent in bookkeeping (0 when alpha is 0).
  [[nodiscard]] double overhead_fraction() const { return alpha > 0 ? (beta - gamma) / alpha : 0; }
  /// (alpha - beta) / alpha: the share spent moving data (0 when alpha is 0).
  [[nodiscard]] double transfer_fraction() const { return alpha > 0 ? (alpha - beta) / alpha : 0; }
};

/// A runtime's measurement mode with the state the gamma configuration needs: with no directory
/// and no trackers, each device's kernels still run in submission order (after the previous
/// kernel of the same device) and a host read waits for every device's last kernel. Not
/// thread-safe: the Runtime's lock guards it.
class Measurement {
 public:
  Measurement(MeasurementMode mode, std::size_t devices) : mode_(mode), last_kernel_(devices) {}

  [[nodiscard]] MeasurementMode mode() const { return mode_; }
  /// Switches modes, forgetting the kernels of the previous one.
  void set_mode(MeasurementMode mode);

  /// Whether the directory, the trackers and the update strategies are used (alpha and beta).
  [[nodiscard]] bool coherent() const { return mode_ != MeasurementMode::no_coherence; }
  /// Whether copies are issued (alpha only).
  [[nodiscard]] bool transfers() const { return mode_ == MeasurementMode::normal; }

  /// gamma only (nothing otherwise): what a kernel on `device` waits for instead of its data.
  void add_kernel_dependencies(std::size_t device, EventList& deps) const;
  /// gamma only: what a host read waits for instead of its data (every device's last kernel).
  void add_host_read_dependencies(EventList& deps) const;
  /// Every mode: the kernel just submitted on `device`.
  void record_kernel(std::size_t device, const Event& kernel);

 private:
  MeasurementMode mode_;
  std::vector<Event> last_kernel_;  // per device
};

}  // namespace unimem
