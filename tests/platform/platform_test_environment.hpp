#pragma once

// The OpenCL environment of the platform tests: the process's ICD loader sees the system's
// vendors and the unimem platform of this build (a private vendor directory), and unimem's
// platform runs on those vendors (UNIMEM_VENDOR_ICDS). Must run before the first OpenCL call:
// the loader reads its vendors once. The vendor directory is removed at exit.

#include <cstdlib>
#include <string>

#include "device/opencl/opencl_discovery.hpp"

namespace unimem::testing {

inline bool use_platform_and_vendors() {
  static const bool done = [] {
    (void)opencl::use_private_vendor_directory(
        "unimem-platform-test-",
        opencl::other_vendor_libraries(opencl::IcdSearch::from_environment()),
        UNIMEM_PLATFORM_LIBRARY_BUILD);
    ::setenv("POCL_DEVICES", "pthread pthread", 0);
    return true;
  }();
  return done;
}

}  // namespace unimem::testing
