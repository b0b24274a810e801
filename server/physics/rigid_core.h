/* rigid_core.h: the rigid world's internal data, shared by its .c files only.
 *
 * Persistent state (what save/load carries): parameters, planes, the body
 * slots and the warm-start cache. Everything else in tb_rigid_world is
 * per-step scratch, rebuilt from that state at the start of every step, sized
 * at creation so that step() never allocates.
 *
 * Data layout: the solver's inner loop reads only tb_contact_wide (four
 * contacts' rows side by side, in colour order) and tb_solver_body (the
 * velocities of awake bodies, 32 bytes each). Poses, shapes and sleep timers
 * live in tb_body; where a contact came from (key, point, local anchor) lives
 * in tb_contact_point, apart from the constraint rows in tb_contact.
 *
 * Files: body.c (bodies), broad_phase.c (grid), collide_*.c (geometry),
 * manifold.c (narrow phase, wake rule, warm-start cache), contact_solver.c
 * (sequential impulses), constraint_graph.c (colouring for the wide solver),
 * raycast.c, rigid_save.c, rigid_scenes.c, rigid_world.c (the step).
 */
#ifndef TB_RIGID_CORE_H
#define TB_RIGID_CORE_H

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "physics/collide.h"
#include "physics/rigid.h"
#include "physics/simd.h"
#include "physics/tb_math.h"

/* ---- the seed's constants ------------------------------------------------------- */

/* Speculative contacts: a pair's points are kept up to this far apart, plus
 * how far the two bodies may move this step (body.c, manifold.c), so nothing
 * tunnels however fast it moves. The constant part only has to cover a
 * resting contact's wobble around the slop (4 mm): at 2 cm the knocked
 * tower's busy window carried 164 contacts a step, most of them far corners
 * of tilted planks that never pushed (jn = 0) yet cost a box-box clip and
 * three solver rows every iteration; at 5 mm 138, and 12.5 % fewer
 * instructions a step (issue 20), the sleep statistics unchanged. */
#define TB_SPECULATIVE_MARGIN 0.005f   /* contacts are made up to 5 mm apart (+ this step's motion) */
#define TB_BAUMGARTE 0.2f              /* fraction of penetration removed per step */
#define TB_LINEAR_SLOP 0.004f          /* penetration left alone (4 mm) */
#define TB_RESTITUTION_THRESHOLD 0.8f  /* closing speeds below this do not bounce */
#define TB_WARM_MATCH_DIST_SQ 0.0036f  /* old contact within 6 cm (squared) */
#define TB_LINEAR_DAMPING 0.04f        /* v *= 1 / (1 + c dt) */
#define TB_BOX_ANGULAR_DAMPING 0.25f
#define TB_SPHERE_ANGULAR_DAMPING 0.7f
#define TB_MAX_ANGULAR_SPEED 60.0f     /* rad/s */
#define TB_SLEEP_TIME 0.45f            /* slow this long -> sleep */
#define TB_SLEEP_LINEAR_SQ 0.012f      /* "slow": |v|^2 below this ... */
#define TB_SLEEP_ANGULAR_SQ 0.03f      /* ... and |w|^2 below this */

/* Contact keys: (lower id << 16) | higher id for body pairs, and
 * (body id << 16) | (TB_PLANE_KEY_BASE + plane) for body-plane pairs. */
#define TB_PLANE_KEY_BASE 0xFFF0u

/* ---- bodies ------------------------------------------------------------------------- */

typedef struct tb_body {
    tb_vec3 position;
    tb_quat rotation;
    tb_vec3 linear_velocity;
    tb_vec3 angular_velocity;
    tb_vec3 inv_inertia;  /* body-space diagonal of I^-1 */
    tb_vec3 half_extents; /* boxes; zero for spheres */
    float inv_mass;
    float radius;         /* sphere radius, or bounding radius of a box */
    float sleep_time;     /* seconds slow so far */
    int32_t next_free;    /* free-list link when !alive, -1 otherwise/end */
    uint8_t shape;        /* tb_rigid_shape */
    uint8_t alive;
    uint8_t sleeping;
    uint8_t look_kind;
    uint8_t look_color;
    uint8_t pad[3];       /* keeps the struct free of implicit padding (saved raw) */
} tb_body;

_Static_assert(sizeof(tb_body) == 4 * 25, "tb_body has no implicit padding");

