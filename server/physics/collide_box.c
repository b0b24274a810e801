/* collide_box.c: box-box contact by the separating axis theorem.
 *
 * Two convex boxes are disjoint iff some axis separates their projections.
 * For boxes the candidates are 15: the 3 face normals of A, the 3 of B, and
 * the 9 cross products of an edge direction of A with one of B. Along a unit
 * axis L, with t = cB - cA, the gap between the projections is
 *
 *     s(L) = |t . L| - (sum_i hA_i |aA_i . L| + sum_j hB_j |aB_j . L|)
 *
 * s > 0 is a separating distance, s < 0 an overlap depth. The contact axis
 * is the one with the largest s (the shallowest overlap).
 *
 * Manifold: for a face axis, the face of the "reference" box whose normal is
 * the axis, and the "incident" face of the other box most anti-parallel to
 * it; the incident quad, expressed in the reference face's frame, is clipped
 * by the face's four sides (Sutherland-Hodgman against |u| <= hu, |w| <= hw),
 * and each clipped vertex within the margin of the reference plane is a
 * contact (up to 8, then reduced to the 4 that span the most area). For an edge axis, one point: the
 * midpoint of the closest points of the two edges.
 */
#include "physics/collide.h"

#include <float.h>
#include <stdint.h>
#include <string.h>

#include "physics/simd.h"

/* Edge axes must beat the best face by this much (the seed's 1 cm): face
 * manifolds with several points are far more stable for resting contact. */
#define EDGE_PREFERENCE 0.01f
/* Faces of A and B closer than this are a tie, decided by face area. */
#define FACE_TIE 1e-4f
/* Cross products shorter than this come from (nearly) parallel edges, which
 * the face axes already cover. */
#define PARALLEL_EDGES 1e-3f
/* Clipped vertices closer than this (L1) are one point. */
#define DUPLICATE_POINT 0.004f

/* Full unrolling of the 3 x 3 axis loops (GCC keeps them rolled at -O2; the
 * indices then become constants and r, c stay in registers). */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL3 _Pragma("GCC unroll 3")
#else
#define UNROLL3
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL4 _Pragma("GCC unroll 4")
#else
#define UNROLL4
#endif

static inline float sign_of(float x) { return x < 0.0f ? -1.0f : 1.0f; }

/* (i + 1) % 3 and (i + 2) % 3 without the division */
static const int next[3] = {1, 2, 0}, after[3] = {2, 0, 1};

tb_collide_box tb_collide_box_make(tb_vec3 center, tb_quat rotation, tb_vec3 half_extents)
{
    tb_collide_box box;
    tb_mat3 r = tb_m3_from_q(rotation);
    box.center = center;
    for (int i = 0; i < 3; i++) box.axis[i] = tb_m3_col(r, i);
    box.half[0] = half_extents.x;
    box.half[1] = half_extents.y;
    box.half[2] = half_extents.z;
    return box;
}

/* The SAT's 3 x 3 quantities are computed three lanes at a time in the SIMD
 * layer's tb_f4 (simd.h), each lane with the operations of the formulas
 * below in the same order (no FMA), so every value is the bits a lane-by-lane
 * evaluation gives; the decisions then scan the lanes in a fixed order (A
 * faces, B faces, edges i-major). Lane 3 is padding. */
#define SAT_PERM(v, i0, i1, i2, i3) TB_SHUFFLE((v), (v), i0, i1, i2, i3)

/* Inlined into tb_collide_box_box's clones (and wrapped as tb_box_box_sat).
 * Longer than a screen on purpose (the one function in server/ over 80
 * lines): the 15 axes share the 3 x 3 rotation and |rotation| tables and the
 * running best axis, and the decisions must scan them in one fixed order for
 * the same bits everywhere; split into functions, the tables would travel
 * through memory or be recomputed, in the hottest loop of the narrow phase. */
