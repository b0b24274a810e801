/* contact_solver.c: sequential impulses on contact points.
 *
 * Each contact has three rows: the normal n and two tangents t1, t2. For a
 * direction d, the relative velocity of b against a at the contact is
 *
 *     v_d = (vb + wb x rb - va - wa x ra) . d
 *         = (vb - va) . d + wb . (rb x d) - wa . (ra x d)
 *
 * and an impulse P = lambda d changes it by lambda K with
 *
 *     K = 1/ma + 1/mb + (ra x d) . Ia^-1 (ra x d) + (rb x d) . Ib^-1 (rb x d)
 *
 * (Ia^-1 the world inverse inertia). So the impulse that reaches a target
 * velocity is lambda = (target - v_d) / K: "effective mass" 1/K times the
 * velocity error. The arms r x d and Ia^-1 (r x d) do not change during the
 * step, so prepare() computes them once and the iterations are dot products
 * and multiply-adds.
 *
 * Sequential impulses clamp the ACCUMULATED impulse, not each increment:
 * normal >= 0 (contacts push, never pull), friction within the Coulomb cone
 * |jt| <= mu jn (per tangent, as in the seed). Friction is solved first in
 * each iteration, then the normal, so the normal row has the last word on
 * penetration.
 *
 * Normal target:
 *   sep > 0 (speculative): -sep/dt, close at most the gap this step;
 *   sep <= 0: Baumgarte, (0.2/dt) max(0, -sep - slop) pushes out a fifth of
 *             the penetration beyond the 4 mm slop per step;
 *   bouncing: if the closing speed vn0 exceeds 0.8 m/s and the contact would
 *             be reached this step, at least -e vn0.
 *
 * The iterations run on groups of four contacts with no awake body in
 * common (constraint_graph.c), one contact per SIMD lane, colour after
 * colour; the few contacts that fit no colour are solved one by one after
 * the groups. The arithmetic per lane is exactly that of solve_contact.
 */
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "physics/rigid_core.h"

static inline float effective_mass(float ima, float imb, tb_vec3 ra_d, tb_vec3 ia_d, tb_vec3 rb_d, tb_vec3 ib_d)
{
    float k = ima + imb + tb_v3_dot(ra_d, ia_d) + tb_v3_dot(rb_d, ib_d);
    return k > 1e-9f ? 1.0f / k : 0.0f;
}

/* Arms and effective mass of one side for the three directions; a static
 * side (slot 0: plane or sleeping body) contributes nothing. */
static inline void side_rows(tb_vec3 r, const tb_mat3 *inv_inertia, bool dynamic, tb_vec3 n, tb_vec3 t1, tb_vec3 t2,
                             tb_vec3 *r_n, tb_vec3 *r_t1, tb_vec3 *r_t2, tb_vec3 *i_n, tb_vec3 *i_t1, tb_vec3 *i_t2)
{
    if (!dynamic) {
        *r_n = *r_t1 = *r_t2 = *i_n = *i_t1 = *i_t2 = tb_v3_zero();
        return;
    }
    *r_n = tb_v3_cross(r, n);
    *r_t1 = tb_v3_cross(r, t1);
    *r_t2 = tb_v3_cross(r, t2);
    *i_n = tb_m3_mul_v3(*inv_inertia, *r_n);
    *i_t1 = tb_m3_mul_v3(*inv_inertia, *r_t1);
    *i_t2 = tb_m3_mul_v3(*inv_inertia, *r_t2);
}

/* Per manifold (the run of points sharing a pair key): the tangents, the
 * bodies and their inverse inertia are common; per point: arms, effective
 * masses and the target velocity. */
