// 2-D stencils: interior guards, row pitches, clamped and boundary-only writes.

// Jacobi 5-point on a w x h grid: interior points averaged, the border copied.
__kernel void jacobi2d_5pt(__global const float* in, __global float* out, int w, int h) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x >= w || y >= h) return;
  if (x > 0 && x < w - 1 && y > 0 && y < h - 1) {
    out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1] +
                             in[(y - 1) * w + x] + in[(y + 1) * w + x]);
  } else {
    out[y * w + x] = in[y * w + x];
  }
}

// 9-point stencil over a grid stored with a row pitch (in elements) larger than its width; only
// interior points are written.
__kernel void stencil2d_9pt_pitch(__global const float* in, __global float* out, int w, int h,
                                  int pitch) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  float sum = 0.0f;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) sum += in[(y + dy) * pitch + x + dx];
  }
  out[y * pitch + x] = sum / 9.0f;
}

// Heat equation step with coefficients as scalar arguments, interior only, halo of one row and
// column already in the layout (grid of (w + 2) x (h + 2)).
__kernel void heat2d(__global const float* u, __global float* next, int w, float cx, float cy) {
  int x = get_global_id(0) + 1;
  int y = get_global_id(1) + 1;
  int stride = w + 2;
  int c = y * stride + x;
  next[c] = u[c] + cx * (u[c - 1] - 2.0f * u[c] + u[c + 1]) +
            cy * (u[c - stride] - 2.0f * u[c] + u[c + stride]);
}

// Clamped neighbours (min/max on indices): reads stay inside the grid.
__kernel void blur2d_clamped(__global const float* in, __global float* out, int w, int h) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  int xl = max(x - 1, 0);
  int xr = min(x + 1, w - 1);
  int yu = max(y - 1, 0);
  int yd = min(y + 1, h - 1);
  out[y * w + x] = 0.25f * (in[y * w + xl] + in[y * w + xr] + in[yu * w + x] + in[yd * w + x]);
}

// Only the border of the grid is written (conditionally written boundaries).
__kernel void set_boundary2d(__global float* grid, int w, int h, float value) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x == 0 || x == w - 1 || y == 0 || y == h - 1) grid[y * w + x] = value;
}

// Rodinia hotspot style: boundary handled by selecting the neighbour index.
__kernel void hotspot(__global const float* temp, __global const float* power,
                      __global float* result, int w, int h, float step) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  int c = y * w + x;
  int n = y == 0 ? c : c - w;
  int s = y == h - 1 ? c : c + w;
  int e = x == w - 1 ? c : c + 1;
  int west = x == 0 ? c : c - 1;
  result[c] = temp[c] + step * (power[c] + temp[n] + temp[s] + temp[e] + temp[west] -
                                4.0f * temp[c]);
}

// A sub-rectangle (origin ox, oy; size given by the NDRange) copied between pitched images.
__kernel void copy_rect2d(__global const uchar* src, __global uchar* dst, int src_pitch,
                          int dst_pitch, int ox, int oy) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  dst[y * dst_pitch + x] = src[(y + oy) * src_pitch + x + ox];
}
