// The ICD dispatch table of the unimem platform and the library's only exported symbols: what
// the ICD loader looks up (clGetExtensionFunctionAddress -> clIcdGetPlatformIDsKHR, Khronos
// cl_khr_icd) and the marker by which unimem's own vendor loading recognizes this library.
// Every entry of the table is set: implemented calls go to entry_points.hpp; the rest (images
// and samplers: CL_DEVICE_IMAGE_SUPPORT is false; GL/D3D sharing; device fission of 1.1) answer
// with an error code, never a crash.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "api/runtime_core.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "platform/entry_points.hpp"

#define UNIMEM_EXPORT extern "C" __attribute__((visibility("default")))

UNIMEM_EXPORT void* CL_API_CALL clGetExtensionFunctionAddress(const char* name);
UNIMEM_EXPORT cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries,
                                                        cl_platform_id* platforms,
                                                        cl_uint* num_platforms);
/// Present in this library only; unimem's driver skips a vendor library that exports it.
UNIMEM_EXPORT const char unimem_opencl_platform_marker[] = "unimem OpenCL platform";
/// The kernel launches the platform has run so far and how many of them were split over several
/// devices (the run report's `launches` and `split_launches`), for a benchmark or tool in the same
/// process (dlsym on this library).
UNIMEM_EXPORT void unimem_platform_launch_counts(std::uint64_t* launches, std::uint64_t* split);
/// Of those, the launches that took the lean repeat (RuntimeCore::launch_again), for tests and
/// benchmarks in the same process.
UNIMEM_EXPORT std::uint64_t unimem_platform_lean_launches();

