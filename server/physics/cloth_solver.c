/* cloth_solver.c: one 1/120 s step of every piece of cloth in a world.
 *
 *   1. The figure advances and is posed; pinned points jump to their anchors.
 *   2. Verlet: v = (p - o) * damping, p += v + a h^2, with gravity and wind.
 *   3. Which capsules each point is near, and which points are near the ground.
 *   4. `iterations` times: every distance constraint, then the near capsules
 *      and the ground.
 *   5. A last collision pass over the near pairs, then normals (the next
 *      step's wind needs them).
 *
 * Layout for speed: during the step the positions live in columns (px, py,
 * pz). The constraints of a grid are six families with one rest length
 * each, walked straight off the grid, never stored (see "Families" below),
 * in an order where neighbouring constraints of a SIMD group never share a
 * point: eight at a time in the SIMD layer's tb_f8 (simd.h; one AVX or two
 * SSE registers, the CPU path picked by TB_HOT_CLONES), which gives the bits
 * of one at a time. It is still Gauss-Seidel: each group sees the
 * corrections of the groups before it.
 *
 * Converting the seed's 1/60 s tuning to 1/120 s
 * ----------------------------------------------
 * The seed (verlet-cloth.ko.md) was tuned at h60 = 1/60 s with 8 iterations.
 * We step at h120 = 1/120 s, also with `iterations` per step, so per second
 * the world sees two steps and twice the iterations for each one of the seed's.
 *
 *   damping   v *= d each step. Two of our steps must damp as much as one of
 *             the seed's: d120^2 = d60, so d120 = sqrt(0.988) = 0.993982.
 *   stiffness a constraint with stiffness k removes a fraction k of its error
 *             per iteration, leaving (1 - k). Applied twice as often, the
 *             error left per 1/60 s must stay the same:
 *             (1 - k120)^2 = (1 - k60), so k120 = 1 - sqrt(1 - k60):
 *             structural 1.0 -> 1.0, shear 0.6 -> 0.3675, bend 0.25 -> 0.1340.
 *   forces    gravity, wind and drag are accelerations in m/s^2 and enter as
 *             a h^2 with our h, so they need no conversion.
 *
 * Wind: the air a point feels is wind - v/h (relative air velocity). Only its
 * component along the cloth normal pushes (a sail facing the wind is pushed,
 * one edge-on is not): a = n (n . rel) WIND_K + rel DRAG. Normals come from
 * the previous step's positions. */
#include <math.h>
#include <string.h>

#include "physics/cloth_internal.h"
#include "physics/simd.h"

#define GRAVITY 9.8f
#define DAMPING_120 0.993982f     /* sqrt(0.988), see above */
#define STIFF_STRUCTURAL 1.0f     /* seed 1.0:  1 - sqrt(1 - 1.0) */
#define STIFF_SHEAR 0.367544f     /* seed 0.6:  1 - sqrt(0.4) */
#define STIFF_BEND 0.133975f      /* seed 0.25: 1 - sqrt(0.75) */
#define WIND_K 2.0f               /* 1/s: normal push per m/s of relative air */
#define DRAG 0.1f                 /* 1/s: light drag along the relative air */
#define GRAB_MAX_STEP 0.1f        /* a grabbed point moves at most this per step (12 m/s) */
#define NEAR_MARGIN 0.06f         /* m: capsules this close (plus the point's own motion this
                                     step) are tested; covers a capsule moving 7 m/s */
#define COLLISION_SKIN 0.0005f    /* the final pass leaves points this far outside */

/* Wind strength varies slowly with time (deterministic gusts) so a flag in a
 * steady wind keeps moving: 1 + 0.25 sin(1.3 t) + 0.15 sin(3.7 t + 1). The
 * phases are taken modulo 2 pi in double from the step count (exact
 * operations), so the float sines (tb_libm.h) see small angles however long
 * the room has run. */
static float wrap_phase(double a) { return (float)(a - floor(a / 6.283185307179586477) * 6.283185307179586477); }

static float gust_factor(uint64_t step_count)
{
    double t = (double)step_count * (1.0 / 120.0);
    return 1.0f + 0.25f * tb_sinf(wrap_phase(1.3 * t)) + 0.15f * tb_sinf(wrap_phase(3.7 * t + 1.0));
}

