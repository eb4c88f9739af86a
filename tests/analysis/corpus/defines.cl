// Sizes and strides fixed at build time with -D.

#ifndef WIDTH
#error "build with -DWIDTH=..."
#endif
#ifndef STRIDE
#define STRIDE 1
#endif

#define AT(row, col) ((row) * WIDTH + (col))

// A fixed-width row copy; accesses written through a macro.
__kernel void define_row_copy(__global const float* in, __global float* out) {
  int col = get_global_id(0);
  int row = get_global_id(1);
  out[AT(row, col)] = in[AT(row, col * STRIDE)];
}

// Fixed-width column sums of the first HEIGHT rows.
__kernel void define_column_sums(__global const float* in, __global float* sums) {
  int col = get_global_id(0);
  float s = 0.0f;
  for (int row = 0; row < HEIGHT; ++row) s += in[AT(row, col)];
  sums[col] = s;
}
