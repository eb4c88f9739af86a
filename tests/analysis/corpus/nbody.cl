// N-body: every work-item reads all positions.

__kernel void nbody_forces(__global const float4* pos, __global float4* acc, int n, float eps) {
  int i = get_global_id(0);
  float4 p = pos[i];
  float4 a = (float4)(0.0f);
  for (int j = 0; j < n; ++j) {
    float4 q = pos[j];
    float4 d = q - p;
    float r2 = d.x * d.x + d.y * d.y + d.z * d.z + eps;
    float inv = q.w / (r2 * sqrt(r2));
    a += d * inv;
  }
  acc[i] = a;
}

// Integration step: position and velocity read and written in place.
__kernel void nbody_integrate(__global float4* pos, __global float4* vel,
                              __global const float4* acc, float dt) {
  int i = get_global_id(0);
  float4 v = vel[i] + acc[i] * dt;
  vel[i] = v;
  pos[i] = pos[i] + v * dt;
}

// Forces with positions staged through local memory, one tile per work-group size.
__kernel void nbody_local(__global const float4* pos, __global float4* acc, int n, float eps,
                          __local float4* tile) {
  int i = get_global_id(0);
  int l = get_local_id(0);
  int size = get_local_size(0);
  float4 p = pos[i];
  float4 a = (float4)(0.0f);
  for (int base = 0; base < n; base += size) {
    tile[l] = pos[base + l];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < size; ++j) {
      float4 d = tile[j] - p;
      float r2 = d.x * d.x + d.y * d.y + d.z * d.z + eps;
      a += d * (tile[j].w / (r2 * sqrt(r2)));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc[i] = a;
}

typedef struct {
  float x, y, z;
  float mass;
} Particle;

// Struct elements: one member of each element written, others read.
__kernel void particles_fall(__global Particle* particles, float dt) {
  int i = get_global_id(0);
  particles[i].z = particles[i].z - dt * particles[i].mass;
}
