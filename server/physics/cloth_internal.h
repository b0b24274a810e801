/* cloth_internal.h: the cloth world's layout, shared by cloth.c (lifecycle,
 * parameters, inputs, save/load), cloth_solver.c (the step) and
 * cloth_figure.c (the walking figure). Not part of the public API.
 *
 * The world is one allocation. Its `state` is everything that evolves and is
 * all that save/load copies; the rest (rest lengths, pins, anchors, normals,
 * capsules, triangles) is derived from the state by tb_cloth__rebuild(), so a
 * loaded world recomputes it exactly as the saved one had it. */
#ifndef TB_CLOTH_INTERNAL_H
#define TB_CLOTH_INTERNAL_H

#include "physics/cloth.h"

#define TB_CLOTH_MAX_TRIANGLES (2 * (TB_CLOTH_GRID_MAX - 1) * (TB_CLOTH_GRID_MAX - 1))

_Static_assert(TB_CLOTH_MAX_POINTS <= 65536, "point indices are uint16_t");

/* ---- saved state ---------------------------------------------------------- */

typedef struct tb_cloth_piece_state {
    int32_t kind;           /* tb_cloth_kind */
    int32_t width, height;
    float pos[TB_CLOTH_MAX_POINTS * 3];
    float prev[TB_CLOTH_MAX_POINTS * 3];
} tb_cloth_piece_state;

typedef struct tb_cloth_grab {
    uint32_t unused[2]; /* 0 in a new grab; keeps the save's layout (held its owner before grabs were handles) */
    int32_t active;
    int32_t piece, point;
    tb_vec3 target;
} tb_cloth_grab;

/* The walking figure: where it is on its loop, its stride, and how much it is
 * walking (blend eases 0..1 so starting and stopping are not instant). */
typedef struct tb_cloth_figure_state {
    float loop_angle;   /* radians around the loop centre */
    float stride_phase; /* radians, 0..2pi */
    float blend;        /* 0 standing .. 1 walking */
} tb_cloth_figure_state;

typedef struct tb_cloth_state {
    uint64_t step_count;
    int32_t scene;
    int32_t iterations;
    int32_t walking;
    float wind_strength, wind_direction;
    tb_cloth_figure_state figure;
    int32_t piece_count;
    int32_t reserved; /* keeps the layout free of padding */
    tb_cloth_grab grabs[TB_CLOTH_MAX_GRABS];
    tb_cloth_piece_state pieces[TB_CLOTH_MAX_PIECES];
} tb_cloth_state;

/* ---- derived data ----------------------------------------------------------- */

/* A point near a capsule this step: the iterations test only these pairs. */
typedef struct tb_cloth_pair {
    uint16_t point, capsule;
} tb_cloth_pair;

#define TB_CLOTH_MAX_PAIRS (TB_CLOTH_MAX_POINTS * 4)
#define TB_CLOTH_PAD 16

/* The six constraint families, each solved as one run over the grid
 * (cloth_solver.c explains the numbering). */
enum {
    TB_CLOTH_FAMILY_H1 = 0, /* horizontal neighbours (structural) */
    TB_CLOTH_FAMILY_H2,     /* horizontal one apart (bend) */
    TB_CLOTH_FAMILY_V1,     /* vertical neighbours (structural) */
    TB_CLOTH_FAMILY_V2,     /* vertical one apart (bend) */
    TB_CLOTH_FAMILY_D1,     /* diagonal down-right (shear) */
    TB_CLOTH_FAMILY_D2,     /* diagonal down-left (shear) */
    TB_CLOTH_FAMILIES
};

/* The distance constraints are not stored: on a grid they are six families
 * (horizontal and vertical neighbours, two diagonals, horizontal and vertical
 * one-apart) with one rest length each, and the solver walks them straight
 * off the grid (cloth_solver.c). During a step the positions live in the
 * px/py/pz columns so the walk can use SIMD. */
