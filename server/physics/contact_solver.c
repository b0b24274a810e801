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
 * the groups. The arithmetic per lane is that of solve_contact, except that
 * the lanes' rows come pre-scaled by the inverse masses (the impulse is
 * applied as (d / m) dj instead of d (dj / m): the last bit may differ).
 */
#include <stddef.h>
#include <string.h>

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

/* Per manifold (the run of points sharing a pair key): solver bodies,
 * inverse masses and the two tangents of every point, cleared impulses. The
 * colouring needs the solver bodies; the rows are prepared after it, straight
 * into the lanes (tb_contact_solver_prepare). */
TB_HOT_CLONES void tb_contact_solver_begin(tb_rigid_world *w)
{
    for (int m = 0; m < w->manifold_count; m++) {
        const int i = w->manifold_start[m], end = w->manifold_start[m + 1];
        const tb_contact_point *first = &w->points[i];
        int sa = first->body_a >= 0 ? w->solver_index[first->body_a] : 0;
        int sb = w->solver_index[first->body_b];
        tb_vec3 n = w->contacts[i].n;
        /* two tangents perpendicular to n (the seed's choice) */
        tb_vec3 t1 = fabsf(n.x) > 0.57f ? tb_v3_norm(tb_v3(n.y, -n.x, 0.0f)) : tb_v3_norm(tb_v3(0.0f, n.z, -n.y));
        tb_vec3 t2 = tb_v3_cross(n, t1);
        float ima = w->inv_mass[sa], imb = w->inv_mass[sb];
        for (int k = i; k < end; k++) {
            tb_contact *c = &w->contacts[k];
            c->sa = sa;
            c->sb = sb;
            c->ima = ima;
            c->imb = imb;
            c->t1 = t1;
            c->t2 = t2;
            c->jn = c->jt1 = c->jt2 = 0.0f;
        }
    }
}

/* Seed warning: the bounce decision uses the velocity BEFORE warm starting
 * (warm starting happens after every contact is prepared). Read after it,
 * the big support impulse already given to a lower plank looks like a hard
 * hit and the tower jumps. */
static float normal_target(const tb_rigid_world *w, float vn, float sep, float dt)
{
    const float inv_dt = 1.0f / dt;
    float target = sep > 0.0f ? -sep * inv_dt : TB_BAUMGARTE * inv_dt * tb_maxf(0.0f, -sep - TB_LINEAR_SLOP);
    if (vn < -TB_RESTITUTION_THRESHOLD && sep < -vn * dt) target = tb_maxf(target, -w->restitution * vn);
    return target;
}

/* One contact that fits no colour (solved one by one): arms, effective
 * masses and target in its tb_contact. */