static inline __attribute__((always_inline)) bool box_box_sat(const tb_collide_box *a, const tb_collide_box *b,
                                                              float margin, tb_sat_result *out)
{
    tb_vec3 t = tb_v3_sub(b->center, a->center);
    const tb_vec3 *aa = a->axis, *ba = b->axis;
    /* axis components by lane: lane i of ax is a_i.x, lane j of bx is b_j.x */
    const tb_f4 ax = {aa[0].x, aa[1].x, aa[2].x, 0.0f}, ay = {aa[0].y, aa[1].y, aa[2].y, 0.0f},
                 az = {aa[0].z, aa[1].z, aa[2].z, 0.0f};
    const tb_f4 bx = {ba[0].x, ba[1].x, ba[2].x, 0.0f}, by = {ba[0].y, ba[1].y, ba[2].y, 0.0f},
                 bz = {ba[0].z, ba[1].z, ba[2].z, 0.0f};
    /* r = a_i . b_j: row[i] has lanes j, col[j] lanes i (the same numbers:
     * col is row transposed, lane 3 of neither is read) */
    tb_f4 row[3], col[3];
    UNROLL3 for (int i = 0; i < 3; i++)
        row[i] = tb_f4_splat(aa[i].x) * bx + tb_f4_splat(aa[i].y) * by + tb_f4_splat(aa[i].z) * bz;
    {
        const tb_f4 t0 = TB_SHUFFLE(row[0], row[1], 0, 4, 1, 5), t1 = TB_SHUFFLE(row[2], row[2], 0, 4, 1, 5);
        const tb_f4 t2 = TB_SHUFFLE(row[0], row[1], 2, 6, 3, 7), t3 = TB_SHUFFLE(row[2], row[2], 2, 6, 3, 7);
        col[0] = TB_SHUFFLE(t0, t1, 0, 1, 4, 5);
        col[1] = TB_SHUFFLE(t0, t1, 2, 3, 6, 7);
        col[2] = TB_SHUFFLE(t2, t3, 0, 1, 4, 5);
    }
    /* c = |r| + eps (eps: parallel edges stay conservative) */
    const tb_f4 eps = tb_f4_splat(1e-6f);
    const tb_f4 ah = {a->half[0], a->half[1], a->half[2], 0.0f}, bh = {b->half[0], b->half[1], b->half[2], 0.0f};
    const tb_f4 tx = tb_f4_splat(t.x), ty = tb_f4_splat(t.y), tz = tb_f4_splat(t.z);
    /* Separation along every face axis of `own`: |t . axis| - (other's
     * projection + own half), written so that the same value comes out bit
     * for bit whether `own` is A or B: |t . axis| with t or -t is the same,
     * c[i][j] = |a_i . b_j| is symmetric, and the other box's projection is
     * summed first, then the own half extent added. */
    float sep_a[4], sep_b[4];
    {
        tb_f4 other = tb_f4_splat(b->half[0]) * (tb_f4_abs(col[0]) + eps) + tb_f4_splat(b->half[1]) * (tb_f4_abs(col[1]) + eps) +
                       tb_f4_splat(b->half[2]) * (tb_f4_abs(col[2]) + eps);
        tb_f4 s = tb_f4_abs(tx * ax + ty * ay + tz * az) - (other + ah);
        memcpy(sep_a, &s, sizeof s);
        other = tb_f4_splat(a->half[0]) * (tb_f4_abs(row[0]) + eps) + tb_f4_splat(a->half[1]) * (tb_f4_abs(row[1]) + eps) +
                tb_f4_splat(a->half[2]) * (tb_f4_abs(row[2]) + eps);
        s = tb_f4_abs(tx * bx + ty * by + tz * bz) - (other + bh);
        memcpy(sep_b, &s, sizeof s);
    }

    float best_a = -FLT_MAX, best_b = -FLT_MAX;
    int ia = 0, ib = 0;
    UNROLL3 for (int i = 0; i < 3; i++) {
        float s = sep_a[i];
        if (s > margin) { out->separation = s; return false; }
        if (s > best_a) { best_a = s; ia = i; }
    }
    UNROLL3 for (int j = 0; j < 3; j++) {
        float s = sep_b[j];
        if (s > margin) { out->separation = s; return false; }
        if (s > best_b) { best_b = s; ib = j; }
    }

    /* Face of A or of B: a clear winner, or on a near-tie the larger face
     * (a symmetric rule, so swapping the boxes keeps the choice). */
    bool use_b;
    if (best_b > best_a + FACE_TIE) use_b = true;
    else if (best_a > best_b + FACE_TIE) use_b = false;
    else {
        float area_a = a->half[next[ia]] * a->half[after[ia]];
        float area_b = b->half[next[ib]] * b->half[after[ib]];
        use_b = area_b > area_a;
    }
    float best_face = use_b ? best_b : best_a;

    float best_edge = -FLT_MAX;
    int ei = -1, ej = -1;
    tb_vec3 edge_axis = tb_v3_zero();
    /* Edge axes L = a_i x b_j, unnormalised (|L|^2 = 1 - r_ij^2). The box
     * radii along L come from r alone: a_k . (a_i x b_j) = (a_k x a_i) . b_j,
     * which is +-r_(i+-1)j, so
     *   rA |L| = hA_(i+1) |r_(i+2)j| + hA_(i+2) |r_(i+1)j|
     *   rB |L| = hB_(j+1) |r_i(j+2)| + hB_(j+2) |r_i(j+1)|
     * Swapping A and B transposes r and negates L and t: the same numbers. */
    /* An edge whose numerator |t.L| - (ra + rb) is <= 0 has s <= 0 (same sign,
     * inv_len > 0). When 0 <= margin and 0 <= best_face + EDGE_PREFERENCE it
     * can neither separate nor win (only the largest edge s matters, and the
     * test below is the same expression), so it is skipped. */
    bool skip_overlapping = margin >= 0.0f && best_face + EDGE_PREFERENCE >= 0.0f;
    /* the half extents of B by lane j at next[j] and after[j] */
    const tb_f4 bh_next = SAT_PERM(bh, 1, 2, 0, 3), bh_after = SAT_PERM(bh, 2, 0, 1, 3);
    UNROLL3 for (int i = 0; i < 3; i++) {
        int i1 = next[i], i2 = after[i];
        /* lanes j: L = a_i x b_j, |L|^2, ra, rb, the numerator, 1/|L| */
        const tb_f4 aix = tb_f4_splat(aa[i].x), aiy = tb_f4_splat(aa[i].y), aiz = tb_f4_splat(aa[i].z);
        tb_f4 lx = aiy * bz - aiz * by, ly = aiz * bx - aix * bz, lz = aix * by - aiy * bx;
        tb_f4 ra = tb_f4_splat(a->half[i1]) * tb_f4_abs(row[i2]) + tb_f4_splat(a->half[i2]) * tb_f4_abs(row[i1]);
        tb_f4 ri = tb_f4_abs(row[i]);
        tb_f4 rb = bh_next * SAT_PERM(ri, 2, 0, 1, 3) + bh_after * SAT_PERM(ri, 1, 2, 0, 3);
        tb_f4 num = tb_f4_abs(tx * lx + ty * ly + tz * lz) - (ra + rb);
        /* The lanes that pass the two skips, three at a time (the scalar
         * tests: 1 - r^2 < PARALLEL_EDGES^2, skip_overlapping && num <= 0).
         * Resting contacts mostly keep no edge of a row: no 1/|L|, no scan. */
        tb_i4 keep = ~(tb_f4_splat(1.0f) - row[i] * row[i] < tb_f4_splat(PARALLEL_EDGES * PARALLEL_EDGES)) &
                      (tb_i4){-1, -1, -1, 0};
        if (skip_overlapping) keep &= ~(num <= tb_f4_splat(0.0f));
        if (!(keep[0] | keep[1] | keep[2])) continue;
        tb_f4 len_sq = lx * lx + ly * ly + lz * lz; /* 1 - r^2 loses digits for nearly parallel edges */
        tb_f4 inv_len = tb_f4_splat(1.0f) / tb_f4_sqrt(len_sq);
        float num_l[4], inv_l[4];
        memcpy(num_l, &num, sizeof num_l);
        memcpy(inv_l, &inv_len, sizeof inv_l);
        UNROLL3 for (int j = 0; j < 3; j++) {
            if (!keep[j]) continue;
            float s = num_l[j] * inv_l[j];
            if (s > margin) { out->separation = s; return false; }
            if (s > best_edge) {
                best_edge = s;
                ei = i;
                ej = j;
                edge_axis = tb_v3(lx[j] * inv_l[j], ly[j] * inv_l[j], lz[j] * inv_l[j]);
            }
        }
    }

    if (ei >= 0 && best_edge > best_face + EDGE_PREFERENCE) {
        if (tb_v3_dot(edge_axis, t) < 0.0f) edge_axis = tb_v3_neg(edge_axis);
        out->separation = best_edge;
        out->normal = edge_axis;
        out->kind = TB_SAT_EDGES;
        out->index_a = ei;
        out->index_b = ej;
        return true;
    }
    const tb_collide_box *ref = use_b ? b : a;
    int axis = use_b ? ib : ia;
    /* normal from the reference box towards the other, then made A -> B */
    tb_vec3 n = tb_v3_scale(ref->axis[axis], sign_of(tb_v3_dot(use_b ? tb_v3_neg(t) : t, ref->axis[axis])));
    out->separation = best_face;
    out->normal = use_b ? tb_v3_neg(n) : n;
    out->kind = use_b ? TB_SAT_FACE_B : TB_SAT_FACE_A;
    out->index_a = ia;
    out->index_b = ib;
    return true;
}

