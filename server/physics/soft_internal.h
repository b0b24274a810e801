/* soft_internal.h: the soft world's layout, shared by soft.c (lifecycle,
 * inputs, save/load) and soft_solver.c (the step). Not public.
 *
 * `state` is everything that evolves and all that save/load copies; the mesh
 * (triangles, edges, neighbours, original rest lengths, the round ball) is
 * rebuilt identically by create, and the rest is per-step scratch. */
#ifndef TB_SOFT_INTERNAL_H
#define TB_SOFT_INTERNAL_H

#include "physics/icosphere.h"
#include "physics/soft.h"

#define TB_SOFT_V TB_ICOSPHERE_VERTICES
#define TB_SOFT_E TB_ICOSPHERE_EDGES
#define TB_SOFT_T TB_ICOSPHERE_TRIANGLES

_Static_assert(TB_SOFT_V <= 65536, "vertex indices are uint16_t");

typedef struct tb_soft_grab {
    uint32_t unused[2];            /* 0 in a new grab; keeps the save's layout (held its owner before grabs were handles) */
    int32_t active;
    int32_t count;                 /* vertices pulled */
    tb_vec3 target;                /* where the start point should go (world) */
    uint16_t vertex[TB_SOFT_GRAB_MAX_VERTICES];
    float weight[TB_SOFT_GRAB_MAX_VERTICES];     /* 1 at the start point, falling to 0 at the grab radius */
    float offset[TB_SOFT_GRAB_MAX_VERTICES * 3]; /* vertex minus start point, at the start */
} tb_soft_grab;

typedef struct tb_soft_state {
    uint64_t step_count;
    float stiffness;
    int32_t plasticity;
    int32_t volume_on;
    int32_t substeps;
    float rest_volume;
    int32_t press_active;
    float press_time, press_depth; /* seconds into the press; full depth */
    tb_vec3 press_point, press_normal;
    int32_t grab_count;
    int32_t sleep_steps; /* consecutive slow steps, capped at TB_SOFT_SLEEP_STEPS: asleep there
                            (was a zero pad: older saves load awake) */
    float pos[TB_SOFT_V * 3];
    float vel[TB_SOFT_V * 3];
    float rest_pos[TB_SOFT_V * 3]; /* shape memory target (the rest shape) */
    float rest_len[TB_SOFT_E];
    tb_soft_grab grabs[TB_SOFT_MAX_GRABS];
} tb_soft_state;

struct tb_soft_world {
    tb_soft_state state;
    /* mesh, built at create */
    uint16_t triangles[TB_SOFT_T * 3];
    uint16_t edges[TB_SOFT_E * 2];
    float original_len[TB_SOFT_E];
    float sphere[TB_SOFT_V * 3];
    uint16_t neighbour_start[TB_SOFT_V + 1];
    uint16_t neighbours[TB_SOFT_E * 2];
    uint16_t corner_start[TB_SOFT_V + 1];   /* per vertex, its triangles as (b, c): */
    uint16_t corner_pairs[TB_SOFT_T * 3 * 2]; /* the other two corners in winding order */
    /* scratch, per step */
    float prev[TB_SOFT_V * 3];
    float grad[TB_SOFT_V * 3];
    float weight[TB_SOFT_V];
    float volume_ref_pos[TB_SOFT_V * 3];
    float volume_ref, volume_denominator;
    float smooth[TB_SOFT_V * 3];
    tb_soft_state load_scratch;
    uint64_t idle_steps; /* steps skipped asleep since create (not saved: a statistic) */
};

/* soft_solver.c */
void tb_soft__solve_step(tb_soft_world *world, float dt);
float tb_soft__volume(const tb_soft_world *world, const float *pos);
void tb_soft__commit(tb_soft_world *world);
static inline void tb_soft__wake(tb_soft_world *world) { world->state.sleep_steps = 0; }

#endif /* TB_SOFT_INTERNAL_H */
