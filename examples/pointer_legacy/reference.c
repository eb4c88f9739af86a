/* The CPU reference of legacy.c / ported.c, and the input generator of their test.
 * Usage: reference gen N SEED INPUT   (writes n, x, y)
 *        reference run INPUT OUTPUT   (computes z as the kernels do) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "gen") == 0) {
    const unsigned n = (unsigned)strtoul(argv[2], NULL, 10);
    unsigned state = (unsigned)strtoul(argv[3], NULL, 10) | 1u;
    FILE* f = fopen(argv[4], "wb");
    if (f == NULL || fwrite(&n, sizeof n, 1, f) != 1) return 1;
    for (unsigned i = 0; i < 2 * n; ++i) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      if (fwrite(&state, sizeof state, 1, f) != 1) return 1;
    }
    return fclose(f) == 0 ? 0 : 1;
  }
  if (argc == 4 && strcmp(argv[1], "run") == 0) {
    FILE* in = fopen(argv[2], "rb");
    unsigned n = 0;
    if (in == NULL || fread(&n, sizeof n, 1, in) != 1) return 1;
    unsigned* x = malloc((size_t)n * sizeof *x);
    unsigned* y = malloc((size_t)n * sizeof *y);
    unsigned* z = malloc((size_t)n * sizeof *z);
    if (fread(x, sizeof *x, n, in) != n || fread(y, sizeof *y, n, in) != n) return 1;
    fclose(in);
    for (unsigned i = 0; i < n; ++i) y[i] = 3u * x[i] + y[i];
    for (unsigned i = 0; i < n; ++i) {
      const unsigned left = i > 0 ? y[i - 1] : y[i];
      const unsigned right = i + 1 < n ? y[i + 1] : y[i];
      z[i] = left + 2u * y[i] + right;
    }
    FILE* out = fopen(argv[3], "wb");
    if (out == NULL || fwrite(z, sizeof *z, n, out) != n) return 1;
    free(x);
    free(y);
    free(z);
    return fclose(out) == 0 ? 0 : 1;
  }
  fprintf(stderr, "usage: %s gen N SEED INPUT | %s run INPUT OUTPUT\n", argv[0], argv[0]);
  return 2;
}
