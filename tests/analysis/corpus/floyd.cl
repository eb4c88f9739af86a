// Floyd-Warshall, one launch per k (k is a scalar argument).

// Conditional, data-dependent write: only shorter paths are stored.
__kernel void floyd_warshall(__global float* dist, int n, int k) {
  int j = get_global_id(0);
  int i = get_global_id(1);
  float through = dist[i * n + k] + dist[k * n + j];
  if (through < dist[i * n + j]) dist[i * n + j] = through;
}

// The same step written unconditionally (the minimum is stored every time), into a second array.
__kernel void floyd_warshall_min(__global const float* dist, __global float* next, int n, int k) {
  int j = get_global_id(0);
  int i = get_global_id(1);
  next[i * n + j] = fmin(dist[i * n + j], dist[i * n + k] + dist[k * n + j]);
}
