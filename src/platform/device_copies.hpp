#pragma once
// clEnqueueCopyBuffer and clEnqueueCopyBufferRect as kernels launched through the runtime: the
// copy runs where the bytes are, split over the devices like any NDRange (the kernel analysis
// reads the copy kernels' subscripts, exact for both), so only the bytes some partition lacks
// move, and no byte passes through the host unless the coherence layer routes it there.
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include <unimem/event.hpp>
#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "platform/profiling.hpp"

namespace unimem::platform {

/// One side of a rectangular copy: its buffer, first byte and pitches (OpenCL's meaning).
struct RectSide {
  BufferId buffer;
  std::uint64_t base = 0;
  std::uint64_t row_pitch = 0;
  std::uint64_t slice_pitch = 0;
};

/// The copy kernels, built once per runtime on first use.
class DeviceCopies {
 public:
  explicit DeviceCopies(Runtime& runtime);

  /// size bytes from src at from to dst at to (the caller has checked ranges and overlap). With
  /// work, the copy's partitions are added to it (profiling.hpp).
  Event copy(BufferId src, std::uint64_t from, BufferId dst, std::uint64_t to, std::uint64_t size,
             const LaunchOptions& options, DeviceWork* work = nullptr);
  /// region = {bytes per row, rows, slices}.
  Event copy_rect(const RectSide& src, const RectSide& dst,
                  const std::array<std::uint64_t, 3>& region, const LaunchOptions& options,
                  DeviceWork* work = nullptr);

 private:
  Event launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
               const LaunchOptions& options, DeviceWork* work);

  Program program_;
};

}  // namespace unimem::platform
