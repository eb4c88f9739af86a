#include "device/device.hpp"

#include <functional>

#include "common/check.hpp"

namespace unimem {

namespace {

// Calls copy_row(src_offset, dst_offset, bytes) for every contiguous row of rect.
void for_each_rect_row(const RectCopy& rect,
                       const std::function<void(std::uint64_t, std::uint64_t)>& copy_row) {
  for (std::uint64_t z = 0; z < rect.region[2]; ++z) {
    for (std::uint64_t y = 0; y < rect.region[1]; ++y) {
      const std::uint64_t src = rect.src_origin[0] + (rect.src_origin[1] + y) * rect.src_row_pitch +
                                (rect.src_origin[2] + z) * rect.src_slice_pitch;
      const std::uint64_t dst = rect.dst_origin[0] + (rect.dst_origin[1] + y) * rect.dst_row_pitch +
                                (rect.dst_origin[2] + z) * rect.dst_slice_pitch;
      copy_row(src, dst);
    }
  }
}

}  // namespace

std::shared_ptr<const CompiledProgram> Device::build_program(const std::string& /*source*/,
                                                             const std::string& /*options*/) const {
  throw PreconditionError("device '" + name() + "' (driver " + driver() +
                          ") does not compile OpenCL C programs");
}

std::uint64_t Device::launch_in_order(const CompiledKernel& kernel, const NDRange& /*range*/,
                                      std::span<const KernelArg> /*args*/) {
  throw DeviceError("launch of kernel \"" + kernel.name() + "\" on device " + name() +
                    ": the driver has no in-order launches without events");
}

Event Device::in_order_event(std::uint64_t /*sequence*/) {
  throw DeviceError("device " + name() + ": the driver has no in-order launches without events");
}

Event Device::copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                             DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                             std::span<const Event> deps) {
  if (&source != this) {
    throw DeviceError("copy_from_peer: device " + name() + " cannot read memory of device " +
                      source.name() + " directly");
  }
  return copy_device_to_device(src, src_offset, dst, dst_offset, bytes, deps);
}

Event Device::copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst,
                                       const RectCopy& rect, std::span<const Event> deps) {
  EventList rows;
  for_each_rect_row(rect, [&](std::uint64_t s, std::uint64_t d) {
    rows.push_back(copy_host_to_device(src + s, dst, d, rect.region[0], deps));
  });
  return when_all(rows);
}

Event Device::copy_device_to_host_rect(DeviceAllocation src, std::byte* dst, const RectCopy& rect,
                                       std::span<const Event> deps) {
  EventList rows;
  for_each_rect_row(rect, [&](std::uint64_t s, std::uint64_t d) {
    rows.push_back(copy_device_to_host(src, s, dst + d, rect.region[0], deps));
  });
  return when_all(rows);
}

}  // namespace unimem
