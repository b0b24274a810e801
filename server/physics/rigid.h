/* rigid.h: the rigid-body world, the public API the room server calls.
 *
 * A world holds boxes and spheres (dynamic, mass from density) and a few
 * static infinite planes. It is stepped at a fixed dt (1/120 s) with
 * sequential impulses: speculative contacts, Coulomb friction, restitution,
 * warm starting and sleeping (see ../shared/seeds/rigid-body-sequential-impulses).
 *
 * Ownership and threads: a world is plain memory owned by its caller; every
 * function here touches only the world it is given, so one world per thread
 * needs no locking (worlds sharing a scratch: one thread for all of them,
 * see tb_rigid_world_use_scratch). All memory is allocated by
 * tb_rigid_world_create (sizes from the def) and tb_rigid_world_use_scratch;
 * tb_rigid_world_step never allocates.
 *
 * Bodies are named by small integer ids (0 .. body_capacity-1). An id stays
 * the same for the life of its body; removing a body frees the id for reuse.
 *
 * Errors: functions that can be given bad user input (NaN, out-of-range
 * parameters, an unknown id, a too-small buffer) return a negative
 * TB_PHYS_ERR_* code (physics/result.h) and change nothing. Passing a NULL world is a
 * programmer error (assert).
 *
 * Units: metres, kilograms, seconds; y is up. Quaternions are (x, y, z, w).
 *
 * A room's use of it (scenes and throws are in rigid_scenes.h):
 *
 *     tb_rigid_world_def def = tb_rigid_world_def_default();
 *     def.body_capacity = TB_SCENE_TOWER_BODIES + 16;    // room for throws
 *     tb_rigid_world *w = tb_rigid_world_create(&def);
 *     tb_rigid_scene_tower(w, NULL);
 *     ...every 1/120 s: apply inputs (tb_rigid_body_apply_impulse,
 *        tb_rigid_throw, tb_rigid_scene_tower_launch_ball), then
 *        tb_rigid_world_step(w, 1.0f / 120.0f);
 *     ...snapshot: for (id = tb_rigid_world_next_body(w, -1); id >= 0;
 *                       id = tb_rigid_world_next_body(w, id))
 *                      tb_rigid_body_get_pose(w, id, &p, &q);
 *     ...saving a room: tb_rigid_world_save / tb_rigid_world_load
 *     tb_rigid_world_destroy(w);
 */
#ifndef TB_RIGID_H
#define TB_RIGID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "physics/tb_math.h"

/* ---- errors ------------------------------------------------------------------ */

#include "physics/result.h" /* TB_PHYS_OK, TB_PHYS_ERR_*, tb_phys_strerror */

/* ---- parameter ranges (the room's sliders) ------------------------------------ */

#define TB_RIGID_RESTITUTION_MAX 0.9f /* restitution in [0, 0.9] */
#define TB_RIGID_FRICTION_MAX 1.2f    /* friction in [0, 1.2] */
#define TB_RIGID_ITERATIONS_MIN 1
#define TB_RIGID_ITERATIONS_MAX 50
#define TB_RIGID_MAX_PLANES 8
#define TB_RIGID_MAX_BODIES 65000     /* ids fit in 16 bits inside the contact keys */
#define TB_RIGID_DT_MAX 0.05f         /* step() accepts 0 < dt <= 0.05 */
#define TB_RIGID_MAX_SPEED 500.0f     /* m/s: velocities given or produced by an impulse */
#define TB_RIGID_MAX_SPIN 1000.0f     /* rad/s, likewise (the step clamps to 60 anyway) */
#define TB_RIGID_MAX_GRABS 16         /* simultaneous grabs per world */
#define TB_RIGID_GRAB_GAIN 10.0f      /* 1/s: a grab's velocity per metre of error */
#define TB_RIGID_GRAB_MAX_SPEED 15.0f /* m/s */

/* ---- value types -------------------------------------------------------------- */

typedef enum tb_rigid_shape {
    TB_RIGID_BOX = 1,    /* half_extents */
    TB_RIGID_SPHERE = 2, /* radius */
} tb_rigid_shape;

/* What the renderer should draw; the physics never reads it. */
typedef enum tb_rigid_look_kind {
    TB_LOOK_PLAIN = 0,
    TB_LOOK_WOOD_PLANK = 1, /* color: one of 4 wood tints */
    TB_LOOK_DIE = 2,        /* faces by tb_rigid_body_die_top_face's convention */
    TB_LOOK_BALL = 3,       /* color: palette index */
} tb_rigid_look_kind;

typedef struct tb_rigid_look {
    uint8_t kind;  /* tb_rigid_look_kind */
    uint8_t color; /* palette index, meaning depends on kind */
} tb_rigid_look;

