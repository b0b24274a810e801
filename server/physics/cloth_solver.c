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
 * point: 8 at a time with AVX when the CPU has it (chosen at run time), else
 * 4 with SSE2, else one by one, and all three give the same bits (tested).
 * It is still Gauss-Seidel: each group sees the corrections of the groups
 * before it.
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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TB_CLOTH_HAVE_AVX 1
#include <immintrin.h>
#else
#define TB_CLOTH_HAVE_AVX 0
#endif

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
 * steady wind keeps moving. Computed in double from the step count. */
static float gust_factor(uint64_t step_count)
{
    double t = (double)step_count * (1.0 / 120.0);
    return (float)(1.0 + 0.25 * sin(1.3 * t) + 0.15 * sin(3.7 * t + 1.0));
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
 * in {0, 1}, k wa / (wa + wb) = k wa (1 - wb / 2), no division. The scalar
 * and SIMD paths evaluate it in the same order, so they give the same bits. */
static inline float share_of(float k, float wa, float wb) { return k * wa * (1.0f - 0.5f * wb); }

/* One constraint between a and b with shares sa, sb and rest length `rest`.
 * Used by the path for targets without SSE2 (checked by building with
 * -U__SSE2__), hence "unused" for clang on x86. */
__attribute__((unused)) static inline void solve_one(float *ax, float *ay, float *az, float *bx, float *by, float *bz, float sa, float sb,
                             float rest)
{
    float dx = *bx - *ax, dy = *by - *ay, dz = *bz - *az;
    float d2 = dx * dx + dy * dy + dz * dz;
    float d = tb_maxf(sqrtf(d2), 1e-6f);
    float f = (d - rest) / d;
    if (!(d2 >= 1e-12f)) f = 0.0f;
    float fa = f * sa, fb = f * sb;
    *ax += dx * fa;
    *ay += dy * fa;
    *az += dz * fa;
    *bx -= dx * fb;
    *by -= dy * fb;
    *bz -= dz * fb;
}

/* Families of constraints. Constraint number c (c = j w + i, over the whole
 * grid) joins a = c + da and b = c + db:
 *   H1 (c, c+1)   H2 (c, c+2)   V1 (c, c+w)   V2 (c, c+2w)
 *   D1 (c, c+w+1) D2 (c+1, c+w)
 * Where such a pair would wrap to the next row (or run off the grid) its
 * shares are zero and it moves nothing, so every family is one long run.
 *
 * V and D: two constraints of a family that share a point are `dist` apart
 * (w, 2w, w + 1, w - 1); a SIMD group of at most that many consecutive c
 * never holds both, and dependent constraints keep increasing c order, so
 * any grouping gives the same bits. H: neighbours along a row overlap, so
 * they go in two passes of disjoint pairs (H1: c even, then odd; H2: c mod 4
 * in {0, 1}, then {2, 3}); within a pass any grouping gives the same bits. */
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

__attribute__((unused)) static inline void solve_scalar(tb_cloth_piece *p, int a, int b, float sa, float sb, float rest)
{
    solve_one(&p->px[a], &p->py[a], &p->pz[a], &p->px[b], &p->py[b], &p->pz[b], sa, sb, rest);
}

#if defined(__SSE2__)
typedef struct lanes { __m128 x, y, z; } lanes;

static inline void solve_four(lanes *a, lanes *b, __m128 sa, __m128 sb, __m128 rest)
{
    __m128 dx = _mm_sub_ps(b->x, a->x), dy = _mm_sub_ps(b->y, a->y), dz = _mm_sub_ps(b->z, a->z);
    __m128 d2 = _mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz));
    __m128 d = _mm_max_ps(_mm_sqrt_ps(d2), _mm_set1_ps(1e-6f));
    __m128 f = _mm_div_ps(_mm_sub_ps(d, rest), d);
    f = _mm_and_ps(f, _mm_cmpge_ps(d2, _mm_set1_ps(1e-12f)));
    __m128 fa = _mm_mul_ps(f, sa), fb = _mm_mul_ps(f, sb);
    a->x = _mm_add_ps(a->x, _mm_mul_ps(dx, fa));
    a->y = _mm_add_ps(a->y, _mm_mul_ps(dy, fa));
    a->z = _mm_add_ps(a->z, _mm_mul_ps(dz, fa));
    b->x = _mm_sub_ps(b->x, _mm_mul_ps(dx, fb));
    b->y = _mm_sub_ps(b->y, _mm_mul_ps(dy, fb));
    b->z = _mm_sub_ps(b->z, _mm_mul_ps(dz, fb));
}


