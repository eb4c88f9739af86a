// Reductions with local memory and barriers.

// Tree reduction of one block per work-group; partial sums written per group.
__kernel void reduce_sum(__global const float* in, __global float* partial,
                         __local float* scratch) {
  int l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = scratch[0];
}

// Each work-item first accumulates two elements (first half, second half), then the tree.
__kernel void reduce_two_loads(__global const int* in, __global int* partial,
                               __local int* scratch) {
  int l = get_local_id(0);
  int size = get_local_size(0);
  int base = get_group_id(0) * size * 2;
  scratch[l] = in[base + l] + in[base + l + size];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = size / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = scratch[0];
}

// Grid-stride loop: work-item g reads in[g], in[g + G], in[g + 2G], ... below n.
__kernel void reduce_grid_stride(__global const float* in, __global float* partial, int n,
                                 __local float* scratch) {
  int l = get_local_id(0);
  float sum = 0.0f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) sum += in[i];
  scratch[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    float total = 0.0f;
    for (int k = 0; k < get_local_size(0); ++k) total += scratch[k];
    partial[get_group_id(0)] = total;
  }
}

// Dot product with a fixed-size local array and a 2-D NDRange (rows of a matrix times a vector).
__kernel void row_dot(__global const float* m, __global const float* v, __global float* out,
                      int cols) {
  __local float part[64];
  int l = get_local_id(0);
  int row = get_global_id(1);
  float sum = 0.0f;
  for (int c = l; c < cols; c += get_local_size(0)) sum += m[row * cols + c] * v[c];
  part[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    float total = 0.0f;
    for (int k = 0; k < get_local_size(0); ++k) total += part[k];
    out[row] = total;
  }
}