typedef struct tb_rigid_world_def {
    int body_capacity;    /* fixed for the world's life (1..TB_RIGID_MAX_BODIES) */
    int contact_capacity; /* contact points per step; 0 = 12 per body + 512. Extra points are dropped */
    tb_vec3 gravity;      /* (0, -9.81, 0) */
    float restitution;    /* 0.3, in [0, 0.9] */
    float friction;       /* 0.5, in [0, 1.2] */
    int iterations;       /* 10, in [1, 50] */
} tb_rigid_world_def;

tb_rigid_world_def tb_rigid_world_def_default(void);

typedef struct tb_rigid_body_def {
    tb_rigid_shape shape;     /* TB_RIGID_BOX */
    tb_vec3 half_extents;     /* box: (0.25, 0.25, 0.25); each in (0, 50] */
    float radius;             /* sphere: 0.25; in (0, 50] */
    float density;            /* 1 kg/m^3 ... in (0, 1e5] */
    tb_vec3 position;         /* origin */
    tb_quat rotation;         /* identity; normalised on add */
    tb_vec3 linear_velocity;  /* zero */
    tb_vec3 angular_velocity; /* zero */
    tb_rigid_look look;       /* plain */
} tb_rigid_body_def;

tb_rigid_body_def tb_rigid_body_def_default(void);

/* Everything a snapshot or a debug view reads about one body. */
typedef struct tb_rigid_body_info {
    tb_vec3 position;
    tb_quat rotation;
    tb_vec3 linear_velocity;
    tb_vec3 angular_velocity;
    tb_rigid_shape shape;
    tb_vec3 half_extents; /* boxes; zero for spheres */
    float radius;         /* spheres; bounding radius for boxes */
    float mass;
    bool awake;
    tb_rigid_look look;
} tb_rigid_body_info;

/* One contact point of the last step, for the debug view. */
typedef struct tb_rigid_contact_info {
    tb_vec3 point;          /* world, midway between the surfaces */
    tb_vec3 normal;         /* unit, from body_a (or the plane) towards body_b */
    float separation;       /* negative when overlapping */
    float normal_impulse;   /* accumulated over the step, N s (>= 0) */
    int body_a;             /* -1 for a plane */
    int body_b;
} tb_rigid_contact_info;

typedef struct tb_rigid_ray_hit {
    int body;        /* id of the closest body hit */
    tb_vec3 point;   /* world */
    tb_vec3 normal;  /* outward surface normal at point */
    float distance;  /* along the (normalised) ray direction */
} tb_rigid_ray_hit;

typedef struct tb_rigid_world tb_rigid_world;

/* ---- world ----------------------------------------------------------------------- */

/* NULL if def is out of range or memory is short. def may be NULL (defaults). */
tb_rigid_world *tb_rigid_world_create(const tb_rigid_world_def *def);
void tb_rigid_world_destroy(tb_rigid_world *world);

/* ---- shared scratch ---------------------------------------------------------------
 *
 * Most of what a step touches is rebuilt from nothing every step: the
 * contacts and their solver rows, the broad phase's grid, the solver bodies.
 * A world has its own such scratch, sized at creation. Worlds that one
 * thread steps one after another (a server worker's rooms) can share one
 * instead: the step's working set then stays in the cache from one world to
 * the next instead of each world bringing its own back from memory, and a
 * world keeps only its persistent state. Results are bit-identical.
 *
 * A shared scratch holds the last step of whichever world stepped on it
 * last, so a world's contacts (tb_rigid_world_get_contacts) are there until
 * another world steps on the same scratch; after that it reports none. Not
 * thread-safe: every world on one scratch steps on one thread at a time. */
typedef struct tb_rigid_scratch tb_rigid_scratch;

tb_rigid_scratch *tb_rigid_scratch_create(void); /* empty; NULL if memory is short */
/* Only once no world uses it (each destroyed or given its own again). */
void tb_rigid_scratch_destroy(tb_rigid_scratch *scratch);
/* The world steps on scratch from now on (grown here to fit the world, so a
 * step never allocates) and frees its own; NULL gives it its own again.
 * TB_PHYS_ERR_NO_MEMORY leaves the world as it was. */
int tb_rigid_world_use_scratch(tb_rigid_world *world, tb_rigid_scratch *scratch);

/* Removes every body and plane and forgets contacts; parameters and time stay. */
void tb_rigid_world_clear(tb_rigid_world *world);

/* A static infinite plane: bodies stay where dot(normal, x) >= offset, i.e. on
 * the side the normal points to (normal is normalised here). The floor is
 * ((0,1,0), 0); the wall x = -4 is ((1,0,0), -4). Returns the plane index. */