static inline lanes load4(const tb_cloth_piece *p, int i)
{
    lanes l = {_mm_loadu_ps(&p->px[i]), _mm_loadu_ps(&p->py[i]), _mm_loadu_ps(&p->pz[i])};
    return l;
}

static inline void store4(tb_cloth_piece *p, int i, const lanes *l)
{
    _mm_storeu_ps(&p->px[i], l->x);
    _mm_storeu_ps(&p->py[i], l->y);
    _mm_storeu_ps(&p->pz[i], l->z);
}
#endif

/* Constraints c0 .. c0 + count - 1 of a run family, four at a time. A last
 * partial group has its missing lanes' shares masked to zero: they move
 * nothing, and the points they load are stored back as they were. */
static void solve_family_part(tb_cloth_piece *p, int f, family fam, int c0, int count)
{
    const float *sa = p->share_a[f], *sb = p->share_b[f];
#if defined(__SSE2__)
    __m128 vr = _mm_set1_ps(fam.rest);
    const __m128 lane = _mm_set_ps(3.0f, 2.0f, 1.0f, 0.0f);
    for (int t = 0; t < count; t += 4) {
        int c = c0 + t;
        lanes a = load4(p, c + fam.da), b = load4(p, c + fam.db);
        __m128 va = _mm_loadu_ps(&sa[c]), vb = _mm_loadu_ps(&sb[c]);
        if (t + 4 > count) {
            __m128 valid = _mm_cmplt_ps(lane, _mm_set1_ps((float)(count - t)));
            va = _mm_and_ps(va, valid);
            vb = _mm_and_ps(vb, valid);
        }
        solve_four(&a, &b, va, vb, vr);
        store4(p, c + fam.da, &a);
        store4(p, c + fam.db, &b);
    }
#else
    for (int c = c0; c < c0 + count; c++) solve_scalar(p, c + fam.da, c + fam.db, sa[c], sb[c], fam.rest);
#endif
}

/* A whole family: one long run when groups of `width` fit, else row by row. */
static void solve_family(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    if (fam.dist >= 4) {
        solve_family_part(p, f, fam, 0, fam.count);
    } else {
        for (int c0 = 0; c0 < fam.count; c0 += w) solve_family_part(p, f, fam, c0, w);
    }
}

/* The H families (pairs (c, c + gap) along the rows), pass by pass. Eight
 * consecutive points hold four pairs of a pass; SIMD splits them into an
 * `a` and a `b` vector with one shuffle, and the shares (indexed like the
 * points) with the same shuffle, and puts the points back after. */
