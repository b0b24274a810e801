/* cloth.h: the cloth world — Verlet cloth on a grid, for the flag and cape rooms.
 *
 * A cloth world holds up to two pieces of cloth (a flag on a pole, a cape on
 * a walking figure made of capsules) and steps them at the server's fixed
 * 1/120 s. Everything the world needs is allocated by tb_cloth_world_create();
 * stepping, inputs and parameter changes never allocate. Bad input is a
 * returned int, never an assert; a rejected call changes nothing.
 *
 * Reading: tb_cloth_world_get_cloth() hands out views (positions as a flat
 * xyz float array, grid size, triangles, pins) that stay valid until the next
 * call that changes the world. tb_cloth_world_capsules() gives the figure and
 * the pole, which move every step.
 *
 * Algorithms and constants come from ../shared/seeds/verlet-cloth.ko.md; how
 * its 1/60 s tuning maps onto 1/120 s is explained in cloth_solver.c. */
#ifndef TB_CLOTH_H
#define TB_CLOTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "physics/tb_math.h"

#define TB_CLOTH_DT (1.0f / 120.0f)      /* one step, seconds */
#define TB_CLOTH_MAX_PIECES 2
#define TB_CLOTH_GRID_MIN 4              /* points per side, both directions */
#define TB_CLOTH_GRID_MAX 48
#define TB_CLOTH_MAX_POINTS (TB_CLOTH_GRID_MAX * TB_CLOTH_GRID_MAX)
#define TB_CLOTH_ITERATIONS_MIN 1
#define TB_CLOTH_ITERATIONS_MAX 20
#define TB_CLOTH_WIND_MAX 40.0f          /* m/s */
#define TB_CLOTH_MAX_GRABS 8
#define TB_CLOTH_MAX_CAPSULES 8
#define TB_CLOTH_GRAB_REACH 0.5f         /* a grab must start this close to a point, m */

#include "physics/result.h" /* every call that can fail: TB_PHYS_OK or a TB_PHYS_ERR_* */

typedef enum tb_cloth_scene {
    TB_CLOTH_SCENE_FLAG = 0,          /* a flag on a pole */
    TB_CLOTH_SCENE_CAPE = 1,          /* a cape on a walking figure */
    TB_CLOTH_SCENE_FLAG_AND_CAPE = 2, /* both: the seed's rampart */
} tb_cloth_scene;

typedef enum tb_cloth_kind { TB_CLOTH_KIND_FLAG = 0, TB_CLOTH_KIND_CAPE = 1 } tb_cloth_kind;

/* Which body part a capsule is (the pole is one too). */
typedef enum tb_cloth_part {
    TB_CLOTH_PART_POLE = 0,
    TB_CLOTH_PART_TORSO,
    TB_CLOTH_PART_HEAD,
    TB_CLOTH_PART_ARM_LEFT,
    TB_CLOTH_PART_ARM_RIGHT,
    TB_CLOTH_PART_LEG_LEFT,
    TB_CLOTH_PART_LEG_RIGHT,
} tb_cloth_part;

typedef struct tb_cloth_capsule {
    tb_vec3 a, b;       /* segment end points, world, m */
    float radius;
    int part;           /* tb_cloth_part */
} tb_cloth_capsule;

typedef struct tb_cloth_def {
    tb_cloth_scene scene;
    int iterations;       /* 1..20, default 8 */
    float wind_strength;  /* m/s, 0..TB_CLOTH_WIND_MAX, default 6 */
    float wind_direction; /* radians about +y; 0 blows toward +x, pi/2 toward -z */
    bool walking;         /* the figure walks its loop */
    int flag_width, flag_height; /* grid points, default 16 x 10 */
    int cape_width, cape_height; /* grid points, default 12 x 17 */
} tb_cloth_def;

tb_cloth_def tb_cloth_def_default(void);