namespace unimem::platform {

namespace {

// An entry the platform does not implement: returns `Code` (through errcode_ret for calls that
// return an object) without touching anything.
template <cl_int Code, typename F>
struct Refused;
template <cl_int Code, typename R, typename... A>
struct Refused<Code, R(CL_API_CALL*)(A...)> {
  static R CL_API_CALL call(A... args) {
    if constexpr (std::is_pointer_v<R>) {
      (set_code(args), ...);
      return nullptr;
    } else if constexpr (std::is_same_v<R, cl_int>) {
      return Code;
    } else {
      return R{};
    }
  }
  template <typename T>
  static void set_code(T) {}
  static void set_code(cl_int* errcode_ret) { set_error(errcode_ret, Code); }
};

template <typename F>
void refuse(F& slot, cl_int code) {
  if constexpr (!std::is_same_v<F, void*>) {  // entries of other API levels are void* here
    if (code == CL_INVALID_OPERATION) slot = &Refused<CL_INVALID_OPERATION, F>::call;
  }
}

template <typename F, typename G>
void set(F& slot, G function) {
  if constexpr (std::is_same_v<F, void*>) {
    slot = reinterpret_cast<void*>(function);
  } else {
    slot = function;
  }
}

cl_int CL_API_CALL IcdGetPlatformIDs(cl_uint num_entries, cl_platform_id* platforms,
                                     cl_uint* num_platforms) {
  // Never discovers devices here: the loader calls this while it initializes, and the platform's
  // own discovery must not re-enter it (devices are found on the first clGetDeviceIDs).
  return GetPlatformIDs(num_entries, platforms, num_platforms);
}

void* CL_API_CALL GetExtensionFunctionAddress(const char* name) {
  if (name != nullptr && std::strcmp(name, "clIcdGetPlatformIDsKHR") == 0) {
    return reinterpret_cast<void*>(&IcdGetPlatformIDs);
  }
  return nullptr;  // no other extension functions
}

void* CL_API_CALL GetExtensionFunctionAddressForPlatform(cl_platform_id platform,
                                                         const char* name) {
  if (!is_live(platform, ObjectKind::platform)) return nullptr;
  return GetExtensionFunctionAddress(name);
}

cl_icd_dispatch make_table() {
  cl_icd_dispatch t;
  std::memset(&t, 0, sizeof t);
  t.clGetPlatformIDs = &GetPlatformIDs;
  t.clGetPlatformInfo = &GetPlatformInfo;
  t.clGetDeviceIDs = &GetDeviceIDs;
  t.clGetDeviceInfo = &GetDeviceInfo;
  t.clCreateContext = &CreateContext;
  t.clCreateContextFromType = &CreateContextFromType;
  t.clRetainContext = &RetainContext;
  t.clReleaseContext = &ReleaseContext;
  t.clGetContextInfo = &GetContextInfo;
  t.clCreateCommandQueue = &CreateCommandQueue;
  t.clRetainCommandQueue = &RetainCommandQueue;
  t.clReleaseCommandQueue = &ReleaseCommandQueue;
  t.clGetCommandQueueInfo = &GetCommandQueueInfo;
  t.clSetCommandQueueProperty = &SetCommandQueueProperty;
  t.clCreateBuffer = &CreateBuffer;
  refuse(t.clCreateImage2D, CL_INVALID_OPERATION);  // no image support
  refuse(t.clCreateImage3D, CL_INVALID_OPERATION);  // no image support
  t.clRetainMemObject = &RetainMemObject;
  t.clReleaseMemObject = &ReleaseMemObject;
  refuse(t.clGetSupportedImageFormats, CL_INVALID_OPERATION);  // no image support
  t.clGetMemObjectInfo = &GetMemObjectInfo;
  refuse(t.clGetImageInfo, CL_INVALID_OPERATION);    // no image support
  refuse(t.clCreateSampler, CL_INVALID_OPERATION);   // no image support
  refuse(t.clRetainSampler, CL_INVALID_OPERATION);   // no image support
  refuse(t.clReleaseSampler, CL_INVALID_OPERATION);  // no image support
  refuse(t.clGetSamplerInfo, CL_INVALID_OPERATION);  // no image support
  t.clCreateProgramWithSource = &CreateProgramWithSource;
  t.clCreateProgramWithBinary = &CreateProgramWithBinary;
  t.clRetainProgram = &RetainProgram;
  t.clReleaseProgram = &ReleaseProgram;
  t.clBuildProgram = &BuildProgram;
  t.clUnloadCompiler = &UnloadCompiler;
  t.clGetProgramInfo = &GetProgramInfo;
  t.clGetProgramBuildInfo = &GetProgramBuildInfo;
  t.clCreateKernel = &CreateKernel;
  t.clCreateKernelsInProgram = &CreateKernelsInProgram;
  t.clRetainKernel = &RetainKernel;
  t.clReleaseKernel = &ReleaseKernel;
  t.clSetKernelArg = &SetKernelArg;
  t.clGetKernelInfo = &GetKernelInfo;
  t.clGetKernelWorkGroupInfo = &GetKernelWorkGroupInfo;
  t.clWaitForEvents = &WaitForEvents;
  t.clGetEventInfo = &GetEventInfo;
  t.clRetainEvent = &RetainEvent;
  t.clReleaseEvent = &ReleaseEvent;
  t.clGetEventProfilingInfo = &GetEventProfilingInfo;
  t.clFlush = &Flush;
  t.clFinish = &Finish;
  t.clEnqueueReadBuffer = &EnqueueReadBuffer;
  t.clEnqueueWriteBuffer = &EnqueueWriteBuffer;
  t.clEnqueueCopyBuffer = &EnqueueCopyBuffer;
  refuse(t.clEnqueueReadImage, CL_INVALID_OPERATION);          // no image support
  refuse(t.clEnqueueWriteImage, CL_INVALID_OPERATION);         // no image support
  refuse(t.clEnqueueCopyImage, CL_INVALID_OPERATION);          // no image support
  refuse(t.clEnqueueCopyImageToBuffer, CL_INVALID_OPERATION);  // no image support
  refuse(t.clEnqueueCopyBufferToImage, CL_INVALID_OPERATION);  // no image support
  t.clEnqueueMapBuffer = &EnqueueMapBuffer;
  refuse(t.clEnqueueMapImage, CL_INVALID_OPERATION);  // no image support
  t.clEnqueueUnmapMemObject = &EnqueueUnmapMemObject;
  t.clEnqueueNDRangeKernel = &EnqueueNDRangeKernel;
  t.clEnqueueTask = &EnqueueTask;
  t.clEnqueueNativeKernel = &EnqueueNativeKernel;
  t.clEnqueueMarker = &EnqueueMarker;
  t.clEnqueueWaitForEvents = &EnqueueWaitForEvents;
  t.clEnqueueBarrier = &EnqueueBarrier;
  t.clGetExtensionFunctionAddress = &GetExtensionFunctionAddress;
  refuse(t.clCreateFromGLBuffer, CL_INVALID_OPERATION);
  refuse(t.clCreateFromGLTexture2D, CL_INVALID_OPERATION);
  refuse(t.clCreateFromGLTexture3D, CL_INVALID_OPERATION);
  refuse(t.clCreateFromGLRenderbuffer, CL_INVALID_OPERATION);
  refuse(t.clGetGLObjectInfo, CL_INVALID_OPERATION);
  refuse(t.clGetGLTextureInfo, CL_INVALID_OPERATION);
  refuse(t.clEnqueueAcquireGLObjects, CL_INVALID_OPERATION);
  refuse(t.clEnqueueReleaseGLObjects, CL_INVALID_OPERATION);
  refuse(t.clGetGLContextInfoKHR, CL_INVALID_OPERATION);
  refuse(t.clGetDeviceIDsFromD3D10KHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D10BufferKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D10Texture2DKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D10Texture3DKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueAcquireD3D10ObjectsKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueReleaseD3D10ObjectsKHR, CL_INVALID_OPERATION);
  t.clSetEventCallback = &SetEventCallback;
  t.clCreateSubBuffer = &CreateSubBuffer;
  t.clSetMemObjectDestructorCallback = &SetMemObjectDestructorCallback;
  t.clCreateUserEvent = &CreateUserEvent;
  t.clSetUserEventStatus = &SetUserEventStatus;
  t.clEnqueueReadBufferRect = &EnqueueReadBufferRect;
  t.clEnqueueWriteBufferRect = &EnqueueWriteBufferRect;
  t.clEnqueueCopyBufferRect = &EnqueueCopyBufferRect;
  refuse(t.clCreateSubDevicesEXT, CL_INVALID_OPERATION);
  refuse(t.clRetainDeviceEXT, CL_INVALID_OPERATION);
  refuse(t.clReleaseDeviceEXT, CL_INVALID_OPERATION);
  refuse(t.clCreateEventFromGLsyncKHR, CL_INVALID_OPERATION);
  t.clCreateSubDevices = &CreateSubDevices;
  t.clRetainDevice = &RetainDevice;
  t.clReleaseDevice = &ReleaseDevice;
  refuse(t.clCreateImage, CL_INVALID_OPERATION);  // no image support
  t.clCreateProgramWithBuiltInKernels = &CreateProgramWithBuiltInKernels;
  t.clCompileProgram = &CompileProgram;
  t.clLinkProgram = &LinkProgram;
  t.clUnloadPlatformCompiler = &UnloadPlatformCompiler;
  t.clGetKernelArgInfo = &GetKernelArgInfo;
  t.clEnqueueFillBuffer = &EnqueueFillBuffer;
  refuse(t.clEnqueueFillImage, CL_INVALID_OPERATION);  // no image support
  t.clEnqueueMigrateMemObjects = &EnqueueMigrateMemObjects;
  t.clEnqueueMarkerWithWaitList = &EnqueueMarkerWithWaitList;
  t.clEnqueueBarrierWithWaitList = &EnqueueBarrierWithWaitList;
  set(t.clGetExtensionFunctionAddressForPlatform, &GetExtensionFunctionAddressForPlatform);
  refuse(t.clCreateFromGLTexture, CL_INVALID_OPERATION);
  refuse(t.clGetDeviceIDsFromD3D11KHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D11BufferKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D11Texture2DKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromD3D11Texture3DKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromDX9MediaSurfaceKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueAcquireD3D11ObjectsKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueReleaseD3D11ObjectsKHR, CL_INVALID_OPERATION);
  refuse(t.clGetDeviceIDsFromDX9MediaAdapterKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueAcquireDX9MediaSurfacesKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueReleaseDX9MediaSurfacesKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateFromEGLImageKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueAcquireEGLObjectsKHR, CL_INVALID_OPERATION);
  refuse(t.clEnqueueReleaseEGLObjectsKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateEventFromEGLSyncKHR, CL_INVALID_OPERATION);
  refuse(t.clCreateCommandQueueWithProperties, CL_INVALID_OPERATION);
  refuse(t.clCreatePipe, CL_INVALID_OPERATION);
  refuse(t.clGetPipeInfo, CL_INVALID_OPERATION);
  refuse(t.clSVMAlloc, CL_INVALID_OPERATION);
  refuse(t.clSVMFree, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMFree, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMMemcpy, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMMemFill, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMMap, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMUnmap, CL_INVALID_OPERATION);
  refuse(t.clCreateSamplerWithProperties, CL_INVALID_OPERATION);
  refuse(t.clSetKernelArgSVMPointer, CL_INVALID_OPERATION);
  refuse(t.clSetKernelExecInfo, CL_INVALID_OPERATION);
  refuse(t.clGetKernelSubGroupInfoKHR, CL_INVALID_OPERATION);
  refuse(t.clCloneKernel, CL_INVALID_OPERATION);
  refuse(t.clCreateProgramWithIL, CL_INVALID_OPERATION);
  refuse(t.clEnqueueSVMMigrateMem, CL_INVALID_OPERATION);
  refuse(t.clGetDeviceAndHostTimer, CL_INVALID_OPERATION);
  refuse(t.clGetHostTimer, CL_INVALID_OPERATION);
  refuse(t.clGetKernelSubGroupInfo, CL_INVALID_OPERATION);
  refuse(t.clSetDefaultDeviceCommandQueue, CL_INVALID_OPERATION);
  refuse(t.clSetProgramReleaseCallback, CL_INVALID_OPERATION);
  refuse(t.clSetProgramSpecializationConstant, CL_INVALID_OPERATION);
  refuse(t.clCreateBufferWithProperties, CL_INVALID_OPERATION);
  refuse(t.clCreateImageWithProperties, CL_INVALID_OPERATION);
  refuse(t.clSetContextDestructorCallback, CL_INVALID_OPERATION);
  return t;
}

}  // namespace

const cl_icd_dispatch* dispatch_table() {
  static const cl_icd_dispatch table = make_table();
  return &table;
}

}  // namespace unimem::platform

// The exported names forward to the internal functions, so that the table never points at a
// symbol that another library of the process (the loader) could interpose.
void* CL_API_CALL clGetExtensionFunctionAddress(const char* name) {
  return unimem::platform::GetExtensionFunctionAddress(name);
}

cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id* platforms,
                                          cl_uint* num_platforms) {
  return unimem::platform::IcdGetPlatformIDs(num_entries, platforms, num_platforms);
}

std::uint64_t unimem_platform_lean_launches() {
  return unimem::platform::PlatformState::get().core().lean_launches();
}

void unimem_platform_launch_counts(std::uint64_t* launches, std::uint64_t* split) {
  std::uint64_t all = 0, several = 0;
  unimem::platform::PlatformState::get().launch_counts(all, several);
  if (launches != nullptr) *launches = all;
  if (split != nullptr) *split = several;
}