void tb_contact_solver_prepare(tb_rigid_world *w, float dt)
{
    const float inv_dt = 1.0f / dt;
    int i = 0;
    while (i < w->contact_count) {
        const tb_contact_point *first = &w->points[i];
        int end = i + 1;
        while (end < w->contact_count && w->points[end].key == first->key) end++;

        const tb_body *bb = &w->bodies[first->body_b];
        const tb_body *ba = first->body_a >= 0 ? &w->bodies[first->body_a] : NULL;
        int sa = ba ? w->solver_index[first->body_a] : 0;
        int sb = w->solver_index[first->body_b];
        tb_vec3 n = w->contacts[i].n;
        /* two tangents perpendicular to n (the seed's choice) */
        tb_vec3 t1 = fabsf(n.x) > 0.57f ? tb_v3_norm(tb_v3(n.y, -n.x, 0.0f)) : tb_v3_norm(tb_v3(0.0f, n.z, -n.y));
        tb_vec3 t2 = tb_v3_cross(n, t1);
        const tb_mat3 *ia = &w->inv_inertia_world[sa], *ib = &w->inv_inertia_world[sb];
        float ima = w->inv_mass[sa], imb = w->inv_mass[sb];
        const tb_solver_body *va = &w->solver_bodies[sa], *vb = &w->solver_bodies[sb];

        for (int k = i; k < end; k++) {
            tb_contact *c = &w->contacts[k];
            const tb_contact_point *p = &w->points[k];
            tb_vec3 ra = ba ? tb_v3_sub(p->point, ba->position) : tb_v3_zero();
            tb_vec3 rb = tb_v3_sub(p->point, bb->position);
            c->sa = sa;
            c->sb = sb;
            c->ima = ima;
            c->imb = imb;
            c->t1 = t1;
            c->t2 = t2;
            side_rows(ra, ia, sa != 0, n, t1, t2, &c->ra_n, &c->ra_t1, &c->ra_t2, &c->ia_n, &c->ia_t1, &c->ia_t2);
            side_rows(rb, ib, sb != 0, n, t1, t2, &c->rb_n, &c->rb_t1, &c->rb_t2, &c->ib_n, &c->ib_t1, &c->ib_t2);
            c->mass_n = effective_mass(ima, imb, c->ra_n, c->ia_n, c->rb_n, c->ib_n);
            c->mass_t1 = effective_mass(ima, imb, c->ra_t1, c->ia_t1, c->rb_t1, c->ib_t1);
            c->mass_t2 = effective_mass(ima, imb, c->ra_t2, c->ia_t2, c->rb_t2, c->ib_t2);

            /* Seed warning: the bounce decision uses the velocity BEFORE warm
             * starting (warm starting happens after every contact is
             * prepared). Read after it, the big support impulse already given
             * to a lower plank looks like a hard hit and the tower jumps. */
            float vn = tb_v3_dot(tb_v3_sub(vb->v, va->v), n) + tb_v3_dot(vb->w, c->rb_n) - tb_v3_dot(va->w, c->ra_n);
            float sep = p->separation;
            float target = sep > 0.0f ? -sep * inv_dt : TB_BAUMGARTE * inv_dt * tb_maxf(0.0f, -sep - TB_LINEAR_SLOP);
            if (vn < -TB_RESTITUTION_THRESHOLD && sep < -vn * dt) target = tb_maxf(target, -w->restitution * vn);
            c->target = target;
            c->jn = c->jt1 = c->jt2 = 0.0f;
        }
        i = end;
    }
}

void tb_contact_solver_warm_apply(tb_rigid_world *w, int index)
{
    tb_contact *c = &w->contacts[index];
    tb_solver_body *a = &w->solver_bodies[c->sa], *b = &w->solver_bodies[c->sb];
    tb_vec3 p = tb_v3_add(tb_v3_add(tb_v3_scale(c->n, c->jn), tb_v3_scale(c->t1, c->jt1)), tb_v3_scale(c->t2, c->jt2));
    tb_vec3 dwa = tb_v3_add(tb_v3_add(tb_v3_scale(c->ia_n, c->jn), tb_v3_scale(c->ia_t1, c->jt1)), tb_v3_scale(c->ia_t2, c->jt2));
    tb_vec3 dwb = tb_v3_add(tb_v3_add(tb_v3_scale(c->ib_n, c->jn), tb_v3_scale(c->ib_t1, c->jt1)), tb_v3_scale(c->ib_t2, c->jt2));
    a->v = tb_v3_mad(a->v, p, -c->ima);
    a->w = tb_v3_sub(a->w, dwa);
    b->v = tb_v3_mad(b->v, p, c->imb);
    b->w = tb_v3_add(b->w, dwb);
}

/* One row on velocities held in locals: relative velocity along d, then the
 * impulse increment dj applied to both bodies. */
#define ROW_VELOCITY(d, ra_d, rb_d) \
    (tb_v3_dot(tb_v3_sub(vb, va), (d)) + tb_v3_dot(wb, (rb_d)) - tb_v3_dot(wa, (ra_d)))

