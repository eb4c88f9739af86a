/* unimem/team.h: the OpenCL C device library for team kernels (master / worker mode inside one
 * work-group, with the master's variables shared through slots in team memory).
 *
 * Bercea et al., "Implementing implicit OpenMP data sharing on GPUs" (LLVM-HPC 2017,
 * shared/seeds/003_f274930815df8cd3.txt): an OpenMP team runs its sequential code on one master
 * thread while the workers wait; at a parallel region the master shares the variables the region
 * uses through a list kept in fast team memory, a fixed number of preallocated slots (20, section
 * 5.2), with a fallback to global memory when the list is longer.
 *
 * In OpenCL C a work-item's private variables cannot be addressed by another work-item, so a
 * slot holds the shared variable itself (one 64-bit word) rather than a reference to it; with 20
 * slots the footprint is the paper's 160 bytes of team memory per team. Variable i lives in
 * __local slot i when i < UM_TEAM_SLOTS, otherwise in this team's own slice of a global spill
 * area that unimem allocates for every launch. Programs built by unimem find this header with
 * `#include <unimem/team.h>` (unimem adds its include directory to the build options).
 *
 *   #include <unimem/team.h>
 *   #define NV 3   // shared variables of this kernel (an integer literal)
 *   kernel void k(global const float* in, global float* out, UM_TEAM_PARAM(NV)) {
 *     UM_TEAM_BEGIN(team, NV);         // every work-item; team is a um_team*
 *     UM_MASTER(team)                  // the master alone; the workers wait
 *       um_share_float(team, 0, in[0] * 2.0f);
 *     UM_END_MASTER(team);
 *     UM_PARALLEL(team)                // every work-item of the team
 *       const size_t i = get_global_id(0);
 *       out[i] = in[i] * um_shared_float(team, 0);
 *     UM_END_PARALLEL(team);
 *     UM_TEAM_END(team);
 *   }
 *
 * Rules:
 * - UM_TEAM_PARAM(n) is the kernel's last parameter; the host passes every other argument and
 *   unimem supplies this one (Program::launch). n is the kernel's number of shared variables,
 *   an integer literal (or a macro for one), the same in UM_TEAM_BEGIN; indices are 0 .. n-1.
 * - Team kernels run over a 1-D NDRange with an explicit work-group size and no global offset:
 *   a team is a work-group, and its number is um_team_num(team).
 * - Code between UM_TEAM_BEGIN and UM_TEAM_END outside the master and parallel blocks runs on
 *   every work-item and must stay uniform: a loop there takes its bounds from shared variables
 *   (every work-item reads the same value), and a function with master or parallel blocks of its
 *   own (a "nested" call, which takes the um_team* as parameter) is called there, never inside a
 *   master or parallel block. Every block begins and ends with a work-group barrier, so what one
 *   block writes to a shared variable is what the next block reads.
 * - Blocks never nest, and no code leaves a block early (return, break, goto): every work-item
 *   must reach every barrier.
 * - Inside a parallel block, work-items that write the same shared variable race, as in OpenMP.
 * - A shared variable holds one int, uint, long, ulong, float (or double, with cl_khr_fp64) at a
 *   time. Reading a variable no block has written returns an unspecified value. An index outside
 *   0 .. n-1 is ignored by the writers and reads as 0 (never memory of another team).
 * - UM_TEAM_SLOTS (default 20) sets the number of slots; build with -DUM_TEAM_SLOTS=<integer
 *   literal> to change it (0 sends every variable to the spill area).
 *
 * Footprint: UM_TEAM_SLOTS * 8 bytes of __local memory per work-group, and
 * max(n - UM_TEAM_SLOTS, 0) * 8 bytes of spill per work-group; Program::build_report() and
 * `unimem analyze` print both. */
#ifndef UNIMEM_TEAM_H
#define UNIMEM_TEAM_H

#ifndef UM_TEAM_SLOTS
#define UM_TEAM_SLOTS 20
#endif

/* The spill parameter's name carries the variable count and the slot count
 * (um_team_spill_v<n>_s<slots>), so the host sizes the spill area from what the device compiled:
 * unimem reads it from the kernel's argument names. */
#define UM_TEAM_PASTE_(a, b, c, d) a##b##c##d
#define UM_TEAM_PASTE(a, b, c, d) UM_TEAM_PASTE_(a, b, c, d)
#define UM_TEAM_NAME_(prefix, team) prefix##team
#define UM_TEAM_SPILL_NAME(n) UM_TEAM_PASTE(um_team_spill_v, n, _s, UM_TEAM_SLOTS)

/* The last kernel parameter of a team kernel (unimem passes it). */
#define UM_TEAM_PARAM(n) __global ulong* UM_TEAM_SPILL_NAME(n)

typedef struct um_team {
  __local ulong* slots;  /* UM_TEAM_SLOTS words of team memory */
  __global ulong* spill; /* this team's slice of the spill area */
  uint shared;           /* number of shared variables */
  uint master;           /* 1 on the master work-item */
} um_team;

