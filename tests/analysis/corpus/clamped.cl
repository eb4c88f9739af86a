// Clamped and selected neighbours: conditional expressions on indices that instcombine turns into
// arithmetic on comparisons (c + sext(i > 0), c + zext(i < n - 1), selects of offsets, i1 and/or),
// which the analysis splits into exact affine pieces.

// 1-D three-point average with clamped ends, the idiom of examples/stencil2d.
__kernel void clamp_select_1d(__global const float* in, __global float* out, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  int west = (i > 0) ? i - 1 : i;
  int east = (i < n - 1) ? i + 1 : i;
  out[i] = (in[west] + in[i] + in[east]) / 3.0f;
}

// 2-D five-point stencil on a block of rows (row_base) with clamped borders, as in
// examples/stencil2d/stencil2d.cl.
__kernel void clamp_select_2d(__global const float* in, __global float* out, int rows, int cols,
                              int row_base) {
  int j = get_global_id(0);
  int i = get_global_id(1);
  int c = (i - row_base) * cols + j;
  int north = (i > 0) ? c - cols : c;
  int south = (i < rows - 1) ? c + cols : c;
  int west = (j > 0) ? c - 1 : c;
  int east = (j < cols - 1) ? c + 1 : c;
  out[c] = in[c] + in[north] + in[south] + in[west] + in[east];
}

// 3-D seven-point stencil on an n x n x n cube with clamped faces, as in examples/heat3d.
__kernel void clamp_select_3d(__global const float* in, __global float* out, int n) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  int z = get_global_id(2);
  int plane = n * n;
  int c = z * plane + y * n + x;
  float sum = in[c];
  sum += in[(x > 0) ? c - 1 : c] + in[(x < n - 1) ? c + 1 : c];
  sum += in[(y > 0) ? c - n : c] + in[(y < n - 1) ? c + n : c];
  sum += in[(z > 0) ? c - plane : c] + in[(z < n - 1) ? c + plane : c];
  out[c] = sum;
}

// min / max clamps on the neighbour index.
__kernel void clamp_min_max_1d(__global const int* in, __global int* out, int n) {
  int i = get_global_id(0);
  out[i] = in[max(i - 1, 0)] + in[min(i + 1, n - 1)] + in[clamp(i + 2, 0, n - 1)];
}

// Comparisons used as numbers: a shifted read per flag, and a write interleaved by a flag
// (2i for i < k, 2i + 1 from k on: still one element per work-item).
__kernel void comparison_offsets(__global const int* in, __global int* out, int k, int lo,
                                 int hi) {
  int i = get_global_id(0);
  int a = in[i + (i >= k)];
  int b = in[2 * i - (i > lo) + (i < hi)];
  out[2 * i + (i >= k)] = a + b;
}

// Flags combined with && / || / != before being used as offsets.
__kernel void combined_flags(__global const int* in, __global int* out, int lo, int hi) {
  int i = get_global_id(0);
  int inside = (i > lo && i < hi) ? 1 : 0;
  int outside = (i < lo || i > hi) ? 1 : 0;
  int either = ((i > lo) != (i > hi)) ? 1 : 0;
  out[i] = in[i + 2 * inside] + in[i + 4 * outside] + in[i + 8 * either];
}

// The same flags added to the index directly (zext of i1 and / or / xor / not).
__kernel void flag_sums(__global const int* in, __global int* out, int lo, int hi) {
  int i = get_global_id(0);
  int a = in[i + (i > lo && i < hi)];
  int b = in[i + 2 * (i < lo || i > hi)];
  int c = in[i + 4 * ((i > lo) != (i > hi))];
  int d = in[i + 8 * !(i > lo)];
  out[i] = a + b + c + d;
}