/* Per-step derived data of a body. */
typedef struct tb_body_frame {
    tb_collide_box box;    /* position, body axes in world (rotation matrix
                            * columns), half extents (zero for a sphere) */
    tb_vec3 aabb_min, aabb_max;
    float speculative;     /* how far the body may move this step: (|v| + |w| r) dt */
} tb_body_frame;

/* Velocities of an awake body while the solver runs; index 0 is a static
 * dummy (zero velocity, never written with non-zero values) standing in for
 * planes and sleeping bodies so the inner loop has no branches. */
typedef struct tb_solver_body {
    tb_vec3 v;
    float pad_v; /* v and w each fill 16 bytes: the wide solver loads them whole */
    tb_vec3 w;
    float pad_w;
} tb_solver_body;

_Static_assert(sizeof(tb_solver_body) == 32, "solver body is two 16-byte rows");

/* ---- contacts ------------------------------------------------------------------------ */

typedef struct tb_pair {
    uint32_t key;
    int32_t a, b; /* body ids, a < b */
} tb_pair;

/* One contact point as the solver sees it. For each direction d in
 * {n, t1, t2}: the r x d arms and I^-1 (r x d) of both bodies, precomputed.
 * sa .. t2 and the impulses are always set; the arms, masses and target only
 * for an overflow contact (graph.slot < 0): a contact in a group has those
 * only in its group's lane (tb_contact_wide). */
typedef struct tb_contact {
    int32_t sa, sb;       /* solver body indices (0 = static) */
    float ima, imb;       /* inverse masses (0 when static) */
    tb_vec3 n, t1, t2;
    tb_vec3 ra_n, rb_n, ra_t1, rb_t1, ra_t2, rb_t2;
    tb_vec3 ia_n, ib_n, ia_t1, ib_t1, ia_t2, ib_t2;
    float mass_n, mass_t1, mass_t2;
    float target;         /* normal velocity the solver aims for */
    float jn, jt1, jt2;   /* accumulated impulses */
} tb_contact;

/* The cold half of a contact: where it came from, for caching and debug. */
typedef struct tb_contact_point {
    uint32_t key;
    int32_t body_a;       /* -1 for a plane */
    int32_t body_b;
    float separation;
    tb_vec3 point;        /* world */
    tb_vec3 local_b;      /* point in body b's frame, for warm-start matching */
} tb_contact_point;

/* What a contact leaves for the next step (saved with the world). */
typedef struct tb_cache_entry {
    uint32_t key;
    float jn;
    tb_vec3 local_b;
    tb_vec3 friction;     /* world friction impulse t1 jt1 + t2 jt2 */
} tb_cache_entry;

_Static_assert(sizeof(tb_cache_entry) == 4 * 8, "tb_cache_entry has no implicit padding");

/* ---- wide solver (constraint_graph.c, contact_solver.c) -------------------------------
 *
 * Four contacts that share no awake body are solved at once, one per lane
 * of the SIMD layer's tb_f4 (simd.h). */

typedef struct tb_v3_4 {
    tb_f4 x, y, z;
} tb_v3_4;

/* Four bodies' (x, y, z, pad) rows to x, y, z lane vectors and back: a 4x4
 * transpose in shuffles instead of 24 scalar lane moves. */
static inline tb_f4 tb__load_row(const tb_vec3 *v)
{
    tb_f4 r;
    memcpy(&r, v, sizeof r); /* the vec3 and the pad float after it */
    return r;
}

static inline tb_v3_4 tb__transpose_in(tb_f4 r0, tb_f4 r1, tb_f4 r2, tb_f4 r3)
{
    tb_f4 t0 = TB_SHUFFLE(r0, r1, 0, 4, 1, 5), t1 = TB_SHUFFLE(r2, r3, 0, 4, 1, 5);
    tb_f4 t2 = TB_SHUFFLE(r0, r1, 2, 6, 3, 7), t3 = TB_SHUFFLE(r2, r3, 2, 6, 3, 7);
    return (tb_v3_4){TB_SHUFFLE(t0, t1, 0, 1, 4, 5), TB_SHUFFLE(t0, t1, 2, 3, 6, 7), TB_SHUFFLE(t2, t3, 0, 1, 4, 5)};
}

