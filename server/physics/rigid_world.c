/* rigid_world.c: the world: creation, parameters, queries, and the step.
 *
 * One step (dt, normally 1/120 s), following the seed:
 *   1. awake bodies: gravity, damping, angular speed clamp (velocities only)
 *   2. frames: axes and velocity-expanded AABBs of every live body
 *   3. broad phase: candidate pairs (broad_phase.c)
 *   4. narrow phase + wake rule + plane contacts (manifold.c)
 *   5. solver: colouring into groups of four (constraint_graph.c), effective
 *      masses and targets written into the groups' lanes (before warm
 *      start), warm start from the cache, then `iterations` sweeps
 *      (contact_solver.c)
 *   6. cache the impulses for the next step
 *   7. integrate positions and rotations; sleep timers
 * Sleeping bodies take no part except as static obstacles.
 */
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

tb_rigid_world_def tb_rigid_world_def_default(void)
{
    tb_rigid_world_def def;
    memset(&def, 0, sizeof def);
    def.body_capacity = 256;
    def.contact_capacity = 0;
    def.gravity = tb_v3(0.0f, -9.81f, 0.0f);
    def.restitution = 0.3f;
    def.friction = 0.5f;
    def.iterations = 10;
    return def;
}

static bool restitution_ok(float e) { return isfinite(e) && e >= 0.0f && e <= TB_RIGID_RESTITUTION_MAX; }
static bool friction_ok(float mu) { return isfinite(mu) && mu >= 0.0f && mu <= TB_RIGID_FRICTION_MAX; }
static bool iterations_ok(int n) { return n >= TB_RIGID_ITERATIONS_MIN && n <= TB_RIGID_ITERATIONS_MAX; }

static void reset_free_list(tb_rigid_world *w)
{
    memset(w->bodies, 0, sizeof *w->bodies * (size_t)w->capacity);
    for (int i = 0; i < w->capacity; i++) w->bodies[i].next_free = i + 1 < w->capacity ? i + 1 : -1;
    w->free_head = 0;
    w->body_end = 0;
    w->body_count = 0;
}

tb_rigid_world *tb_rigid_world_create(const tb_rigid_world_def *def)
{
    tb_rigid_world_def d = def ? *def : tb_rigid_world_def_default();
    if (d.body_capacity < 1 || d.body_capacity > TB_RIGID_MAX_BODIES) return NULL;
    if (d.contact_capacity < 0 || d.contact_capacity > 64 * TB_RIGID_MAX_BODIES) return NULL;
    if (!tb_v3_finite(d.gravity) || !restitution_ok(d.restitution) || !friction_ok(d.friction) ||
        !iterations_ok(d.iterations))
        return NULL;
    if (d.contact_capacity == 0) d.contact_capacity = 12 * d.body_capacity + 512; /* tower: 357 at most, pile 1000: 4400 */

    tb_rigid_world *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->gravity = d.gravity;
    w->restitution = d.restitution;
    w->friction = d.friction;
    w->iterations = d.iterations;
    w->capacity = d.body_capacity;
    w->contact_capacity = d.contact_capacity;
    w->pair_capacity = 16 * d.body_capacity;

    size_t cap = (size_t)d.body_capacity, ccap = (size_t)d.contact_capacity;
    w->bodies = calloc(cap, sizeof *w->bodies);
    w->cache = calloc(ccap, sizeof *w->cache);
    w->cache_next = calloc(ccap, sizeof *w->cache_next);
    tb_broad_phase_size(&w->broad_phase, d.body_capacity);
    if (!w->bodies || !w->cache || !w->cache_next ||
        tb_constraint_graph_init(&w->graph, d.contact_capacity) != TB_PHYS_OK ||
        !(w->own_scratch = tb_rigid_scratch_create()) || tb_rigid__scratch_fit(w->own_scratch, w) != TB_PHYS_OK) {
        tb_rigid_world_destroy(w);
        return NULL;
    }
    w->scratch = w->own_scratch;
    tb_rigid__attach(w);
    reset_free_list(w);
    return w;
}

void tb_rigid_world_destroy(tb_rigid_world *w)
{
    if (!w) return;
    tb_rigid_scratch_destroy(w->own_scratch);
    free(w->bodies);
    free(w->cache);
    free(w->cache_next);
    tb_constraint_graph_free(&w->graph);
    free(w);
}