/* A read-only view of one piece; pointers stay valid until the world changes. */
typedef struct tb_cloth_view {
    tb_cloth_kind kind;
    int width, height;        /* grid points; point (i, j) is index j * width + i, j = 0 is the top row */
    int point_count;
    const float *positions;   /* xyz per point */
    const float *normals;     /* xyz per point, unit */
    int triangle_count;
    const uint16_t *triangles; /* 3 point indices per triangle */
    int pin_count;
    const uint16_t *pins;     /* indices of pinned points */
    const float *anchors;     /* xyz per pin: where each pinned point is held this step */
    int constraint_count;
} tb_cloth_view;

typedef struct tb_cloth_world tb_cloth_world;

/* Lifecycle. create returns NULL and sets *err (if err) on bad def or no memory. */
tb_cloth_world *tb_cloth_world_create(const tb_cloth_def *def, int *err);
void tb_cloth_world_destroy(tb_cloth_world *world);
/* Back to the scene's start with the same def-time parameters as now. */
void tb_cloth_world_reset(tb_cloth_world *world);

/* One step. The cloth runs at one fixed step, TB_CLOTH_DT (its stiffness and
 * damping are tuned for it, see cloth_solver.c): dt must be exactly that, any
 * other is TB_PHYS_ERR_RANGE (NaN: TB_PHYS_ERR_INVALID) and nothing moves. */
int tb_cloth_world_step(tb_cloth_world *world, float dt);

/* Parameters. */
int tb_cloth_world_set_wind(tb_cloth_world *world, float strength, float direction);
int tb_cloth_world_set_iterations(tb_cloth_world *world, int iterations);
int tb_cloth_world_set_walking(tb_cloth_world *world, bool walking);
/* Rebuilds that piece at the same physical size (ends its grabs). */
int tb_cloth_world_set_grid(tb_cloth_world *world, tb_cloth_kind kind, int width, int height);

/* Inputs. A grab holds the nearest free point to `at` (within TB_CLOTH_GRAB_REACH)
 * and drags it toward the target. grab_start returns the grab's handle (>= 0,
 * opaque: it names the grab for move and end, and is free again after end)
 * or an error; who holds which grab is the caller's business. A poke adds up
 * to `velocity_change` (m/s, fading linearly to 0 at `radius`) to every point
 * within radius of `at`. */
int tb_cloth_world_grab_start(tb_cloth_world *world, tb_vec3 at);
int tb_cloth_world_grab_move(tb_cloth_world *world, int grab, tb_vec3 target);
int tb_cloth_world_grab_end(tb_cloth_world *world, int grab);
int tb_cloth_world_poke(tb_cloth_world *world, tb_vec3 at, tb_vec3 velocity_change, float radius);

/* Reading. */
int tb_cloth_world_piece_count(const tb_cloth_world *world);
int tb_cloth_world_get_cloth(const tb_cloth_world *world, int index, tb_cloth_view *out);
/* Index of the piece of that kind, or -1. */
int tb_cloth_world_find_piece(const tb_cloth_world *world, tb_cloth_kind kind);
int tb_cloth_world_capsule_count(const tb_cloth_world *world);
const tb_cloth_capsule *tb_cloth_world_capsules(const tb_cloth_world *world);
/* The figure's heading (unit, horizontal) and torso centre, for tests and cameras. */
tb_vec3 tb_cloth_world_figure_forward(const tb_cloth_world *world);
tb_vec3 tb_cloth_world_figure_torso_centre(const tb_cloth_world *world);
double tb_cloth_world_time(const tb_cloth_world *world);
int tb_cloth_world_iterations(const tb_cloth_world *world);

/* Save the whole state into a caller buffer; load it into a world created
 * with any def (its state is replaced). Stepping the saved and the loaded
 * world gives bit-identical results. */
size_t tb_cloth_world_save_size(const tb_cloth_world *world);
int tb_cloth_world_save(const tb_cloth_world *world, void *buffer, size_t capacity, size_t *written);
int tb_cloth_world_load(tb_cloth_world *world, const void *buffer, size_t size);
/* FNV-1a over the saved state: equal hashes, equal worlds. */
uint64_t tb_cloth_world_hash(const tb_cloth_world *world);

#endif /* TB_CLOTH_H */