static inline void tb__transpose_out(tb_v3_4 v, tb_f4 r[4])
{
    const tb_f4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
    tb_f4 t0 = TB_SHUFFLE(v.x, v.y, 0, 4, 1, 5), t1 = TB_SHUFFLE(v.x, v.y, 2, 6, 3, 7);
    tb_f4 t2 = TB_SHUFFLE(v.z, zero, 0, 4, 1, 5), t3 = TB_SHUFFLE(v.z, zero, 2, 6, 3, 7);
    r[0] = TB_SHUFFLE(t0, t2, 0, 1, 4, 5);
    r[1] = TB_SHUFFLE(t0, t2, 2, 3, 6, 7);
    r[2] = TB_SHUFFLE(t1, t3, 0, 1, 4, 5);
    r[3] = TB_SHUFFLE(t1, t3, 2, 3, 6, 7);
}

#define TB_LANES 4
#define TB_GRAPH_COLORS 32 /* contacts that fit no color are solved one by one */

/* Two halves of one 8-float vector (an AVX register in the solver's AVX
 * clone, two SSE registers in the default one): lo holds a value of the four
 * lanes for the linear velocity, hi one for the angular velocity, so that a
 * body's (v, w) pair, loaded as one 32-byte row, is updated by one 8-wide
 * multiply-add per component. */
typedef struct tb_f4x2 {
    tb_f4 lo, hi;
} tb_f4x2;

/* d, r_b x d and r_a x d of one component, side by side: [d | r_b x d] and
 * [r_b x d | r_a x d] are each eight floats in a row. */
typedef struct tb_arms4 {
    tb_f4 d, rb, ra;
} tb_arms4;

/* One constraint direction d of four contacts (x, y, z components): with A =
 * [va | wa] and B = [vb | wb] the relative velocity along d is
 *     lo(X . [d | rb]) + hi(X . [d | rb]) - hi(A . [rb | ra]),  X = [vb - va | wb]
 * (the lo half of A . [rb | ra] is not used), and an impulse dj moves A by
 * da [dj | dj] and B by db [dj | dj]. */
typedef struct tb_row_wide {
    tb_f4x2 da[3]; /* lo: -d / ma, hi: -I_a^-1 (r_a x d) */
    tb_f4x2 db[3]; /* lo: d / mb, hi: I_b^-1 (r_b x d) */
    tb_arms4 arm[3];
} tb_row_wide;

/* The per-lane scalars of a group are kept twice, lo = hi = the four lanes'
 * values, so that a row's impulse comes out of the 8-wide arithmetic already
 * as the [dj | dj] that row_apply multiplies by (no broadcast per row). */
typedef struct tb_contact_wide {
    tb_row_wide n, t1, t2;
    tb_f4x2 mass_n, mass_t1, mass_t2, target;
    tb_f4x2 jn, jt1, jt2;
    int32_t sa[TB_LANES], sb[TB_LANES];
    tb_solver_body *body_a[TB_LANES], *body_b[TB_LANES]; /* &solver_bodies[sa], [sb] */
    int32_t index[TB_LANES]; /* contact index, -1 for an empty lane */
} tb_contact_wide;

/* The colouring (order, colour_start, overflow) and what it was made from
 * (last_bodies) are the world's own, kept from step to step; the masks, the
 * slot map and the groups are scratch (tb_rigid_scratch), laid out again from
 * the colouring when another world has used them since. */
typedef struct tb_constraint_graph {
    uint32_t *body_colors;     /* scratch, per solver body: bit k set = colour k holds it */
    int32_t *color_of;         /* scratch, per contact: color, or -1 = overflow */
    int32_t *slot;             /* scratch, per contact: group * TB_LANES + lane, or -1 = overflow */
    tb_contact_wide *groups;   /* scratch */
    int group_capacity, group_count;
    int32_t *order;            /* contacts sorted by color */
    int color_start[TB_GRAPH_COLORS + 1]; /* colour k is order[color_start[k] .. color_start[k + 1]) */
    int32_t *overflow;         /* contacts solved one by one */
    int overflow_count;
    uint64_t *last_bodies;     /* per contact of the last colouring: (sa << 32) | sb */
    int last_count;            /* contacts it coloured, -1 = none to reuse */
} tb_constraint_graph;

/* ---- broad phase (broad_phase.c) --------------------------------------------------- */

typedef struct tb_grid_entry {
    uint64_t cell;   /* packed integer cell coordinates */
    uint32_t bucket; /* hash of cell into the table */
    int32_t body;
} tb_grid_entry;