static void integrate(tb_cloth_world *world, tb_cloth_piece_state *ps, tb_cloth_piece *p, int piece_index,
                      tb_vec3 wind)
{
    const float h = TB_CLOTH_DT, inv_h = 1.0f / TB_CLOTH_DT, h2 = h * h;
    int n = ps->width * ps->height;
    float *x = ps->pos, *o = ps->prev;
    const float *nx = p->nx, *ny = p->ny, *nz = p->nz;

    for (int k = 0; k < n; k++) {
        int j = 3 * k;
        if (p->pinned[k]) continue; /* placed below */
        if (p->inv_mass[k] == 0.0f) continue; /* grabbed: placed below */
        float vx = (x[j] - o[j]) * DAMPING_120;
        float vy = (x[j + 1] - o[j + 1]) * DAMPING_120;
        float vz = (x[j + 2] - o[j + 2]) * DAMPING_120;
        float rx = wind.x - vx * inv_h, ry = wind.y - vy * inv_h, rz = wind.z - vz * inv_h;
        float dn = (nx[k] * rx + ny[k] * ry + nz[k] * rz) * WIND_K;
        float ax = nx[k] * dn + rx * DRAG;
        float ay = ny[k] * dn + ry * DRAG - GRAVITY;
        float az = nz[k] * dn + rz * DRAG;
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] += vx + ax * h2;
        x[j + 1] += vy + ay * h2;
        x[j + 2] += vz + az * h2;
    }

    /* Pinned points jump to their anchor and take their old position along
     * (o = p first), so the anchor's motion is their velocity: no whip. */
    for (int q = 0; q < p->pin_count; q++) {
        int j = 3 * p->pins[q];
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] = p->anchors[3 * q];
        x[j + 1] = p->anchors[3 * q + 1];
        x[j + 2] = p->anchors[3 * q + 2];
    }

    /* Grabbed points walk toward their target, at most GRAB_MAX_STEP per step. */
    for (int g = 0; g < TB_CLOTH_MAX_GRABS; g++) {
        const tb_cloth_grab *gr = &world->state.grabs[g];
        if (!gr->active || gr->piece != piece_index) continue;
        int j = 3 * gr->point;
        tb_vec3 cur = tb_v3(x[j], x[j + 1], x[j + 2]);
        tb_vec3 target = gr->target;
        target.y = tb_maxf(target.y, TB_CLOTH_GROUND_Y); /* nobody drags cloth into the ground */
        tb_vec3 d = tb_v3_sub(target, cur);
        float len = tb_v3_len(d);
        if (len > GRAB_MAX_STEP) d = tb_v3_scale(d, GRAB_MAX_STEP / len);
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] += d.x;
        x[j + 1] += d.y;
        x[j + 2] += d.z;
    }
}

/* ---- distance constraints ------------------------------------------------------ */

/* Each end's share of a constraint's correction: with inverse masses wa, wb
 * in {0, 1}, k wa / (wa + wb) = k wa (1 - wb / 2), no division. */
static inline float share_of(float k, float wa, float wb) { return k * wa * (1.0f - 0.5f * wb); }

/* Eight points' positions, one lane each (simd.h's tb_f8). */
typedef struct lanes {
    tb_f8 x, y, z;
} lanes;

TB_SIMD_INLINE lanes load_points(const tb_cloth_piece *p, int i)
{
    return (lanes){tb_f8_load(&p->px[i]), tb_f8_load(&p->py[i]), tb_f8_load(&p->pz[i])};
}

TB_SIMD_INLINE void store_points(tb_cloth_piece *p, int i, const lanes *l)
{
    tb_f8_store(&p->px[i], l->x);
    tb_f8_store(&p->py[i], l->y);
    tb_f8_store(&p->pz[i], l->z);
}

/* Eight constraints between a and b at once, lane by lane: with d = b - a,
 * the ends move by d f sa and -d f sb, f = (|d| - rest) / |d|, so that a
 * share of 1/2 each and stiffness k leave (1 - k) of the error. Ends closer
 * than 1e-6 m have no direction to push in: f = 0 there. A lane with zero
 * shares moves nothing: its points are stored back as they were. */