int tb_rigid_world_add_plane(tb_rigid_world *world, tb_vec3 normal, float offset);

/* Advances the world by dt (0 < dt <= TB_RIGID_DT_MAX; the room uses 1/120). */
int tb_rigid_world_step(tb_rigid_world *world, float dt);

/* Parameters. Out of range or NaN -> TB_PHYS_ERR_RANGE and nothing changes.
 * Changing restitution or friction wakes every body (the seed's slider rule). */
int tb_rigid_world_set_restitution(tb_rigid_world *world, float restitution);
int tb_rigid_world_set_friction(tb_rigid_world *world, float friction);
int tb_rigid_world_set_iterations(tb_rigid_world *world, int iterations);
float tb_rigid_world_restitution(const tb_rigid_world *world);
float tb_rigid_world_friction(const tb_rigid_world *world);
int tb_rigid_world_iterations(const tb_rigid_world *world);

void tb_rigid_world_wake_all(tb_rigid_world *world);

double tb_rigid_world_time(const tb_rigid_world *world);      /* seconds stepped */
uint64_t tb_rigid_world_step_count(const tb_rigid_world *world);
/* Steps that found every body asleep and changed nothing (the fast path), O(1). */
uint64_t tb_rigid_world_idle_steps(const tb_rigid_world *world);
int tb_rigid_world_body_count(const tb_rigid_world *world);   /* live bodies */
int tb_rigid_world_awake_count(const tb_rigid_world *world);
int tb_rigid_world_body_capacity(const tb_rigid_world *world);

/* Counters of the last step, for /metrics and the debug overlay. */
typedef struct tb_rigid_world_stats {
    int bodies, awake;
    int pairs;             /* broad-phase candidate pairs */
    int contacts;          /* contact points solved */
    int solver_groups;     /* 4-lane groups */
    int overflow_contacts; /* contacts solved one by one (no free colour) */
    int contacts_dropped;  /* over contact_capacity: raise it if this is not 0 */
    int pairs_dropped;     /* over the pair capacity (16 per body) */
    uint64_t idle_steps;   /* steps since creation that found every body asleep and
                              took the idle fast path (no broad phase, no solver) */
} tb_rigid_world_stats;

void tb_rigid_world_get_stats(const tb_rigid_world *world, tb_rigid_world_stats *out);

/* Iterate live bodies in id order: for (id = next(w, -1); id >= 0; id = next(w, id)). */
int tb_rigid_world_next_body(const tb_rigid_world *world, int after);

/* Contacts of the last step. get_contacts copies up to cap and returns the
 * number copied. Count may exceed what the solver used if capacity was hit. */
int tb_rigid_world_contact_count(const tb_rigid_world *world);
int tb_rigid_world_get_contacts(const tb_rigid_world *world, tb_rigid_contact_info *out, int cap);

/* Closest body hit by the ray origin + t dir, 0 <= t <= max_distance
 * (dir need not be unit). Returns 1 and fills *hit, 0 for no hit, or an error. */
int tb_rigid_world_ray_cast(const tb_rigid_world *world, tb_vec3 origin, tb_vec3 dir,
                            float max_distance, tb_rigid_ray_hit *hit);
/* Free flight: where a ball of `radius` leaving *pos at *vel is after t
 * seconds under the world's gravity, or a radius short of the first body on
 * that path (a ray along the chord, which stands in for the arc: keep t
 * short); *pos and *vel become its position and velocity then. Returns the
 * time flown. */
float tb_rigid_world_fly(const tb_rigid_world *world, float radius, float t, tb_vec3 *pos, tb_vec3 *vel);

/* ---- bodies ------------------------------------------------------------------------- */

/* Returns the new body's id (>= 0) or an error (bad def, world full). */
int tb_rigid_world_add_body(tb_rigid_world *world, const tb_rigid_body_def *def);
int tb_rigid_world_remove_body(tb_rigid_world *world, int id);
bool tb_rigid_world_body_valid(const tb_rigid_world *world, int id);

/* Impulse (N s) applied at a world point; wakes the body. An impulse that
 * would exceed TB_RIGID_MAX_SPEED / TB_RIGID_MAX_SPIN is refused (RANGE). */
int tb_rigid_body_apply_impulse(tb_rigid_world *world, int id, tb_vec3 impulse, tb_vec3 world_point);
/* Sets both velocities (within TB_RIGID_MAX_SPEED / _SPIN); wakes the body. */
int tb_rigid_body_set_velocity(tb_rigid_world *world, int id, tb_vec3 linear, tb_vec3 angular);
/* Teleports the body (rotation is normalised); wakes it. */
int tb_rigid_body_set_pose(tb_rigid_world *world, int id, tb_vec3 position, tb_quat rotation);

