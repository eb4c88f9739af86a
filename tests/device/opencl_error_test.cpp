// The OpenCL driver's error helper: every error reported by name, with the call and the object.
#if UNIMEM_HAVE_OPENCL
#include <gtest/gtest.h>

#include "device/opencl/opencl_error.hpp"

namespace unimem::opencl {
namespace {

TEST(OpenCLError, NamesEveryCoreCodeAndTheCommonExtensionCodes) {
  EXPECT_EQ(error_name(CL_SUCCESS), "CL_SUCCESS");
  EXPECT_EQ(error_name(-5), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(error_name(CL_INVALID_WORK_GROUP_SIZE), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_EQ(error_name(CL_INVALID_GLOBAL_OFFSET), "CL_INVALID_GLOBAL_OFFSET");
  EXPECT_EQ(error_name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
  EXPECT_EQ(error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(error_name(-9999), "CL_UNKNOWN_ERROR");
  EXPECT_EQ(error_name(-20), "CL_UNKNOWN_ERROR");  // a gap in the numbering
  // Every code of the contiguous core ranges has a real name.
  for (cl_int code = -1; code >= -19; --code) {
    EXPECT_NE(error_name(code), "CL_UNKNOWN_ERROR") << code;
  }
  for (cl_int code = -30; code >= -72; --code) {
    EXPECT_NE(error_name(code), "CL_UNKNOWN_ERROR") << code;
  }
}

TEST(OpenCLError, CheckThrowsADeviceErrorNamingCallCodeAndObject) {
  EXPECT_NO_THROW(check(CL_SUCCESS, "clFinish", "device d"));
  try {
    check(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel", "kernel \"vadd\" on device pocl:x#0");
    FAIL() << "check did not throw";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code(), -5);
    EXPECT_EQ(e.code_name(), "CL_OUT_OF_RESOURCES");
    EXPECT_STREQ(e.what(),
                 "clEnqueueNDRangeKernel failed with CL_OUT_OF_RESOURCES (-5) on kernel \"vadd\" "
                 "on device pocl:x#0");
  }
}

TEST(OpenCLError, CheckBuildsTheObjectDescriptionOnlyOnFailure) {
  int built = 0;
  auto where = [&] {
    ++built;
    return std::string("buffer b");
  };
  check(CL_SUCCESS, "clCreateBuffer", where);
  EXPECT_EQ(built, 0);
  EXPECT_THROW(check(CL_INVALID_BUFFER_SIZE, "clCreateBuffer", where), DeviceError);
  EXPECT_EQ(built, 1);
}

}  // namespace
}  // namespace unimem::opencl
#endif