/* The capacities are the world's; the arrays are scratch (tb_rigid_scratch). */
typedef struct tb_broad_phase {
    int entry_capacity;
    int table_capacity;    /* power of two */
    tb_grid_entry *entries, *sorted;
    uint32_t *bucket_start; /* table_capacity + 1 */
    int32_t *oversized;     /* bodies spanning too many cells, tested against all */
    int32_t *min_cell;      /* per body: cell of its AABB's minimum corner (x, y, z) */
    int pairs_dropped;
} tb_broad_phase;

/* ---- scratch (rigid_scratch.c) -------------------------------------------------------
 *
 * The arrays a step rebuilds from nothing, sized for the largest world that
 * uses them. A world's own, or one shared by the worlds a thread steps one
 * after another (rigid.h: tb_rigid_world_use_scratch), so that the step's
 * working set stays in the cache from one world to the next. The arrays hold the last step of
 * the world that attached last: each attach counts up `attached`, and a
 * world whose own count (tb_rigid_world.attached) is not the scratch's
 * points its fields at the arrays again before its next full step. A count,
 * not a world pointer, so that destroying a world (on whatever thread) never
 * touches a scratch other worlds use, and a new world at a freed world's
 * address is not taken for it. */
struct tb_rigid_scratch {
    uint64_t attached;
    int body_cap, contact_cap, pair_cap, entry_cap, table_cap, group_cap;
    tb_body_frame *frames;
    int32_t *solver_index;
    tb_solver_body *solver_bodies;
    tb_mat3 *inv_inertia_world;
    float *inv_mass;
    tb_grid_entry *grid_entries, *grid_sorted;
    uint32_t *bucket_start;
    int32_t *oversized, *min_cell;
    tb_pair *pairs, *pairs_tmp;
    tb_contact *contacts;     /* contact_cap + 1 of them, calloc'ed: [contact_cap] is never written */
    tb_contact_point *points; /* likewise */
    int32_t *manifold_start;
    uint8_t *cache_used;
    uint32_t *body_colors;    /* zero between steps (the colouring clears what it sets) */
    int32_t *color_of, *slot;
    tb_contact_wide *groups;
};

/* Grows s to hold w's step (never shrinks). TB_PHYS_ERR_NO_MEMORY leaves s as it was. */
int tb_rigid__scratch_fit(tb_rigid_scratch *s, const tb_rigid_world *w);
/* Points w's scratch fields at w->scratch's arrays, whose step is now w's. */
void tb_rigid__attach(tb_rigid_world *w);
/* The scratch holds w's last step (its contacts and groups are w's). */
static inline bool tb_rigid__attached(const tb_rigid_world *w);

/* ---- the world --------------------------------------------------------------------- */

typedef struct tb_rigid_grab {
    int32_t active, body;
    tb_vec3 local;  /* held point in body space */
    tb_vec3 target; /* where it is driven, world */
} tb_rigid_grab;

struct tb_rigid_world {
    /* parameters */
    tb_vec3 gravity;
    float restitution;
    float friction;
    int iterations;
    int capacity;
    int contact_capacity;

    /* time */
    double time;
    uint64_t steps;

    /* planes */
    int plane_count;
    tb_vec3 plane_normal[TB_RIGID_MAX_PLANES];
    float plane_offset[TB_RIGID_MAX_PLANES];

    /* bodies: slots 0..capacity-1; live ones have alive = 1 */
    tb_body *bodies;
    int free_head;  /* first free slot, -1 when full */
    int body_end;   /* 1 + highest live id (loops stop here) */
    int body_count;

    /* warm-start cache of the last step, sorted by key */
    tb_cache_entry *cache;
    int cache_count;

