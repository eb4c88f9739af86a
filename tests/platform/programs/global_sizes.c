/* An unmodified OpenCL program whose kernel reads the launch's shape: a helper function returns
   get_global_size(0), and the kernel also writes get_num_groups(0), get_global_offset(0) and
   get_group_id(0) per work-item. It runs once without and once with a global offset, then prints
   every value it read back, one launch per line, so that its output run directly on POCL and
   under `unimem run` (where the launches split over the devices) can be compared. Exits 0 when
   the values are the launch's. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
enum { GLOBAL = 1536, LOCAL = 32, OFFSET = 64, FIELDS = 4 };
#define CHECK(call)                                              \
  do {                                                           \
    cl_int status_ = (call);                                     \
    if (status_ != CL_SUCCESS) {                                 \
      fprintf(stderr, "global_sizes: %s: %d\n", #call, status_); \
      return 1;                                                  \
    }                                                            \
  } while (0)
int main(void) {
  cl_platform_id p;
  cl_device_id d;
  cl_int e;
  CHECK(clGetPlatformIDs(1, &p, NULL));
  CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL));
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  CHECK(e);
  cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
  CHECK(e);
  const char* src =
      "ulong whole(void) { return get_global_size(0); }\n"
      "__kernel void shape(__global ulong* out) {\n"
      "  const size_t i = get_global_id(0);\n"
      "  out[4 * i] = whole();\n"
      "  out[4 * i + 1] = get_num_groups(0);\n"
      "  out[4 * i + 2] = get_global_offset(0);\n"
      "  out[4 * i + 3] = get_group_id(0);\n"
      "}\n";
  cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
  CHECK(e);
  CHECK(clBuildProgram(pr, 1, &d, "", NULL, NULL));
  cl_kernel shape = clCreateKernel(pr, "shape", &e);
  CHECK(e);
  const size_t items = GLOBAL + OFFSET;
  const size_t bytes = sizeof(cl_ulong) * FIELDS * items;
  cl_ulong* host = malloc(bytes);
  cl_mem out = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CHECK(e);
  CHECK(clSetKernelArg(shape, 0, sizeof out, &out));
  int ok = 1;
  for (int run = 0; run < 2; ++run) {
    const size_t global = run == 0 ? GLOBAL : GLOBAL - LOCAL, local = LOCAL;
    const size_t offset = run == 0 ? 0 : OFFSET;
    const cl_ulong zero = 0;
    CHECK(clEnqueueFillBuffer(q, out, &zero, sizeof zero, 0, bytes, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(q, shape, 1, &offset, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    for (size_t i = offset; i < offset + global; ++i) {
      const cl_ulong* v = host + FIELDS * i;
      ok = ok && v[0] == global && v[1] == global / local && v[2] == offset &&
           v[3] == (i - offset) / local;
    }
    for (size_t i = 0; i < FIELDS * items; ++i) printf("%llu ", (unsigned long long)host[i]);
    printf("\n");
  }
  printf("global_sizes: %s\n", ok ? "ok" : "WRONG");
  free(host);
  clReleaseMemObject(out);
  clReleaseKernel(shape);
  clReleaseProgram(pr);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  return ok ? 0 : 1;
}