TB_SIMD_INLINE void solve_lanes(lanes *a, lanes *b, tb_f8 sa, tb_f8 sb, tb_f8 rest)
{
    tb_f8 dx = b->x - a->x, dy = b->y - a->y, dz = b->z - a->z;
    tb_f8 d2 = dx * dx + dy * dy + dz * dz;
    tb_f8 d = tb_f8_max(tb_f8_sqrt(d2), tb_f8_splat(1e-6f));
    tb_f8 f = tb_f8_keep_ge((d - rest) / d, d2, tb_f8_splat(1e-12f));
    tb_f8 fa = f * sa, fb = f * sb;
    a->x = a->x + dx * fa;
    a->y = a->y + dy * fa;
    a->z = a->z + dz * fa;
    b->x = b->x - dx * fb;
    b->y = b->y - dy * fb;
    b->z = b->z - dz * fb;
}

/* Families of constraints. Constraint number c (c = j w + i, over the whole
 * grid) joins a = c + da and b = c + db:
 *   H1 (c, c+1)   H2 (c, c+2)   V1 (c, c+w)   V2 (c, c+2w)
 *   D1 (c, c+w+1) D2 (c+1, c+w)
 * Where such a pair would wrap to the next row (or run off the grid) its
 * shares are zero and it moves nothing, so every family is one long run.
 *
 * Why eight at a time gives the bits of one at a time. V and D: two
 * constraints of a family that share a point are `dist` apart (w, 2w, w + 1,
 * w - 1); a group of at most that many consecutive c never holds both, and
 * dependent constraints keep increasing c order, so any grouping gives the
 * same bits. H: neighbours along a row overlap, so they go in two passes of
 * disjoint pairs (H1: c even, then odd; H2: c mod 4 in {0, 1}, then {2, 3});
 * within a pass any grouping gives the same bits. So the width of the SIMD
 * path (eight lanes, as two SSE or one AVX register) changes no result. */
typedef struct family {
    int da, db, count, dist;
    float rest;
} family;

static family family_of(const tb_cloth_piece *p, int f, int w, int h)
{
    int n = w * h;
    switch (f) {
    case TB_CLOTH_FAMILY_H1: return (family){0, 1, n, 1, p->rest_x};
    case TB_CLOTH_FAMILY_H2: return (family){0, 2, n, 2, 2.0f * p->rest_x};
    case TB_CLOTH_FAMILY_V1: return (family){0, w, w * (h - 1), w, p->rest_y};
    case TB_CLOTH_FAMILY_V2: return (family){0, 2 * w, w * (h - 2), 2 * w, 2.0f * p->rest_y};
    case TB_CLOTH_FAMILY_D1: return (family){0, w + 1, w * (h - 1), w + 1, p->rest_diag};
    default: return (family){1, w, w * (h - 1), w - 1, p->rest_diag};
    }
}

static float family_stiffness(int f)
{
    if (f == TB_CLOTH_FAMILY_H1 || f == TB_CLOTH_FAMILY_V1) return STIFF_STRUCTURAL;
    if (f == TB_CLOTH_FAMILY_H2 || f == TB_CLOTH_FAMILY_V2) return STIFF_BEND;
    return STIFF_SHEAR;
}

/* Does constraint c of family f exist (not wrapping to the next row)? */
static bool family_has(int f, int c, int w)
{
    int i = c % w;
    switch (f) {
    case TB_CLOTH_FAMILY_H1: return i + 1 < w;
    case TB_CLOTH_FAMILY_H2: return i + 2 < w;
    case TB_CLOTH_FAMILY_D1:
    case TB_CLOTH_FAMILY_D2: return i + 1 < w;
    default: return true;
    }
}

/* Shares of every constraint, from the inverse masses; called whenever pins
 * or grabs change. Entries past a family's count stay zero. */
void tb_cloth__update_shares(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int w = ps->width, h = ps->height;
    for (int f = 0; f < TB_CLOTH_FAMILIES; f++) {
        family fam = family_of(p, f, w, h);
        float k = family_stiffness(f);
        for (int c = 0; c < fam.count; c++) {
            bool valid = family_has(f, c, w);
            float wa = valid ? p->inv_mass[c + fam.da] : 0.0f, wb = valid ? p->inv_mass[c + fam.db] : 0.0f;
            p->share_a[f][c] = share_of(k, wa, wb);
            p->share_b[f][c] = share_of(k, wb, wa);
        }
        for (int c = fam.count; c < fam.count + TB_CLOTH_PAD; c++) p->share_a[f][c] = p->share_b[f][c] = 0.0f;
    }
}

