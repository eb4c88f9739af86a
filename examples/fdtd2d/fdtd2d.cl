// fdtd2d: one time step of PolyBench's fdtd-2d as its three kernels (as PolyBench/GPU splits it),
// on nx x ny row-major fields, one work-item per (i, j), written exactly as PolyBench computes
// (fict = _fict_[t] is passed as a scalar). Each array holds rows [<array>_base, ...) of its field
// (0 for whole-field buffers). Every kernel writes every element of its own rows (unchanged where
// PolyBench does not update them), so written rows are exactly the launched rows. Launched over
// (ny columns, rows of the block) with a global offset.
#pragma OPENCL FP_CONTRACT OFF

// ey[0][j] = fict; ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j]) for i >= 1. Reads hz row i - 1.
kernel void fdtd_ey(global float* ey, global const float* hz, int ny, int ey_base, int hz_base,
                    float fict) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int e = (i - ey_base) * ny + j;
  const int h = (i - hz_base) * ny + j;
  ey[e] = (i == 0) ? fict : ey[e] - 0.5f * (hz[h] - hz[h - ny]);
}

// ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1]) for j >= 1; ex[i][0] unchanged.
kernel void fdtd_ex(global float* ex, global const float* hz, int ny, int ex_base, int hz_base) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int x = (i - ex_base) * ny + j;
  const int h = (i - hz_base) * ny + j;
  const float old = ex[x];
  ex[x] = (j > 0) ? old - 0.5f * (hz[h] - hz[h - 1]) : old;
}

// hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]) for i < nx-1, j < ny-1; the
// last row and column unchanged. Reads ey row i + 1 (columns 0 .. ny-2).
kernel void fdtd_hz(global float* hz, global const float* ex, global const float* ey, int nx,
                    int ny, int hz_base, int ex_base, int ey_base) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int h = (i - hz_base) * ny + j;
  const int x = (i - ex_base) * ny + j;
  const int e = (i - ey_base) * ny + j;
  const float old = hz[h];
  hz[h] = (i < nx - 1 && j < ny - 1) ? old - 0.7f * (((ex[x + 1] - ex[x]) + ey[e + ny]) - ey[e])
                                     : old;
}
