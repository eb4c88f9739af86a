// hotspot: one step of Rodinia's HotSpot thermal simulation (plain global-memory form, without
// Rodinia's pyramid tiling): temperature of each cell from its four neighbours (clamped at the
// chip border, as Rodinia does), its power and the ambient temperature. temp_in/temp_out hold rows
// [temp_base, ...), power rows [power_base, ...) of the rows x cols chip. Launched over (cols, rows
// of the block) with a global offset.
#pragma OPENCL FP_CONTRACT OFF

kernel void hotspot(global const float* temp_in, global const float* power, global float* temp_out,
                    int rows, int cols, int temp_base, int power_base, float step_div_cap,
                    float rx_1, float ry_1, float rz_1, float amb_temp) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int c = (i - temp_base) * cols + j;
  const int north = (i > 0) ? c - cols : c;
  const int south = (i < rows - 1) ? c + cols : c;
  const int west = (j > 0) ? c - 1 : c;
  const int east = (j < cols - 1) ? c + 1 : c;
  const float t = temp_in[c];
  const float delta =
      step_div_cap * (((power[(i - power_base) * cols + j] +
                        ((temp_in[south] + temp_in[north]) - 2.0f * t) * ry_1) +
                       ((temp_in[east] + temp_in[west]) - 2.0f * t) * rx_1) +
                      (amb_temp - t) * rz_1);
  temp_out[c] = t + delta;
}