/* Constraints c0 .. c0 + count - 1 of a run family, eight at a time. A last
 * partial group has its missing lanes' shares masked to zero. */
TB_SIMD_INLINE void solve_family_part(tb_cloth_piece *p, int f, family fam, int c0, int count)
{
    const float *sa = p->share_a[f], *sb = p->share_b[f];
    const tb_f8 rest = tb_f8_splat(fam.rest);
    const tb_f8 lane = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f};
    for (int t = 0; t < count; t += 8) {
        int c = c0 + t;
        lanes a = load_points(p, c + fam.da), b = load_points(p, c + fam.db);
        tb_f8 va = tb_f8_load(&sa[c]), vb = tb_f8_load(&sb[c]);
        if (t + 8 > count) {
            const tb_f8 left = tb_f8_splat((float)(count - t));
            va = tb_f8_keep_lt(va, lane, left);
            vb = tb_f8_keep_lt(vb, lane, left);
        }
        solve_lanes(&a, &b, va, vb, rest);
        store_points(p, c + fam.da, &a);
        store_points(p, c + fam.db, &b);
    }
}

/* A whole family: one long run when groups of eight fit, else row by row. */
TB_SIMD_INLINE void solve_family(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    if (fam.dist >= 8) {
        solve_family_part(p, f, fam, 0, fam.count);
    } else {
        for (int c0 = 0; c0 < fam.count; c0 += w) solve_family_part(p, f, fam, c0, w);
    }
}

/* The H families (pairs (c, c + gap) along the rows), pass by pass. Sixteen
 * consecutive points hold eight pairs of a pass; shuffles split them into an
 * `a` and a `b` vector, the shares (indexed like the points) with the same
 * shuffles, and the inverse shuffles put the points back. The shuffles stay
 * inside each half of eight lanes (one instruction each on AVX, whose
 * shuffles work on 128-bit halves), so the lanes come out permuted
 * ([0,2,8,10 | 4,6,12,14] for gap 1), the same way for a, b and the shares. */
TB_SIMD_INLINE void solve_pairs(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    int n = fam.count;
    int gap = fam.db;
    const float *sa = p->share_a[f], *sb = p->share_b[f];
    const tb_f8 rest = tb_f8_splat(fam.rest);
    for (int pass = 0; pass < 2; pass++) {
        for (int base = pass * gap; base < n; base += 16) {
            lanes lo = load_points(p, base), hi = load_points(p, base + 8), a, b;
            tb_f8 slo = tb_f8_load(&sa[base]), shi = tb_f8_load(&sa[base + 8]);
            tb_f8 tlo = tb_f8_load(&sb[base]), thi = tb_f8_load(&sb[base + 8]);
            if (gap == 1) { /* pairs (0,1) (2,3) ...: a the even points, b the odd */
#define EVEN(u, v) TB_SHUFFLE((u), (v), 0, 2, 8, 10, 4, 6, 12, 14)
#define ODD(u, v) TB_SHUFFLE((u), (v), 1, 3, 9, 11, 5, 7, 13, 15)
#define BACK_LO(u, v) TB_SHUFFLE((u), (v), 0, 8, 1, 9, 4, 12, 5, 13)
#define BACK_HI(u, v) TB_SHUFFLE((u), (v), 2, 10, 3, 11, 6, 14, 7, 15)
                a = (lanes){EVEN(lo.x, hi.x), EVEN(lo.y, hi.y), EVEN(lo.z, hi.z)};
                b = (lanes){ODD(lo.x, hi.x), ODD(lo.y, hi.y), ODD(lo.z, hi.z)};
                solve_lanes(&a, &b, EVEN(slo, shi), EVEN(tlo, thi), rest);
                lo = (lanes){BACK_LO(a.x, b.x), BACK_LO(a.y, b.y), BACK_LO(a.z, b.z)};
                hi = (lanes){BACK_HI(a.x, b.x), BACK_HI(a.y, b.y), BACK_HI(a.z, b.z)};
#undef EVEN
#undef ODD
#undef BACK_LO
#undef BACK_HI
            } else { /* gap 2, pairs (0,2) (1,3) (4,6) (5,7) ...: a the first two of each four */
#define FIRST(u, v) TB_SHUFFLE((u), (v), 0, 1, 8, 9, 4, 5, 12, 13)
#define SECOND(u, v) TB_SHUFFLE((u), (v), 2, 3, 10, 11, 6, 7, 14, 15)
                a = (lanes){FIRST(lo.x, hi.x), FIRST(lo.y, hi.y), FIRST(lo.z, hi.z)};
                b = (lanes){SECOND(lo.x, hi.x), SECOND(lo.y, hi.y), SECOND(lo.z, hi.z)};
                solve_lanes(&a, &b, FIRST(slo, shi), FIRST(tlo, thi), rest);
                lo = (lanes){FIRST(a.x, b.x), FIRST(a.y, b.y), FIRST(a.z, b.z)};
                hi = (lanes){SECOND(a.x, b.x), SECOND(a.y, b.y), SECOND(a.z, b.z)};
#undef FIRST
#undef SECOND
            }
            store_points(p, base, &lo);
            store_points(p, base + 8, &hi);
        }
    }
}