int tb_rigid_world_use_scratch(tb_rigid_world *w, tb_rigid_scratch *s)
{
    assert(w);
    if (s == w->scratch) return TB_PHYS_OK;
    tb_rigid_scratch *own = NULL;
    if (!s) {
        own = tb_rigid_scratch_create();
        if (!own) return TB_PHYS_ERR_NO_MEMORY;
        s = own;
    }
    if (tb_rigid__scratch_fit(s, w) != TB_PHYS_OK) {
        tb_rigid_scratch_destroy(own);
        return TB_PHYS_ERR_NO_MEMORY;
    }
    tb_rigid_scratch_destroy(w->own_scratch);
    w->own_scratch = own;
    w->scratch = s;
    /* the last step's contacts and groups stay with the old scratch: none to report */
    w->contact_count = 0;
    tb_constraint_graph_reset(&w->graph);
    tb_rigid__attach(w);
    return TB_PHYS_OK;
}

void tb_rigid_world_clear(tb_rigid_world *w)
{
    assert(w);
    tb_rigid__drop_all_grabs(w);
    reset_free_list(w);
    w->plane_count = 0;
    w->cache_count = 0;
    w->contact_count = 0;
    w->pair_count = 0;
    tb_constraint_graph_reset(&w->graph);
}

int tb_rigid_world_add_plane(tb_rigid_world *w, tb_vec3 normal, float offset)
{
    assert(w);
    if (!tb_v3_finite(normal) || !isfinite(offset) || tb_v3_len_sq(normal) < 1e-12f) return TB_PHYS_ERR_INVALID;
    if (w->plane_count == TB_RIGID_MAX_PLANES) return TB_PHYS_ERR_FULL;
    w->plane_normal[w->plane_count] = tb_v3_norm(normal);
    w->plane_offset[w->plane_count] = offset;
    tb_rigid_world_wake_all(w);
    return w->plane_count++;
}

/* ---- parameters --------------------------------------------------------------------- */

int tb_rigid_world_set_restitution(tb_rigid_world *w, float restitution)
{
    assert(w);
    if (!restitution_ok(restitution)) return TB_PHYS_ERR_RANGE;
    w->restitution = restitution;
    tb_rigid_world_wake_all(w);
    return TB_PHYS_OK;
}

int tb_rigid_world_set_friction(tb_rigid_world *w, float friction)
{
    assert(w);
    if (!friction_ok(friction)) return TB_PHYS_ERR_RANGE;
    w->friction = friction;
    tb_rigid_world_wake_all(w);
    return TB_PHYS_OK;
}

int tb_rigid_world_set_iterations(tb_rigid_world *w, int iterations)
{
    assert(w);
    if (!iterations_ok(iterations)) return TB_PHYS_ERR_RANGE;
    w->iterations = iterations;
    return TB_PHYS_OK;
}

float tb_rigid_world_restitution(const tb_rigid_world *w) { return w->restitution; }
float tb_rigid_world_friction(const tb_rigid_world *w) { return w->friction; }
int tb_rigid_world_iterations(const tb_rigid_world *w) { return w->iterations; }

void tb_rigid_world_wake_all(tb_rigid_world *w)
{
    assert(w);
    for (int i = 0; i < w->body_end; i++)
        if (w->bodies[i].alive) tb_body_wake(&w->bodies[i]);
}

/* ---- queries -------------------------------------------------------------------------- */

double tb_rigid_world_time(const tb_rigid_world *w) { return w->time; }
uint64_t tb_rigid_world_step_count(const tb_rigid_world *w) { return w->steps; }
uint64_t tb_rigid_world_idle_steps(const tb_rigid_world *w) { return w->idle_steps; }
int tb_rigid_world_body_count(const tb_rigid_world *w) { return w->body_count; }
int tb_rigid_world_body_capacity(const tb_rigid_world *w) { return w->capacity; }

int tb_rigid_world_awake_count(const tb_rigid_world *w)
{
    int n = 0;
    for (int i = 0; i < w->body_end; i++) n += w->bodies[i].alive && !w->bodies[i].sleeping;
    return n;
}

void tb_rigid_world_get_stats(const tb_rigid_world *w, tb_rigid_world_stats *out)
{
    assert(w && out);
    out->bodies = w->body_count;
    out->awake = tb_rigid_world_awake_count(w);
    out->pairs = w->pair_count;
    out->contacts = w->contact_count;
    out->solver_groups = w->graph.group_count;
    out->overflow_contacts = w->graph.overflow_count;
    out->contacts_dropped = w->contacts_dropped;
    out->pairs_dropped = w->broad_phase.pairs_dropped;
    out->idle_steps = w->idle_steps;
}

int tb_rigid_world_next_body(const tb_rigid_world *w, int after)
{
    assert(w);
    for (int i = after < 0 ? 0 : after + 1; i < w->body_end; i++)
        if (w->bodies[i].alive) return i;
    return -1;
}