typedef struct tb_cloth_piece {
    int constraint_count;
    int triangle_count;
    int pin_count;
    int pair_count;
    int capsule_first, capsule_count; /* the capsules this piece collides with */
    float size_x, size_y;             /* physical size, m */
    float rest_x, rest_y, rest_diag;  /* neighbour rest lengths; one apart is twice rest_x / rest_y */
    /* Columns for the step, padded so a SIMD group of sixteen that starts in
     * the last row stays inside (padded positions are loaded and stored back
     * unchanged; padded normals are scratch). */
    float inv_mass[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD]; /* 0 pinned or grabbed, 1 free */
    float px[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    float py[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    float pz[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    float nx[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD]; /* normals, as columns (the wind reads them) */
    float ny[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    float nz[TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    /* each end's share of every constraint (stiffness and inverse masses), by family */
    float share_a[TB_CLOTH_FAMILIES][TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    float share_b[TB_CLOTH_FAMILIES][TB_CLOTH_MAX_POINTS + TB_CLOTH_PAD];
    tb_cloth_pair pairs[TB_CLOTH_MAX_PAIRS];
    int low_count;                       /* free points near the ground this step */
    uint16_t low[TB_CLOTH_MAX_POINTS];
    uint8_t pinned[TB_CLOTH_MAX_POINTS];
    float normals[TB_CLOTH_MAX_POINTS * 3];
    uint16_t pins[TB_CLOTH_GRID_MAX * 2];
    float anchors[TB_CLOTH_GRID_MAX * 2 * 3];
    uint16_t triangles[TB_CLOTH_MAX_TRIANGLES * 3];
} tb_cloth_piece;

struct tb_cloth_world {
    tb_cloth_state state;
    tb_cloth_def def; /* what reset goes back to (grid sizes follow set_grid) */
    tb_cloth_piece pieces[TB_CLOTH_MAX_PIECES];
    int capsule_count;
    tb_cloth_capsule capsules[TB_CLOTH_MAX_CAPSULES];
    tb_vec3 figure_forward, figure_torso_centre;
};

/* ---- between the files -------------------------------------------------------- */

/* Scene geometry. */
#define TB_CLOTH_POLE_X (-3.5f)
#define TB_CLOTH_POLE_Z 0.0f
#define TB_CLOTH_POLE_HEIGHT 3.2f
#define TB_CLOTH_POLE_RADIUS 0.04f
#define TB_CLOTH_FLAG_TOP 3.0f
#define TB_CLOTH_FLAG_SIZE_X 1.5f
#define TB_CLOTH_FLAG_SIZE_Y 0.9f
#define TB_CLOTH_CAPE_SIZE_X 0.44f
#define TB_CLOTH_CAPE_SIZE_Y 0.85f
#define TB_CLOTH_GROUND_Y 0.02f

/* cloth_figure.c: advance the figure one step; write its capsules (6 of them,
 * from capsules[0]) and the cape's shoulder anchors (`count` points, xyz). */
void tb_cloth__figure_advance(tb_cloth_figure_state *fig, bool walking, float dt);
void tb_cloth__figure_pose(const tb_cloth_figure_state *fig, tb_cloth_capsule *capsules,
                           float *anchors, int count, tb_vec3 *forward, tb_vec3 *torso_centre);
#define TB_CLOTH_FIGURE_CAPSULES 6

/* cloth_solver.c */
void tb_cloth__solve_step(tb_cloth_world *world);
void tb_cloth__update_shares(const tb_cloth_piece_state *ps, tb_cloth_piece *p);
void tb_cloth__to_columns(const tb_cloth_piece_state *ps, tb_cloth_piece *p);
/* from the columns px/py/pz (call tb_cloth__to_columns first when the state changed) */
void tb_cloth__compute_normals(const tb_cloth_piece_state *ps, tb_cloth_piece *p);

/* cloth.c: recompute every derived field from world->state. */
void tb_cloth__rebuild(tb_cloth_world *world);

#endif /* TB_CLOTH_INTERNAL_H */
