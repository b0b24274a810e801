/* soft_solver.c: one step of the dough.
 *
 * Per substep (the seed's order; it decides the feel):
 *   integrate (damped) -> grabs pull -> press pushes -> edges (soft, Gauss-
 *   Seidel) -> global volume -> shape memory -> size limit -> velocities.
 * Per step: plasticity (rest lengths, then rest shape, follow the current
 * shape), Laplacian smoothing while someone is touching it (so a dough left
 * alone keeps exactly its shape), recentering.
 *
 * Why the dough does not snap back: the targets it springs toward (edge rest
 * lengths, rest shape) keep moving to where the dough is, and when the last
 * grab or a press ends they are set to the current shape outright (commit).
 *
 * Rates are per second, so they do not depend on the step or substep count:
 * damping, shape memory and the grabs' pull move 1 - exp(-rate dt) of the way
 * per interval dt; the plastic flows and smoothing, once per step, move
 * min(1, rate dt) of the way, as the seed's per-frame updates do. The edge
 * stiffness is given as the seed means it, per substep at its 300 substeps per
 * second (60 fps x 5); our substeps are sdt long, so the error left after one
 * second must match: (1 - k)^(300) = (1 - k_sub)^(1/sdt), i.e.
 * k_sub = 1 - (1 - k)^(300 sdt). */
#include <math.h>
#include <string.h>

#include "physics/simd.h"
#include "physics/soft_internal.h"

#define DAMPING_RATE 5.0f      /* 1/s: velocity lost to the dough's stickiness */
#define GRAB_RATE 60.0f        /* 1/s: how fast a grab pulls its vertices to their goals */
#define MEMORY_RATE 4.0f       /* 1/s: shape memory toward the rest shape */
#define PLASTIC_YIELD 0.015f   /* strain above which rest lengths flow */
#define PLASTIC_RATE 40.0f     /* 1/s: rest length toward current length */
#define MEMORY_PLASTIC_RATE 12.0f /* 1/s: rest shape toward current shape */
#define SMOOTH_RATE 3.0f       /* 1/s: Laplacian smoothing while touched */
#define MIN_STRETCH 0.25f      /* rest lengths stop at a quarter of their original */
#define SEED_SUBSTEP_RATE 300.0f

static inline tb_vec3 vload(const float *p, int i) { return tb_v3(p[3 * i], p[3 * i + 1], p[3 * i + 2]); }
static inline void vstore(float *p, int i, tb_vec3 v) { p[3 * i] = v.x; p[3 * i + 1] = v.y; p[3 * i + 2] = v.z; }

/* Volume gradient, per vertex, from its incident triangles: over triangle
 * (a, b, c) of the signed volume V = 1/6 sum a . (b x c) (tetrahedra against
 * the origin), dV/da = (b x c) / 6, and cyclically. So with G_i the sum of
 * (b x c) over i's triangles, each written (i, b, c) in winding order,
 * grad_i = G_i / 6; and since sum_i p_i . G_i counts every triangle's
 * a . (b x c) three times, V = sum_i p_i . G_i / 18. Walking vertices instead
 * of triangles keeps each G_i in registers (no scattered adds). Returns V. */
static float volume_and_gradient(const tb_soft_world *world, const float *pos, float *g)
{
    float sum = 0.0f;
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 acc = tb_v3_zero();
        for (int m = world->corner_start[i]; m < world->corner_start[i + 1]; m++) {
            const uint16_t *bc = &world->corner_pairs[2 * m];
            acc = tb_v3_add(acc, tb_v3_cross(vload(pos, bc[0]), vload(pos, bc[1])));
        }
        if (g) vstore(g, i, acc);
        sum += tb_v3_dot(vload(pos, i), acc);
    }
    return sum / 18.0f;
}

float tb_soft__volume(const tb_soft_world *world, const float *pos)
{
    return volume_and_gradient(world, pos, NULL);
}

/* A point at most TB_SOFT_MAX_RADIUS from the centre. */
static tb_vec3 limit_radius(tb_vec3 p)
{
    float r2 = tb_v3_len_sq(p);
    if (r2 <= TB_SOFT_MAX_RADIUS * TB_SOFT_MAX_RADIUS) return p;
    return tb_v3_scale(p, TB_SOFT_MAX_RADIUS / sqrtf(r2));
}

/* Make the current shape the one the dough rests in: rest lengths (within
 * their limits) and rest shape become the current ones, velocities zero. */
