// __constant buffers and program-scope constant tables.

__constant float kWeights[5] = {0.1f, 0.2f, 0.4f, 0.2f, 0.1f};

// 1-D convolution with weights from a __constant argument; in has a halo of taps / 2 per side.
__kernel void conv1d_constant(__global const float* in, __constant float* weights,
                              __global float* out, int taps) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int t = 0; t < taps; ++t) sum += weights[t] * in[i + t];
  out[i] = sum;
}

// Fixed 5-tap filter from a program-scope table (not an argument).
__kernel void conv1d_table(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  float sum = 0.0f;
  for (int t = 0; t < 5; ++t) sum += kWeights[t] * in[i + t];
  out[i] = sum;
}
