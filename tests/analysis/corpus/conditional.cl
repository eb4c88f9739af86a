// Writes guarded by conditions on data or on scalars.

// Data-dependent write: b[i] is written only where a[i] is positive.
__kernel void threshold_copy(__global const float* a, __global float* b) {
  int i = get_global_id(0);
  if (a[i] > 0.0f) b[i] = a[i];
}

// In place: negative values clamped to zero.
__kernel void relu_inplace(__global float* a) {
  int i = get_global_id(0);
  if (a[i] < 0.0f) a[i] = 0.0f;
}

// A scalar flag selects which buffer is written (not data-dependent: the flag is known at launch).
__kernel void select_output(__global const float* in, __global float* out_a,
                            __global float* out_b, int use_a) {
  int i = get_global_id(0);
  if (use_a) {
    out_a[i] = in[i];
  } else {
    out_b[i] = in[i];
  }
}

// Only the two ends of a 1-D array are written.
__kernel void set_ends(__global float* a, int n, float value) {
  int i = get_global_id(0);
  if (i == 0 || i == n - 1) a[i] = value;
}

// Only work-items with an even id inside [lo, hi) write.
__kernel void even_window(__global int* a, int lo, int hi) {
  int i = get_global_id(0);
  if (i >= lo && i < hi && i % 2 == 0) a[i] = i;
}

// Data-dependent read: c is read only where mask is set; out always written.
__kernel void masked_select(__global const int* mask, __global const float* c,
                            __global float* out) {
  int i = get_global_id(0);
  out[i] = mask[i] != 0 ? c[i] : 0.0f;
}
