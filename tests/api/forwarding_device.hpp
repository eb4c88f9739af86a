// A Device that forwards every hook to the device it wraps. Tests derive from it to make some
// hooks fail or to count them (eventless_streak_test.cpp, rewrite_launch_test.cpp); whatever a
// derived device does not override behaves as the wrapped device. Peer copies run between two
// wrappers of peer devices (the source's wrapper is looked through).

#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "device/device.hpp"

namespace unimem::testing {

class ForwardingDevice : public Device {
 public:
  /// `role` is added to the wrapped device's name: "NAME (role)".
  ForwardingDevice(std::shared_ptr<Device> inner, std::string role)
      : inner_(std::move(inner)), role_(std::move(role)) {}

  [[nodiscard]] std::string name() const override { return inner_->name() + " (" + role_ + ")"; }
  [[nodiscard]] std::string driver() const override { return inner_->driver(); }
  [[nodiscard]] std::uint64_t capacity() const override { return inner_->capacity(); }
  [[nodiscard]] std::uint64_t max_allocation() const override { return inner_->max_allocation(); }
  [[nodiscard]] std::uint64_t argument_offset_alignment() const override {
    return inner_->argument_offset_alignment();
  }
  [[nodiscard]] bool rebases_arguments() const override { return inner_->rebases_arguments(); }
  DeviceAllocation allocate(std::uint64_t bytes) override { return inner_->allocate(bytes); }
  void free(DeviceAllocation allocation) override { inner_->free(allocation); }
  Event copy_host_to_device(const std::byte* src, DeviceAllocation dst, std::uint64_t dst_offset,
                            std::uint64_t bytes, std::span<const Event> deps) override {
    return inner_->copy_host_to_device(src, dst, dst_offset, bytes, deps);
  }
  Event copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                            std::uint64_t bytes, std::span<const Event> deps) override {
    return inner_->copy_device_to_host(src, src_offset, dst, bytes, deps);
  }
  Event copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset, DeviceAllocation dst,
                              std::uint64_t dst_offset, std::uint64_t bytes,
                              std::span<const Event> deps) override {
    return inner_->copy_device_to_device(src, src_offset, dst, dst_offset, bytes, deps);
  }
  [[nodiscard]] bool can_copy_from_peer(const Device& source) const override {
    const auto* other = dynamic_cast<const ForwardingDevice*>(&source);
    return other != nullptr && inner_->can_copy_from_peer(*other->inner_);
  }
  Event copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                       DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                       std::span<const Event> deps) override {
    const auto& other = dynamic_cast<const ForwardingDevice&>(source);
    return inner_->copy_from_peer(*other.inner_, src, src_offset, dst, dst_offset, bytes, deps);
  }
  Event copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst, const RectCopy& rect,
                                 std::span<const Event> deps) override {
    return inner_->copy_host_to_device_rect(src, dst, rect, deps);
  }
  Event copy_device_to_host_rect(DeviceAllocation src, std::byte* dst, const RectCopy& rect,
                                 std::span<const Event> deps) override {
    return inner_->copy_device_to_host_rect(src, dst, rect, deps);
  }
  [[nodiscard]] std::shared_ptr<const CompiledProgram> build_program(
      const std::string& source, const std::string& options) const override {
    return inner_->build_program(source, options);
  }
  [[nodiscard]] const void* build_domain() const override { return inner_->build_domain(); }
  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override {
    return inner_->launch(kernel, range, args, deps);
  }
  Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                             std::span<const KernelArg> args,
                             std::span<const Event> deps) override {
    return inner_->launch_without_times(kernel, range, args, deps);
  }
  [[nodiscard]] bool orders_after(const Event& previous) const override {
    return inner_->orders_after(previous);
  }
  std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                std::span<const KernelArg> args) override {
    return inner_->launch_in_order(kernel, range, args);
  }
  std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                      std::span<const KernelArg> args) override {
    return inner_->launch_in_order_again(kernel, range, args);
  }
  [[nodiscard]] bool in_order_finished(std::uint64_t sequence) const override {
    return inner_->in_order_finished(sequence);
  }
  Event in_order_event(std::uint64_t sequence) override { return inner_->in_order_event(sequence); }
  void finish() override { inner_->finish(); }
  void set_profiling(bool on) override { inner_->set_profiling(on); }

 private:
  std::shared_ptr<Device> inner_;
  std::string role_;
};

}  // namespace unimem::testing