static void solve_pairs(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    int n = fam.count;
    int gap = fam.db;
    const float *sa = p->share_a[f], *sb = p->share_b[f];
    for (int pass = 0; pass < 2; pass++) {
#if defined(__SSE2__)
        __m128 vr = _mm_set1_ps(fam.rest);
        for (int base = pass * gap; base < n; base += 8) {
            lanes lo = load4(p, base), hi = load4(p, base + 4), a, b;
            __m128 slo = _mm_loadu_ps(&sa[base]), shi = _mm_loadu_ps(&sa[base + 4]);
            __m128 tlo = _mm_loadu_ps(&sb[base]), thi = _mm_loadu_ps(&sb[base + 4]);
            if (gap == 1) {
                a.x = _mm_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(2, 0, 2, 0));
                b.x = _mm_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(3, 1, 3, 1));
                a.y = _mm_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(2, 0, 2, 0));
                b.y = _mm_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(3, 1, 3, 1));
                a.z = _mm_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(2, 0, 2, 0));
                b.z = _mm_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(3, 1, 3, 1));
                solve_four(&a, &b, _mm_shuffle_ps(slo, shi, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm_shuffle_ps(tlo, thi, _MM_SHUFFLE(2, 0, 2, 0)), vr);
                lo.x = _mm_unpacklo_ps(a.x, b.x); hi.x = _mm_unpackhi_ps(a.x, b.x);
                lo.y = _mm_unpacklo_ps(a.y, b.y); hi.y = _mm_unpackhi_ps(a.y, b.y);
                lo.z = _mm_unpacklo_ps(a.z, b.z); hi.z = _mm_unpackhi_ps(a.z, b.z);
            } else {
                a.x = _mm_movelh_ps(lo.x, hi.x); b.x = _mm_movehl_ps(hi.x, lo.x);
                a.y = _mm_movelh_ps(lo.y, hi.y); b.y = _mm_movehl_ps(hi.y, lo.y);
                a.z = _mm_movelh_ps(lo.z, hi.z); b.z = _mm_movehl_ps(hi.z, lo.z);
                solve_four(&a, &b, _mm_movelh_ps(slo, shi), _mm_movelh_ps(tlo, thi), vr);
                lo.x = _mm_movelh_ps(a.x, b.x); hi.x = _mm_movehl_ps(b.x, a.x);
                lo.y = _mm_movelh_ps(a.y, b.y); hi.y = _mm_movehl_ps(b.y, a.y);
                lo.z = _mm_movelh_ps(a.z, b.z); hi.z = _mm_movehl_ps(b.z, a.z);
            }
            store4(p, base, &lo);
            store4(p, base + 4, &hi);
        }
#else
        for (int c = 0; c < n; c++)
            if (((c / gap) & 1) == pass) solve_scalar(p, c, c + gap, sa[c], sb[c], fam.rest);
#endif
    }
}

/* One iteration over every constraint: bend, then shear, then structural
 * last, so the stiffest family has the final word. */
static void solve_constraints(tb_cloth_piece *p, int w, int h)
{
    solve_pairs(p, TB_CLOTH_FAMILY_H2, w, h);
    solve_family(p, TB_CLOTH_FAMILY_V2, w, h);
    solve_family(p, TB_CLOTH_FAMILY_D1, w, h);
    solve_family(p, TB_CLOTH_FAMILY_D2, w, h);
    solve_pairs(p, TB_CLOTH_FAMILY_H1, w, h);
    solve_family(p, TB_CLOTH_FAMILY_V1, w, h);
}

/* The same walk eight at a time with AVX, chosen at run time when the CPU
 * has it (tb_cloth__cpu_has_avx). Every family and every row pass is a set
 * of constraints whose order only matters between dependent ones, which
 * keep their order in any grouping, so four or eight at a time give the
 * same bits; test_cloth checks it. Rows: AVX shuffles work inside 128-bit
 * halves, so the lanes come out permuted ([0,2,8,10 | 4,6,12,14] for gap 1),
 * the same way for a and b, and the unpacks put them back. */
#if TB_CLOTH_HAVE_AVX
#define AVX_FN __attribute__((target("avx")))

typedef struct lanes8 { __m256 x, y, z; } lanes8;

