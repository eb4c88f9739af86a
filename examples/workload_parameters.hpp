#pragma once

// The constant kernel arguments of the workloads, shared by each workload's CPU reference and
// hand-written version (examples/<name>/<name>.cpp) and its unimem version
// (examples/<name>/unimem_program.cpp).

#include <cstdint>

namespace unimem::examples {

namespace stencil2d_parameters {
inline constexpr float kCenter = 0.6f;
inline constexpr float kAdjacent = 0.1f;
}  // namespace stencil2d_parameters

namespace heat3d_parameters {
inline constexpr float kCenter = 0.4f;
inline constexpr float kAdjacent = 0.1f;
}  // namespace heat3d_parameters

namespace nbody_parameters {
inline constexpr float kDt = 0.01f;
inline constexpr float kSoftening2 = 0.01f;
inline constexpr std::uint64_t kBodyBytes = 4 * sizeof(float);  // one float4
}  // namespace nbody_parameters

namespace blackscholes_parameters {
inline constexpr float kRiskFree = 0.02f;
inline constexpr float kVolatility = 0.30f;
}  // namespace blackscholes_parameters

/// Rodinia hotspot's per-step coefficients for a rows x cols chip (hotspot.cpp).
struct HotspotCoefficients {
  float step_div_cap;
  float rx_1;
  float ry_1;
  float rz_1;
  float amb_temp;
};
[[nodiscard]] HotspotCoefficients hotspot_coefficients(std::uint64_t rows, std::uint64_t cols);

}  // namespace unimem::examples