int tb_rigid_world_contact_count(const tb_rigid_world *w) { return w->contact_count; }

int tb_rigid_world_get_contacts(const tb_rigid_world *w, tb_rigid_contact_info *out, int cap)
{
    assert(w);
    if (cap < 0 || (cap > 0 && !out)) return TB_PHYS_ERR_INVALID;
    if (!tb_rigid__attached(w)) return 0; /* a shared scratch holds another world's step now */
    int n = w->contact_count < cap ? w->contact_count : cap;
    for (int i = 0; i < n; i++) {
        out[i].point = w->points[i].point;
        out[i].normal = w->contacts[i].n;
        out[i].separation = w->points[i].separation;
        out[i].normal_impulse = w->contacts[i].jn;
        out[i].body_a = w->points[i].body_a;
        out[i].body_b = w->points[i].body_b;
    }
    return n;
}

/* Drops cached impulses that involve body id, waking the bodies it touched. */
void tb_rigid_world_forget_body_contacts(tb_rigid_world *w, int id)
{
    for (int i = 0; i < w->cache_count; i++) {
        tb_cache_entry *e = &w->cache[i];
        uint32_t lo = e->key >> 16, hi = e->key & 0xFFFFu;
        if (lo != (uint32_t)id && hi != (uint32_t)id) continue;
        e->jn = 0.0f;
        e->friction = tb_v3_zero();
        uint32_t other = lo == (uint32_t)id ? hi : lo;
        if (other < TB_PLANE_KEY_BASE && (int)other < w->capacity && w->bodies[other].alive)
            tb_body_wake(&w->bodies[other]);
    }
}

/* ---- validation (tests) ------------------------------------------------------------- */

const char *tb_rigid_world_validate(const tb_rigid_world *w)
{
    int alive = 0, end = 0;
    for (int i = 0; i < w->capacity; i++) {
        const tb_body *b = &w->bodies[i];
        if (!b->alive) continue;
        alive++;
        end = i + 1;
        if (!tb_v3_finite(b->position) || !tb_q_finite(b->rotation) || !tb_v3_finite(b->linear_velocity) ||
            !tb_v3_finite(b->angular_velocity))
            return "body state not finite";
        if (fabsf(tb_q_dot(b->rotation, b->rotation) - 1.0f) > 1e-4f) return "rotation not unit";
        if (b->sleeping && (tb_v3_len_sq(b->linear_velocity) > 0.0f || tb_v3_len_sq(b->angular_velocity) > 0.0f))
            return "sleeping body moves";
    }
    if (alive != w->body_count) return "body count";
    if (end != w->body_end) return "body end";
    int free_slots = 0;
    for (int i = w->free_head; i != -1; i = w->bodies[i].next_free) {
        if (i < 0 || i >= w->capacity || w->bodies[i].alive) return "free list";
        if (++free_slots > w->capacity) return "free list loops";
    }
    if (free_slots != w->capacity - alive) return "free list length";
    for (int i = 1; i < w->cache_count; i++)
        if (w->cache[i - 1].key > w->cache[i].key) return "cache not sorted";
    if (!tb_rigid__attached(w)) return NULL; /* the contacts and groups are another world's now */
    for (int i = 0; i < w->contact_count; i++) {
        const tb_contact_point *p = &w->points[i];
        if (!tb_rigid_world_body_valid(w, p->body_b) || (p->body_a >= 0 && !tb_rigid_world_body_valid(w, p->body_a)))
            return "contact with a dead body";
        if (!(w->contacts[i].jn >= 0.0f) || !isfinite(w->contacts[i].jt1) || !isfinite(w->contacts[i].jt2))
            return "contact impulse";
        if (i > 0 && (p->body_a >= 0) == (w->points[i - 1].body_a >= 0) && w->points[i - 1].key > p->key)
            return "contacts not sorted";
    }
    for (int g = 0; g < w->graph.group_count; g++) {
        const tb_contact_wide *group = &w->graph.groups[g];
        for (int a = 0; a < TB_LANES; a++)
            for (int b = a + 1; b < TB_LANES; b++) {
                const int32_t sa[2] = {group->sa[a], group->sb[a]}, sb[2] = {group->sa[b], group->sb[b]};
                for (int x = 0; x < 2; x++)
                    for (int y = 0; y < 2; y++)
                        if (sa[x] != 0 && sa[x] == sb[y]) return "two lanes share an awake body";
            }
    }
    return NULL;
}

/* ---- the step ----------------------------------------------------------------------------- */