/* One iteration over every constraint: bend, then shear, then structural
 * last, so the stiffest family has the final word. */
TB_SIMD_INLINE void solve_constraints(tb_cloth_piece *p, int w, int h)
{
    solve_pairs(p, TB_CLOTH_FAMILY_H2, w, h);
    solve_family(p, TB_CLOTH_FAMILY_V2, w, h);
    solve_family(p, TB_CLOTH_FAMILY_D1, w, h);
    solve_family(p, TB_CLOTH_FAMILY_D2, w, h);
    solve_pairs(p, TB_CLOTH_FAMILY_H1, w, h);
    solve_family(p, TB_CLOTH_FAMILY_V1, w, h);
}

/* ---- collisions ----------------------------------------------------------------- */

/* A capsule prepared for many point tests this step: segment start and
 * direction, 1/|ab|^2. */
typedef struct capsule_fast {
    tb_vec3 a, ab;
    float inv_len2, radius;
} capsule_fast;

static capsule_fast prepare(const tb_cloth_capsule *cap)
{
    capsule_fast f;
    f.a = cap->a;
    f.ab = tb_v3_sub(cap->b, cap->a);
    float len2 = tb_v3_len_sq(f.ab);
    f.inv_len2 = len2 > 1e-12f ? 1.0f / len2 : 0.0f;
    f.radius = cap->radius;
    return f;
}

/* q minus the closest point of the capsule's segment. */
static inline tb_vec3 capsule_offset(const capsule_fast *c, tb_vec3 q)
{
    tb_vec3 aq = tb_v3_sub(q, c->a);
    float t = tb_clampf(tb_v3_dot(aq, c->ab) * c->inv_len2, 0.0f, 1.0f);
    return tb_v3_sub(aq, tb_v3_scale(c->ab, t));
}

/* Push (x, y, z) out of the capsule to radius + skin; returns 1 if it was inside. */
static inline int push_out(const capsule_fast *c, float *x, float *y, float *z, float skin)
{
    tb_vec3 d = capsule_offset(c, tb_v3(*x, *y, *z));
    float d2 = tb_v3_len_sq(d);
    float r = c->radius;
    if (d2 >= r * r) return 0;
    float len = sqrtf(d2);
    if (len < 1e-6f) return 0; /* on the axis: no direction to push in */
    float s = (r + skin - len) / len;
    *x += d.x * s;
    *y += d.y * s;
    *z += d.z * s;
    return 1;
}

/* The capsules of a piece as columns, for testing one point against all of
 * them at once (eight lanes; unused lanes are masked off by `count`). */
typedef struct capsule_columns {
    float ax[8], ay[8], az[8], abx[8], aby[8], abz[8], inv_len2[8], reach[8];
    int count;
} capsule_columns;

