#pragma once

#include <stdexcept>
#include <string>

namespace unimem {

/// A device or driver operation failed. The message names the driver call, the device and the
/// objects involved; code is the backend's own error code (an OpenCL error, for example) and
/// code_name its symbolic name ("CL_OUT_OF_RESOURCES"), or 0 / "" when there is none.
class DeviceError : public std::runtime_error {
 public:
  DeviceError(const std::string& message, int code = 0, std::string code_name = {})
      : std::runtime_error(message), code_(code), code_name_(std::move(code_name)) {}
  [[nodiscard]] int code() const { return code_; }
  [[nodiscard]] const std::string& code_name() const { return code_name_; }

 private:
  int code_;
  std::string code_name_;
};

}  // namespace unimem