void tb_soft__commit(tb_soft_world *world)
{
    tb_soft_state *st = &world->state;
    for (int e = 0; e < TB_SOFT_E; e++) {
        tb_vec3 a = vload(st->pos, world->edges[2 * e]), b = vload(st->pos, world->edges[2 * e + 1]);
        float len = tb_v3_dist(a, b), orig = world->original_len[e];
        st->rest_len[e] = tb_clampf(len, MIN_STRETCH * orig, TB_SOFT_MAX_STRETCH * orig);
    }
    for (int i = 0; i < TB_SOFT_V; i++) vstore(st->rest_pos, i, limit_radius(vload(st->pos, i)));
    memset(st->vel, 0, sizeof st->vel);
    if (!st->volume_on) st->rest_volume = tb_soft__volume(world, st->pos);
}

/* The per-float loops over the vertex arrays (xyz interleaved) run four
 * floats at a time in the SIMD layer's tb_f4 (simd.h): every float gets its
 * own operations, so grouping changes no bit. */
_Static_assert((3 * TB_SOFT_V) % 4 == 0, "the vertex arrays are whole tb_f4");

static void integrate(tb_soft_state *st, float *prev, float sdt, float damp)
{
    const tb_f4 d = tb_f4_splat(damp), h = tb_f4_splat(sdt);
    for (int k = 0; k < 3 * TB_SOFT_V; k += 4) {
        tb_f4 p = tb_f4_load(&st->pos[k]), v = tb_f4_load(&st->vel[k]) * d;
        tb_f4_store(&prev[k], p);
        tb_f4_store(&st->vel[k], v);
        tb_f4_store(&st->pos[k], p + v * h);
    }
}

/* Each grab pulls its vertices toward (target + their offset), weighted by
 * how close to the start point they were. The target is kept inside the
 * size limit: you cannot pull the dough farther than it may go. */
static void apply_grabs(tb_soft_state *st, float pull)
{
    for (int g = 0; g < TB_SOFT_MAX_GRABS; g++) {
        const tb_soft_grab *gr = &st->grabs[g];
        if (!gr->active) continue;
        tb_vec3 target = limit_radius(gr->target);
        for (int m = 0; m < gr->count; m++) {
            int i = gr->vertex[m];
            tb_vec3 goal = tb_v3_add(target, vload(gr->offset, m));
            tb_vec3 p = vload(st->pos, i);
            vstore(st->pos, i, tb_v3_mad(p, tb_v3_sub(goal, p), pull * gr->weight[m]));
        }
    }
}

/* The press is a ball of radius TB_SOFT_PRESS_RADIUS that starts touching the
 * surface at press_point and sinks `depth` along the inward normal over the
 * first two thirds of the press; vertices inside it move to its surface. */
static void apply_press(tb_soft_state *st)
{
    float sink = st->press_depth * tb_minf(1.0f, st->press_time / (TB_SOFT_PRESS_TIME * (2.0f / 3.0f)));
    tb_vec3 centre = tb_v3_mad(st->press_point, st->press_normal, TB_SOFT_PRESS_RADIUS - sink);
    const float r = TB_SOFT_PRESS_RADIUS;
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 d = tb_v3_sub(vload(st->pos, i), centre);
        float d2 = tb_v3_len_sq(d);
        if (d2 >= r * r) continue;
        float len = sqrtf(d2);
        tb_vec3 dir = len > 1e-6f ? tb_v3_scale(d, 1.0f / len) : tb_v3_neg(st->press_normal);
        vstore(st->pos, i, tb_v3_mad(centre, dir, r));
    }
}

/* Soft distance constraints, Gauss-Seidel, equal masses: each end moves half
 * of k (len - rest) along the edge. Left under-solved on purpose: the
 * unsolved stretch is the dough's softness (seed). */
static void solve_edges(tb_soft_world *world, float k)
{
    float *x = world->state.pos;
    const float *rest = world->state.rest_len;
    const uint16_t *ed = world->edges;
    float half_k = 0.5f * k;
    for (int e = 0; e < TB_SOFT_E; e++) {
        float *pa = &x[3 * ed[2 * e]], *pb = &x[3 * ed[2 * e + 1]];
        /* read both ends once (the compiler cannot rule out aliasing and would reload) */
        float ax = pa[0], ay = pa[1], az = pa[2], bx = pb[0], by = pb[1], bz = pb[2];
        float dx = bx - ax, dy = by - ay, dz = bz - az;
        float d2 = dx * dx + dy * dy + dz * dz;
        if (d2 < 1e-12f) continue;
        float d = sqrtf(d2);
        float f = half_k * (d - rest[e]) / d;
        pa[0] = ax + dx * f;
        pa[1] = ay + dy * f;
        pa[2] = az + dz * f;
        pb[0] = bx - dx * f;
        pb[1] = by - dy * f;
        pb[2] = bz - dz * f;
    }
}

