// DeviceCopies (src/platform/device_copies.hpp).

#include "platform/device_copies.hpp"

#include <initializer_list>
#include <string>
#include <vector>

#include "api/program_core.hpp"
#include "platform/platform_state.hpp"

namespace unimem::platform {
namespace {

// Word kernels when every offset, pitch and width is a multiple of 4 (a quarter of the
// work-items); byte kernels otherwise. Subscripts are affine in the ids with the scalar
// arguments as coefficients, which the analysis bounds exactly per partition.
constexpr const char* kSource = R"CLC(
__kernel void unimem_copy_bytes(__global uchar* dst, ulong to, __global const uchar* src,
                                ulong from) {
  const ulong i = get_global_id(0);
  dst[to + i] = src[from + i];
}
__kernel void unimem_copy_words(__global uint* dst, ulong to, __global const uint* src,
                                ulong from) {
  const ulong i = get_global_id(0);
  dst[to + i] = src[from + i];
}
__kernel void unimem_copy_rect_bytes(__global uchar* dst, ulong db, ulong drow, ulong dslice,
                                     __global const uchar* src, ulong sb, ulong srow,
                                     ulong sslice) {
  const ulong x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  dst[db + z * dslice + y * drow + x] = src[sb + z * sslice + y * srow + x];
}
__kernel void unimem_copy_rect_words(__global uint* dst, ulong db, ulong drow, ulong dslice,
                                     __global const uint* src, ulong sb, ulong srow,
                                     ulong sslice) {
  const ulong x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  dst[db + z * dslice + y * drow + x] = src[sb + z * sslice + y * srow + x];
}
)CLC";

bool words(std::initializer_list<std::uint64_t> values) {
  for (std::uint64_t v : values) {
    if (v % 4 != 0) return false;
  }
  return true;
}

}  // namespace

DeviceCopies::DeviceCopies(Runtime& runtime) : program_(runtime, kSource) {
  // A copy that runs on one device is still right; why it did is said like a kernel's fallback.
  program_.set_log([](const std::string& message) { say(message); });
}

Event DeviceCopies::launch(const std::string& kernel, const NDRange& range,
                           std::span<const Arg> args, const LaunchOptions& options,
                           DeviceWork* work) {
  if (work == nullptr) return program_.launch(kernel, range, args, options);
  std::shared_ptr<const LaunchPlan> plan;
  std::vector<Event> partitions;
  Event e = program_.core().launch(kernel, range, args, options, &plan, &partitions);
  work->add(*plan, partitions);
  return e;
}

Event DeviceCopies::copy(BufferId src, std::uint64_t from, BufferId dst, std::uint64_t to,
                         std::uint64_t size, const LaunchOptions& options, DeviceWork* work) {
  const std::uint64_t unit = words({from, to, size}) ? 4 : 1;
  NDRange range;
  range.global = {size / unit, 1, 1};
  const Arg args[] = {Arg::buffer(dst), Arg::scalar<std::uint64_t>(to / unit), Arg::buffer(src),
                      Arg::scalar<std::uint64_t>(from / unit)};
  return launch(unit == 4 ? "unimem_copy_words" : "unimem_copy_bytes", range, args, options, work);
}

Event DeviceCopies::copy_rect(const RectSide& src, const RectSide& dst,
                              const std::array<std::uint64_t, 3>& region,
                              const LaunchOptions& options, DeviceWork* work) {
  const std::uint64_t unit = words({src.base, src.row_pitch, src.slice_pitch, dst.base,
                                    dst.row_pitch, dst.slice_pitch, region[0]})
                                 ? 4
                                 : 1;
  NDRange range;
  range.dims = 3;
  range.global = {region[0] / unit, region[1], region[2]};
  const auto side = [unit](const RectSide& s, std::vector<Arg>& args) {
    args.push_back(Arg::buffer(s.buffer));
    args.push_back(Arg::scalar<std::uint64_t>(s.base / unit));
    args.push_back(Arg::scalar<std::uint64_t>(s.row_pitch / unit));
    args.push_back(Arg::scalar<std::uint64_t>(s.slice_pitch / unit));
  };
  std::vector<Arg> args;
  side(dst, args);
  side(src, args);
  // Split by slices, else by rows: each device copies whole rows, as row-major kernels split.
  LaunchOptions by_rows = options;
  if (!by_rows.split_dimension) by_rows.split_dimension = region[2] > 1 ? 2 : region[1] > 1 ? 1 : 0;
  return launch(unit == 4 ? "unimem_copy_rect_words" : "unimem_copy_rect_bytes", range, args,
                by_rows, work);
}

}  // namespace unimem::platform