/* A polygon in the reference face's frame, one array per coordinate: u, w
 * along the face, h the height above it (along the contact normal), so the
 * side planes are |u| <= hu and |w| <= hw and h is a vertex's separation.
 * Clipping a quad by four sides leaves at most 8 vertices; the arrays hold
 * 8 so that one 8-float load covers any polygon, and one more: vertex n
 * repeats vertex 0 (the closing copy), so that the 8 floats from [1] are
 * every vertex's successor. */
#define POLY_MAX 8
typedef struct face_poly {
    float u[POLY_MAX + 1], w[POLY_MAX + 1], h[POLY_MAX + 1];
} face_poly;

/* Keeps the part of polygon `in` (n vertices) where sign * (u or w) <= limit
 * (Sutherland-Hodgman): per vertex i in order, the vertex if its distance
 * d_i = sign * x_i - limit is <= 0, then the edge's crossing if exactly one
 * of d_i, d_i+1 is (i + 1 taken mod n), at t = d_i / (d_i - d_i+1), where
 * h is linear along the edge, so interpolating it is exact. The distances
 * and crossings of all eight lanes are computed at once (each lane the
 * operations of the scalar formula), then the kept ones written in order.
 * A side with every vertex inside it would only copy the polygon (no
 * crossings): then nothing is written and -1 returned. Most face contacts
 * of a stack cut one side or none.
 * Inline: its four calls pass constant along_w and sign, which then fold. */