/* One global volume constraint C = V - V0 (PBD, zero compliance). With
 * per-vertex weights w_i (inverse masses), lambda = -C / sum w_i |grad_i|^2
 * and each vertex moves lambda w_i grad_i (gradient: volume_and_gradient).
 *
 * Weights are 1 except during a press: then the side under the finger is
 * held (w = 0 at the press point) and the far side is free (w = 1 at the
 * opposite pole), w = ((1 - n . u) / 2)^2 with n the press normal and u the
 * vertex direction. The displaced volume therefore goes out the far side, as
 * the seed wants ("press one side and the other side swells"); with equal
 * weights it would spread evenly and recentering would cancel it there. */
static void solve_volume(tb_soft_world *world, int substep)
{
    tb_soft_state *st = &world->state;
    float *g = world->grad; /* holds G_i = 6 grad_i */
    float *w = world->weight;
    float v;
    if (substep == 0) {
        /* Exact volume and gradient once per step; the later substeps use
         * this gradient and the first-order change V + grad . (p - p_ref),
         * which is off by the square of a substep's motion (micrometres). */
        v = volume_and_gradient(world, st->pos, g);
        world->volume_ref = v;
        memcpy(world->volume_ref_pos, st->pos, sizeof world->volume_ref_pos);
        if (st->press_active) {
            for (int i = 0; i < TB_SOFT_V; i++) {
                tb_vec3 u = tb_v3_norm(vload(st->pos, i));
                float f = 0.5f * (1.0f - tb_v3_dot(st->press_normal, u));
                w[i] = f * f;
            }
        } else {
            for (int i = 0; i < TB_SOFT_V; i++) w[i] = 1.0f;
        }
        float sum = 0.0f;
        for (int i = 0; i < TB_SOFT_V; i++) sum += w[i] * tb_v3_len_sq(vload(g, i));
        world->volume_denominator = sum * (1.0f / 36.0f);
    } else {
        float dv = 0.0f;
        for (int k = 0; k < 3 * TB_SOFT_V; k++) dv += g[k] * (st->pos[k] - world->volume_ref_pos[k]);
        v = world->volume_ref + dv * (1.0f / 6.0f);
    }
    if (world->volume_denominator < 1e-12f) return;
    float s = -(v - st->rest_volume) / world->volume_denominator / 6.0f;
    for (int i = 0; i < TB_SOFT_V; i++) {
        float f = s * w[i];
        st->pos[3 * i] += f * g[3 * i];
        st->pos[3 * i + 1] += f * g[3 * i + 1];
        st->pos[3 * i + 2] += f * g[3 * i + 2];
    }
}

static void shape_memory_and_limit(tb_soft_state *st, float mem)
{
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 p = vload(st->pos, i);
        p = tb_v3_mad(p, tb_v3_sub(vload(st->rest_pos, i), p), mem);
        /* Soft size limit: halve the excess beyond the radius each substep. */
        float r2 = tb_v3_len_sq(p);
        if (r2 > TB_SOFT_MAX_RADIUS * TB_SOFT_MAX_RADIUS) {
            float r = sqrtf(r2);
            p = tb_v3_scale(p, (TB_SOFT_MAX_RADIUS + 0.5f * (r - TB_SOFT_MAX_RADIUS)) / r);
        }
        vstore(st->pos, i, p);
    }
}

static void update_velocities(tb_soft_state *st, const float *prev, float inv_sdt)
{
    const tb_f4 inv = tb_f4_splat(inv_sdt);
    for (int k = 0; k < 3 * TB_SOFT_V; k += 4)
        tb_f4_store(&st->vel[k], (tb_f4_load(&st->pos[k]) - tb_f4_load(&prev[k])) * inv);
}

static void plasticity(tb_soft_world *world, float dt)
{
    tb_soft_state *st = &world->state;
    float flow = tb_minf(1.0f, PLASTIC_RATE * dt);
    for (int e = 0; e < TB_SOFT_E; e++) {
        tb_vec3 a = vload(st->pos, world->edges[2 * e]), b = vload(st->pos, world->edges[2 * e + 1]);
        float len = tb_v3_dist(a, b), rest = st->rest_len[e], orig = world->original_len[e];
        if (fabsf(len - rest) > PLASTIC_YIELD * rest) {
            rest += (len - rest) * flow;
            st->rest_len[e] = tb_clampf(rest, MIN_STRETCH * orig, TB_SOFT_MAX_STRETCH * orig);
        }
    }
    float follow = tb_minf(1.0f, MEMORY_PLASTIC_RATE * dt);
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 r = vload(st->rest_pos, i);
        r = tb_v3_mad(r, tb_v3_sub(vload(st->pos, i), r), follow);
        vstore(st->rest_pos, i, limit_radius(r));
    }
}

