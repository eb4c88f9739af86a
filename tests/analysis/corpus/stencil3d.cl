// 3-D stencils and pitched 3-D copies.

// 7-point heat step on an n x n x n grid; the border is left untouched.
__kernel void heat3d_7pt(__global const float* in, __global float* out, int n) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  int z = get_global_id(2);
  if (x > 0 && x < n - 1 && y > 0 && y < n - 1 && z > 0 && z < n - 1) {
    int c = (z * n + y) * n + x;
    out[c] = 0.125f * (in[c - 1] + in[c + 1] + in[c - n] + in[c + n] + in[c - n * n] +
                       in[c + n * n] - 6.0f * in[c]) + in[c];
  }
}

// 27-point box filter through three nested loops; the NDRange covers the interior only and the
// grid has a one-point halo on every side (dimensions (nx + 2) x (ny + 2) x (nz + 2)).
__kernel void box3d_27pt(__global const float* in, __global float* out, int nx, int ny) {
  int x = get_global_id(0) + 1;
  int y = get_global_id(1) + 1;
  int z = get_global_id(2) + 1;
  int sx = nx + 2;
  int sy = ny + 2;
  float sum = 0.0f;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) sum += in[((z + dz) * sy + (y + dy)) * sx + x + dx];
  out[(z * sy + y) * sx + x] = sum / 27.0f;
}

// A 3-D block copied between arrays with row and slice pitches (in elements).
__kernel void copy3d_pitch(__global const int* src, __global int* dst, int row_pitch,
                           int slice_pitch) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  int z = get_global_id(2);
  dst[z * slice_pitch + y * row_pitch + x] = src[z * slice_pitch + y * row_pitch + x] + 1;
}