static void capsule_columns_of(const capsule_fast *caps, int count, capsule_columns *cc)
{
    memset(cc, 0, sizeof *cc);
    cc->count = count;
    for (int c = 0; c < count; c++) {
        cc->ax[c] = caps[c].a.x;
        cc->ay[c] = caps[c].a.y;
        cc->az[c] = caps[c].a.z;
        cc->abx[c] = caps[c].ab.x;
        cc->aby[c] = caps[c].ab.y;
        cc->abz[c] = caps[c].ab.z;
        cc->inv_len2[c] = caps[c].inv_len2;
        cc->reach[c] = caps[c].radius + NEAR_MARGIN;
    }
}

/* Bit c set when q is within reach[c] + moved of capsule c's segment (what
 * capsule_offset computes, for the eight capsule lanes at once; lanes past
 * the count are masked off). */
TB_SIMD_INLINE unsigned near_capsules(const capsule_columns *cc, tb_vec3 q, float moved)
{
    tb_f8 qx = tb_f8_splat(q.x) - tb_f8_load(cc->ax);
    tb_f8 qy = tb_f8_splat(q.y) - tb_f8_load(cc->ay);
    tb_f8 qz = tb_f8_splat(q.z) - tb_f8_load(cc->az);
    tb_f8 abx = tb_f8_load(cc->abx), aby = tb_f8_load(cc->aby), abz = tb_f8_load(cc->abz);
    tb_f8 t = (qx * abx + qy * aby + qz * abz) * tb_f8_load(cc->inv_len2);
    t = tb_f8_min(tb_f8_max(t, tb_f8_splat(0.0f)), tb_f8_splat(1.0f));
    tb_f8 dx = qx - abx * t, dy = qy - aby * t, dz = qz - abz * t;
    tb_f8 d2 = dx * dx + dy * dy + dz * dz;
    tb_f8 reach = tb_f8_load(cc->reach) + tb_f8_splat(moved);
    return tb_f8_bits_lt(d2, reach * reach) & ((1u << cc->count) - 1u);
}

/* Which capsules each free point might touch this step, and which points
 * are near the ground, so the iterations and the final pass only test
 * those. "Might touch": within NEAR_MARGIN (which covers the capsules' own
 * motion in a step) plus the point's own motion this step (|p - o|, which
 * covers pokes and throws). Reads the columns. */
TB_HOT_CLONES static void find_pairs(const capsule_columns *cc, const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    p->pair_count = 0;
    p->low_count = 0;
    for (int k = 0; k < n; k++) {
        if (p->inv_mass[k] == 0.0f) continue;
        tb_vec3 q = tb_v3(p->px[k], p->py[k], p->pz[k]);
        float moved = tb_v3_dist(q, tb_v3(ps->prev[3 * k], ps->prev[3 * k + 1], ps->prev[3 * k + 2]));
        if (q.y < TB_CLOTH_GROUND_Y + NEAR_MARGIN + moved) p->low[p->low_count++] = (uint16_t)k;
        if (cc->count == 0) continue;
        unsigned mask = near_capsules(cc, q, moved);
        while (mask && p->pair_count < TB_CLOTH_MAX_PAIRS) {
            int c = __builtin_ctz(mask);
            mask &= mask - 1;
            p->pairs[p->pair_count++] = (tb_cloth_pair){(uint16_t)k, (uint16_t)c};
        }
    }
}

static void collide_pairs(const capsule_fast *caps, tb_cloth_piece *p)
{
    for (int m = 0; m < p->pair_count; m++) {
        int k = p->pairs[m].point;
        push_out(&caps[p->pairs[m].capsule], &p->px[k], &p->py[k], &p->pz[k], 0.0f);
    }
}

static void collide_ground(tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    float *o = ps->prev;
    for (int m = 0; m < p->low_count; m++) {
        int k = p->low[m];
        if (p->py[k] < TB_CLOTH_GROUND_Y) {
            p->py[k] = TB_CLOTH_GROUND_Y;
            /* Ground friction (the seed's): halve the sliding velocity. */
            o[3 * k] += (p->px[k] - o[3 * k]) * 0.5f;
            o[3 * k + 2] += (p->pz[k] - o[3 * k + 2]) * 0.5f;
        }
    }
}

/* After the iterations: each near pair again, to radius + skin, repeated
 * while something moved (a push out of one capsule can land in the next
 * where two meet), at most three rounds. Pairs come grouped by point. Then
 * the ground for the points near it. */
