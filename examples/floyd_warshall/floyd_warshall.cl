// floyd_warshall: one iteration k of the Floyd-Warshall all-pairs shortest paths (PolyBench
// floyd-warshall, host loop over k), one work-item per (i, j). dist holds rows [row_base, ...) of
// the n x n distance matrix (0 for a whole-matrix buffer); row k is read from krow[krow_offset ..]
// (krow is dist itself with krow_offset = (k - row_base) * n when the block holds row k). Reading
// row k and column k while writing them is benign: with dist[k][k] = 0 iteration k leaves them
// unchanged. Launched over (n columns, rows of the block) with a global offset.
#pragma OPENCL FP_CONTRACT OFF

kernel void floyd_warshall(global float* dist, global const float* krow, int n, int k,
                           int row_base, int krow_offset) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int row = (i - row_base) * n;
  const float direct = dist[row + j];
  const float via_k = dist[row + k] + krow[krow_offset + j];
  dist[row + j] = (via_k < direct) ? via_k : direct;
}
