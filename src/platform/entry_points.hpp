#pragma once

// The OpenCL entry points of the unimem platform (info.cpp, objects.cpp, commands.cpp), named
// like the API functions without their "cl" prefix: they are reached only through the dispatch
// table (dispatch.cpp), never by symbol, so they never clash with the ICD loader's functions.

#include "platform/platform_state.hpp"

namespace unimem::platform {

cl_int CL_API_CALL GetPlatformIDs(cl_uint num_entries, cl_platform_id* platforms,
                                  cl_uint* num_platforms);
cl_int CL_API_CALL GetPlatformInfo(cl_platform_id platform, cl_platform_info param, size_t size,
                                   void* value, size_t* size_ret);
cl_int CL_API_CALL GetDeviceIDs(cl_platform_id platform, cl_device_type type, cl_uint num_entries,
                                cl_device_id* devices, cl_uint* num_devices);
cl_int CL_API_CALL GetDeviceInfo(cl_device_id device, cl_device_info param, size_t size,
                                 void* value, size_t* size_ret);
cl_int CL_API_CALL CreateSubDevices(cl_device_id device, const cl_device_partition_property*,
                                    cl_uint, cl_device_id*, cl_uint*);
cl_int CL_API_CALL RetainDevice(cl_device_id device);
cl_int CL_API_CALL ReleaseDevice(cl_device_id device);
cl_context CL_API_CALL CreateContext(const cl_context_properties* properties, cl_uint num_devices,
                                     const cl_device_id* devices,
                                     void(CL_CALLBACK* notify)(const char*, const void*, size_t,
                                                               void*),
                                     void* user_data, cl_int* errcode_ret);
cl_context CL_API_CALL CreateContextFromType(const cl_context_properties* properties,
                                             cl_device_type type,
                                             void(CL_CALLBACK* notify)(const char*, const void*,
                                                                       size_t, void*),
                                             void* user_data, cl_int* errcode_ret);
cl_int CL_API_CALL RetainContext(cl_context context);
cl_int CL_API_CALL ReleaseContext(cl_context context);
cl_int CL_API_CALL GetContextInfo(cl_context context, cl_context_info param, size_t size,
                                  void* value, size_t* size_ret);
cl_command_queue CL_API_CALL CreateCommandQueue(cl_context context, cl_device_id device,
                                                cl_command_queue_properties properties,
                                                cl_int* errcode_ret);
cl_int CL_API_CALL RetainCommandQueue(cl_command_queue queue);
cl_int CL_API_CALL ReleaseCommandQueue(cl_command_queue queue);
cl_int CL_API_CALL GetCommandQueueInfo(cl_command_queue queue, cl_command_queue_info param,
                                       size_t size, void* value, size_t* size_ret);
cl_int CL_API_CALL SetCommandQueueProperty(cl_command_queue queue, cl_command_queue_properties,
                                           cl_bool, cl_command_queue_properties*);
cl_mem CL_API_CALL CreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                cl_int* errcode_ret);
cl_mem CL_API_CALL CreateSubBuffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type,
                                   const void* info, cl_int* errcode_ret);
cl_int CL_API_CALL RetainMemObject(cl_mem mem);
cl_int CL_API_CALL ReleaseMemObject(cl_mem mem);
cl_int CL_API_CALL SetMemObjectDestructorCallback(cl_mem mem,
                                                  void(CL_CALLBACK* notify)(cl_mem, void*),
                                                  void* user_data);
cl_int CL_API_CALL GetMemObjectInfo(cl_mem mem, cl_mem_info param, size_t size, void* value,
                                    size_t* size_ret);
cl_program CL_API_CALL CreateProgramWithSource(cl_context context, cl_uint count,
                                               const char** strings, const size_t* lengths,
                                               cl_int* errcode_ret);
cl_program CL_API_CALL CreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                               const cl_device_id* devices, const size_t* lengths,
                                               const unsigned char** binaries,
                                               cl_int* binary_status, cl_int* errcode_ret);
cl_program CL_API_CALL CreateProgramWithBuiltInKernels(cl_context context, cl_uint,
                                                       const cl_device_id*, const char*,
                                                       cl_int* errcode_ret);
cl_int CL_API_CALL RetainProgram(cl_program program);
cl_int CL_API_CALL ReleaseProgram(cl_program program);
cl_int CL_API_CALL BuildProgram(cl_program program, cl_uint num_devices,
                                const cl_device_id* devices, const char* options,
                                void(CL_CALLBACK* notify)(cl_program, void*), void* user_data);
cl_int CL_API_CALL CompileProgram(cl_program program, cl_uint num_devices,
                                  const cl_device_id* devices, const char* options,
                                  cl_uint num_headers, const cl_program* headers,
                                  const char** header_names,
                                  void(CL_CALLBACK* notify)(cl_program, void*), void* user_data);
cl_program CL_API_CALL LinkProgram(cl_context context, cl_uint num_devices,
                                   const cl_device_id* devices, const char* options,
                                   cl_uint num_inputs, const cl_program* inputs,
                                   void(CL_CALLBACK* notify)(cl_program, void*), void* user_data,
                                   cl_int* errcode_ret);
