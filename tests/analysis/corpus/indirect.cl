// Indirect accesses a[b[i]]: the analysis cannot bound them from the source alone.

__kernel void gather(__global const float* in, __global const int* idx, __global float* out) {
  int i = get_global_id(0);
  out[i] = in[idx[i]];
}

__kernel void scatter(__global const float* in, __global const int* idx, __global float* out) {
  int i = get_global_id(0);
  out[idx[i]] = in[i];
}

// Sparse matrix-vector product in CSR form: data-dependent loop bounds and columns.
__kernel void spmv_csr(__global const int* row_ptr, __global const int* cols,
                       __global const float* vals, __global const float* x, __global float* y) {
  int row = get_global_id(0);
  float sum = 0.0f;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += vals[k] * x[cols[k]];
  y[row] = sum;
}

// Histogram with atomics on data-dependent bins.
__kernel void histogram(__global const uint* data, __global uint* bins, uint nbins) {
  int i = get_global_id(0);
  atomic_inc(&bins[data[i] % nbins]);
}

// Double indirection through a permutation.
__kernel void permute_twice(__global const int* p, __global const float* in, __global float* out) {
  int i = get_global_id(0);
  out[i] = in[p[p[i]]];
}
