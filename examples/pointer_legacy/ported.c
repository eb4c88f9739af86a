/* legacy.c ported to unimem's one-pointer API (<unimem/unimem.h>): malloc became um_alloc, the
 * OpenCL set-up, buffers and copies went away, and the kernels run split over every device.
 * fread / fwrite stay as they were: the program links unimem_pointer_interpose, whose fread and
 * fwrite work on shared memory. Usage: ported INPUT OUTPUT */
#include <stdio.h>
#include <stdlib.h>

#include <unimem/unimem.h>

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

#define CHECK(call)                                                    \
  do {                                                                 \
    if ((call) != UM_SUCCESS) {                                        \
      fprintf(stderr, "%s failed: %s\n", #call, um_last_error_text()); \
      return 1;                                                        \
    }                                                                  \
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
  unsigned* x = um_alloc(bytes);
  unsigned* y = um_alloc(bytes);
  unsigned* z = um_alloc(bytes);
  if (fread(x, sizeof(unsigned), n, in) != n || fread(y, sizeof(unsigned), n, in) != n) return 1;
  fclose(in);

  um_program program = um_program_create(source, "");
  if (program == NULL) {
    fprintf(stderr, "um_program_create failed: %s\n", um_last_error_text());
    return 1;
  }

  const unsigned a = 3;
  const um_range range = um_range_1d(n, 0);
  const um_arg scale_add[] = {um_arg_value(&a, sizeof a), um_arg_pointer(x), um_arg_pointer(y)};
  CHECK(um_launch(program, "scale_add", &range, scale_add, 3));
  const um_arg blur[] = {um_arg_pointer(y), um_arg_pointer(z), um_arg_value(&n, sizeof n)};
  CHECK(um_launch(program, "blur", &range, blur, 3));
  CHECK(um_sync());

  if (getenv("PORTED_STATS") != NULL) { /* for the test: how the launches were split */
    um_stats s;
    um_get_stats(&s);
    fprintf(stderr, "launches %llu partitions %llu faults %llu\n", (unsigned long long)s.launches,
            (unsigned long long)s.partitions, (unsigned long long)s.faults);
  }

  FILE* out = fopen(argv[2], "wb");
  if (out == NULL || fwrite(z, sizeof(unsigned), n, out) != n) return 1;
  fclose(out);
  um_program_release(program);
  um_free(x);
  um_free(y);
  um_free(z);
  return 0;
}