TB_HOT_CLONES static void integrate_velocities(tb_rigid_world *w, float dt)
{
    const float linear_keep = 1.0f / (1.0f + TB_LINEAR_DAMPING * dt);
    const float box_keep = 1.0f / (1.0f + TB_BOX_ANGULAR_DAMPING * dt);
    const float sphere_keep = 1.0f / (1.0f + TB_SPHERE_ANGULAR_DAMPING * dt);
    for (int i = 0; i < w->body_end; i++) {
        tb_body *b = &w->bodies[i];
        if (!b->alive || b->sleeping) continue;
        b->linear_velocity = tb_v3_scale(tb_v3_mad(b->linear_velocity, w->gravity, dt), linear_keep);
        tb_vec3 av = tb_v3_scale(b->angular_velocity, b->shape == TB_RIGID_BOX ? box_keep : sphere_keep);
        float speed = tb_v3_len(av);
        if (speed > TB_MAX_ANGULAR_SPEED) av = tb_v3_scale(av, TB_MAX_ANGULAR_SPEED / speed);
        b->angular_velocity = av;
    }
}

/* Awake bodies get solver slots 1..n in id order; sleeping bodies share the
 * static slot 0. World inverse inertia I^-1 = R diag(inv_inertia) R^T.
 * Returns whether an awake sphere is among them (apply_rolling_resistance). */
TB_HOT_CLONES static bool build_solver_bodies(tb_rigid_world *w)
{
    int n = 1;
    bool awake_sphere = false;
    memset(&w->solver_bodies[0], 0, sizeof w->solver_bodies[0]);
    memset(&w->inv_inertia_world[0], 0, sizeof w->inv_inertia_world[0]);
    w->inv_mass[0] = 0.0f;
    for (int i = 0; i < w->body_end; i++) {
        tb_body *b = &w->bodies[i];
        if (!b->alive || b->sleeping) { w->solver_index[i] = 0; continue; }
        w->solver_index[i] = n;
        w->solver_bodies[n].v = b->linear_velocity;
        w->solver_bodies[n].w = b->angular_velocity;
        w->inv_mass[n] = b->inv_mass;
        if (b->shape == TB_RIGID_SPHERE) {
            w->inv_inertia_world[n] = tb_m3_diag(b->inv_inertia);
            awake_sphere = true;
        } else {
            const tb_vec3 *ax = w->frames[i].box.axis;
            tb_vec3 d = b->inv_inertia;
            tb_mat3 m;
            /* (R D R^T)_rc = sum_k ax_k[r] d_k ax_k[c] with ax_k the columns of R */
            for (int r = 0; r < 3; r++) {
                float xr = tb_v3_comp(ax[0], r) * d.x, yr = tb_v3_comp(ax[1], r) * d.y, zr = tb_v3_comp(ax[2], r) * d.z;
                m.r[r] = tb_v3_add(tb_v3_add(tb_v3_scale(ax[0], xr), tb_v3_scale(ax[1], yr)), tb_v3_scale(ax[2], zr));
            }
            w->inv_inertia_world[n] = m;
        }
        n++;
    }
    return awake_sphere;
}

TB_HOT_CLONES static void integrate_positions(tb_rigid_world *w, float dt)
{
    for (int i = 0; i < w->body_end; i++) {
        tb_body *b = &w->bodies[i];
        if (!b->alive || b->sleeping) continue;
        int s = w->solver_index[i];
        if (s > 0) {
            b->linear_velocity = w->solver_bodies[s].v;
            b->angular_velocity = w->solver_bodies[s].w;
        }
        b->position = tb_v3_mad(b->position, b->linear_velocity, dt);
        b->rotation = tb_q_integrate(b->rotation, b->angular_velocity, dt);
        if (tb_body_is_slow(b)) b->sleep_time += dt;
        else b->sleep_time = 0.0f;
        if (b->sleep_time > TB_SLEEP_TIME) {
            b->sleeping = 1;
            b->linear_velocity = b->angular_velocity = tb_v3_zero();
        }
    }
}

/* Rolling resistance: a sphere resting on something loses spin. Without it
 * the tower's heavy ball rolled on for up to 19 s after a knock-down (only
 * the 0.7/s angular damping slowed it), never slow enough to sleep, and
 * every plank it touched was woken again (the wake rule), so the last plank
 * slept anywhere up to 17 s after the launch instead of by 10 s.
 *
 * As Box2D's rolling resistance: the contact may exert a torque of at most
 * c_rr r |F_n| against the spin, i.e. per step an angular impulse of at most
 * c_rr r jn, where jn is the contact's accumulated normal impulse. For a
 * solid sphere I^-1 = 5 / (2 m r^2) on every axis, so the spin drops by
 * dw = c_rr r jn I^-1 (at most to zero). Applied once after the solve, to
 * the velocities integrate_positions is about to use; friction then turns
 * the lost spin into lost speed at the next step. c_rr = 0.02 (a hard ball
 * on felt): a ball rolling at 0.3 m/s on the floor stops in about a second. */