#define ROW_APPLY(d, ia_d, ib_d, dj)              \
    do {                                          \
        va = tb_v3_mad(va, (d), -(dj) * c->ima);  \
        wa = tb_v3_mad(wa, (ia_d), -(dj));        \
        vb = tb_v3_mad(vb, (d), (dj) * c->imb);   \
        wb = tb_v3_mad(wb, (ib_d), (dj));         \
    } while (0)

/* One contact, scalar: for contacts that fit no colour of the graph. The
 * velocities of both bodies are loaded once and stored back after the three
 * rows, so they stay in registers. */
static void solve_contact(tb_solver_body *bodies, tb_contact *c, float mu)
{
    tb_solver_body *a = &bodies[c->sa], *b = &bodies[c->sb];
    tb_vec3 va = a->v, wa = a->w, vb = b->v, wb = b->w;
    float max_friction = mu * c->jn;

    float vt = ROW_VELOCITY(c->t1, c->ra_t1, c->rb_t1);
    float j = tb_clampf(c->jt1 - vt * c->mass_t1, -max_friction, max_friction);
    float dj = j - c->jt1;
    ROW_APPLY(c->t1, c->ia_t1, c->ib_t1, dj);
    c->jt1 = j;

    vt = ROW_VELOCITY(c->t2, c->ra_t2, c->rb_t2);
    j = tb_clampf(c->jt2 - vt * c->mass_t2, -max_friction, max_friction);
    dj = j - c->jt2;
    ROW_APPLY(c->t2, c->ia_t2, c->ib_t2, dj);
    c->jt2 = j;

    float vn = ROW_VELOCITY(c->n, c->ra_n, c->rb_n);
    j = tb_maxf(0.0f, c->jn + (c->target - vn) * c->mass_n);
    dj = j - c->jn;
    ROW_APPLY(c->n, c->ia_n, c->ib_n, dj);
    c->jn = j;

    a->v = va;
    a->w = wa;
    b->v = vb;
    b->w = wb;
}

/* ---- four lanes at once -------------------------------------------------------------- */

static inline tb_f4 f4_splat(float x) { return (tb_f4){x, x, x, x}; }
/* min/max exactly as a < b ? a : b and a > b ? a : b per lane (b on ties of
 * zeros and on NaN). SSE's minps/maxps are defined that way, one instruction
 * instead of compare, and, andnot, or. */
