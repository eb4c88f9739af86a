// 1-D stencils with halos and boundary conditions.

__kernel void stencil1d_3pt(__global const float* in, __global float* out, int n) {
  int i = get_global_id(0);
  if (i > 0 && i < n - 1) {
    out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;
  } else if (i < n) {
    out[i] = in[i];
  }
}

#ifndef RADIUS
#define RADIUS 2
#endif

// The input carries a halo of RADIUS on each side: out[i] depends on in[i .. i + 2 RADIUS].
__kernel void stencil1d_radius(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int r = -RADIUS; r <= RADIUS; ++r) sum += in[i + RADIUS + r];
  out[i] = sum / (2 * RADIUS + 1);
}

// The same stencil staged through local memory: global reads of a tile plus its halo.
__kernel void stencil1d_local(__global const float* in, __global float* out,
                              __local float* tile) {
  int l = get_local_id(0);
  int g = get_global_id(0);
  int size = get_local_size(0);
  tile[l + RADIUS] = in[g + RADIUS];
  if (l < RADIUS) {
    tile[l] = in[g];
    tile[l + size + RADIUS] = in[g + size + RADIUS];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (int r = 0; r <= 2 * RADIUS; ++r) sum += tile[l + r];
  out[g] = sum;
}

// Periodic boundary through a conditional index (no modulo): the first and last work-items
// read across the wrap.
__kernel void stencil1d_periodic(__global const float* in, __global float* out, int n) {
  int i = get_global_id(0);
  int left = i == 0 ? n - 1 : i - 1;
  int right = i == n - 1 ? 0 : i + 1;
  out[i] = 0.5f * in[i] + 0.25f * (in[left] + in[right]);
}