#define TB_ROLLING_RESISTANCE 0.02f

/* An awake sphere: the only kind of body whose spin this changes. */
static bool is_awake_sphere(const tb_rigid_world *w, int id)
{
    return id >= 0 && w->bodies[id].shape == TB_RIGID_SPHERE && w->solver_index[id] > 0;
}

/* Manifold by manifold (its points share both bodies): one without an awake
 * sphere is passed over whole; the others' contacts in contact order, as
 * a pass over every contact would take them. */
static void apply_rolling_resistance(tb_rigid_world *w)
{
    for (int m = 0; m < w->manifold_count; m++) {
        const int first = w->manifold_start[m], end = w->manifold_start[m + 1];
        const int ids[2] = {w->points[first].body_a, w->points[first].body_b};
        const bool sphere[2] = {is_awake_sphere(w, ids[0]), is_awake_sphere(w, ids[1])};
        if (!sphere[0] && !sphere[1]) continue;
        for (int i = first; i < end; i++) {
            float jn = w->contacts[i].jn;
            if (!(jn > 0.0f)) continue;
            for (int k = 0; k < 2; k++) {
                if (!sphere[k]) continue;
                const tb_body *b = &w->bodies[ids[k]];
                tb_vec3 *spin = &w->solver_bodies[w->solver_index[ids[k]]].w;
                float speed = tb_v3_len(*spin), dw = TB_ROLLING_RESISTANCE * b->radius * jn * b->inv_inertia.x;
                if (speed <= 0.0f) continue;
                *spin = dw >= speed ? tb_v3_zero() : tb_v3_scale(*spin, (speed - dw) / speed);
            }
        }
    }
}

static bool all_asleep(const tb_rigid_world *w)
{
    for (int i = 0; i < w->body_end; i++)
        if (w->bodies[i].alive && !w->bodies[i].sleeping) return false;
    return true;
}

/* Every live body asleep (or none): the full step would find no pair (the
 * broad phase skips two sleeping bodies), no plane contact (awake bodies
 * only), solve nothing, move nothing, and leave an empty cache. Set exactly
 * that and skip the pipeline: the result is bit-identical to the full step.
 * The scratch frames are left as they were; nothing reads them before the
 * next full step recomputes them. Any wake (tb_body_wake via throw, poke,
 * grab, parameter change, reset) makes the next step a full one. */
static void step_idle(tb_rigid_world *w, float dt)
{
    w->broad_phase.pairs_dropped = 0;
    w->pair_count = 0;
    w->contact_count = 0;
    w->contacts_dropped = 0;
    tb_constraint_graph_reset(&w->graph);
    w->cache_count = 0;
    w->time += dt;
    w->steps++;
    w->idle_steps++;
}

int tb_rigid_world_step(tb_rigid_world *w, float dt)
{
    assert(w);
    if (!(isfinite(dt) && dt > 0.0f && dt <= TB_RIGID_DT_MAX)) return TB_PHYS_ERR_RANGE;
    tb_rigid__apply_grabs(w); /* may wake what it holds: before the idle check */

    if (!w->idle_path_off && all_asleep(w)) {
        step_idle(w, dt);
        return TB_PHYS_OK;
    }
    if (!tb_rigid__attached(w)) tb_rigid__attach(w);
    integrate_velocities(w, dt);
    for (int i = 0; i < w->body_end; i++)
        if (w->bodies[i].alive) tb_body_compute_frame(&w->bodies[i], &w->frames[i], dt, TB_SPECULATIVE_MARGIN);
    w->broad_phase.pairs_dropped = 0;
    tb_broad_phase_update_pairs(w);
    tb_manifold_collide(w);
    const bool awake_sphere = build_solver_bodies(w);
    tb_contact_solver_begin(w);
    tb_constraint_graph_build(w);
    tb_contact_solver_prepare(w, dt);
    tb_manifold_warm_start(w);
    tb_contact_solver_warm_apply(w);
    tb_contact_solver_solve(w);
    tb_manifold_store_cache(w);
    if (awake_sphere) apply_rolling_resistance(w); /* else it would change nothing */
    integrate_positions(w, dt);

    w->time += dt;
    w->steps++;
    return TB_PHYS_OK;
}