#if defined(__SSE__)
static inline tb_f4 f4_min(tb_f4 a, tb_f4 b) { return (tb_f4)_mm_min_ps((__m128)a, (__m128)b); }
static inline tb_f4 f4_max(tb_f4 a, tb_f4 b) { return (tb_f4)_mm_max_ps((__m128)a, (__m128)b); }
#else
static inline tb_f4 f4_select(tb_i4 mask, tb_f4 a, tb_f4 b) { return (tb_f4)((mask & (tb_i4)a) | (~mask & (tb_i4)b)); }
static inline tb_f4 f4_min(tb_f4 a, tb_f4 b) { return f4_select(a < b, a, b); }
static inline tb_f4 f4_max(tb_f4 a, tb_f4 b) { return f4_select(a > b, a, b); }
#endif
static inline tb_f4 dot4(tb_v3_4 a, tb_v3_4 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline tb_v3_4 sub4(tb_v3_4 a, tb_v3_4 b) { return (tb_v3_4){a.x - b.x, a.y - b.y, a.z - b.z}; }
static inline tb_v3_4 mad4(tb_v3_4 a, tb_v3_4 b, tb_f4 s) { return (tb_v3_4){a.x + b.x * s, a.y + b.y * s, a.z + b.z * s}; }

static inline void gather(const tb_solver_body *bodies, const int32_t idx[TB_LANES], tb_v3_4 *v, tb_v3_4 *w)
{
    const tb_solver_body *b0 = bodies + idx[0], *b1 = bodies + idx[1], *b2 = bodies + idx[2], *b3 = bodies + idx[3];
    *v = tb__transpose_in(tb__load_row(&b0->v), tb__load_row(&b1->v), tb__load_row(&b2->v), tb__load_row(&b3->v));
    *w = tb__transpose_in(tb__load_row(&b0->w), tb__load_row(&b1->w), tb__load_row(&b2->w), tb__load_row(&b3->w));
}

/* Lanes never share an awake body; they may share the static slot 0, whose
 * velocity every lane leaves at zero. */
static inline void store_body(tb_solver_body *b, tb_f4 v, tb_f4 w)
{
    memcpy(&b->v, &v, sizeof v);
    memcpy(&b->w, &w, sizeof w);
}

/* Written out lane by lane: as a loop, GCC -O2 keeps it rolled and sends the
 * transposed rows through the stack (about 40 more instructions a group). */
static inline void scatter(tb_solver_body *bodies, const int32_t idx[TB_LANES], tb_v3_4 v, tb_v3_4 w)
{
    tb_f4 rv[4], rw[4];
    tb__transpose_out(v, rv);
    tb__transpose_out(w, rw);
    store_body(bodies + idx[0], rv[0], rw[0]);
    store_body(bodies + idx[1], rv[1], rw[1]);
    store_body(bodies + idx[2], rv[2], rw[2]);
    store_body(bodies + idx[3], rv[3], rw[3]);
}
_Static_assert(TB_LANES == 4, "scatter() writes four lanes");

#define WROW_VELOCITY(d, ra_d, rb_d) (dot4(sub4(vb, va), (d)) + dot4(wb, (rb_d)) - dot4(wa, (ra_d)))
#define WROW_APPLY(d, ia_d, ib_d, dj)          \
    do {                                       \
        va = mad4(va, (d), -(dj) * g->ima);    \
        wa = mad4(wa, (ia_d), -(dj));          \
        vb = mad4(vb, (d), (dj) * g->imb);     \
        wb = mad4(wb, (ib_d), (dj));           \
    } while (0)

/* The same three rows as solve_contact, on four contacts of one colour.
 * TB_HOT_CLONES: also compiled for AVX (picked at load time), a quarter
 * fewer instructions and the same results bit for bit. */
TB_HOT_CLONES static void solve_group(tb_solver_body *bodies, tb_contact_wide *g, tb_f4 mu)
{
    tb_v3_4 va, wa, vb, wb;
    gather(bodies, g->sa, &va, &wa);
    gather(bodies, g->sb, &vb, &wb);
    const tb_f4 zero = f4_splat(0.0f);
    tb_f4 max_friction = mu * g->jn;

    tb_f4 vt = WROW_VELOCITY(g->t1, g->ra_t1, g->rb_t1);
    tb_f4 j = f4_min(f4_max(g->jt1 - vt * g->mass_t1, -max_friction), max_friction);
    tb_f4 dj = j - g->jt1;
    WROW_APPLY(g->t1, g->ia_t1, g->ib_t1, dj);
    g->jt1 = j;

    vt = WROW_VELOCITY(g->t2, g->ra_t2, g->rb_t2);
    j = f4_min(f4_max(g->jt2 - vt * g->mass_t2, -max_friction), max_friction);
    dj = j - g->jt2;
    WROW_APPLY(g->t2, g->ia_t2, g->ib_t2, dj);
    g->jt2 = j;

    tb_f4 vn = WROW_VELOCITY(g->n, g->ra_n, g->rb_n);
    j = f4_max(zero, g->jn + (g->target - vn) * g->mass_n);
    dj = j - g->jn;
    WROW_APPLY(g->n, g->ia_n, g->ib_n, dj);
    g->jn = j;

    scatter(bodies, g->sa, va, wa);
    scatter(bodies, g->sb, vb, wb);
}

/* Iterations: every colour group, then the overflow contacts one by one.
 * Afterwards the accumulated impulses go back to the contacts (cache, debug). */
void tb_contact_solver_solve(tb_rigid_world *w)
{
    tb_constraint_graph *graph = &w->graph;
    tb_solver_body *bodies = w->solver_bodies;
    const tb_f4 mu = f4_splat(w->friction);
    for (int it = 0; it < w->iterations; it++) {
        for (int i = 0; i < graph->group_count; i++) solve_group(bodies, &graph->groups[i], mu);
        for (int i = 0; i < graph->overflow_count; i++)
            solve_contact(bodies, &w->contacts[graph->overflow[i]], w->friction);
    }
    for (int i = 0; i < graph->group_count; i++) {
        const tb_contact_wide *g = &graph->groups[i];
        for (int k = 0; k < TB_LANES; k++) {
            if (g->index[k] < 0) continue;
            tb_contact *c = &w->contacts[g->index[k]];
            c->jn = g->jn[k];
            c->jt1 = g->jt1[k];
            c->jt2 = g->jt2[k];
        }
    }
}