static inline AVX_FN void solve_eight(lanes8 *a, lanes8 *b, __m256 sa, __m256 sb, __m256 rest)
{
    __m256 dx = _mm256_sub_ps(b->x, a->x), dy = _mm256_sub_ps(b->y, a->y), dz = _mm256_sub_ps(b->z, a->z);
    __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
    __m256 d = _mm256_max_ps(_mm256_sqrt_ps(d2), _mm256_set1_ps(1e-6f));
    __m256 f = _mm256_div_ps(_mm256_sub_ps(d, rest), d);
    f = _mm256_and_ps(f, _mm256_cmp_ps(d2, _mm256_set1_ps(1e-12f), _CMP_GE_OQ));
    __m256 fa = _mm256_mul_ps(f, sa), fb = _mm256_mul_ps(f, sb);
    a->x = _mm256_add_ps(a->x, _mm256_mul_ps(dx, fa));
    a->y = _mm256_add_ps(a->y, _mm256_mul_ps(dy, fa));
    a->z = _mm256_add_ps(a->z, _mm256_mul_ps(dz, fa));
    b->x = _mm256_sub_ps(b->x, _mm256_mul_ps(dx, fb));
    b->y = _mm256_sub_ps(b->y, _mm256_mul_ps(dy, fb));
    b->z = _mm256_sub_ps(b->z, _mm256_mul_ps(dz, fb));
}


static inline AVX_FN lanes8 load8(const tb_cloth_piece *p, int i)
{
    lanes8 l = {_mm256_loadu_ps(&p->px[i]), _mm256_loadu_ps(&p->py[i]), _mm256_loadu_ps(&p->pz[i])};
    return l;
}

static inline AVX_FN void store8(tb_cloth_piece *p, int i, const lanes8 *l)
{
    _mm256_storeu_ps(&p->px[i], l->x);
    _mm256_storeu_ps(&p->py[i], l->y);
    _mm256_storeu_ps(&p->pz[i], l->z);
}

static AVX_FN void solve_family_part_avx(tb_cloth_piece *p, int f, family fam, int c0, int count)
{
    const float *sa = p->share_a[f], *sb = p->share_b[f];
    __m256 vr = _mm256_set1_ps(fam.rest);
    const __m256 lane = _mm256_set_ps(7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f, 0.0f);
    for (int t = 0; t < count; t += 8) {
        int c = c0 + t;
        lanes8 a = load8(p, c + fam.da), b = load8(p, c + fam.db);
        __m256 va = _mm256_loadu_ps(&sa[c]), vb = _mm256_loadu_ps(&sb[c]);
        if (t + 8 > count) {
            __m256 valid = _mm256_cmp_ps(lane, _mm256_set1_ps((float)(count - t)), _CMP_LT_OQ);
            va = _mm256_and_ps(va, valid);
            vb = _mm256_and_ps(vb, valid);
        }
        solve_eight(&a, &b, va, vb, vr);
        store8(p, c + fam.da, &a);
        store8(p, c + fam.db, &b);
    }
}

static AVX_FN void solve_family_avx(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    if (fam.dist >= 8) {
        solve_family_part_avx(p, f, fam, 0, fam.count);
    } else {
        for (int c0 = 0; c0 < fam.count; c0 += w) solve_family_part_avx(p, f, fam, c0, w);
    }
}