static inline __attribute__((always_inline)) int clip_face(const face_poly *in, int n, face_poly *out, int along_w,
                                                           float sign, float limit)
{
    const float *x = along_w ? in->w : in->u;
    const tb_f8 s = tb_f8_splat(sign), l = tb_f8_splat(limit), zero = tb_f8_splat(0.0f);
    const tb_f8 dp = s * tb_f8_load(x) - l;
    /* vertex i's bit at 2i (weights 4^i: sums below 2^15, exact), so that
     * its crossing's can go at 2i + 1 */
    const tb_f8 weight = {1.0f, 4.0f, 16.0f, 64.0f, 256.0f, 1024.0f, 4096.0f, 16384.0f};
    const unsigned lanes = 0x5555u & ((1u << 2 * n) - 1u);
    const unsigned inside = tb_f8_weight_bits(tb_f8_keep_le(weight, dp, zero)) & lanes;
    if (inside == lanes) return -1;
    const unsigned next_inside = (inside >> 2) | (inside & 1u) << (2 * n - 2);
    const unsigned take = inside | (inside ^ next_inside) << 1;
    const tb_f8 dq = s * tb_f8_load(x + 1) - l;
    const tb_f8 t = dp / (dp - dq);
    const tb_f8 u0 = tb_f8_load(in->u), w0 = tb_f8_load(in->w), h0 = tb_f8_load(in->h);
    /* the vertices, then the crossings after them */
    float cu[2 * POLY_MAX], cw[2 * POLY_MAX], ch[2 * POLY_MAX];
    tb_f8_store(cu, u0), tb_f8_store(cw, w0), tb_f8_store(ch, h0);
    tb_f8_store(cu + POLY_MAX, u0 + (tb_f8_load(in->u + 1) - u0) * t);
    tb_f8_store(cw + POLY_MAX, w0 + (tb_f8_load(in->w + 1) - w0) * t);
    tb_f8_store(ch + POLY_MAX, h0 + (tb_f8_load(in->h + 1) - h0) * t);
    int m = 0;
    for (unsigned left = take; left; left &= left - 1u, m++) {
        const unsigned j = (unsigned)__builtin_ctz(left), k = (j & 1u) * POLY_MAX + (j >> 1);
        out->u[m] = cu[k], out->w[m] = cw[k], out->h[m] = ch[k];
    }
    out->u[m] = out->u[0], out->w[m] = out->w[0], out->h[m] = out->h[0]; /* the closing copy */
    return m;
}