static void collide_final(const capsule_fast *caps, tb_cloth_piece *p)
{
    for (int m = 0; m < p->pair_count;) {
        int k = p->pairs[m].point, end = m;
        while (end < p->pair_count && p->pairs[end].point == k) end++;
        for (int round = 0; round < 3; round++) {
            int moved = 0;
            for (int q = m; q < end; q++)
                moved |= push_out(&caps[p->pairs[q].capsule], &p->px[k], &p->py[k], &p->pz[k], COLLISION_SKIN);
            if (!moved) break;
        }
        m = end;
    }
    for (int m = 0; m < p->low_count; m++) {
        float *y = &p->py[p->low[m]];
        if (*y < TB_CLOTH_GROUND_Y) *y = TB_CLOTH_GROUND_Y;
    }
}

void tb_cloth__to_columns(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    for (int k = 0; k < n; k++) {
        p->px[k] = ps->pos[3 * k];
        p->py[k] = ps->pos[3 * k + 1];
        p->pz[k] = ps->pos[3 * k + 2];
    }
}

static void from_columns(tb_cloth_piece_state *ps, const tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    for (int k = 0; k < n; k++) {
        ps->pos[3 * k] = p->px[k];
        ps->pos[3 * k + 1] = p->py[k];
        ps->pos[3 * k + 2] = p->pz[k];
    }
}

/* ---- normals ------------------------------------------------------------------------ */

/* The normal at point k from central differences across the grid, one-sided
 * at the border: du = P(i+1) - P(i-1) along the row, dv = P(j+1) - P(j-1)
 * down the grid, n = normalize(dv x du) (zero if degenerate). Eight points
 * at a time: the row interiors straight off the columns, the border columns
 * (whose differences are one-sided) gathered into lanes. */
TB_SIMD_INLINE void normal_lanes(const lanes *u, const lanes *v, tb_f8 *nx, tb_f8 *ny, tb_f8 *nz)
{
    tb_f8 cx = v->y * u->z - v->z * u->y, cy = v->z * u->x - v->x * u->z, cz = v->x * u->y - v->y * u->x;
    tb_f8 len = tb_f8_sqrt(cx * cx + cy * cy + cz * cz);
    tb_f8 inv = tb_f8_splat(1.0f) / len;
    const tb_f8 tiny = tb_f8_splat(1e-12f);
    *nx = tb_f8_keep_lt(cx * inv, tiny, len);
    *ny = tb_f8_keep_lt(cy * inv, tiny, len);
    *nz = tb_f8_keep_lt(cz * inv, tiny, len);
}

/* Interior points k .. k + 7 of a row (up, down: the same columns one row
 * up and down). Lanes past the interior are written too and fixed up after:
 * the row's last column by the border pass, the spill into the next rows by
 * their own passes, the padding never read. */
TB_SIMD_INLINE void normals_interior(tb_cloth_piece *p, int k, int up, int down)
{
    lanes u = {tb_f8_load(&p->px[k + 1]) - tb_f8_load(&p->px[k - 1]), tb_f8_load(&p->py[k + 1]) - tb_f8_load(&p->py[k - 1]),
               tb_f8_load(&p->pz[k + 1]) - tb_f8_load(&p->pz[k - 1])};
    lanes v = {tb_f8_load(&p->px[down]) - tb_f8_load(&p->px[up]), tb_f8_load(&p->py[down]) - tb_f8_load(&p->py[up]),
               tb_f8_load(&p->pz[down]) - tb_f8_load(&p->pz[up])};
    tb_f8 nx, ny, nz;
    normal_lanes(&u, &v, &nx, &ny, &nz);
    tb_f8_store(&p->nx[k], nx);
    tb_f8_store(&p->ny[k], ny);
    tb_f8_store(&p->nz[k], nz);
}

/* The two border columns of rows j0 .. j0 + 3 (fewer at the bottom): lane
 * 2 m is the left end of row j0 + m, lane 2 m + 1 its right end. */
