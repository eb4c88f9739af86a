#pragma once

// The index space of a kernel launch (an OpenCL NDRange with a global offset).

#include <array>
#include <cstdint>

namespace unimem {

/// An N-D index space (OpenCL NDRange) with a global offset. Unused dimensions have size 1 and
/// offset 0. local[d] == 0 in every dimension lets the driver choose the work-group size.
struct NDRange {
  std::uint32_t dims = 1;
  std::array<std::uint64_t, 3> offset{0, 0, 0};
  std::array<std::uint64_t, 3> global{1, 1, 1};
  std::array<std::uint64_t, 3> local{0, 0, 0};
};

}  // namespace unimem