/* Keeps at most four of a face manifold's points: the deepest; the one
 * farthest from it; the one making the largest triangle with those two; and
 * the one making the largest triangle on the other side of their edge. Two
 * nearly coincident faces clip to up to 8 points in close pairs; four points
 * spanning the area hold a box just as well and cost half the solver rows. */
static inline __attribute__((always_inline)) int reduce_manifold(tb_vec3 *points, float *seps, int count,
                                                                 tb_vec3 n)
{
    if (count <= 4) return count;
    int keep[4];
    keep[0] = 0;
    for (int i = 1; i < count; i++)
        if (seps[i] < seps[keep[0]]) keep[0] = i;
    unsigned taken = 1u << keep[0]; /* bit i: point i is kept */
    float best = -1.0f;
    keep[1] = keep[0] == 0 ? 1 : 0;
    for (int i = 0; i < count; i++) {
        float d = tb_v3_len_sq(tb_v3_sub(points[i], points[keep[0]]));
        if (i != keep[0] && d > best) { best = d; keep[1] = i; }
    }
    taken |= 1u << keep[1];
    tb_vec3 p0 = points[keep[0]], e = tb_v3_sub(points[keep[1]], p0);
    float area[TB_MANIFOLD_MAX];
    for (int i = 0; i < count; i++) area[i] = tb_v3_dot(n, tb_v3_cross(e, tb_v3_sub(points[i], p0)));
    keep[2] = -1;
    best = -1.0f;
    for (int i = 0; i < count; i++) {
        if (taken >> i & 1u) continue;
        if (fabsf(area[i]) > best) { best = fabsf(area[i]); keep[2] = i; }
    }
    taken |= 1u << keep[2];
    float side = area[keep[2]] < 0.0f ? 1.0f : -1.0f; /* the other side of edge 0-1 */
    keep[3] = -1;
    best = 0.0f;
    for (int i = 0; i < count; i++) {
        if (taken >> i & 1u) continue;
        if (side * area[i] > best) { best = side * area[i]; keep[3] = i; }
    }
    if (keep[3] < 0) { /* all on one side: the one farthest from the third point */
        best = -1.0f;
        for (int i = 0; i < count; i++) {
            if (taken >> i & 1u) continue;
            float d = tb_v3_len_sq(tb_v3_sub(points[i], points[keep[2]]));
            if (d > best) { best = d; keep[3] = i; }
        }
    }
    taken |= 1u << keep[3];
    /* the kept points in their clipping order (the set bits of the mask
     * come out sorted), moved down in place: point i goes to k <= i, and
     * every later read is of an index above i */
    for (int k = 0; taken; taken &= taken - 1u, k++) {
        const int i = __builtin_ctz(taken);
        points[k] = points[i];
        seps[k] = seps[i];
    }
    return 4;
}

/* Face contact: ref's face `axis` against inc's most opposed face. The result
 * depends only on (ref, inc), so it is identical whichever box was called A. */
