// nbody: one all-pairs gravitational step (the GPU Gems 3 / NVIDIA SDK n-body), one work-item per
// body. pos_in/pos_out are whole arrays of float4 (x, y, z, mass); vel holds bodies
// [vel_base, ...) (0 for whole buffers). The softened inverse distance is 1 / sqrt(d2), correctly
// rounded with -cl-fp32-correctly-rounded-divide-sqrt, so the host reference can match bit for bit.
// Launched over the bodies of the block with a global offset.
#pragma OPENCL FP_CONTRACT OFF

kernel void nbody(global const float4* pos_in, global float4* pos_out, global float4* vel, int n,
                  int vel_base, float dt, float softening2) {
  const int i = get_global_id(0);
  const float4 p = pos_in[i];
  float ax = 0.0f;
  float ay = 0.0f;
  float az = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float4 q = pos_in[j];
    const float dx = q.x - p.x;
    const float dy = q.y - p.y;
    const float dz = q.z - p.z;
    const float d2 = ((dx * dx + dy * dy) + dz * dz) + softening2;
    const float inv = 1.0f / sqrt(d2);
    const float s = q.w * ((inv * inv) * inv);
    ax = ax + dx * s;
    ay = ay + dy * s;
    az = az + dz * s;
  }
  float4 v = vel[i - vel_base];
  v.x = v.x + ax * dt;
  v.y = v.y + ay * dt;
  v.z = v.z + az * dt;
  vel[i - vel_base] = v;
  pos_out[i] = (float4)(p.x + v.x * dt, p.y + v.y * dt, p.z + v.z * dt, p.w);
}