/* The team number: the work-group's index in the whole launch. unimem splits a launch over
 * devices by launching each device's work-groups with a global offset, which restarts
 * get_group_id at 0; the offset restores the index (team kernels have no offset of their own).
 * The kernel analysis (which defines __UNIMEM_ANALYSIS__) models get_group_id over the whole
 * launch already, and reads this as the affine work-group id; so does the build unimem makes of a
 * program that calls get_group_id itself (it defines UNIMEM_WHOLE_LAUNCH_GROUP_IDS). */
#if defined(__UNIMEM_ANALYSIS__) || defined(UNIMEM_WHOLE_LAUNCH_GROUP_IDS)
#define UM_TEAM_NUMBER_() ((uint)get_group_id(0))
#else
#define UM_TEAM_NUMBER_() ((uint)(get_group_id(0) + get_global_offset(0) / get_local_size(0)))
#endif

#define UM_TEAM_SPILL_WORDS_(n) ((n) > UM_TEAM_SLOTS ? (n)-UM_TEAM_SLOTS : 0)

/* UM_TEAM_BEGIN(team, n): at the kernel's outermost scope, on every work-item. Declares the team
 * memory and `team`, a um_team* used by everything below. */
#define UM_TEAM_BEGIN(team, n)                                                              \
  __local ulong UM_TEAM_NAME_(um_team_slots_, team)[UM_TEAM_SLOTS > 0 ? UM_TEAM_SLOTS : 1]; \
  um_team UM_TEAM_NAME_(um_team_state_, team) = um_team_make_(                              \
      UM_TEAM_NAME_(um_team_slots_, team),                                                  \
      UM_TEAM_SPILL_NAME(n) + (ulong)UM_TEAM_NUMBER_() * UM_TEAM_SPILL_WORDS_(n), (n));     \
  um_team* team = &UM_TEAM_NAME_(um_team_state_, team)
#define UM_TEAM_END(team) um_team_sync(team)

/* Sequential code: the master alone runs the block; the others wait at its closing barrier. */
#define UM_MASTER(team) \
  um_team_sync(team);   \
  if ((team)->master) {
#define UM_END_MASTER(team) \
  }                         \
  um_team_sync(team)

/* A parallel region: every work-item of the team runs the block. */
#define UM_PARALLEL(team) \
  um_team_sync(team);     \
  {
#define UM_END_PARALLEL(team) \
  }                           \
  um_team_sync(team)

static inline um_team um_team_make_(__local ulong* slots, __global ulong* spill, uint shared) {
  um_team t;
  t.slots = slots;
  t.spill = spill;
  t.shared = shared;
  t.master = get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0;
  return t;
}

/* A work-group barrier that orders team memory and the spill area. */
static inline void um_team_sync(const um_team* team) {
  (void)team;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
}

static inline int um_team_is_master(const um_team* team) { return (int)team->master; }
static inline uint um_team_num(const um_team* team) {
  (void)team;
  return UM_TEAM_NUMBER_();
}
static inline uint um_team_rank(const um_team* team) {
  (void)team;
  return (uint)get_local_id(0);
}
static inline uint um_team_size(const um_team* team) {
  (void)team;
  return (uint)get_local_size(0);
}
/* Whether shared variable i lives in team memory (else in the spill area). */
static inline int um_team_in_slot(uint i) { return i < UM_TEAM_SLOTS; }

/* The 64-bit word of shared variable i. */
static inline void um_share_word(const um_team* team, uint i, ulong value) {
  if (i < UM_TEAM_SLOTS) {
    if (i < team->shared) team->slots[i] = value;
  } else if (i < team->shared) {
    team->spill[i - UM_TEAM_SLOTS] = value;
  }
}
static inline ulong um_shared_word(const um_team* team, uint i) {
  if (i >= team->shared) return 0;
  if (i < UM_TEAM_SLOTS) return team->slots[i];
  return team->spill[i - UM_TEAM_SLOTS];
}

/* Typed views: um_share_<type>(team, i, value) writes variable i, um_shared_<type>(team, i)
 * reads it. */
static inline void um_share_int(const um_team* t, uint i, int v) {
  um_share_word(t, i, (ulong)(uint)v);
}
static inline int um_shared_int(const um_team* t, uint i) {
  return (int)(uint)um_shared_word(t, i);
}
static inline void um_share_uint(const um_team* t, uint i, uint v) {
  um_share_word(t, i, (ulong)v);
}
static inline uint um_shared_uint(const um_team* t, uint i) { return (uint)um_shared_word(t, i); }
static inline void um_share_long(const um_team* t, uint i, long v) {
  um_share_word(t, i, (ulong)v);
}
static inline long um_shared_long(const um_team* t, uint i) { return (long)um_shared_word(t, i); }
static inline void um_share_ulong(const um_team* t, uint i, ulong v) { um_share_word(t, i, v); }
static inline ulong um_shared_ulong(const um_team* t, uint i) { return um_shared_word(t, i); }
static inline void um_share_float(const um_team* t, uint i, float v) {
  um_share_word(t, i, (ulong)as_uint(v));
}
static inline float um_shared_float(const um_team* t, uint i) {
  return as_float((uint)um_shared_word(t, i));
}
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static inline void um_share_double(const um_team* t, uint i, double v) {
  um_share_word(t, i, as_ulong(v));
}
static inline double um_shared_double(const um_team* t, uint i) {
  return as_double(um_shared_word(t, i));
}
#endif

#endif /* UNIMEM_TEAM_H */