TB_SIMD_INLINE void normals_border(tb_cloth_piece *p, int j0, int w, int h)
{
    int k[8], left[8], right[8], up[8], down[8], n = 0;
    for (int j = j0; j < j0 + 4 && j < h; j++) {
        int row = j * w, above = (j > 0 ? j - 1 : j) * w, below = (j < h - 1 ? j + 1 : j) * w;
        k[n] = row, left[n] = row, right[n] = row + 1, up[n] = above, down[n] = below, n++;
        k[n] = row + w - 1, left[n] = row + w - 2, right[n] = row + w - 1, up[n] = above + w - 1,
        down[n] = below + w - 1, n++;
    }
    for (int m = n; m < 8; m++) k[m] = left[m] = right[m] = up[m] = down[m] = k[0]; /* idle lanes */
    lanes u, v;
    for (int m = 0; m < 8; m++) {
        u.x[m] = p->px[right[m]] - p->px[left[m]], u.y[m] = p->py[right[m]] - p->py[left[m]];
        u.z[m] = p->pz[right[m]] - p->pz[left[m]];
        v.x[m] = p->px[down[m]] - p->px[up[m]], v.y[m] = p->py[down[m]] - p->py[up[m]];
        v.z[m] = p->pz[down[m]] - p->pz[up[m]];
    }
    tb_f8 nx, ny, nz;
    normal_lanes(&u, &v, &nx, &ny, &nz);
    for (int m = 0; m < n; m++) p->nx[k[m]] = nx[m], p->ny[k[m]] = ny[m], p->nz[k[m]] = nz[m];
}

TB_HOT_CLONES void tb_cloth__compute_normals(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int w = ps->width, h = ps->height;
    for (int j = 0; j < h; j++) {
        int row = j * w, up = (j > 0 ? j - 1 : j) * w, down = (j < h - 1 ? j + 1 : j) * w;
        for (int i = 1; i < w - 1; i += 8) normals_interior(p, row + i, up + i, down + i);
    }
    for (int j = 0; j < h; j += 4) normals_border(p, j, w, h);
    int n = w * h;
    for (int k = 0; k < n; k++) {
        p->normals[3 * k] = p->nx[k];
        p->normals[3 * k + 1] = p->ny[k];
        p->normals[3 * k + 2] = p->nz[k];
    }
}

/* The iterations of one piece: every constraint, then the near capsules and
 * the ground, `iterations` times (the constraint walk inlined, so the AVX
 * clone holds the whole loop). */
TB_HOT_CLONES static void solve_iterations(const capsule_fast *caps, tb_cloth_piece_state *ps, tb_cloth_piece *p,
                                           int iterations)
{
    for (int it = 0; it < iterations; it++) {
        solve_constraints(p, ps->width, ps->height);
        collide_pairs(caps, p);
        collide_ground(ps, p);
    }
}

void tb_cloth__solve_step(tb_cloth_world *world)
{
    tb_cloth_state *st = &world->state;

    /* The figure and the anchors at the end of this step. */
    tb_cloth__figure_advance(&st->figure, st->walking != 0, TB_CLOTH_DT);
    for (int i = 0; i < st->piece_count; i++) {
        if (st->pieces[i].kind != TB_CLOTH_KIND_CAPE) continue;
        tb_cloth__figure_pose(&st->figure, &world->capsules[world->pieces[i].capsule_first],
                              world->pieces[i].anchors, world->pieces[i].pin_count, &world->figure_forward,
                              &world->figure_torso_centre);
    }

    float strength = st->wind_strength * gust_factor(st->step_count);
    float ws, wc;
    tb_sin_cos(st->wind_direction, &ws, &wc);
    tb_vec3 wind = tb_v3(wc * strength, 0.0f, -ws * strength);

    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth_piece_state *ps = &st->pieces[i];
        tb_cloth_piece *p = &world->pieces[i];
        capsule_fast caps[TB_CLOTH_MAX_CAPSULES];
        for (int c = 0; c < p->capsule_count; c++) caps[c] = prepare(&world->capsules[p->capsule_first + c]);
        capsule_columns cc;
        capsule_columns_of(caps, p->capsule_count, &cc);
        integrate(world, ps, p, i, wind);
        tb_cloth__to_columns(ps, p);
        find_pairs(&cc, ps, p);
        solve_iterations(caps, ps, p, st->iterations);
        collide_final(caps, p);
        tb_cloth__compute_normals(ps, p);
        from_columns(ps, p);
    }
    st->step_count++;
}