/* Pull each vertex a little toward the mean of its neighbours (Jacobi, so
 * the result does not depend on vertex order): no paper-like creases. */
static void smooth(tb_soft_world *world, float amount)
{
    tb_soft_state *st = &world->state;
    for (int i = 0; i < TB_SOFT_V; i++) {
        int s = world->neighbour_start[i], e = world->neighbour_start[i + 1];
        tb_vec3 sum = tb_v3_zero();
        for (int m = s; m < e; m++) sum = tb_v3_add(sum, vload(st->pos, world->neighbours[m]));
        tb_vec3 p = vload(st->pos, i);
        vstore(world->smooth, i, tb_v3_mad(p, tb_v3_sub(tb_v3_scale(sum, 1.0f / (float)(e - s)), p), amount));
    }
    memcpy(st->pos, world->smooth, sizeof world->smooth);
}

/* Keep the centre of mass (equal masses: the mean vertex) on the origin; the
 * rest shape moves with it so shape memory does not pull it back. */
static void recentre(tb_soft_state *st)
{
    double sx = 0.0, sy = 0.0, sz = 0.0;
    for (int i = 0; i < TB_SOFT_V; i++) {
        sx += st->pos[3 * i];
        sy += st->pos[3 * i + 1];
        sz += st->pos[3 * i + 2];
    }
    float cx = (float)(sx / TB_SOFT_V), cy = (float)(sy / TB_SOFT_V), cz = (float)(sz / TB_SOFT_V);
    for (int i = 0; i < TB_SOFT_V; i++) {
        st->pos[3 * i] -= cx;
        st->pos[3 * i + 1] -= cy;
        st->pos[3 * i + 2] -= cz;
        st->rest_pos[3 * i] -= cx;
        st->rest_pos[3 * i + 1] -= cy;
        st->rest_pos[3 * i + 2] -= cz;
    }
}

/* Sleep rule (soft.h): counts slow steps; the last one zeroes the velocities. */
static void update_sleep(tb_soft_state *st)
{
    const float limit = TB_SOFT_SLEEP_SPEED * TB_SOFT_SLEEP_SPEED;
    bool slow = st->grab_count == 0 && !st->press_active;
    for (int i = 0; i < TB_SOFT_V && slow; i++) {
        const float *v = &st->vel[3 * i];
        slow = v[0] * v[0] + v[1] * v[1] + v[2] * v[2] < limit;
    }
    st->sleep_steps = slow ? st->sleep_steps + 1 : 0;
    if (st->sleep_steps == TB_SOFT_SLEEP_STEPS) memset(st->vel, 0, sizeof st->vel);
}

void tb_soft__solve_step(tb_soft_world *world, float dt)
{
    tb_soft_state *st = &world->state;
    if (st->sleep_steps >= TB_SOFT_SLEEP_STEPS) {   /* asleep: nothing moves, only time passes */
        st->step_count++;
        world->idle_steps++;
        return;
    }
    dt = tb_clampf(dt, TB_SOFT_DT_MIN, TB_SOFT_DT_CLAMP_MAX); /* before any division by it */
    int n = st->substeps;
    float sdt = dt / (float)n, inv_sdt = 1.0f / sdt;
    float damp = tb_expf(-DAMPING_RATE * sdt); /* tb_libm.h: the same bits on every platform */
    float pull = 1.0f - tb_expf(-GRAB_RATE * sdt);
    float mem = 1.0f - tb_expf(-MEMORY_RATE * sdt);
    float k = st->stiffness >= 1.0f ? 1.0f : 1.0f - tb_powf(1.0f - st->stiffness, SEED_SUBSTEP_RATE * sdt);

    for (int s = 0; s < n; s++) {
        integrate(st, world->prev, sdt, damp);
        if (st->grab_count > 0) apply_grabs(st, pull);
        if (st->press_active) apply_press(st);
        solve_edges(world, k);
        if (st->volume_on) solve_volume(world, s);
        shape_memory_and_limit(st, mem);
        update_velocities(st, world->prev, inv_sdt);
    }
    if (st->plasticity) plasticity(world, dt);
    if (st->grab_count > 0 || st->press_active) smooth(world, tb_minf(1.0f, SMOOTH_RATE * dt));
    recentre(st);

    if (st->press_active) {
        st->press_time += dt;
        if (st->press_time >= TB_SOFT_PRESS_TIME) {
            st->press_active = 0;
            st->press_time = 0.0f;
            if (st->plasticity) tb_soft__commit(world);
        }
    }
    update_sleep(st);
    st->step_count++;
}
