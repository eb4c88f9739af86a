// heat3d: one step of the 7-point heat stencil (Pochoir's heat3d) on an n x n x n grid with
// clamped (zero-flux) borders, so a block of z planes reads exactly its planes plus one halo plane
// on each side. in and out hold planes [plane_base, ...) (0 for whole-grid buffers). Launched over
// (n, n, planes of the block) with a global offset in z.
#pragma OPENCL FP_CONTRACT OFF

kernel void heat3d(global const float* in, global float* out, int n, int plane_base,
                   float c_center, float c_adjacent) {
  const int x = get_global_id(0);
  const int y = get_global_id(1);
  const int z = get_global_id(2);
  const int plane = n * n;
  const int c = (z - plane_base) * plane + y * n + x;
  const int xm = (x > 0) ? c - 1 : c;
  const int xp = (x < n - 1) ? c + 1 : c;
  const int ym = (y > 0) ? c - n : c;
  const int yp = (y < n - 1) ? c + n : c;
  const int zm = (z > 0) ? c - plane : c;
  const int zp = (z < n - 1) ? c + plane : c;
  out[c] = c_center * in[c] +
           c_adjacent * (((in[xm] + in[xp]) + (in[ym] + in[yp])) + (in[zm] + in[zp]));
}
