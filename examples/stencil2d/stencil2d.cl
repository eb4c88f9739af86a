// stencil2d: one step of a 5-point stencil (SHOC Stencil2D-like) on a rows x cols grid with
// clamped (zero-flux) borders, so every cell is written and a block of rows reads exactly its rows
// plus one halo row on each side. in and out hold rows [row_base, ...) of the grid (row_base = 0
// for whole-grid buffers). Launched over (cols, rows of the block) with a global offset.
#pragma OPENCL FP_CONTRACT OFF

kernel void stencil2d(global const float* in, global float* out, int rows, int cols, int row_base,
                      float w_center, float w_adjacent) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int c = (i - row_base) * cols + j;
  const int north = (i > 0) ? c - cols : c;
  const int south = (i < rows - 1) ? c + cols : c;
  const int west = (j > 0) ? c - 1 : c;
  const int east = (j < cols - 1) ? c + 1 : c;
  out[c] = w_center * in[c] + w_adjacent * ((in[north] + in[south]) + (in[west] + in[east]));
}