static AVX_FN void solve_pairs_avx(tb_cloth_piece *p, int f, int w, int h)
{
    family fam = family_of(p, f, w, h);
    int n = fam.count;
    int gap = fam.db;
    const float *sa = p->share_a[f], *sb = p->share_b[f];
    __m256 vr = _mm256_set1_ps(fam.rest);
    for (int pass = 0; pass < 2; pass++) {
        for (int base = pass * gap; base < n; base += 16) {
            lanes8 lo = load8(p, base), hi = load8(p, base + 8), a, b;
            __m256 slo = _mm256_loadu_ps(&sa[base]), shi = _mm256_loadu_ps(&sa[base + 8]);
            __m256 tlo = _mm256_loadu_ps(&sb[base]), thi = _mm256_loadu_ps(&sb[base + 8]);
            if (gap == 1) {
                a.x = _mm256_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(2, 0, 2, 0));
                b.x = _mm256_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(3, 1, 3, 1));
                a.y = _mm256_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(2, 0, 2, 0));
                b.y = _mm256_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(3, 1, 3, 1));
                a.z = _mm256_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(2, 0, 2, 0));
                b.z = _mm256_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(3, 1, 3, 1));
                solve_eight(&a, &b, _mm256_shuffle_ps(slo, shi, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm256_shuffle_ps(tlo, thi, _MM_SHUFFLE(2, 0, 2, 0)), vr);
                lo.x = _mm256_unpacklo_ps(a.x, b.x); hi.x = _mm256_unpackhi_ps(a.x, b.x);
                lo.y = _mm256_unpacklo_ps(a.y, b.y); hi.y = _mm256_unpackhi_ps(a.y, b.y);
                lo.z = _mm256_unpacklo_ps(a.z, b.z); hi.z = _mm256_unpackhi_ps(a.z, b.z);
            } else {
                a.x = _mm256_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(1, 0, 1, 0));
                b.x = _mm256_shuffle_ps(lo.x, hi.x, _MM_SHUFFLE(3, 2, 3, 2));
                a.y = _mm256_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(1, 0, 1, 0));
                b.y = _mm256_shuffle_ps(lo.y, hi.y, _MM_SHUFFLE(3, 2, 3, 2));
                a.z = _mm256_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(1, 0, 1, 0));
                b.z = _mm256_shuffle_ps(lo.z, hi.z, _MM_SHUFFLE(3, 2, 3, 2));
                solve_eight(&a, &b, _mm256_shuffle_ps(slo, shi, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm256_shuffle_ps(tlo, thi, _MM_SHUFFLE(1, 0, 1, 0)), vr);
                lo.x = _mm256_shuffle_ps(a.x, b.x, _MM_SHUFFLE(1, 0, 1, 0)); hi.x = _mm256_shuffle_ps(a.x, b.x, _MM_SHUFFLE(3, 2, 3, 2));
                lo.y = _mm256_shuffle_ps(a.y, b.y, _MM_SHUFFLE(1, 0, 1, 0)); hi.y = _mm256_shuffle_ps(a.y, b.y, _MM_SHUFFLE(3, 2, 3, 2));
                lo.z = _mm256_shuffle_ps(a.z, b.z, _MM_SHUFFLE(1, 0, 1, 0)); hi.z = _mm256_shuffle_ps(a.z, b.z, _MM_SHUFFLE(3, 2, 3, 2));
            }
            store8(p, base, &lo);
            store8(p, base + 8, &hi);
        }
    }
}

static AVX_FN void solve_constraints_avx(tb_cloth_piece *p, int w, int h)
{
    solve_pairs_avx(p, TB_CLOTH_FAMILY_H2, w, h);
    solve_family_avx(p, TB_CLOTH_FAMILY_V2, w, h);
    solve_family_avx(p, TB_CLOTH_FAMILY_D1, w, h);
    solve_family_avx(p, TB_CLOTH_FAMILY_D2, w, h);
    solve_pairs_avx(p, TB_CLOTH_FAMILY_H1, w, h);
    solve_family_avx(p, TB_CLOTH_FAMILY_V1, w, h);
}

bool tb_cloth__cpu_has_avx(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") != 0;
}
#else
bool tb_cloth__cpu_has_avx(void) { return false; }
#endif

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

/* Bit c set when q is within reach[c] + moved of capsule c's segment. Every
 * path does, per capsule, what capsule_offset does, in the same order. */
static unsigned near_scalar(const capsule_columns *cc, tb_vec3 q, float moved)
{
    unsigned mask = 0;
    for (int c = 0; c < cc->count; c++) {
        float qx = q.x - cc->ax[c], qy = q.y - cc->ay[c], qz = q.z - cc->az[c];
        float t = tb_clampf((qx * cc->abx[c] + qy * cc->aby[c] + qz * cc->abz[c]) * cc->inv_len2[c], 0.0f, 1.0f);
        float dx = qx - cc->abx[c] * t, dy = qy - cc->aby[c] * t, dz = qz - cc->abz[c] * t;
        float reach = cc->reach[c] + moved;
        if (dx * dx + dy * dy + dz * dz < reach * reach) mask |= 1u << c;
    }
    return mask;
}

