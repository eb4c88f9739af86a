// matmul: C = A x B for n x n row-major matrices, one work-item per element of C, the dot product
// summed in order k = 0..n-1. a and c hold rows [row_base, ...) (0 for whole-matrix buffers); b is
// whole. Launched over (n columns, rows of the block) with a global offset.
#pragma OPENCL FP_CONTRACT OFF

kernel void matmul(global const float* a, global const float* b, global float* c, int n,
                   int row_base) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int row = (i - row_base) * n;
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) {
    sum = sum + a[row + k] * b[k * n + j];
  }
  c[row + j] = sum;
}
