// Row-wise softmax as a team kernel (include/unimem/team.h): one team (work-group) per row. The
// work-items publish per-rank partial maxima and sums in shared variables; the master, in
// sequential code, combines them and shares the row's maximum and sum; every work-item then
// writes its part of the row. With TEAM = 16 work-items the kernel shares 2 + 2 * 16 = 34
// variables: 20 in team memory, 14 in the spill area unimem passes.
#include <unimem/team.h>

#pragma OPENCL FP_CONTRACT OFF

#define TEAM 16
#define NV 34  // 0: row max, 1: row sum, 2 + r: partial max of rank r, 2 + TEAM + r: partial sum

// A team function (called from team context, never inside a block): each rank reduces its strided
// part of the row into its two variables, then the master combines them into variables 0 and 1.
void row_statistics(um_team* team, global const float* row, int cols) {
  UM_PARALLEL(team)
    const uint r = um_team_rank(team);
    float m = -INFINITY;
    for (int j = (int)r; j < cols; j += TEAM) m = fmax(m, row[j]);
    um_share_float(team, 2 + r, m);
  UM_END_PARALLEL(team);
  UM_MASTER(team)
    float m = -INFINITY;
    for (uint r = 0; r < TEAM; ++r) m = fmax(m, um_shared_float(team, 2 + r));
    um_share_float(team, 0, m);
  UM_END_MASTER(team);
  UM_PARALLEL(team)
    const uint r = um_team_rank(team);
    const float m = um_shared_float(team, 0);
    float s = 0.0f;
    for (int j = (int)r; j < cols; j += TEAM) s += exp(row[j] - m);
    um_share_float(team, 2 + TEAM + r, s);
  UM_END_PARALLEL(team);
  UM_MASTER(team)
    float s = 0.0f;
    for (uint r = 0; r < TEAM; ++r) s += um_shared_float(team, 2 + TEAM + r);
    um_share_float(team, 1, s);
  UM_END_MASTER(team);
}

kernel void team_softmax(global const float* in, global float* out, int cols, UM_TEAM_PARAM(NV)) {
  UM_TEAM_BEGIN(team, NV);
  const int row = (int)um_team_num(team);
  row_statistics(team, in + row * cols, cols);
  UM_PARALLEL(team)
    const float m = um_shared_float(team, 0);
    const float s = um_shared_float(team, 1);
    for (int j = (int)um_team_rank(team); j < cols; j += TEAM) {
      out[row * cols + j] = exp(in[row * cols + j] - m) / s;
    }
  UM_END_PARALLEL(team);
  UM_TEAM_END(team);
}