cl_int CL_API_CALL UnloadPlatformCompiler(cl_platform_id platform);
cl_int CL_API_CALL UnloadCompiler();
cl_int CL_API_CALL GetProgramInfo(cl_program program, cl_program_info param, size_t size,
                                  void* value, size_t* size_ret);
cl_int CL_API_CALL GetProgramBuildInfo(cl_program program, cl_device_id device,
                                       cl_program_build_info param, size_t size, void* value,
                                       size_t* size_ret);
cl_kernel CL_API_CALL CreateKernel(cl_program program, const char* name, cl_int* errcode_ret);
cl_int CL_API_CALL CreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                          cl_kernel* kernels, cl_uint* num_kernels_ret);
cl_int CL_API_CALL RetainKernel(cl_kernel kernel);
cl_int CL_API_CALL ReleaseKernel(cl_kernel kernel);
cl_int CL_API_CALL SetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void* value);
cl_int CL_API_CALL GetKernelInfo(cl_kernel kernel, cl_kernel_info param, size_t size, void* value,
                                 size_t* size_ret);
cl_int CL_API_CALL GetKernelArgInfo(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param,
                                    size_t size, void* value, size_t* size_ret);
cl_int CL_API_CALL GetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                          cl_kernel_work_group_info param, size_t size, void* value,
                                          size_t* size_ret);
cl_int CL_API_CALL EnqueueReadBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                     size_t offset, size_t size, void* ptr, cl_uint n,
                                     const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueWriteBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                      size_t offset, size_t size, const void* ptr, cl_uint n,
                                      const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                                     size_t dst_offset, size_t size, cl_uint n,
                                     const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueFillBuffer(cl_command_queue q, cl_mem mem, const void* pattern,
                                     size_t pattern_size, size_t offset, size_t size, cl_uint n,
                                     const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueReadBufferRect(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                         const size_t* buffer_origin, const size_t* host_origin,
                                         const size_t* region, size_t buffer_row_pitch,
                                         size_t buffer_slice_pitch, size_t host_row_pitch,
                                         size_t host_slice_pitch, void* ptr, cl_uint n,
                                         const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueWriteBufferRect(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                          const size_t* buffer_origin, const size_t* host_origin,
                                          const size_t* region, size_t buffer_row_pitch,
                                          size_t buffer_slice_pitch, size_t host_row_pitch,
                                          size_t host_slice_pitch, const void* ptr, cl_uint n,
                                          const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
                                         const size_t* src_origin, const size_t* dst_origin,
                                         const size_t* region, size_t src_row_pitch,
                                         size_t src_slice_pitch, size_t dst_row_pitch,
                                         size_t dst_slice_pitch, cl_uint n, const cl_event* list,
                                         cl_event* event);
void* CL_API_CALL EnqueueMapBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                   cl_map_flags flags, size_t offset, size_t size, cl_uint n,
                                   const cl_event* list, cl_event* event, cl_int* errcode_ret);
cl_int CL_API_CALL EnqueueUnmapMemObject(cl_command_queue q, cl_mem mem, void* mapped, cl_uint n,
                                         const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueMigrateMemObjects(cl_command_queue q, cl_uint num, const cl_mem* mems,
                                            cl_mem_migration_flags flags, cl_uint n,
                                            const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueNDRangeKernel(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                                        const size_t* offset, const size_t* global,
                                        const size_t* local, cl_uint n, const cl_event* list,
                                        cl_event* event);
cl_int CL_API_CALL EnqueueTask(cl_command_queue q, cl_kernel kernel, cl_uint n,
                               const cl_event* list, cl_event* event);
cl_int CL_API_CALL EnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK*)(void*), void*, size_t,
                                       cl_uint, const cl_mem*, const void**, cl_uint,
                                       const cl_event*, cl_event*);
cl_int CL_API_CALL EnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n, const cl_event* list,
                                             cl_event* event);
cl_int CL_API_CALL EnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n, const cl_event* list,
                                              cl_event* event);
cl_int CL_API_CALL EnqueueMarker(cl_command_queue q, cl_event* event);
cl_int CL_API_CALL EnqueueBarrier(cl_command_queue q);
cl_int CL_API_CALL EnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event* list);
cl_int CL_API_CALL Flush(cl_command_queue q);
cl_int CL_API_CALL Finish(cl_command_queue q);
cl_int CL_API_CALL WaitForEvents(cl_uint n, const cl_event* list);
cl_int CL_API_CALL GetEventInfo(cl_event event, cl_event_info param, size_t size, void* value,
                                size_t* size_ret);
cl_int CL_API_CALL GetEventProfilingInfo(cl_event event, cl_profiling_info param, size_t size,
                                         void* value, size_t* size_ret);
cl_int CL_API_CALL RetainEvent(cl_event event);
cl_int CL_API_CALL ReleaseEvent(cl_event event);
cl_event CL_API_CALL CreateUserEvent(cl_context context, cl_int* errcode_ret);
cl_int CL_API_CALL SetUserEventStatus(cl_event event, cl_int status);
cl_int CL_API_CALL SetEventCallback(cl_event event, cl_int type,
                                    void(CL_CALLBACK* notify)(cl_event, cl_int, void*),
                                    void* user_data);

}  // namespace unimem::platform