static void prepare_one(tb_rigid_world *w, int k, float dt)
{
    tb_contact *c = &w->contacts[k];
    const tb_contact_point *p = &w->points[k];
    const tb_body *bb = &w->bodies[p->body_b];
    const tb_body *ba = p->body_a >= 0 ? &w->bodies[p->body_a] : NULL;
    const tb_solver_body *va = &w->solver_bodies[c->sa], *vb = &w->solver_bodies[c->sb];
    tb_vec3 ra = ba ? tb_v3_sub(p->point, ba->position) : tb_v3_zero();
    tb_vec3 rb = tb_v3_sub(p->point, bb->position);
    tb_vec3 n = c->n, t1 = c->t1, t2 = c->t2;
    side_rows(ra, &w->inv_inertia_world[c->sa], c->sa != 0, n, t1, t2, &c->ra_n, &c->ra_t1, &c->ra_t2, &c->ia_n,
              &c->ia_t1, &c->ia_t2);
    side_rows(rb, &w->inv_inertia_world[c->sb], c->sb != 0, n, t1, t2, &c->rb_n, &c->rb_t1, &c->rb_t2, &c->ib_n,
              &c->ib_t1, &c->ib_t2);
    c->mass_n = effective_mass(c->ima, c->imb, c->ra_n, c->ia_n, c->rb_n, c->ib_n);
    c->mass_t1 = effective_mass(c->ima, c->imb, c->ra_t1, c->ia_t1, c->rb_t1, c->ib_t1);
    c->mass_t2 = effective_mass(c->ima, c->imb, c->ra_t2, c->ia_t2, c->rb_t2, c->ib_t2);
    float vn = tb_v3_dot(tb_v3_sub(vb->v, va->v), n) + tb_v3_dot(vb->w, c->rb_n) - tb_v3_dot(va->w, c->ra_n);
    c->target = normal_target(w, vn, p->separation, dt);
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

/* ---- four lanes at once ----------------------------------------------------------------
 *
 * A group's four contacts share no awake body (constraint_graph.c), so each
 * is one lane of the SIMD layer's vectors (simd.h) and the rows of all four
 * are solved with the same instructions. */

_Static_assert(TB_LANES == 4, "gather_rows() and scatter_rows() move four lanes");

/* ---- eight floats: a body's (v, w) row in one vector ----------------------------------
 *
 * solve_group keeps A = [va | wa] and B = [vb | wb] as tb_f8 (simd.h): one
 * 32-byte load per body and a 4x4 transpose inside each half brings in both
 * velocities at once, and one multiply-add per component applies an impulse
 * to both. Per lane and half these are the operations of solve_contact in
 * the same order (the rows pre-scaled, see the top of the file). */

/* Four bodies' velocities: x = [va.x of the 4 lanes | wa.x of the 4 lanes]. */
typedef struct body_rows {
    tb_f8 x, y, z;
} body_rows;

/* Four lanes' [x y z pad | x' y' z' pad] rows to [x | x'], [y | y'], [z | z']:
 * a 4x4 transpose inside each half. */
TB_SIMD_INLINE body_rows transpose_rows(tb_f8 r0, tb_f8 r1, tb_f8 r2, tb_f8 r3)
{
    tb_f8 t0 = TB_SHUFFLE(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13), t1 = TB_SHUFFLE(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    tb_f8 t2 = TB_SHUFFLE(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15), t3 = TB_SHUFFLE(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    return (body_rows){TB_SHUFFLE(t0, t1, 0, 1, 8, 9, 4, 5, 12, 13), TB_SHUFFLE(t0, t1, 2, 3, 10, 11, 6, 7, 14, 15),
                       TB_SHUFFLE(t2, t3, 0, 1, 8, 9, 4, 5, 12, 13)};
}

/* Four bodies' [v pad | w pad] rows to [vx | wx], [vy | wy], [vz | wz]. */
TB_SIMD_INLINE body_rows gather_rows(tb_solver_body *const body[TB_LANES])
{
    return transpose_rows(tb_f8_load((const float *)(const void *)body[0]),
                          tb_f8_load((const float *)(const void *)body[1]),
                          tb_f8_load((const float *)(const void *)body[2]),
                          tb_f8_load((const float *)(const void *)body[3]));
}

/* And back, the pads written as +0 (as the scalar rows have them). Lanes
 * never share an awake body; the static slot 0 gets back its zeros. */
TB_SIMD_INLINE void scatter_rows(tb_solver_body *const body[TB_LANES], const body_rows *v)
{
    const tb_f8 zero = tb_f8_splat(0.0f);
    tb_f8 t0 = TB_SHUFFLE(v->x, v->y, 0, 8, 1, 9, 4, 12, 5, 13), t1 = TB_SHUFFLE(v->x, v->y, 2, 10, 3, 11, 6, 14, 7, 15);
    tb_f8 t2 = TB_SHUFFLE(v->z, zero, 0, 8, 1, 9, 4, 12, 5, 13), t3 = TB_SHUFFLE(v->z, zero, 2, 10, 3, 11, 6, 14, 7, 15);
    tb_f8_store((float *)(void *)body[0], TB_SHUFFLE(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13));
    tb_f8_store((float *)(void *)body[1], TB_SHUFFLE(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15));
    tb_f8_store((float *)(void *)body[2], TB_SHUFFLE(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13));
    tb_f8_store((float *)(void *)body[3], TB_SHUFFLE(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15));
}

/* A tb_f4x2 pair of the row as one 8-float vector; [d | rb] and [rb | ra] of
 * a component of its arms. */
TB_SIMD_INLINE tb_f8 pair(const tb_f4x2 *p) { return tb_f8_load((const float *)(const void *)p); }
TB_SIMD_INLINE tb_f8 d_rb(const tb_arms4 *p) { return tb_f8_load((const float *)(const void *)&p->d); }
TB_SIMD_INLINE tb_f8 rb_ra(const tb_arms4 *p) { return tb_f8_load((const float *)(const void *)&p->rb); }

/* (vb - va) . d + wb . (rb x d) - wa . (ra x d), as ROW_VELOCITY per lane,
 * twice: X = [vb - va | wb], p = X . [d | rb], q = A . [rb | ra] and
 * v = lo(p) + hi(p) - hi(q) in both halves (the hi half adds hi(p) + lo(p):
 * the same sum, a + b = b + a; lo(q) is not used). */
TB_SIMD_INLINE tb_f8 row_velocity(const tb_row_wide *r, const body_rows *a, const body_rows *b)
{
    tb_f8 x = TB_SHUFFLE(b->x - a->x, b->x, 0, 1, 2, 3, 12, 13, 14, 15);
    tb_f8 y = TB_SHUFFLE(b->y - a->y, b->y, 0, 1, 2, 3, 12, 13, 14, 15);
    tb_f8 z = TB_SHUFFLE(b->z - a->z, b->z, 0, 1, 2, 3, 12, 13, 14, 15);
    tb_f8 p = x * d_rb(&r->arm[0]) + y * d_rb(&r->arm[1]) + z * d_rb(&r->arm[2]);
    tb_f8 q = a->x * rb_ra(&r->arm[0]) + a->y * rb_ra(&r->arm[1]) + a->z * rb_ra(&r->arm[2]);
    return (p + TB_SHUFFLE(p, p, 4, 5, 6, 7, 0, 1, 2, 3)) - TB_SHUFFLE(q, q, 4, 5, 6, 7, 4, 5, 6, 7);
}

/* va += (-d ima) dj, wa += (-ia_d) dj, vb += (d imb) dj, wb += ib_d dj with
 * dj8 = [dj | dj]: the rows come scaled by the inverse masses (ROW_APPLY
 * scales dj instead, so the wide and the scalar rows round differently in
 * the last bit). */
TB_SIMD_INLINE void row_apply(const tb_row_wide *r, tb_f8 dj8, body_rows *a, body_rows *b)
{
    a->x = a->x + pair(&r->da[0]) * dj8;
    a->y = a->y + pair(&r->da[1]) * dj8;
    a->z = a->z + pair(&r->da[2]) * dj8;
    b->x = b->x + pair(&r->db[0]) * dj8;
    b->y = b->y + pair(&r->db[1]) * dj8;
    b->z = b->z + pair(&r->db[2]) * dj8;
}

/* The same three rows as solve_contact, on four contacts of one colour.
 * Inlined into solve_groups, which is TB_HOT_CLONES: also compiled for AVX
 * (picked at load time), fewer instructions and the same results bit for bit. */
TB_SIMD_INLINE void solve_group(tb_contact_wide *g, tb_f8 mu)
{
    /* the pointers in locals: the body stores (memcpy, may alias anything)
     * would otherwise make the compiler read them again for the scatter */
    tb_solver_body *const body_a[TB_LANES] = {g->body_a[0], g->body_a[1], g->body_a[2], g->body_a[3]};
    tb_solver_body *const body_b[TB_LANES] = {g->body_b[0], g->body_b[1], g->body_b[2], g->body_b[3]};
    body_rows a = gather_rows(body_a), b = gather_rows(body_b);
    const tb_f8 zero = tb_f8_splat(0.0f);
    const tb_f8 jn = pair(&g->jn), jt1 = pair(&g->jt1), jt2 = pair(&g->jt2);
    tb_f8 max_friction = mu * jn;

    tb_f8 vt = row_velocity(&g->t1, &a, &b);
    tb_f8 j = tb_f8_min(tb_f8_max(jt1 - vt * pair(&g->mass_t1), -max_friction), max_friction);
    row_apply(&g->t1, j - jt1, &a, &b);
    tb_f8_store((float *)(void *)&g->jt1, j);

    vt = row_velocity(&g->t2, &a, &b);
    j = tb_f8_min(tb_f8_max(jt2 - vt * pair(&g->mass_t2), -max_friction), max_friction);
    row_apply(&g->t2, j - jt2, &a, &b);
    tb_f8_store((float *)(void *)&g->jt2, j);

    tb_f8 vn = row_velocity(&g->n, &a, &b);
    j = tb_f8_max(zero, jn + (pair(&g->target) - vn) * pair(&g->mass_n));
    row_apply(&g->n, j - jn, &a, &b);
    tb_f8_store((float *)(void *)&g->jn, j);

    scatter_rows(body_a, &a);
    scatter_rows(body_b, &b);
}

/* One sweep over the groups: one call through the clone's ifunc per sweep,
 * not per group. */
TB_HOT_CLONES static void solve_groups(tb_contact_wide *groups, int count, float friction)
{
    const tb_f8 mu = tb_f8_splat(friction);
    for (int i = 0; i < count; i++) solve_group(&groups[i], mu);
}

/* ---- warm start -----------------------------------------------------------------------
 *
 * Contact by contact in contact order (the order fixes the rounding of each
 * body's sum), each vector a 16-byte row (x, y, z, 0): per component the same
 * operations as tb_v3_scale/add/mad, a third of the instructions. */

static inline void store_body(tb_solver_body *b, tb_f4 v, tb_f4 w)
{
    memcpy(&b->v, &v, sizeof v);
    memcpy(&b->w, &w, sizeof w);
}

static inline tb_f4 row3(tb_vec3 v) { return (tb_f4){v.x, v.y, v.z, 0.0f}; }
static inline tb_f4 lane_row(const tb_f4x2 r[3], unsigned lane) { return (tb_f4){r[0].hi[lane], r[1].hi[lane], r[2].hi[lane], 0.0f}; }

/* Applies contact c's impulses (jn, jt1, jt2) to both bodies; the arms come
 * from its group's lane (slot: graph.slot; the impulses are copied there
 * too) or, for an overflow contact (slot < 0), from c. */
static inline __attribute__((always_inline)) void warm_apply_one(const tb_contact *c, int slot, tb_solver_body *bodies,
                                                                  tb_contact_wide *groups)
{
    tb_solver_body *a = &bodies[c->sa], *b = &bodies[c->sb];
    tb_f4 ia_n, ia_t1, ia_t2, ib_n, ib_t1, ib_t2; /* ia_*: -I_a^-1 (r_a x d), as the lanes hold them */
    if (slot >= 0) {
        tb_contact_wide *g = &groups[(unsigned)slot / TB_LANES];
        unsigned lane = (unsigned)slot % TB_LANES;
        ia_n = lane_row(g->n.da, lane);
        ia_t1 = lane_row(g->t1.da, lane);
        ia_t2 = lane_row(g->t2.da, lane);
        ib_n = lane_row(g->n.db, lane);
        ib_t1 = lane_row(g->t1.db, lane);
        ib_t2 = lane_row(g->t2.db, lane);
        g->jn.lo[lane] = g->jn.hi[lane] = c->jn;
        g->jt1.lo[lane] = g->jt1.hi[lane] = c->jt1;
        g->jt2.lo[lane] = g->jt2.hi[lane] = c->jt2;
    } else {
        ia_n = -row3(c->ia_n);
        ia_t1 = -row3(c->ia_t1);
        ia_t2 = -row3(c->ia_t2);
        ib_n = row3(c->ib_n);
        ib_t1 = row3(c->ib_t1);
        ib_t2 = row3(c->ib_t2);
    }
    const tb_f4 jn = tb_f4_splat(c->jn), jt1 = tb_f4_splat(c->jt1), jt2 = tb_f4_splat(c->jt2);
    tb_f4 p = row3(c->n) * jn + row3(c->t1) * jt1 + row3(c->t2) * jt2;
    tb_f4 dwa = ia_n * jn + ia_t1 * jt1 + ia_t2 * jt2;
    tb_f4 dwb = ib_n * jn + ib_t1 * jt1 + ib_t2 * jt2;
    /* the pads stay +0: pad + 0 * s */
    tb_f4 av = tb__load_row(&a->v) + p * tb_f4_splat(-c->ima), aw = tb__load_row(&a->w) + dwa; /* dwa negated */
    tb_f4 bv = tb__load_row(&b->v) + p * tb_f4_splat(c->imb), bw = tb__load_row(&b->w) + dwb;
    store_body(a, av, aw);
    store_body(b, bv, bw);
}

/* Every contact with an impulse from the cache (tb_manifold_warm_start), in
 * contact order; one with none (no old point matched, or a speculative one
 * that never touched) is passed over: the lanes already hold zeros. */
TB_HOT_CLONES void tb_contact_solver_warm_apply(tb_rigid_world *w)
{
    /* the world's fields in locals: the body and lane stores could otherwise
     * alias them and have them read again for every contact */
    const tb_contact *contacts = w->contacts;
    const int32_t *slot = w->graph.slot;
    tb_solver_body *bodies = w->solver_bodies;
    tb_contact_wide *groups = w->graph.groups;
    const int count = w->contact_count;
    for (int i = 0; i < count; i++) {
        const tb_contact *c = &contacts[i];
        if (c->jn == 0.0f && c->jt1 == 0.0f && c->jt2 == 0.0f) continue;
        warm_apply_one(c, slot[i], bodies, groups);
    }
}

/* ---- preparation straight into the lanes ---------------------------------------------
 *
 * The arithmetic of prepare_one per lane (same operations in the same order,
 * no FMA), so a contact gets the same bits in a group as it would alone. A
 * static side (solver slot 0) and an empty lane get all-zero arms, as
 * side_rows gives them. */

/* Both sides at once in the tb_f8 halves: lo for side b, hi for side a
 * (x = [b's 4 lanes | a's 4 lanes], as body_rows holds [v | w]; b first so
 * that [r_b x d | r_a x d] goes into tb_arms4 as it lies). */
TB_SIMD_INLINE tb_f8 dot8(body_rows a, body_rows b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
TB_SIMD_INLINE body_rows cross8(body_rows a, body_rows b)
{
    return (body_rows){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
TB_SIMD_INLINE body_rows keep8(body_rows a, tb_i8 mask)
{
    return (body_rows){(tb_f8)((tb_i8)a.x & mask), (tb_f8)((tb_i8)a.y & mask), (tb_f8)((tb_i8)a.z & mask)};
}
TB_SIMD_INLINE tb_f8 row_pair(const tb_vec3 *a, const tb_vec3 *b) { return TB_F8_JOIN(tb__load_row(a), tb__load_row(b)); }

/* [p - pos_b | p - pos_a] of one lane, the differences taken as 16-byte rows
 * (their fourth float is not read after the transpose). */
TB_SIMD_INLINE tb_f8 arm_pair(const tb_vec3 *p, const tb_vec3 *pos_b, const tb_vec3 *pos_a)
{
    const tb_f4 pk = tb__load_row(p);
    return TB_F8_JOIN(pk - tb__load_row(pos_b), pk - tb__load_row(pos_a));
}

/* [a lanes | b lanes] of row r of four lanes' matrices. */
TB_SIMD_INLINE body_rows mat_rows8(const tb_mat3 *const a[TB_LANES], const tb_mat3 *const b[TB_LANES], int r)
{
    return transpose_rows(row_pair(&a[0]->r[r], &b[0]->r[r]), row_pair(&a[1]->r[r], &b[1]->r[r]),
                          row_pair(&a[2]->r[r], &b[2]->r[r]), row_pair(&a[3]->r[r], &b[3]->r[r]));
}

/* For the three directions d: r x d and I^-1 (r x d) of both sides (side b
 * in the lo half, side a in the hi half, as arm.rb and arm.ra lie), zero
 * where the side is static, straight into the rows (db.hi = I_b^-1 (r_b x d),
 * da.hi = -I_a^-1 (r_a x d), arm.rb and arm.ra in one store), and
 * (r x d) . I^-1 (r x d) of each side for the effective masses. */
#if defined(__GNUC__) && !defined(__clang__)
#define PREP_UNROLL _Pragma("GCC unroll 3")
#define LANE_UNROLL _Pragma("GCC unroll 4")
#else
#define PREP_UNROLL
#define LANE_UNROLL
#endif
TB_SIMD_INLINE void prepare_sides(body_rows arm, const body_rows inv[3], tb_i8 dynamic, const tb_v3_4 d[3],
                                  tb_row_wide *const rows[3], tb_f4 ka[3], tb_f4 kb[3])
{
    const tb_f8 negate_a = {0.0f, 0.0f, 0.0f, 0.0f, -0.0f, -0.0f, -0.0f, -0.0f}; /* sign bits of the hi half */
    PREP_UNROLL for (int r = 0; r < 3; r++) {
        const body_rows dir = {TB_F8_JOIN(d[r].x, d[r].x), TB_F8_JOIN(d[r].y, d[r].y), TB_F8_JOIN(d[r].z, d[r].z)};
        body_rows r_d = cross8(arm, dir);
        body_rows i_d = {dot8(inv[0], r_d), dot8(inv[1], r_d), dot8(inv[2], r_d)};
        r_d = keep8(r_d, dynamic);
        i_d = keep8(i_d, dynamic);
        tb_row_wide *row = rows[r];
        tb_f8_store((float *)(void *)&row->arm[0].rb, r_d.x), tb_f8_store((float *)(void *)&row->arm[1].rb, r_d.y);
        tb_f8_store((float *)(void *)&row->arm[2].rb, r_d.z);
        row->db[0].hi = TB_F8_LO(i_d.x), row->db[1].hi = TB_F8_LO(i_d.y), row->db[2].hi = TB_F8_LO(i_d.z);
        /* -x as the sign bit flipped, as negation does */
        const tb_f8 na_x = (tb_f8)((tb_i8)i_d.x ^ (tb_i8)negate_a), na_y = (tb_f8)((tb_i8)i_d.y ^ (tb_i8)negate_a),
                    na_z = (tb_f8)((tb_i8)i_d.z ^ (tb_i8)negate_a);
        tb_f8_store_hi((float *)(void *)&row->da[0].hi, na_x), tb_f8_store_hi((float *)(void *)&row->da[1].hi, na_y);
        tb_f8_store_hi((float *)(void *)&row->da[2].hi, na_z);
        tb_f8 k = dot8(r_d, i_d);
        kb[r] = TB_F8_LO(k);
        ka[r] = TB_F8_HI(k);
    }
}

static inline tb_f4 inverse_mass4(tb_f4 k)
{
    tb_i4 ok = k > tb_f4_splat(1e-9f);
    return tb_f4_select(ok, tb_f4_splat(1.0f) / tb_f4_select(ok, k, tb_f4_splat(1.0f)), tb_f4_splat(0.0f));
}

TB_HOT_CLONES static void prepare_group(const tb_rigid_world *w, tb_contact_wide *g, float dt)
{
    const tb_contact *c[TB_LANES];
    const tb_vec3 *point[TB_LANES], *pos_a[TB_LANES], *pos_b[TB_LANES];
    const tb_mat3 *inv_a[TB_LANES], *inv_b[TB_LANES];
    float sep[TB_LANES];
    LANE_UNROLL for (int k = 0; k < TB_LANES; k++) {
        /* an empty lane reads the zeroed entry past the last contact: zero
         * direction, masses and separation, both sides slot 0 (so whatever
         * its arms come to, they are masked): a lane that moves nothing */
        int idx = g->index[k] >= 0 ? g->index[k] : w->zero_contact;
        const tb_contact_point *p = &w->points[idx];
        c[k] = &w->contacts[idx];
        point[k] = &p->point;
        /* a plane side: r = 0, masked anyway (slot 0) */
        pos_a[k] = p->body_a >= 0 ? &w->bodies[p->body_a].position : point[k];
        pos_b[k] = &w->bodies[p->body_b].position;
        sep[k] = p->separation;
        inv_a[k] = &w->inv_inertia_world[g->sa[k]];
        inv_b[k] = &w->inv_inertia_world[g->sb[k]];
    }
    const tb_i4 lane_sa = {g->sa[0], g->sa[1], g->sa[2], g->sa[3]}, lane_sb = {g->sb[0], g->sb[1], g->sb[2], g->sb[3]};
    const tb_i4 zero_i = {0, 0, 0, 0};
    const tb_f4 ima = {c[0]->ima, c[1]->ima, c[2]->ima, c[3]->ima};
    const tb_f4 imb = {c[0]->imb, c[1]->imb, c[2]->imb, c[3]->imb};
    const tb_v3_4 d[3] = {
        tb__transpose_in(tb__load_row(&c[0]->n), tb__load_row(&c[1]->n), tb__load_row(&c[2]->n), tb__load_row(&c[3]->n)),
        tb__transpose_in(tb__load_row(&c[0]->t1), tb__load_row(&c[1]->t1), tb__load_row(&c[2]->t1),
                         tb__load_row(&c[3]->t1)),
        tb__transpose_in(tb__load_row(&c[0]->t2), tb__load_row(&c[1]->t2), tb__load_row(&c[2]->t2),
                         tb__load_row(&c[3]->t2))};
    tb_row_wide *const rows[3] = {&g->n, &g->t1, &g->t2};
    const tb_f4 zero = tb_f4_splat(0.0f);
    PREP_UNROLL for (int r = 0; r < 3; r++) {
        tb_row_wide *row = rows[r];
        row->da[0].lo = d[r].x * -ima, row->da[1].lo = d[r].y * -ima, row->da[2].lo = d[r].z * -ima;
        row->db[0].lo = d[r].x * imb, row->db[1].lo = d[r].y * imb, row->db[2].lo = d[r].z * imb;
        row->arm[0].d = d[r].x, row->arm[1].d = d[r].y, row->arm[2].d = d[r].z;
    }
    tb_f4 ka[3], kb[3];
    {
        /* contact point minus body position, rows of the world inverse
         * inertia, all ones where the side is an awake body */
        const body_rows arm = transpose_rows(arm_pair(point[0], pos_b[0], pos_a[0]), arm_pair(point[1], pos_b[1], pos_a[1]),
                                             arm_pair(point[2], pos_b[2], pos_a[2]), arm_pair(point[3], pos_b[3], pos_a[3]));
        const body_rows inv[3] = {mat_rows8(inv_b, inv_a, 0), mat_rows8(inv_b, inv_a, 1), mat_rows8(inv_b, inv_a, 2)};
        const tb_i8 dynamic = TB_F8_JOIN(lane_sb != zero_i, lane_sa != zero_i);
        prepare_sides(arm, inv, dynamic, d, rows, ka, kb);
    }
    /* K = 1/ma + 1/mb + (ra x d) . Ia^-1 (ra x d) + (rb x d) . Ib^-1 (rb x d) */
    g->mass_n.lo = g->mass_n.hi = inverse_mass4(ima + imb + ka[0] + kb[0]);
    g->mass_t1.lo = g->mass_t1.hi = inverse_mass4(ima + imb + ka[1] + kb[1]);
    g->mass_t2.lo = g->mass_t2.hi = inverse_mass4(ima + imb + ka[2] + kb[2]);

    /* normal_target per lane (velocities before the warm start): the normal
     * row's velocity as the solver computes it */
    const body_rows a = gather_rows(g->body_a), b = gather_rows(g->body_b);
    tb_f4 vn = TB_F8_LO(row_velocity(&g->n, &a, &b));
    const float inv_dt = 1.0f / dt;
    const tb_f4 s = {sep[0], sep[1], sep[2], sep[3]};
    tb_f4 target = tb_f4_select(s > zero, -s * tb_f4_splat(inv_dt),
                             tb_f4_splat(TB_BAUMGARTE * inv_dt) * tb_f4_max(zero, -s - tb_f4_splat(TB_LINEAR_SLOP)));
    tb_i4 bounce = (vn < tb_f4_splat(-TB_RESTITUTION_THRESHOLD)) & (s < -vn * tb_f4_splat(dt));
    g->target.lo = g->target.hi = tb_f4_select(bounce, tb_f4_max(target, tb_f4_splat(-w->restitution) * vn), target);
    g->jn.lo = g->jn.hi = g->jt1.lo = g->jt1.hi = g->jt2.lo = g->jt2.hi = zero;
}

/* Every group's rows in its lanes, the overflow contacts' in their tb_contact. */
void tb_contact_solver_prepare(tb_rigid_world *w, float dt)
{
    tb_constraint_graph *graph = &w->graph;
    for (int i = 0; i < graph->group_count; i++) prepare_group(w, &graph->groups[i], dt);
    for (int i = 0; i < graph->overflow_count; i++) prepare_one(w, graph->overflow[i], dt);
}

/* Iterations: every colour group, then the overflow contacts one by one.
 * Afterwards the accumulated impulses go back to the contacts (cache, debug). */
void tb_contact_solver_solve(tb_rigid_world *w)
{
    tb_constraint_graph *graph = &w->graph;
    tb_solver_body *bodies = w->solver_bodies;
    for (int it = 0; it < w->iterations; it++) {
        solve_groups(graph->groups, graph->group_count, w->friction);
        for (int i = 0; i < graph->overflow_count; i++)
            solve_contact(bodies, &w->contacts[graph->overflow[i]], w->friction);
    }
    for (int i = 0; i < graph->group_count; i++) {
        const tb_contact_wide *g = &graph->groups[i];
        LANE_UNROLL for (int k = 0; k < TB_LANES; k++) {
            if (g->index[k] < 0) continue;
            tb_contact *c = &w->contacts[g->index[k]];
            c->jn = g->jn.lo[k];
            c->jt1 = g->jt1.lo[k];
            c->jt2 = g->jt2.lo[k];
        }
    }
}
