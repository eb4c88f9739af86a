/* An unmodified OpenCL program that prints what clGetDeviceInfo answers for every device of the
   first platform it sees: one line per device and query number from 0x1000 to 0x107f,
   "DEVICE PARAM STATUS SIZE SHORT HEX", where STATUS is the code of the query with room for the
   answer, SIZE the answer's size, SHORT the code of the same query with one byte too little room
   and HEX the answer's bytes. The platform tests run it directly on POCL and under `unimem run`
   in each UNIMEM_PLATFORM_DEVICES mode and compare the two. Exits 0 when it could list devices. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  cl_platform_id platform;
  cl_uint n = 0;
  if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS) return 1;
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0) return 1;
  cl_device_id* devices = malloc(n * sizeof *devices);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, devices, NULL);
  for (cl_uint d = 0; d < n; ++d) {
    for (cl_device_info param = 0x1000; param < 0x1080; ++param) {
      size_t size = 0;
      cl_int status = clGetDeviceInfo(devices[d], param, 0, NULL, &size);
      unsigned char* value = malloc(size + 1);
      if (status == CL_SUCCESS) status = clGetDeviceInfo(devices[d], param, size, value, NULL);
      cl_int short_status = CL_SUCCESS;
      if (status == CL_SUCCESS && size > 0) {
        short_status = clGetDeviceInfo(devices[d], param, size - 1, value, NULL);
        clGetDeviceInfo(devices[d], param, size, value, NULL);
      }
      printf("%u 0x%x %d %zu %d ", d, (unsigned)param, status, status == CL_SUCCESS ? size : 0,
             short_status);
      for (size_t i = 0; status == CL_SUCCESS && i < size; ++i) printf("%02x", value[i]);
      printf("\n");
      free(value);
    }
  }
  free(devices);
  return 0;
}