/* Puts the body to sleep at once, velocities zero (a copy of a world whose body was
 * at rest: the client's prediction world, server/wasm/predict.c). The next touch
 * by an awake body that is not slow, an impulse or a pose wakes it as usual. */
int tb_rigid_body_sleep(tb_rigid_world *world, int id);
int tb_rigid_body_get_info(const tb_rigid_world *world, int id, tb_rigid_body_info *out);
/* The hot path for snapshots: position and rotation only. */
int tb_rigid_body_get_pose(const tb_rigid_world *world, int id, tb_vec3 *position, tb_quat *rotation);
bool tb_rigid_body_is_awake(const tb_rigid_world *world, int id);

/* The face of a die that points up: the body axis with the largest world-up
 * (+y) component decides. Faces follow the standard die (opposite faces sum
 * to 7):  +x = 1, -x = 6,  +y = 2, -y = 5,  +z = 3, -z = 4.
 * Returns 1..6 or an error; *up_cos (may be NULL) receives the cosine between
 * that axis and +y (1 = flat on a face). Works for any box. */
int tb_rigid_body_die_top_face(const tb_rigid_world *world, int id, float *up_cos);

/* ---- save / load ----------------------------------------------------------------------
 * The whole simulation state (parameters, planes, bodies with their sleep
 * timers, the warm-start contact cache, time) as a flat byte image. Loading it
 * into a new world and stepping gives bit-identical results to the original.
 * The image is native-endian float bits: same build family, not a wire format.
 * Load checks sizes, counts and ids and rejects anything malformed. */
size_t tb_rigid_world_save_size(const tb_rigid_world *world);
/* Writes the image; *written (may be NULL) gets its size. NO_SPACE if cap is short. */
int tb_rigid_world_save(const tb_rigid_world *world, void *buf, size_t cap, size_t *written);
/* A new world from an image (NULL and *err set on failure; err may be NULL). */
tb_rigid_world *tb_rigid_world_load(const void *buf, size_t len, int *err);

/* ---- grabs ------------------------------------------------------------------------------
 * A grab holds a body at a point fixed in the body and drives that point
 * toward a target. At the start of every step, before anything else, each
 * grabbed body gets the linear velocity TB_RIGID_GRAB_GAIN * (target - point)
 * (at most TB_RIGID_GRAB_MAX_SPEED) and keeps 0.9 of its angular velocity: a
 * velocity servo, which needs no mass and cannot explode. Grabs are applied
 * in the order they started (an ended grab's place is taken by the last).
 * grab_start returns the grab's handle (>= 0, opaque: it names the grab for
 * move and end, and is free again after end) or an error; who holds which
 * grab is the caller's business. Removing the body, clear and restore_bodies
 * end its grabs; grabs are not part of a save. */
int tb_rigid_world_grab_start(tb_rigid_world *world, int body, tb_vec3 at);
int tb_rigid_world_grab_move(tb_rigid_world *world, int grab, tb_vec3 target);
int tb_rigid_world_grab_end(tb_rigid_world *world, int grab);
/* The body a grab holds, or TB_PHYS_ERR_UNKNOWN_GRAB. */
int tb_rigid_world_grab_body(const tb_rigid_world *world, int grab);

/* The def that creates a world like this one: capacities, gravity and the
 * current restitution, friction and iterations. */
void tb_rigid_world_get_def(const tb_rigid_world *world, tb_rigid_world_def *out);

/* ---- body images ------------------------------------------------------------------------
 * The bodies and the warm-start cache alone: no parameters, planes, time or
 * step count. A state computed elsewhere (a scene built in a scratch world
 * with the same def and stepped until it slept, see
 * tb_rigid_scene_tower_settled) is put into a live world without touching its
 * clock or parameters. Slots 0 .. body_end-1 are kept with their ids, sleep
 * flags and timers; restoring frees every other slot, the free list then
 * lists the free slots in ascending order (as after clear and adds). The
 * same native-endian rules as the full save. */
size_t tb_rigid_world_bodies_size(const tb_rigid_world *world);
int tb_rigid_world_save_bodies(const tb_rigid_world *world, void *buf, size_t cap, size_t *written);
/* Replaces the world's bodies and cache with the image's; planes,
 * parameters, time and step count stay, contacts of the last step are
 * forgotten. The image is untrusted: FORMAT if it is malformed (checked like
 * load), RANGE if it needs more slots than body_capacity or more cache
 * entries than contact_capacity. On error the world is unchanged. */
int tb_rigid_world_restore_bodies(tb_rigid_world *world, const void *buf, size_t len);

#endif /* TB_RIGID_H */
