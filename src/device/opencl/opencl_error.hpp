#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include <unimem/errors.hpp>
#include "device/opencl/opencl_api.hpp"

namespace unimem::opencl {

/// The symbolic name of an OpenCL error code ("CL_OUT_OF_RESOURCES" for -5), covering the core
/// codes of OpenCL 1.0-3.0 and the common extension codes; "CL_UNKNOWN_ERROR" otherwise.
[[nodiscard]] std::string_view error_name(cl_int code);

/// The DeviceError for a failed call: "<call> failed with <NAME> (<code>) on <where>", carrying
/// code and name. `where` names the device and the objects involved.
[[nodiscard]] DeviceError make_error(cl_int code, std::string_view call, std::string_view where);

/// Throws make_error(code, call, where()) unless code is CL_SUCCESS. `where` is a callable so the
/// message is only built on failure.
template <typename Where>
requires std::invocable<const Where&>
void check(cl_int code, std::string_view call, const Where& where) {
  if (code != CL_SUCCESS) [[unlikely]] {
    const std::string text = where();
    throw make_error(code, call, text);
  }
}

inline void check(cl_int code, std::string_view call, std::string_view where) {
  if (code != CL_SUCCESS) [[unlikely]] {
    throw make_error(code, call, where);
  }
}

}  // namespace unimem::opencl