#if TB_CLOTH_HAVE_AVX
static AVX_FN unsigned near_avx(const capsule_columns *cc, tb_vec3 q, float moved)
{
    __m256 qx = _mm256_sub_ps(_mm256_set1_ps(q.x), _mm256_loadu_ps(cc->ax));
    __m256 qy = _mm256_sub_ps(_mm256_set1_ps(q.y), _mm256_loadu_ps(cc->ay));
    __m256 qz = _mm256_sub_ps(_mm256_set1_ps(q.z), _mm256_loadu_ps(cc->az));
    __m256 abx = _mm256_loadu_ps(cc->abx), aby = _mm256_loadu_ps(cc->aby), abz = _mm256_loadu_ps(cc->abz);
    __m256 dot = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(qx, abx), _mm256_mul_ps(qy, aby)), _mm256_mul_ps(qz, abz));
    __m256 t = _mm256_mul_ps(dot, _mm256_loadu_ps(cc->inv_len2));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
    __m256 dx = _mm256_sub_ps(qx, _mm256_mul_ps(abx, t));
    __m256 dy = _mm256_sub_ps(qy, _mm256_mul_ps(aby, t));
    __m256 dz = _mm256_sub_ps(qz, _mm256_mul_ps(abz, t));
    __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
    __m256 reach = _mm256_add_ps(_mm256_loadu_ps(cc->reach), _mm256_set1_ps(moved));
    unsigned mask = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d2, _mm256_mul_ps(reach, reach), _CMP_LT_OQ));
    return mask & ((1u << cc->count) - 1u);
}
#endif

/* Which capsules each free point might touch this step, and which points
 * are near the ground, so the iterations and the final pass only test
 * those. "Might touch": within NEAR_MARGIN (which covers the capsules' own
 * motion in a step) plus the point's own motion this step (|p - o|, which
 * covers pokes and throws). Reads the columns. */
static void find_pairs(const tb_cloth_world *world, const capsule_columns *cc, const tb_cloth_piece_state *ps,
                       tb_cloth_piece *p)
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
#if TB_CLOTH_HAVE_AVX
        unsigned mask = world->use_avx ? near_avx(cc, q, moved) : near_scalar(cc, q, moved);
#else
        unsigned mask = near_scalar(cc, q, moved);
#endif
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
 * down the grid, n = normalize(dv x du) (zero if degenerate). The row
 * interiors go 8 or 4 at a time with the same operations in the same order
 * as normal_one, which does the two border columns of each row. */
static inline void normal_one(tb_cloth_piece *p, int k, int left, int right, int up, int down)
{
    float ux = p->px[right] - p->px[left], uy = p->py[right] - p->py[left], uz = p->pz[right] - p->pz[left];
    float vx = p->px[down] - p->px[up], vy = p->py[down] - p->py[up], vz = p->pz[down] - p->pz[up];
    float cx = vy * uz - vz * uy, cy = vz * ux - vx * uz, cz = vx * uy - vy * ux;
    float len = sqrtf(cx * cx + cy * cy + cz * cz);
    float inv = 1.0f / len;
    bool ok = len > 1e-12f;
    p->nx[k] = ok ? cx * inv : 0.0f;
    p->ny[k] = ok ? cy * inv : 0.0f;
    p->nz[k] = ok ? cz * inv : 0.0f;
}

#if defined(__SSE2__)
/* Interior points row + i .. row + i + 3 (lanes past the interior are
 * written too and fixed up after: the row's last column by normal_one, the
 * spill into the next row by that row's pass, the padding never read). */
