#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/check.hpp"
#include "device/device.hpp"

namespace unimem {

/// What a host-driver kernel sees when it runs: per argument either a device pointer (buffer and
/// local-memory arguments) or the scalar's bytes, plus the NDRange of its partition.
class HostKernelContext {
 public:
  struct Arg {
    KernelArg::Kind kind = KernelArg::Kind::scalar;
    std::byte* data = nullptr;  ///< buffer / local memory: the kernel's pointer (null: NULL)
    std::uint64_t size = 0;     ///< bytes behind data, or the scalar's size
    std::span<const std::byte> scalar;
  };

  HostKernelContext(const NDRange& range, std::vector<Arg> args, std::string device_name)
      : range_(range), args_(std::move(args)), device_name_(std::move(device_name)) {}

  [[nodiscard]] const NDRange& range() const { return range_; }
  [[nodiscard]] std::size_t arg_count() const { return args_.size(); }
  [[nodiscard]] const Arg& arg(std::size_t i) const {
    UNIMEM_REQUIRE(i < args_.size(), "HostKernelContext: argument index out of range");
    return args_[i];
  }
  [[nodiscard]] const std::string& device_name() const { return device_name_; }

  /// The device memory of buffer (or local-memory) argument i, viewed as T.
  template <typename T>
  [[nodiscard]] T* buffer(std::size_t i) const {
    const Arg& a = arg(i);
    UNIMEM_REQUIRE(a.kind != KernelArg::Kind::scalar,
                   "HostKernelContext::buffer: argument is a scalar");
    return reinterpret_cast<T*>(a.data);
  }
  [[nodiscard]] std::uint64_t buffer_size(std::size_t i) const { return arg(i).size; }

  /// The value of scalar argument i; its size must be sizeof(T).
  template <typename T>
  [[nodiscard]] T scalar(std::size_t i) const {
    const Arg& a = arg(i);
    UNIMEM_REQUIRE(a.kind == KernelArg::Kind::scalar && a.scalar.size() == sizeof(T),
                   "HostKernelContext::scalar: argument is not a scalar of this size");
    T value;
    std::memcpy(&value, a.scalar.data(), sizeof(T));
    return value;
  }

 private:
  NDRange range_;
  std::vector<Arg> args_;
  std::string device_name_;
};

/// A kernel of the host driver: a C++ callable run on the device's worker thread. The body must
/// only touch memory reachable through its context (that is what makes stale copies visible).
class HostKernel final : public CompiledKernel {
 public:
  using Body = std::function<void(const HostKernelContext&)>;

  HostKernel(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {
    UNIMEM_REQUIRE(static_cast<bool>(body_), "HostKernel: the kernel body must not be empty");
  }
  [[nodiscard]] const std::string& name() const override { return name_; }
  [[nodiscard]] const Body& body() const { return body_; }

 private:
  std::string name_;
  Body body_;
};

}  // namespace unimem
