#pragma once

// The OpenCL environment of the platform tests: the process's ICD loader sees the system's
// vendors and the unimem platform of this build (a private vendor directory), and unimem's
// platform runs on those vendors (UNIMEM_VENDOR_ICDS). Must run before the first OpenCL call:
// the loader reads its vendors once.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "device/opencl/opencl_discovery.hpp"

namespace unimem::testing {

inline bool use_platform_and_vendors() {
  static const bool done = [] {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("unimem-platform-test-" + std::to_string(::getpid()));
    const std::string vendors =
        opencl::other_vendor_libraries(opencl::IcdSearch::from_environment());
    opencl::write_vendor_directory(dir.string(), vendors, UNIMEM_PLATFORM_LIBRARY_BUILD);
    ::setenv("OCL_ICD_VENDORS", dir.c_str(), 1);
    ::setenv("UNIMEM_VENDOR_ICDS", vendors.c_str(), 1);
    ::setenv("POCL_DEVICES", "pthread pthread", 0);
    return true;
  }();
  return done;
}

}  // namespace unimem::testing
