#pragma once

// The exceptions unimem throws. Every message names what was wrong: the buffer, kernel, argument,
// device or range involved.

#include <stdexcept>
#include <string>
#include <utility>

namespace unimem {

/// A caller passed an argument that violates a documented precondition (an unknown buffer, a range
/// outside a buffer, a bad launch). Nothing was changed: the program's data stays intact.
class PreconditionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// An internal data-structure invariant does not hold: a bug in unimem (checked in builds with
/// invariant checks on).
class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// A device or driver operation failed. The message names the driver call, the device and the
/// objects involved; code is the backend's own error code (an OpenCL error, for example) and
/// code_name its symbolic name ("CL_OUT_OF_RESOURCES"), or 0 / "" when there is none.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message, int code = 0, std::string code_name = {})
      : std::runtime_error(message), code_(code), code_name_(std::move(code_name)) {}
  [[nodiscard]] int code() const { return code_; }
  [[nodiscard]] const std::string& code_name() const { return code_name_; }

 private:
  int code_;
  std::string code_name_;
};

/// A device cannot hold what an operation needs even after evicting every allocation no running
/// operation uses. The message names the device, the buffer and the bytes.
class OutOfDeviceMemory : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

}  // namespace unimem
