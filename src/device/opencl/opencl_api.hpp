#pragma once

// The one place that includes the OpenCL headers, so every unimem file sees the same API level.
// unimem targets the OpenCL 1.2 API (user events, event callbacks, rect copies, global work offsets
// are all 1.2), which every platform behind the ICD loader implements.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
