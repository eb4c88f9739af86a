#include "device/host/host_device.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "common/check.hpp"
#include "region/interval.hpp"

namespace unimem {

namespace {

std::string range_text(std::uint64_t offset, std::uint64_t bytes) {
  return Interval{offset, offset + bytes}.to_string();
}

}  // namespace

HostDevice::HostDevice(std::string name, HostDeviceOptions options)
    : name_(std::move(name)), options_(options), queue_(name_) {}

HostDevice::~HostDevice() = default;

std::uint64_t HostDevice::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

DeviceAllocation HostDevice::allocate(std::uint64_t bytes) {
  UNIMEM_REQUIRE(bytes > 0, "HostDevice::allocate: size must be positive");
  if (bytes > max_allocation()) {
    throw DeviceError("allocate on device " + name_ + ": " + std::to_string(bytes) +
                      " bytes requested, more than its largest allocation of " +
                      std::to_string(max_allocation()) + " bytes");
  }
  std::lock_guard lock(mutex_);
  if (bytes > options_.capacity - allocated_) {
    throw DeviceError("allocate on device " + name_ + ": " + std::to_string(bytes) +
                      " bytes requested, " + std::to_string(options_.capacity - allocated_) +
                      " of " + std::to_string(options_.capacity) + " bytes free");
  }
  auto memory = std::make_unique<std::byte[]>(bytes);
  std::fill_n(memory.get(), bytes, options_.poison);
  void* handle = memory.get();
  allocations_.emplace(handle, std::move(memory));
  sizes_.emplace(handle, bytes);
  allocated_ += bytes;
  return DeviceAllocation{handle, bytes};
}

void HostDevice::free(DeviceAllocation allocation) {
  std::lock_guard lock(mutex_);
  auto it = allocations_.find(allocation.handle);
  if (it == allocations_.end()) {
    throw DeviceError("free on device " + name_ + ": not an allocation of this device");
  }
  allocated_ -= sizes_.at(allocation.handle);
  sizes_.erase(allocation.handle);
  allocations_.erase(it);
}

std::byte* HostDevice::checked_pointer(DeviceAllocation a, std::uint64_t offset,
                                       std::uint64_t bytes, const char* what) const {
  std::lock_guard lock(mutex_);
  auto it = sizes_.find(a.handle);
  if (it == sizes_.end()) {
    throw PreconditionError(std::string(what) + " on device " + name_ +
                            ": the allocation does not belong to this device");
  }
  if (offset > it->second || bytes > it->second - offset) {
    throw PreconditionError(std::string(what) + " on device " + name_ + ": range " +
                            range_text(offset, bytes) + " outside the allocation of " +
                            std::to_string(it->second) + " bytes");
  }
  return static_cast<std::byte*>(a.handle) + offset;
}

Event HostDevice::copy_host_to_device(const std::byte* src, DeviceAllocation dst,
                                      std::uint64_t dst_offset, std::uint64_t bytes,
                                      std::span<const Event> deps) {
  UNIMEM_REQUIRE(src != nullptr || bytes == 0, "copy_host_to_device: null source");
  std::byte* d = checked_pointer(dst, dst_offset, bytes, "copy_host_to_device");
  return queue_.submit([src, d, bytes] { std::memcpy(d, src, bytes); }, deps);
}

Event HostDevice::copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset,
                                      std::byte* dst, std::uint64_t bytes,
                                      std::span<const Event> deps) {
  UNIMEM_REQUIRE(dst != nullptr || bytes == 0, "copy_device_to_host: null destination");
  const std::byte* s = checked_pointer(src, src_offset, bytes, "copy_device_to_host");
  return queue_.submit([s, dst, bytes] { std::memcpy(dst, s, bytes); }, deps);
}

Event HostDevice::copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset,
                                        DeviceAllocation dst, std::uint64_t dst_offset,
                                        std::uint64_t bytes, std::span<const Event> deps) {
  const std::byte* s = checked_pointer(src, src_offset, bytes, "copy_device_to_device");
  std::byte* d = checked_pointer(dst, dst_offset, bytes, "copy_device_to_device");
  return queue_.submit([s, d, bytes] { std::memmove(d, s, bytes); }, deps);
}

bool HostDevice::can_copy_from_peer(const Device& source) const {
  if (&source == this) return true;
  const auto* peer = dynamic_cast<const HostDevice*>(&source);
  return peer != nullptr && options_.peer_copies && peer->options_.peer_copies;
}

