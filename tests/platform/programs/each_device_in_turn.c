/* An unmodified OpenCL program: one context over every device the first platform offers; each
   device in turn adds its number (1, 2, ...) to every element of one buffer, each on its own
   queue; the result must be 1 + 2 + ... + n. Under unimem run with UNIMEM_PLATFORM_DEVICES=each
   or both, this checks that one buffer stays coherent across devices of one context. Exits 0 on
   the right result. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
int main() {
  cl_platform_id p; clGetPlatformIDs(1, &p, NULL);
  cl_uint n; clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  cl_device_id d[8]; clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, d, NULL);
  cl_int e; cl_context c = clCreateContext(NULL, n, d, NULL, NULL, &e);
  const char* src = "__kernel void inc(__global int* v, int k) { v[get_global_id(0)] += k; }";
  cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
  e = clBuildProgram(pr, n, d, "", NULL, NULL);
  cl_kernel k = clCreateKernel(pr, "inc", &e);
  int host[256] = {0};
  cl_mem b = clCreateBuffer(c, CL_MEM_COPY_HOST_PTR, sizeof host, host, &e);
  clSetKernelArg(k, 0, sizeof b, &b);
  size_t g = 256, l = 64;
  for (cl_uint i = 0; i < n; ++i) {  /* each device in turn adds its number: coherent across queues */
    cl_command_queue q = clCreateCommandQueue(c, d[i], 0, &e);
    int add = (int)i + 1; clSetKernelArg(k, 1, sizeof add, &add);
    clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
    clFinish(q); clReleaseCommandQueue(q);
  }
  cl_command_queue q = clCreateCommandQueue(c, d[0], 0, &e);
  clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL);
  char name[64]; clGetDeviceInfo(d[n-1], CL_DEVICE_NAME, sizeof name, name, NULL);
  printf("%u devices (last: %s): v[0]=%d v[255]=%d (want %u)\n", n, name, host[0], host[255], n*(n+1)/2);
  return host[0] == (int)(n*(n+1)/2) && host[255] == host[0] ? 0 : 1;
}
