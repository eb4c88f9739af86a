// Element-wise 1-D kernels: affine accesses, guards on scalar arguments, offsets and strides.

__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}

// y[off + i] = alpha * x[off + i] + y[off + i]: a scalar-argument offset and a read-modify-write.
__kernel void saxpy_offset(float alpha, __global const float* x, __global float* y, int off,
                           int n) {
  int i = get_global_id(0);
  if (i < n) y[off + i] = alpha * x[off + i] + y[off + i];
}

// Reads a window shifted by a scalar.
__kernel void copy_shifted(__global const float* in, __global float* out, int shift) {
  int i = get_global_id(0);
  out[i] = in[i + shift];
}

// Compound assignment: every element is read and written.
__kernel void scale_inplace(__global float* a, float s) {
  a[get_global_id(0)] *= s;
}

// A strided read: only every stride-th element of in.
__kernel void strided_read(__global const int* in, __global int* out, int stride) {
  int i = get_global_id(0);
  out[i] = in[i * stride];
}

// A strided write with a phase: holes in the written set.
__kernel void strided_write(__global const float* in, __global float* out, int stride,
                            int phase) {
  int i = get_global_id(0);
  out[i * stride + phase] = in[i];
}

// Reversal: a decreasing affine subscript.
__kernel void reverse(__global const float* in, __global float* out, int n) {
  int i = get_global_id(0);
  out[n - 1 - i] = in[i];
}

// Vector element types: 16-byte elements.
__kernel void vec4_add(__global const float4* a, __global const float4* b, __global float4* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}

// Double precision and size_t indices, used with a global offset.
__kernel void axpy_double(__global const double* x, __global double* y, double alpha) {
  size_t i = get_global_id(0);
  y[i] = y[i] + alpha * x[i];
}

// Work-item i touches two elements: 2i and 2i + 1 (interleaved complex-style data).
__kernel void interleaved_swap(__global float* pairs) {
  int i = get_global_id(0);
  float re = pairs[2 * i];
  float im = pairs[2 * i + 1];
  pairs[2 * i] = im;
  pairs[2 * i + 1] = re;
}