Event HostDevice::copy_from_peer(const Device& source, DeviceAllocation src,
                                 std::uint64_t src_offset, DeviceAllocation dst,
                                 std::uint64_t dst_offset, std::uint64_t bytes,
                                 std::span<const Event> deps) {
  if (&source == this) {
    return copy_device_to_device(src, src_offset, dst, dst_offset, bytes, deps);
  }
  if (!can_copy_from_peer(source)) {
    throw DeviceError("copy_from_peer: device " + name_ + " cannot read memory of device " +
                      source.name() + " directly");
  }
  const auto& peer = static_cast<const HostDevice&>(source);
  const std::byte* s = peer.checked_pointer(src, src_offset, bytes, "copy_from_peer (source)");
  std::byte* d = checked_pointer(dst, dst_offset, bytes, "copy_from_peer (destination)");
  return queue_.submit([s, d, bytes] { std::memcpy(d, s, bytes); }, deps);
}

Event HostDevice::launch(const CompiledKernel& kernel, const NDRange& range,
                         std::span<const KernelArg> args, std::span<const Event> deps) {
  const auto* host_kernel = dynamic_cast<const HostKernel*>(&kernel);
  if (host_kernel == nullptr) {
    throw DeviceError("launch on device " + name_ + ": kernel '" + kernel.name() +
                      "' was not made by the host driver");
  }
  UNIMEM_REQUIRE(range.dims >= 1 && range.dims <= 3, "launch: NDRange dims must be 1, 2 or 3");
  // Everything the body needs is copied now, so the caller's args and kernel may go away.
  struct Prepared {
    std::vector<HostKernelContext::Arg> args;
    std::vector<std::vector<std::byte>> scalars;
    std::vector<std::unique_ptr<std::byte[]>> locals;
  };
  auto prepared = std::make_shared<Prepared>();
  prepared->scalars.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = args[i];
    HostKernelContext::Arg out;
    out.kind = a.kind;
    switch (a.kind) {
      case KernelArg::Kind::buffer: {
        // Rebased (partial residency): the pointer is the allocation's start moved by
        // buffer_offset - allocation_base, computed on addresses (it may lie before the
        // allocation; the kernel only touches bytes inside it).
        const std::uint64_t end = a.allocation_base + a.buffer.size;
        try {
          if (a.allocation_base == 0) {
            out.data = checked_pointer(a.buffer, a.buffer_offset, a.buffer.size - a.buffer_offset,
                                       "launch");
          } else {
            std::byte* start = checked_pointer(a.buffer, 0, a.buffer.size, "launch");
            out.data = reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(start) +
                                                    a.buffer_offset - a.allocation_base);
          }
        } catch (const PreconditionError& e) {
          throw PreconditionError("kernel '" + kernel.name() + "' argument " + std::to_string(i) +
                                  ": " + e.what());
        }
        out.size = a.buffer_offset <= end ? end - a.buffer_offset : 0;
        break;
      }
      case KernelArg::Kind::null_buffer:  // data stays nullptr, size 0
        break;
      case KernelArg::Kind::scalar:
        prepared->scalars.push_back(a.scalar_bytes);
        out.size = a.scalar_bytes.size();
        break;
      case KernelArg::Kind::local_memory:
        out.size = a.local_bytes;
        break;
    }
    prepared->args.push_back(out);
  }
  // Scalar spans point into prepared->scalars, which is not resized after this point.
  std::size_t scalar_index = 0;
  for (auto& a : prepared->args) {
    if (a.kind == KernelArg::Kind::scalar) a.scalar = prepared->scalars[scalar_index++];
  }
  HostKernel::Body body = host_kernel->body();
  return queue_.submit(
      [prepared, body = std::move(body), range, device = name_] {
        std::vector<HostKernelContext::Arg> run_args = prepared->args;
        std::vector<std::unique_ptr<std::byte[]>> locals;
        for (auto& a : run_args) {
          if (a.kind == KernelArg::Kind::local_memory) {
            locals.push_back(std::make_unique<std::byte[]>(a.size == 0 ? 1 : a.size));
            a.data = locals.back().get();
          }
        }
        body(HostKernelContext(range, std::move(run_args), device));
      },
      deps);
}

void HostDevice::finish() { queue_.wait_idle(); }

}  // namespace unimem
