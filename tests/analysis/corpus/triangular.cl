// Triangular iteration spaces: LU and Cholesky-like updates (loops and guards depending on the
// row, the column and a scalar step k).

// LU, step k: scale column k below the diagonal.
__kernel void lu_scale_column(__global float* a, int n, int k) {
  int i = get_global_id(0) + k + 1;
  if (i < n) a[i * n + k] = a[i * n + k] / a[k * n + k];
}

// LU, step k: rank-1 update of the trailing submatrix; the NDRange covers the whole matrix and
// the guard selects the trailing part.
__kernel void lu_update(__global float* a, int n, int k) {
  int j = get_global_id(0);
  int i = get_global_id(1);
  if (i > k && j > k && i < n && j < n) a[i * n + j] -= a[i * n + k] * a[k * n + j];
}

// Lower-triangular matrix-vector product: row i reads L[i][0..i].
__kernel void trmv_lower(__global const float* l, __global const float* x, __global float* y,
                         int n) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int j = 0; j <= i; ++j) sum += l[i * n + j] * x[j];
  y[i] = sum;
}

// Upper-triangular loop: for (k = i; k < n; ...).
__kernel void upper_row_sum(__global const float* u, __global float* out, int n) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int k = i; k < n; ++k) sum += u[i * n + k];
  out[i] = sum;
}

// Cholesky-like column step j: for rows i > j, L[i][j] = (A[i][j] - sum_{k<j} L[i][k] L[j][k]) /
// L[j][j].
__kernel void cholesky_column(__global const float* a, __global float* l, int n, int j) {
  int i = get_global_id(0) + j + 1;
  if (i >= n) return;
  float sum = a[i * n + j];
  for (int k = 0; k < j; ++k) sum -= l[i * n + k] * l[j * n + k];
  l[i * n + j] = sum / l[j * n + j];
}

// Symmetric rank-k style update of the lower triangle only (j <= i), 2-D NDRange.
__kernel void syrk_lower(__global const float* a, __global float* c, int n, int m) {
  int j = get_global_id(0);
  int i = get_global_id(1);
  if (j > i) return;
  float sum = 0.0f;
  for (int k = 0; k < m; ++k) sum += a[i * m + k] * a[j * m + k];
  c[i * n + j] += sum;
}
