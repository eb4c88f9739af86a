/* A legacy-style OpenCL host program: reads n and two arrays of n uint with fread, runs two
 * kernels (y = a * x + y, then a three-point blur of y into z) on one device, and writes z with
 * fwrite. ported.c is the same program on unimem's one-pointer API; README.md shows the diff.
 * Usage: legacy INPUT OUTPUT */
#include <stdio.h>
#include <stdlib.h>

#include <CL/cl.h>

static const char* source =
    "__kernel void scale_add(uint a, __global const uint* x, __global uint* y) {\n"
    "  const size_t i = get_global_id(0);\n"
    "  y[i] = a * x[i] + y[i];\n"
    "}\n"
    "__kernel void blur(__global const uint* y, __global uint* z, uint n) {\n"
    "  const size_t i = get_global_id(0);\n"
    "  const uint left = i > 0 ? y[i - 1] : y[i];\n"
    "  const uint right = i + 1 < n ? y[i + 1] : y[i];\n"
    "  z[i] = left + 2 * y[i] + right;\n"
    "}\n";

#define CHECK(call)                                         \
  do {                                                      \
    cl_int err_ = (call);                                   \
    if (err_ != CL_SUCCESS) {                               \
      fprintf(stderr, "%s failed: %d\n", #call, (int)err_); \
      return 1;                                             \
    }                                                       \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
    return 2;
  }
  FILE* in = fopen(argv[1], "rb");
  unsigned n = 0;
  if (in == NULL || fread(&n, sizeof n, 1, in) != 1) return 1;
  const size_t bytes = (size_t)n * sizeof(unsigned);
  unsigned* x = malloc(bytes);
  unsigned* y = malloc(bytes);
  unsigned* z = malloc(bytes);
  if (fread(x, sizeof(unsigned), n, in) != n || fread(y, sizeof(unsigned), n, in) != n) return 1;
  fclose(in);

  cl_platform_id platform;
  cl_device_id device;
  cl_int err;
  CHECK(clGetPlatformIDs(1, &platform, NULL));
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  CHECK(err);
  cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
  CHECK(err);
  CHECK(clBuildProgram(program, 1, &device, "", NULL, NULL));
  cl_kernel scale_add = clCreateKernel(program, "scale_add", &err);
  CHECK(err);
  cl_kernel blur = clCreateKernel(program, "blur", &err);
  CHECK(err);
  cl_mem dx = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, NULL, &err);
  CHECK(err);
  cl_mem dy = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  CHECK(err);
  cl_mem dz = clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
  CHECK(err);
  CHECK(clEnqueueWriteBuffer(queue, dx, CL_FALSE, 0, bytes, x, 0, NULL, NULL));
  CHECK(clEnqueueWriteBuffer(queue, dy, CL_FALSE, 0, bytes, y, 0, NULL, NULL));

  const unsigned a = 3;
  const size_t global = n;
  CHECK(clSetKernelArg(scale_add, 0, sizeof a, &a));
  CHECK(clSetKernelArg(scale_add, 1, sizeof dx, &dx));
  CHECK(clSetKernelArg(scale_add, 2, sizeof dy, &dy));
  CHECK(clEnqueueNDRangeKernel(queue, scale_add, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK(clSetKernelArg(blur, 0, sizeof dy, &dy));
  CHECK(clSetKernelArg(blur, 1, sizeof dz, &dz));
  CHECK(clSetKernelArg(blur, 2, sizeof n, &n));
  CHECK(clEnqueueNDRangeKernel(queue, blur, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(queue, dz, CL_TRUE, 0, bytes, z, 0, NULL, NULL));

  FILE* out = fopen(argv[2], "wb");
  if (out == NULL || fwrite(z, sizeof(unsigned), n, out) != n) return 1;
  fclose(out);
  clReleaseMemObject(dx);
  clReleaseMemObject(dy);
  clReleaseMemObject(dz);
  clReleaseKernel(scale_add);
  clReleaseKernel(blur);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(x);
  free(y);
  free(z);
  return 0;
}
