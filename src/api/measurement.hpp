#pragma once

// Matz et al.'s overhead measurement (002_aa84334820ddd8b5.txt section 9.2): the configurations
// and the formulas are public (<unimem/measurement.hpp>); this is the state a Runtime keeps for
// them, with the ordering the gamma configuration keeps instead of coherence.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <unimem/event.hpp>
#include <unimem/measurement.hpp>

namespace unimem {

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
  /// The kernel just submitted on `device`; kept for gamma only (the only mode that asks, and
  /// set_mode forgets the kernels of the previous mode), so the other modes keep no event.
  void record_kernel(std::size_t device, const Event& kernel);

 private:
  MeasurementMode mode_;
  std::vector<Event> last_kernel_;  // per device
};

}  // namespace unimem
