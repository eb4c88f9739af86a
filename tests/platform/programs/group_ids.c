/* An unmodified OpenCL program whose kernels read get_group_id (one program) and get_num_groups
   (another) in launches that leave the work-group size to the implementation (local_work_size
   NULL), with and without a global offset of their own, in 1-D and 2-D. Each work-item writes
   values that are the same whatever work-group size the implementation chose: its rank in the
   launch from its group (get_group_id * get_local_size + get_local_id, which is global id minus
   the offset) and the number of work-items from the group count (get_num_groups *
   get_local_size, the global size). It prints every value read back, one launch per line, so
   that its output run directly on POCL and under `unimem run` (where the launches split over the
   devices) can be compared, and exits 0 when the values are the launch's. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
enum { ITEMS = 8192 };
#define CHECK(call)                                           \
  do {                                                        \
    cl_int status_ = (call);                                  \
    if (status_ != CL_SUCCESS) {                              \
      fprintf(stderr, "group_ids: %s: %d\n", #call, status_); \
      return 1;                                               \
    }                                                         \
  } while (0)

static const char* const kRanks =
    "__kernel void ranks(__global int* out) {\n"
    "  out[get_global_id(0)] = (int)(get_group_id(0) * get_local_size(0) + get_local_id(0));\n"
    "}\n"
    "int rank_in(uint d) { return (int)(get_group_id(d) * get_local_size(d) + get_local_id(d)); }\n"
    "__kernel void ranks2(__global int* out, int width) {\n"
    "  out[get_global_id(1) * width + get_global_id(0)] = rank_in(0) + 1000 * rank_in(1);\n"
    "}\n";
static const char* const kCounts =
    "__kernel void counts(__global int* out) {\n"
    "  const size_t i = get_global_id(0);\n"
    "  out[2 * i] = (int)(get_group_id(0) * get_local_size(0) + get_local_id(0));\n"
    "  out[2 * i + 1] = (int)(get_num_groups(0) * get_local_size(0));\n"
    "}\n";

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
  cl_program pr[2];
  const char* sources[2] = {kRanks, kCounts};
  for (int i = 0; i < 2; ++i) {
    pr[i] = clCreateProgramWithSource(c, 1, &sources[i], NULL, &e);
    CHECK(e);
    CHECK(clBuildProgram(pr[i], 1, &d, "", NULL, NULL));
  }
  cl_kernel ranks = clCreateKernel(pr[0], "ranks", &e);
  CHECK(e);
  cl_kernel ranks2 = clCreateKernel(pr[0], "ranks2", &e);
  CHECK(e);
  cl_kernel counts = clCreateKernel(pr[1], "counts", &e);
  CHECK(e);
  const size_t bytes = sizeof(cl_int) * 2 * ITEMS;
  cl_int* host = malloc(bytes);
  cl_mem out = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CHECK(e);
  const int width = 64;
  CHECK(clSetKernelArg(ranks, 0, sizeof out, &out));
  CHECK(clSetKernelArg(ranks2, 0, sizeof out, &out));
  CHECK(clSetKernelArg(ranks2, 1, sizeof width, &width));
  CHECK(clSetKernelArg(counts, 0, sizeof out, &out));
  int ok = 1;
  const cl_int sentinel = -7;
  /* 1-D: global sizes with many divisors, few (3 * 1291) and none but 1 and itself (4093). */
  const size_t globals[] = {4096, 3873, 4093, 3000};
  const size_t offsets[] = {0, 5, 64, 1000};
  for (int k = 0; k < 2; ++k) {
    for (int g = 0; g < 4; ++g) {
      const size_t global = globals[g], offset = offsets[g];
      CHECK(clEnqueueFillBuffer(q, out, &sentinel, sizeof sentinel, 0, bytes, 0, NULL, NULL));
      CHECK(clEnqueueNDRangeKernel(q, k == 0 ? ranks : counts, 1, &offset, &global, NULL, 0, NULL,
                                   NULL));
      CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
      for (size_t i = 0; i < 2 * ITEMS; ++i) {
        const size_t item = k == 0 ? i : i / 2;
        const int inside = item >= offset && item < offset + global;
        const int want = !inside                ? sentinel
                         : k == 0 || i % 2 == 0 ? (int)(item - offset)
                                                : (int)global;
        ok = ok && host[i] == want;
      }
      for (size_t i = 0; i < 2 * ITEMS; ++i) printf("%d ", host[i]);
      printf("\n");
    }
  }
  /* 2-D, with and without an offset. */
  const size_t globals2[][2] = {{48, 40}, {60, 33}};
  const size_t offsets2[][2] = {{0, 0}, {3, 5}};
  for (int g = 0; g < 2; ++g) {
    CHECK(clEnqueueFillBuffer(q, out, &sentinel, sizeof sentinel, 0, bytes, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(q, ranks2, 2, offsets2[g], globals2[g], NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    for (size_t y = 0; y < (size_t)width; ++y) {
      for (size_t x = 0; x < (size_t)width; ++x) {
        const int inside = x >= offsets2[g][0] && x < offsets2[g][0] + globals2[g][0] &&
                           y >= offsets2[g][1] && y < offsets2[g][1] + globals2[g][1];
        const int want =
            inside ? (int)(x - offsets2[g][0]) + 1000 * (int)(y - offsets2[g][1]) : sentinel;
        ok = ok && host[y * width + x] == want;
      }
    }
    for (size_t i = 0; i < (size_t)(width * width); ++i) printf("%d ", host[i]);
    printf("\n");
  }
  printf("group_ids: %s\n", ok ? "ok" : "WRONG");
  free(host);
  clReleaseMemObject(out);
  clReleaseKernel(ranks);
  clReleaseKernel(ranks2);
  clReleaseKernel(counts);
  clReleaseProgram(pr[0]);
  clReleaseProgram(pr[1]);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  return ok ? 0 : 1;
}
