/* An unmodified OpenCL program that copies between buffers on the device: a kernel doubles a
   256 x 256 float grid A, clEnqueueCopyBuffer copies A to B, a kernel adds 1 to B, and
   clEnqueueCopyBufferRect copies B's interior (rows 1..254, columns 4..251) into C; the host
   then reads B and C. Under unimem run the copies run on the devices where the bytes are: the
   report's bytes host->device are A's upload only, device->host only what the host reads back
   that a device changed. Prints "copy_between_buffers: ok" and exits 0 on the right result. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
enum { N = 256 };
#define CHECK(call)                                                      \
  do {                                                                   \
    cl_int status_ = (call);                                             \
    if (status_ != CL_SUCCESS) {                                         \
      fprintf(stderr, "copy_between_buffers: %s: %d\n", #call, status_); \
      return 1;                                                          \
    }                                                                    \
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
      "__kernel void twice(__global float* v) { v[get_global_id(0)] *= 2.0f; }\n"
      "__kernel void plus_one(__global float* v) { v[get_global_id(0)] += 1.0f; }\n";
  cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
  CHECK(e);
  CHECK(clBuildProgram(pr, 1, &d, "", NULL, NULL));
  cl_kernel twice = clCreateKernel(pr, "twice", &e);
  CHECK(e);
  cl_kernel plus_one = clCreateKernel(pr, "plus_one", &e);
  CHECK(e);
  float* host = malloc(sizeof(float) * N * N);
  for (int i = 0; i < N * N; ++i) host[i] = (float)(i % 1000);
  const size_t bytes = sizeof(float) * N * N;
  cl_mem a = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CHECK(e);
  cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CHECK(e);
  cl_mem grid_c = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CHECK(e);
  const float zero = 0.0f;
  CHECK(clEnqueueFillBuffer(q, grid_c, &zero, sizeof zero, 0, bytes, 0, NULL, NULL));
  CHECK(clEnqueueWriteBuffer(q, a, CL_FALSE, 0, bytes, host, 0, NULL, NULL));
  const size_t global = N * N;
  CHECK(clSetKernelArg(twice, 0, sizeof a, &a));
  CHECK(clEnqueueNDRangeKernel(q, twice, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK(clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, NULL));
  CHECK(clSetKernelArg(plus_one, 0, sizeof b, &b));
  CHECK(clEnqueueNDRangeKernel(q, plus_one, 1, NULL, &global, NULL, 0, NULL, NULL));
  const size_t origin[3] = {4 * sizeof(float), 1, 0};
  const size_t region[3] = {248 * sizeof(float), N - 2, 1};
  CHECK(clEnqueueCopyBufferRect(q, b, grid_c, origin, origin, region, N * sizeof(float), 0,
                                N * sizeof(float), 0, 0, NULL, NULL));
  float* out_b = malloc(bytes);
  float* out_c = malloc(bytes);
  CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, out_b, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, grid_c, CL_TRUE, 0, bytes, out_c, 0, NULL, NULL));
  int wrong = 0;
  for (int y = 0; y < N; ++y) {
    for (int x = 0; x < N; ++x) {
      const int i = y * N + x;
      const float want_b = 2.0f * host[i] + 1.0f;
      const int inside = y >= 1 && y < N - 1 && x >= 4 && x < 252;
      const float want_c = inside ? want_b : 0.0f;
      if (out_b[i] != want_b || out_c[i] != want_c) {
        if (wrong++ < 5) {
          fprintf(stderr, "copy_between_buffers: (%d, %d): B %g (want %g), C %g (want %g)\n", x, y,
                  out_b[i], want_b, out_c[i], want_c);
        }
      }
    }
  }
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  clReleaseMemObject(grid_c);
  clReleaseKernel(twice);
  clReleaseKernel(plus_one);
  clReleaseProgram(pr);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  free(host);
  free(out_b);
  free(out_c);
  printf("copy_between_buffers: %s\n", wrong == 0 ? "ok" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
