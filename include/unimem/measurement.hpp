#pragma once

// Matz et al.'s overhead measurement (002_aa84334820ddd8b5.txt section 9.2): the three
// configurations a Runtime can run in, what each leaves out, and the formulas that turn their
// three timings into the overhead and transfer fractions. The runtime side is
// src/api/measurement.*; `unimem bench` reports both fractions.

#include <cstdint>

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

}  // namespace unimem
