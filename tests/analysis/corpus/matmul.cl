// Dense linear algebra with loops: every work-item reads a row and a column.

__kernel void matmul_naive(__global const float* a, __global const float* b, __global float* c,
                           int n) {
  int col = get_global_id(0);
  int row = get_global_id(1);
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}

// C (m x p) = A (m x q) * B (q x p), with guards for sizes that are not multiples of the
// work-group size.
__kernel void matmul_rect(__global const float* a, __global const float* b, __global float* c,
                          int m, int p, int q) {
  int col = get_global_id(0);
  int row = get_global_id(1);
  if (row >= m || col >= p) return;
  float sum = 0.0f;
  for (int k = 0; k < q; ++k) sum += a[row * q + k] * b[k * p + col];
  c[row * p + col] = sum;
}

#ifndef TILE
#define TILE 4
#endif

// Tiled through local memory (TILE x TILE work-groups); n is a multiple of TILE.
__kernel void matmul_tiled(__global const float* a, __global const float* b, __global float* c,
                           int n) {
  __local float ta[TILE][TILE];
  __local float tb[TILE][TILE];
  int lx = get_local_id(0);
  int ly = get_local_id(1);
  int col = get_global_id(0);
  int row = get_global_id(1);
  float sum = 0.0f;
  for (int t = 0; t < n / TILE; ++t) {
    ta[ly][lx] = a[row * n + t * TILE + lx];
    tb[ly][lx] = b[(t * TILE + ly) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) sum += ta[ly][k] * tb[k][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + col] = sum;
}

// y = A x (row access).
__kernel void matvec(__global const float* a, __global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum += a[i * n + j] * x[j];
  y[i] = sum;
}

// y = A^T x (column access, as in mvt).
__kernel void matvec_transposed(__global const float* a, __global const float* x,
                                __global float* y, int n) {
  int j = get_global_id(0);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i * n + j] * x[i];
  y[j] = sum;
}

// C = alpha A B + beta C: C is read and written.
__kernel void sgemm(__global const float* a, __global const float* b, __global float* c, int n,
                    float alpha, float beta) {
  int col = get_global_id(0);
  int row = get_global_id(1);
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = alpha * sum + beta * c[row * n + col];
}
