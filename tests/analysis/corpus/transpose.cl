// Transposes and column accesses.

__kernel void transpose_naive(__global const float* in, __global float* out, int w, int h) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x < w && y < h) out[x * h + y] = in[y * w + x];
}

#ifndef TDIM
#define TDIM 8
#endif

// Through a local tile with one column of padding; square work-groups of TDIM x TDIM.
__kernel void transpose_local(__global const float* in, __global float* out, int w, int h) {
  __local float tile[TDIM][TDIM + 1];
  int x = get_global_id(0);
  int y = get_global_id(1);
  int lx = get_local_id(0);
  int ly = get_local_id(1);
  tile[ly][lx] = in[y * w + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  int ox = get_group_id(1) * TDIM + lx;
  int oy = get_group_id(0) * TDIM + ly;
  out[oy * h + ox] = tile[lx][ly];
}

// Each work-item sums one column of a rows x cols matrix.
__kernel void column_sum(__global const float* m, __global float* sums, int rows, int cols) {
  int c = get_global_id(0);
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += m[r * cols + c];
  sums[c] = s;
}

// Each work-item scales one column in place, starting at row `first`.
__kernel void column_scale(__global float* m, int rows, int cols, int first, float s) {
  int c = get_global_id(0);
  for (int r = first; r < rows; ++r) m[r * cols + c] *= s;
}
