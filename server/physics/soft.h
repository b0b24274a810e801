/* soft.h: the soft world — a ball of dough (XPBD-style position-based soft
 * body on a shared-vertex icosphere) that keeps the shape you give it.
 *
 * Pull it (grabs, several at once, each named by the handle grab_start gave) and it
 * stretches and stays stretched; press it and the dent stays; its volume is
 * kept, so pressing one side swells the rest. The server steps it with its
 * fixed dt; dt outside (0, TB_SOFT_DT_MAX] is rejected, and inside that range
 * it is clamped to [1/240, 1/30] before anything divides by it.
 *
 * Everything is allocated by tb_soft_world_create(); stepping and inputs never
 * allocate. Bad input is a returned int and changes nothing.
 * Design and constants: ../shared/seeds/xpbd-dough-softbody.ko.md. */
#ifndef TB_SOFT_H
#define TB_SOFT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "physics/tb_math.h"

#define TB_SOFT_MAX_GRABS 16            /* simultaneous grabs per world */
#define TB_SOFT_GRAB_MAX_VERTICES 64    /* vertices one grab pulls */
#define TB_SOFT_GRAB_RADIUS 0.35f       /* m: vertices this close to a grab's start point are pulled */
#define TB_SOFT_GRAB_REACH 0.3f         /* m: a grab must start this close to the surface */
#define TB_SOFT_MAX_RADIUS 2.75f        /* soft size limit, from the centre */
#define TB_SOFT_MAX_STRETCH 3.0f        /* rest lengths stop at 3x their original */
#define TB_SOFT_DT_MIN (1.0f / 240.0f)
#define TB_SOFT_DT_CLAMP_MAX (1.0f / 30.0f)
#define TB_SOFT_DT_MAX 0.25f            /* larger dt is an error, not a clamp */
#define TB_SOFT_PRESS_DEPTH_MAX 0.6f
#define TB_SOFT_SUBSTEPS_MAX 8

#include "physics/result.h" /* every call that can fail: TB_PHYS_OK or a TB_PHYS_ERR_* */

typedef struct tb_soft_def {
    float stiffness;          /* edge stiffness 0..1 as the seed means it (per substep at 300 Hz); default 0.6 */
    bool plasticity;          /* keep the new shape (default true); off: springs back like rubber */
    bool volume_preservation; /* default true */
    int substeps;             /* per step, 1..TB_SOFT_SUBSTEPS_MAX; default 3 (360 per second; the seed ran 300) */
} tb_soft_def;

tb_soft_def tb_soft_def_default(void);

typedef struct tb_soft_world tb_soft_world;

tb_soft_world *tb_soft_world_create(const tb_soft_def *def, int *err);
void tb_soft_world_destroy(tb_soft_world *world);
/* Back to the round ball at rest; ends every grab and press; keeps parameters. */
void tb_soft_world_reset(tb_soft_world *world);

int tb_soft_world_step(tb_soft_world *world, float dt);

/* Sleep: a dough with no grab and no press whose vertices all stay slower
 * than TB_SOFT_SLEEP_SPEED for TB_SOFT_SLEEP_STEPS steps in a row falls
 * asleep: its velocities become 0 and further steps only count (the state
 * does not change). Any input that succeeds (grab start/move/end, press,
 * reset, a parameter) wakes it. The sleep state is saved. */
#define TB_SOFT_SLEEP_SPEED 0.01f /* m/s: 1 cm/s, a slow creep (rigid bodies: 0.11 m/s) */
#define TB_SOFT_SLEEP_STEPS 60
bool tb_soft_world_asleep(const tb_soft_world *world);
uint64_t tb_soft_world_idle_steps(const tb_soft_world *world); /* steps skipped asleep since create */

/* Parameters. */
int tb_soft_world_set_stiffness(tb_soft_world *world, float stiffness);
int tb_soft_world_set_plasticity(tb_soft_world *world, bool on);
int tb_soft_world_set_volume_preservation(tb_soft_world *world, bool on);

/* Inputs. A grab takes the vertices within TB_SOFT_GRAB_RADIUS of `at` (a
 * point on or near the surface) and pulls them, keeping their offsets, toward
 * the target. When the last grab ends the shape is committed: rest lengths
 * and rest shape become the current ones and velocities zero (no snap-back). */
/* grab_start returns the grab's handle (>= 0, opaque: it names the grab for
 * move and end, and is free again after end) or an error; who holds which
 * grab is the caller's business. */
int tb_soft_world_grab_start(tb_soft_world *world, tb_vec3 at);
int tb_soft_world_grab_move(tb_soft_world *world, int grab, tb_vec3 target);
int tb_soft_world_grab_end(tb_soft_world *world, int grab);
/* Press a dent `depth` deep (0..TB_SOFT_PRESS_DEPTH_MAX) at the surface point
 * nearest `at`; takes TB_SOFT_PRESS_TIME seconds, then commits. */
#define TB_SOFT_PRESS_TIME 0.3f
#define TB_SOFT_PRESS_RADIUS 0.45f
int tb_soft_world_press(tb_soft_world *world, tb_vec3 at, float depth);

/* Reading. */
int tb_soft_world_vertex_count(const tb_soft_world *world);
const float *tb_soft_world_positions(const tb_soft_world *world); /* xyz per vertex */
int tb_soft_world_triangle_count(const tb_soft_world *world);
const uint16_t *tb_soft_world_triangles(const tb_soft_world *world); /* 3 per triangle, CCW from outside */
int tb_soft_world_edge_count(const tb_soft_world *world);
const uint16_t *tb_soft_world_edges(const tb_soft_world *world);    /* 2 per edge */
const float *tb_soft_world_rest_lengths(const tb_soft_world *world);
const float *tb_soft_world_original_rest_lengths(const tb_soft_world *world);
const float *tb_soft_world_velocities(const tb_soft_world *world);  /* xyz per vertex, m/s */
float tb_soft_world_volume(const tb_soft_world *world);
float tb_soft_world_rest_volume(const tb_soft_world *world);
int tb_soft_world_grab_count(const tb_soft_world *world);
bool tb_soft_world_pressing(const tb_soft_world *world);

/* Save the whole state into a caller buffer; load into any soft world. */
size_t tb_soft_world_save_size(const tb_soft_world *world);
int tb_soft_world_save(const tb_soft_world *world, void *buffer, size_t capacity, size_t *written);
int tb_soft_world_load(tb_soft_world *world, const void *buffer, size_t size);
uint64_t tb_soft_world_hash(const tb_soft_world *world);

#endif /* TB_SOFT_H */
