#pragma once

// `unimem scale`: the scaling study on simulated devices (docs/SIMULATION.md). The data the
// command produces and the plot drawn from it (tools/scale_plot.cpp).

#include <cstdint>
#include <string>
#include <vector>

namespace unimem::tools {

/// One run of one workload on `devices` simulated devices.
struct ScalePoint {
  std::string workload;
  std::string strategy;
  unsigned devices = 0;
  double seconds = 0;  ///< simulated
  double speedup = 0;  ///< over the same workload on one simulated device (same strategy)
  bool verified = false;
  double bytes_h2d = 0;  ///< modelled bytes
  double bytes_d2h = 0;
  double bytes_d2d = 0;
  double bytes_in_per_device_max = 0;        ///< the most modelled bytes one device received
  double kernel_seconds_per_device_max = 0;  ///< simulated kernel time of the busiest device
  /// Simulated seconds the copies into and out of the device that copied the most took (its
  /// share of the gap to linear speedup when they are not overlapped with kernels).
  double copy_seconds_per_device_max = 0;
  std::vector<double> bytes_in_per_device;
};

/// Draws the speedup curves (left) and the strategy comparison (right) into `path` (.png or
/// .svg). Returns false with `error` set when cairo is not built in or the file cannot be written.
bool draw_scale_plot(const std::string& path, const std::string& title,
                     const std::vector<ScalePoint>& scaling,
                     const std::vector<ScalePoint>& strategies, std::string& error);

}  // namespace unimem::tools