static inline __attribute__((always_inline)) int face_manifold(const tb_collide_box *ref, const tb_collide_box *inc, int axis, float margin,
                         tb_vec3 *points, float *seps, tb_vec3 *normal_out)
{
    tb_vec3 d = tb_v3_sub(inc->center, ref->center);
    tb_vec3 n = tb_v3_scale(ref->axis[axis], sign_of(tb_v3_dot(d, ref->axis[axis])));
    tb_vec3 face_center = tb_v3_mad(ref->center, n, ref->half[axis]);
    *normal_out = n;

    int k = 0;
    float kd = -1.0f;
    for (int i = 0; i < 3; i++) {
        float di = fabsf(tb_v3_dot(inc->axis[i], n));
        if (di > kd) { kd = di; k = i; }
    }
    tb_vec3 fc = tb_v3_mad(inc->center, inc->axis[k], -sign_of(tb_v3_dot(inc->axis[k], n)) * inc->half[k]);
    tb_vec3 e1 = tb_v3_scale(inc->axis[next[k]], inc->half[next[k]]);
    tb_vec3 e2 = tb_v3_scale(inc->axis[after[k]], inc->half[after[k]]);

    /* the incident quad in the reference face's frame (u, w, n), then
     * clipped by the four side planes |u| <= hu, |w| <= hw */
    tb_vec3 u = ref->axis[next[axis]], w = ref->axis[after[axis]];
    float hu = ref->half[next[axis]], hw = ref->half[after[axis]];
    tb_vec3 rel = tb_v3_sub(fc, face_center);
    const float cu = tb_v3_dot(rel, u), cw = tb_v3_dot(rel, w), ch = tb_v3_dot(rel, n);
    const float a1u = tb_v3_dot(e1, u), a1w = tb_v3_dot(e1, w), a1h = tb_v3_dot(e1, n);
    const float a2u = tb_v3_dot(e2, u), a2w = tb_v3_dot(e2, w), a2h = tb_v3_dot(e2, n);
    /* c + a1 + a2, c - a1 + a2, c - a1 - a2, c + a1 - a2 per coordinate (x - y
     * is x + (-y) exactly), then the closing copy; the lanes past it are zero
     * (the 8-float loads read them, masked), written as vectors (an
     * initialiser of both polygons became a 24-step rep stos) */
    face_poly buf[2];
    {
        const tb_f4 s1 = {1.0f, -1.0f, -1.0f, 1.0f}, s2 = {1.0f, 1.0f, -1.0f, -1.0f}, zero = tb_f4_zero();
        const tb_f4 qu = (tb_f4_splat(cu) + s1 * tb_f4_splat(a1u)) + s2 * tb_f4_splat(a2u);
        const tb_f4 qw = (tb_f4_splat(cw) + s1 * tb_f4_splat(a1w)) + s2 * tb_f4_splat(a2w);
        const tb_f4 qh = (tb_f4_splat(ch) + s1 * tb_f4_splat(a1h)) + s2 * tb_f4_splat(a2h);
        tb_f8_store(buf[0].u, TB_F8_JOIN(qu, zero)), tb_f8_store(buf[0].w, TB_F8_JOIN(qw, zero));
        tb_f8_store(buf[0].h, TB_F8_JOIN(qh, zero));
        buf[0].u[4] = qu[0], buf[0].w[4] = qw[0], buf[0].h[4] = qh[0];
        buf[0].u[POLY_MAX] = buf[0].w[POLY_MAX] = buf[0].h[POLY_MAX] = 0.0f;
        const tb_f8 zero8 = tb_f8_splat(0.0f);
        tb_f8_store(buf[1].u, zero8), tb_f8_store(buf[1].w, zero8), tb_f8_store(buf[1].h, zero8);
        buf[1].u[POLY_MAX] = buf[1].w[POLY_MAX] = buf[1].h[POLY_MAX] = 0.0f;
    }
    int count = 4, cur = 0;
    UNROLL4 for (int side = 0; side < 4; side++) {
        const int along_w = side >= 2;
        const float sign = side % 2 ? -1.0f : 1.0f, limit = along_w ? hw : hu;
        const int m = clip_face(&buf[cur], count, &buf[cur ^ 1], along_w, sign, limit);
        if (m < 0) continue; /* nothing cut: the polygon stays where it is */
        count = m;
        cur ^= 1;
    }
    const face_poly *poly = &buf[cur];

    /* The points midway between the reference face and the incident
     * vertices, lane i for vertex i (tb_v3_mad's operations); each is kept
     * unless it lies within DUPLICATE_POINT (L1) of one kept before it
     * (clipping can leave two vertices at nearly one place), its distance
     * to every lane at once. */
    const tb_f8 pu = tb_f8_load(poly->u), pw = tb_f8_load(poly->w), half_h = tb_f8_splat(0.5f) * tb_f8_load(poly->h);
    const tb_f8 mx = ((tb_f8_splat(face_center.x) + tb_f8_splat(u.x) * pu) + tb_f8_splat(w.x) * pw) +
                     tb_f8_splat(n.x) * half_h;
    const tb_f8 my = ((tb_f8_splat(face_center.y) + tb_f8_splat(u.y) * pu) + tb_f8_splat(w.y) * pw) +
                     tb_f8_splat(n.y) * half_h;
    const tb_f8 mz = ((tb_f8_splat(face_center.z) + tb_f8_splat(u.z) * pu) + tb_f8_splat(w.z) * pw) +
                     tb_f8_splat(n.z) * half_h;
    unsigned kept = 0; /* bit i: vertex i is a point */
    int out = 0;
    for (int i = 0; i < count && out < TB_MANIFOLD_MAX; i++) {
        float s = poly->h[i];
        if (s > margin) continue;
        if (kept) {
            /* |q - mid| summed x + y + z for every vertex q (lane) */
            tb_f8 d = (tb_f8_abs(mx - tb_f8_splat(mx[i])) + tb_f8_abs(my - tb_f8_splat(my[i]))) +
                      tb_f8_abs(mz - tb_f8_splat(mz[i]));
            if (tb_f8_bits_lt(d, tb_f8_splat(DUPLICATE_POINT)) & kept) continue;
        }
        kept |= 1u << i;
        points[out] = tb_v3(mx[i], my[i], mz[i]);
        seps[out] = s;
        out++;
    }
    return out <= 4 ? out : reduce_manifold(points, seps, out, n); /* most have four or fewer: tested first */
}