    /* ---- per-step scratch: pointers into *scratch, valid while tb_rigid__attached ---- */
    tb_rigid_scratch *scratch;      /* own_scratch, or one shared with other worlds */
    uint64_t attached;              /* scratch->attached when this world attached */
    tb_rigid_scratch *own_scratch;  /* NULL while on a shared one */
    bool scratch_fresh;             /* attached since the last colouring: the groups are not ours */
    int zero_contact;               /* the scratch's never-written contact (an empty solver lane) */
    tb_body_frame *frames;
    int32_t *solver_index;          /* body id -> solver body (0 when static) */
    tb_solver_body *solver_bodies;  /* capacity + 1 */
    tb_mat3 *inv_inertia_world;     /* per solver body */
    float *inv_mass;                /* per solver body */
    tb_broad_phase broad_phase;
    tb_pair *pairs, *pairs_tmp;
    int pair_capacity, pair_count;
    tb_contact *contacts;           /* contact_capacity + 1: [contact_capacity] stays zero */
    tb_contact_point *points;       /* (the empty lane of a solver group, contact_solver.c) */
    int contact_count;
    int32_t *manifold_start;        /* tb_manifold_collide: the first contact of each run sharing */
    int manifold_count;             /* a key (a manifold), then contact_count */
    int pair_contact_count;         /* contacts [0, this) are body pairs', the rest planes' */
    int contacts_dropped;
    uint64_t idle_steps;            /* steps that found every body asleep (fast path) */
    bool idle_path_off;             /* tests: always take the full step (to compare) */
    tb_cache_entry *cache_next;
    uint8_t *cache_used;
    tb_constraint_graph graph;

    /* grabs (rigid_grab.c): slots named by handle, applied in grab_order */
    tb_rigid_grab grabs[TB_RIGID_MAX_GRABS];
    int grab_order[TB_RIGID_MAX_GRABS];
    int grab_count;
};

static inline bool tb_rigid__attached(const tb_rigid_world *w) { return w->attached == w->scratch->attached; }

/* rigid_grab.c: the servo at the start of a step; grabs of a removed body end */
void tb_rigid__apply_grabs(tb_rigid_world *w);
void tb_rigid__drop_grabs_of_body(tb_rigid_world *w, int body);
void tb_rigid__drop_all_grabs(tb_rigid_world *w);

/* body.c */
void tb_body_compute_frame(const tb_body *body, tb_body_frame *frame, float dt, float margin);
void tb_body_wake(tb_body *body);
bool tb_body_is_slow(const tb_body *body);

/* broad_phase.c: the capacities for body_capacity bodies (the arrays: scratch) */
void tb_broad_phase_size(tb_broad_phase *bp, int body_capacity);
/* Candidate body pairs (a < b, at least one awake, AABBs overlapping),
 * sorted by key, into world->pairs. */
void tb_broad_phase_update_pairs(tb_rigid_world *world);

/* manifold.c: narrow phase into the contact arrays, wake rules, warm-start cache */
void tb_manifold_collide(tb_rigid_world *world);
void tb_manifold_store_cache(tb_rigid_world *world);
void tb_manifold_warm_start(tb_rigid_world *world);

/* contact_solver.c: begin (solver bodies, tangents) before the colouring,
 * prepare (arms, masses, targets into the groups' lanes) after it */
void tb_contact_solver_begin(tb_rigid_world *world);
void tb_contact_solver_prepare(tb_rigid_world *world, float dt);
/* Applies the impulses tb_manifold_warm_start gave the contacts, contact by
 * contact in contact order (the order fixes the rounding of each body's sum) */
void tb_contact_solver_warm_apply(tb_rigid_world *world);
void tb_contact_solver_solve(tb_rigid_world *world);

/* constraint_graph.c: init allocates the world's own part (the rest: scratch) */
int tb_constraint_graph_init(tb_constraint_graph *g, int contact_capacity);
void tb_constraint_graph_free(tb_constraint_graph *g);
/* No groups, and nothing to reuse (a cleared world, an idle step). */
void tb_constraint_graph_reset(tb_constraint_graph *g);
/* Colours the contacts (solver bodies set by tb_contact_solver_begin) and
 * cuts the colours into groups of four lanes: index, sa, sb and the slot map.
 * The colouring depends only on the contacts' (sa, sb) in order, so when
 * those equal the last step's, the last colouring is kept (and its groups,
 * unless another world's step used the scratch since: then laid out again). */
void tb_constraint_graph_build(tb_rigid_world *world);

/* rigid_world.c */
void tb_rigid_world_forget_body_contacts(tb_rigid_world *world, int id);
/* Expensive consistency check of the whole state (tests call it every step):
 * counts and free list, finiteness, sorted cache and contacts, and that no
 * two lanes of a solver group share an awake body. Returns NULL when all is
 * well, else a description of the first broken invariant. */
const char *tb_rigid_world_validate(const tb_rigid_world *world);

#endif /* TB_RIGID_CORE_H */