static inline void normal_four(tb_cloth_piece *p, int k, int up, int down)
{
    __m128 ux = _mm_sub_ps(_mm_loadu_ps(&p->px[k + 1]), _mm_loadu_ps(&p->px[k - 1]));
    __m128 uy = _mm_sub_ps(_mm_loadu_ps(&p->py[k + 1]), _mm_loadu_ps(&p->py[k - 1]));
    __m128 uz = _mm_sub_ps(_mm_loadu_ps(&p->pz[k + 1]), _mm_loadu_ps(&p->pz[k - 1]));
    __m128 vx = _mm_sub_ps(_mm_loadu_ps(&p->px[down]), _mm_loadu_ps(&p->px[up]));
    __m128 vy = _mm_sub_ps(_mm_loadu_ps(&p->py[down]), _mm_loadu_ps(&p->py[up]));
    __m128 vz = _mm_sub_ps(_mm_loadu_ps(&p->pz[down]), _mm_loadu_ps(&p->pz[up]));
    __m128 cx = _mm_sub_ps(_mm_mul_ps(vy, uz), _mm_mul_ps(vz, uy));
    __m128 cy = _mm_sub_ps(_mm_mul_ps(vz, ux), _mm_mul_ps(vx, uz));
    __m128 cz = _mm_sub_ps(_mm_mul_ps(vx, uy), _mm_mul_ps(vy, ux));
    __m128 len = _mm_sqrt_ps(_mm_add_ps(_mm_add_ps(_mm_mul_ps(cx, cx), _mm_mul_ps(cy, cy)), _mm_mul_ps(cz, cz)));
    __m128 inv = _mm_div_ps(_mm_set1_ps(1.0f), len);
    __m128 ok = _mm_cmpgt_ps(len, _mm_set1_ps(1e-12f));
    _mm_storeu_ps(&p->nx[k], _mm_and_ps(_mm_mul_ps(cx, inv), ok));
    _mm_storeu_ps(&p->ny[k], _mm_and_ps(_mm_mul_ps(cy, inv), ok));
    _mm_storeu_ps(&p->nz[k], _mm_and_ps(_mm_mul_ps(cz, inv), ok));
}
#endif

void tb_cloth__compute_normals(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int w = ps->width, h = ps->height;
    for (int j = 0; j < h; j++) {
        int row = j * w, up = (j > 0 ? j - 1 : j) * w, down = (j < h - 1 ? j + 1 : j) * w;
        int i = 1;
#if defined(__SSE2__)
        for (; i < w - 1; i += 4) normal_four(p, row + i, up + i, down + i);
#else
        for (; i < w - 1; i++) normal_one(p, row + i, row + i - 1, row + i + 1, up + i, down + i);
#endif
        normal_one(p, row, row, row + 1, up, down);
        normal_one(p, row + w - 1, row + w - 2, row + w - 1, up + w - 1, down + w - 1);
    }
    int n = w * h;
    for (int k = 0; k < n; k++) {
        p->normals[3 * k] = p->nx[k];
        p->normals[3 * k + 1] = p->ny[k];
        p->normals[3 * k + 2] = p->nz[k];
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
    tb_vec3 wind = tb_v3(cosf(st->wind_direction) * strength, 0.0f, -sinf(st->wind_direction) * strength);

    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth_piece_state *ps = &st->pieces[i];
        tb_cloth_piece *p = &world->pieces[i];
        capsule_fast caps[TB_CLOTH_MAX_CAPSULES];
        for (int c = 0; c < p->capsule_count; c++) caps[c] = prepare(&world->capsules[p->capsule_first + c]);
        capsule_columns cc;
        capsule_columns_of(caps, p->capsule_count, &cc);
        integrate(world, ps, p, i, wind);
        tb_cloth__to_columns(ps, p);
        find_pairs(world, &cc, ps, p);
        for (int it = 0; it < st->iterations; it++) {
#if TB_CLOTH_HAVE_AVX
            if (world->use_avx) solve_constraints_avx(p, ps->width, ps->height);
            else
#endif
                solve_constraints(p, ps->width, ps->height);
            collide_pairs(caps, p);
            collide_ground(ps, p);
        }
        collide_final(caps, p);
        tb_cloth__compute_normals(ps, p);
        from_columns(ps, p);
    }
    st->step_count++;
}