/* Closest points of edge i of A and edge j of B, the edges picked as the ones
 * furthest along the axis l (A -> B). With d1, d2 unit edge directions, p_a,
 * p_b the edge midpoints and r = p_a - p_b, minimising |p_a + s d1 - p_b - t d2|
 * gives s = (b f - c) / (1 - b^2), t = b s + f with b = d1.d2, c = d1.r,
 * f = d2.r; both clamped to the edge lengths. */
static tb_vec3 edge_point(const tb_collide_box *a, const tb_collide_box *b, int ei, int ej, tb_vec3 l)
{
    tb_vec3 pa = a->center, pb = b->center;
    for (int k = 0; k < 3; k++) {
        if (k != ei) pa = tb_v3_mad(pa, a->axis[k], a->half[k] * sign_of(tb_v3_dot(a->axis[k], l)));
        if (k != ej) pb = tb_v3_mad(pb, b->axis[k], -b->half[k] * sign_of(tb_v3_dot(b->axis[k], l)));
    }
    tb_vec3 d1 = a->axis[ei], d2 = b->axis[ej];
    tb_vec3 r = tb_v3_sub(pa, pb);
    float bb = tb_v3_dot(d1, d2), c = tb_v3_dot(d1, r), f = tb_v3_dot(d2, r);
    float den = 1.0f - bb * bb;
    float s = den > 1e-6f ? (bb * f - c) / den : 0.0f;
    s = tb_clampf(s, -a->half[ei], a->half[ei]);
    float t = tb_clampf(bb * s + f, -b->half[ej], b->half[ej]);
    pa = tb_v3_mad(pa, d1, s);
    pb = tb_v3_mad(pb, d2, t);
    return tb_v3_scale(tb_v3_add(pa, pb), 0.5f);
}

bool tb_box_box_sat(const tb_collide_box *a, const tb_collide_box *b, float margin, tb_sat_result *out)
{
    return box_box_sat(a, b, margin, out);
}

/* TB_HOT_CLONES (simd.h): an AVX clone too, the same bits. */
TB_HOT_CLONES int tb_collide_box_box(const tb_collide_box *a, const tb_collide_box *b, float margin, tb_manifold *m)
{
    tb_sat_result sat;
    m->count = 0;
    if (!box_box_sat(a, b, margin, &sat)) return 0;
    if (sat.kind == TB_SAT_EDGES) {
        m->normal = sat.normal;
        m->point[0] = edge_point(a, b, sat.index_a, sat.index_b, sat.normal);
        m->separation[0] = sat.separation;
        m->count = 1;
        return 1;
    }
    tb_vec3 n;
    bool face_a = sat.kind == TB_SAT_FACE_A;
    m->count = face_manifold(face_a ? a : b, face_a ? b : a, face_a ? sat.index_a : sat.index_b, margin, m->point,
                             m->separation, &n);
    m->normal = face_a ? n : tb_v3_neg(n);
    return m->count;
}
