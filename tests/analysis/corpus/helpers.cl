// Helper functions (inlined by the compiler) that index and access global memory.

int index2(int x, int y, int pitch) { return y * pitch + x; }

float load_clamped(__global const float* a, int i, int n) {
  return a[clamp(i, 0, n - 1)];
}

void store_scaled(__global float* out, int i, float v, float s) { out[i] = v * s; }

// Neighbour average through helpers; out is written through a helper's pointer parameter.
__kernel void helper_smooth(__global const float* in, __global float* out, int n, float s) {
  int i = get_global_id(0);
  float v = load_clamped(in, i - 1, n) + load_clamped(in, i, n) + load_clamped(in, i + 1, n);
  store_scaled(out, i, v, s);
}

// A 2-D copy whose subscripts come from a helper.
__kernel void helper_copy2d(__global const float* in, __global float* out, int pitch) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  out[index2(x, y, pitch)] = in[index2(y, x, pitch)];
}

// A helper that receives a pointer already advanced to the work-group's block.
float block_sum(__global const float* block, int count) {
  float s = 0.0f;
  for (int k = 0; k < count; ++k) s += block[k];
  return s;
}

__kernel void helper_block_sums(__global const float* in, __global float* out, int block) {
  int i = get_global_id(0);
  out[i] = block_sum(in + i * block, block);
}
