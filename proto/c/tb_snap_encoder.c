/* tb_snap_encoder.c: one per room; turns world states into keyframes and deltas.
 *
 * The encoder keeps the last state it quantized (the "baseline"): grid
 * positions, smallest-three orientations, vertex cells, and for each the last
 * change ("velocity" in cells per snapshot). tb_snap_encoder_step() quantizes
 * the new state and writes ONE delta against that baseline; every client that
 * received the previous snapshot gets these same bytes (TCP keeps order, so
 * "sent" is "will have"). A client that missed a snapshot or just joined gets
 * tb_snap_encoder_key(), which also carries the velocities so the client's
 * predictor is in step with the shared stream from the next delta on.
 *
 * Delta coding (PROTOCOL.md "Snapshot bin"): for each changed item the
 * residual r = new - (old + p * velocity) with p in {0, 1} chosen per snapshot
 * and channel, zigzagged and written exp-Golomb with an order k chosen per
 * snapshot and channel to minimise the bits. Unchanged items are skipped by
 * a gap code, so a room at rest costs only the envelope.
 *
 * Spending the error budget (the decoder never knows): the protocol promises
 * 0.5 mm, 0.1 degree and 1 mm, while the nearest cells are off by at most
 * 0.24 mm, 0.069 degrees and 0.49 mm. So for each item the encoder knows the
 * set of cells within a tolerance (default 0.49 mm, 0.095 degrees, 0.98 mm) of
 * the true pose. If the baseline is in that set the item is not sent at all
 * (jitter of awake bodies costs nothing); otherwise it sends the cell of the
 * set closest to the prediction (position: per axis a clamp; orientation: from
 * the nearest cells, step each component toward the prediction while the
 * angle stays within tolerance), which makes most residuals 0 or 1. The error
 * seen by clients stays within the tolerance, below the promised bounds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tb_proto_internal.h"

struct tb_snap_encoder {
    tb_proto_frame frame;
    tb_snap_grid grid;
    uint32_t max_bodies;
    tb_snap_body *cur, *next;        /* baseline and the state being built */
    uint32_t cur_n, next_n;
    int32_t *vq[TB_PROTO_MAX_MESHES], *vv[TB_PROTO_MAX_MESHES];   /* baseline vertex cells, velocities */
    int32_t *nq[TB_PROTO_MAX_MESHES], *nv[TB_PROTO_MAX_MESHES];   /* next */
    bool have_state, have_delta, key_valid;
    uint32_t tick, awake;
    uint8_t *bits; size_t bits_cap;
    uint32_t *scratch; size_t scratch_cap;   /* zigzag residuals while choosing k */
    /* what step() learnt about the new state, used by choose_*() */
    int32_t *match;                  /* next body j -> baseline index, or -1 (spawned / shape changed) */
    uint8_t *old_ok;                 /* per next body: baseline position (1) / orientation (2) within tolerance */
    float *pose_cur, *pose_next;     /* input pose (pos, rot: 7 floats) per body, to skip sleeping bodies cheaply */
    float *vin[TB_PROTO_MAX_MESHES]; /* last input vertices (xyz), to see a mesh at rest cheaply */
    uint64_t idle_steps;             /* steps that found the input bit-identical to the last one */
    bool idle_path_off;              /* tests: always run the full step */
    int32_t *plo, *phi;              /* per next body: acceptable position cells per axis */
    double *trot;                    /* per next body: true unit quaternion */
    tb_snap_body *nearest;           /* per next body: nearest cells */
    tb_snap_body *alt;               /* next[] as chosen for the other predictor */
    int32_t *altq, *altv;            /* same for one mesh */
    int32_t *vlo[TB_PROTO_MAX_MESHES], *vhi[TB_PROTO_MAX_MESHES];
    double tol_pos, tol_vert, cos_half_rot;
    msgpack_sbuffer delta_sb, key_sb;
    tb_snap_blob delta_blob, key_blob;
};

tb_snap_encoder *tb_snap_encoder_create(const tb_proto_frame *frame, uint32_t max_bodies)
{
    if (tb_proto_frame_check(frame, NULL) || max_bodies > TB_PROTO_MAX_BODIES) return NULL;
    tb_snap_encoder *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->frame = *frame;
    tb_snap__grid(frame, &e->grid, NULL);
    e->max_bodies = max_bodies;
    e->cur = calloc(max_bodies + 1, sizeof *e->cur);
    e->next = calloc(max_bodies + 1, sizeof *e->next);
    e->nearest = calloc(max_bodies + 1, sizeof *e->nearest);
    e->alt = calloc(max_bodies + 1, sizeof *e->alt);
    e->match = calloc(max_bodies + 1, sizeof *e->match);
    e->old_ok = calloc(max_bodies + 1, 1);
    e->pose_cur = calloc(7u * (max_bodies + 1), sizeof(float));
    e->pose_next = calloc(7u * (max_bodies + 1), sizeof(float));
    e->plo = calloc(3u * (max_bodies + 1), sizeof *e->plo);
    e->phi = calloc(3u * (max_bodies + 1), sizeof *e->phi);
    e->trot = calloc(4u * (max_bodies + 1), sizeof *e->trot);
    size_t verts = 0;
    bool ok = e->cur && e->next && e->nearest && e->alt && e->match && e->old_ok && e->pose_cur && e->pose_next && e->plo && e->phi && e->trot;
    size_t maxv = 0;
    for (uint32_t m = 0; m < frame->mesh_count; m++) if (frame->mesh_verts[m] > maxv) maxv = frame->mesh_verts[m];
    e->altq = calloc(3 * maxv + 1, sizeof(int32_t));
    e->altv = calloc(3 * maxv + 1, sizeof(int32_t));
    ok = ok && e->altq && e->altv;
    for (uint32_t m = 0; m < frame->mesh_count; m++) {
        size_t n = 3u * frame->mesh_verts[m] + 1;
        verts += frame->mesh_verts[m];
        e->vq[m] = calloc(n, sizeof(int32_t)); e->vv[m] = calloc(n, sizeof(int32_t));
        e->nq[m] = calloc(n, sizeof(int32_t)); e->nv[m] = calloc(n, sizeof(int32_t));
        e->vlo[m] = calloc(n, sizeof(int32_t)); e->vhi[m] = calloc(n, sizeof(int32_t));
        e->vin[m] = calloc(n, sizeof(float));
        ok = ok && e->vq[m] && e->vv[m] && e->nq[m] && e->nv[m] && e->vlo[m] && e->vhi[m] && e->vin[m];
    }
    tb_snap_encoder_set_tolerance(e, TB_SNAP_TOL_POS, TB_SNAP_TOL_ROT_DEG, TB_SNAP_TOL_VERT);
    /* Worst case per body: 3*24 + 2 + 36 + 6*55 bits; per vertex 3*24 + 3*55. */
    e->bits_cap = 64 + 56u * (max_bodies + 1) + 32u * verts;
    e->bits = malloc(e->bits_cap);
    e->scratch_cap = 6u * (max_bodies + 1) + 3u * verts;
    e->scratch = malloc(e->scratch_cap * sizeof(uint32_t));
    msgpack_sbuffer_init(&e->delta_sb);
    msgpack_sbuffer_init(&e->key_sb);
    if (!ok || !e->bits || !e->scratch) { tb_snap_encoder_destroy(e); return NULL; }
    return e;
}

void tb_snap_encoder_destroy(tb_snap_encoder *e)
{
    if (!e) return;
    free(e->cur); free(e->next); free(e->bits); free(e->scratch);
    free(e->nearest); free(e->alt); free(e->altq); free(e->altv); free(e->match); free(e->old_ok); free(e->pose_cur); free(e->pose_next); free(e->plo); free(e->phi); free(e->trot);
    for (int m = 0; m < TB_PROTO_MAX_MESHES; m++) {
        free(e->vq[m]); free(e->vv[m]); free(e->nq[m]); free(e->nv[m]); free(e->vlo[m]); free(e->vhi[m]); free(e->vin[m]);
    }
    msgpack_sbuffer_destroy(&e->delta_sb);
    msgpack_sbuffer_destroy(&e->key_sb);
    free(e);
}

void tb_snap_encoder_set_tolerance(tb_snap_encoder *e, double pos_m, double rot_deg, double vert_m)
{
    /* never beyond the protocol's promises (0.5 mm, 0.1 degree, 1 mm), never negative */
    e->tol_pos = pos_m > 0 ? (pos_m < 0.00049 ? pos_m : 0.00049) : 0;
    e->tol_vert = vert_m > 0 ? (vert_m < 0.00098 ? vert_m : 0.00098) : 0;
    double r = rot_deg > 0 ? (rot_deg < 0.095 ? rot_deg : 0.095) : 0;
    e->cos_half_rot = cos(0.5 * r * 3.141592653589793 / 180.0);
}

/* Order k in 0..15 for n zigzag values. The cost of v at order k is 2n - 1 - k
 * with n the bit length of v + 2^k, which is max(L, k+1) (or L+1 on a carry) for
 * L the bit length of v; a histogram of L gives a near-exact cost for every k in
 * O(n + 16*33). The choice only affects size, never correctness. */
static int best_k(const uint32_t *v, size_t n, uint64_t *bits_out)
{
    if (n == 0) {   /* every order costs 0 bits: the loop below would pick k = 0 */
        if (bits_out) *bits_out = 0;
        return 0;
    }
    uint64_t hist[33] = {0};
    int maxL = 0;
    for (size_t i = 0; i < n; i++) {
        int L = v[i] ? 32 - __builtin_clz(v[i]) : 0;
        hist[L]++;
        maxL = L > maxL ? L : maxL;
    }
    /* A value of L bits costs 2 max(L, k + 1) - 1 - k bits at order k: k + 1
     * for L <= k + 1, else (2 L - 1) - k. With low = how many have
     * L <= k + 1, high = the others and high_sum = their sum of 2 L - 1,
     * total(k) = low (k + 1) + high_sum - k high; moving to k + 1 moves the
     * values of L = k + 2 from high to low. (Exact integers: the sum over L
     * of the same terms.) */
    uint64_t low = hist[0] + hist[1], high = (uint64_t)n - low, high_sum = 0;
    for (int L = 2; L <= maxL; L++) high_sum += hist[L] * (uint64_t)(2 * L - 1);
    uint64_t best = UINT64_MAX;
    int bk = 0;
    for (int k = 0; k < 16; k++) {
        uint64_t total = low * (uint64_t)(k + 1) + high_sum - (uint64_t)k * high;
        if (total < best) { best = total; bk = k; }
        uint64_t moved = hist[k + 2];
        low += moved;
        high -= moved;
        high_sum -= moved * (uint64_t)(2 * (k + 2) - 1);
    }
    if (bits_out) *bits_out = best;
    return bk;
}

static bool body_changed(const tb_snap_body *a, const tb_snap_body *b)
{
    return a->qp[0] != b->qp[0] || a->qp[1] != b->qp[1] || a->qp[2] != b->qp[2] || a->ri != b->ri ||
           a->rc[0] != b->rc[0] || a->rc[1] != b->rc[1] || a->rc[2] != b->rc[2];
}

static void put_abs_body(tb_bitw *w, const tb_snap_grid *g, const tb_snap_body *b, int kp, int kr)
{
    for (int a = 0; a < 3; a++) tb_bitw_put(w, (uint32_t)b->qp[a], g->pbits[a]);
    tb_bitw_put(w, (uint32_t)b->ri, 2);
    for (int j = 0; j < 3; j++) tb_bitw_put(w, (uint32_t)b->rc[j], TB_PROTO_ROT_BITS);
    for (int a = 0; a < 3; a++) tb_bitw_eg(w, tb_zz(b->vp[a]), kp);
    for (int j = 0; j < 3; j++) tb_bitw_eg(w, tb_zz(b->vr[j]), kr);
}

/* Keyframe k orders: best over the velocities it carries. */
static void key_orders(tb_snap_encoder *e, int *kp, int *kr, int *kv)
{
    size_t n = 0;
    for (uint32_t i = 0; i < e->cur_n; i++) for (int a = 0; a < 3; a++) e->scratch[n++] = tb_zz(e->cur[i].vp[a]);
    *kp = best_k(e->scratch, n, NULL);
    n = 0;
    for (uint32_t i = 0; i < e->cur_n; i++) for (int a = 0; a < 3; a++) e->scratch[n++] = tb_zz(e->cur[i].vr[a]);
    *kr = best_k(e->scratch, n, NULL);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        n = 0;
        for (uint32_t i = 0; i < 3 * e->frame.mesh_verts[m]; i++) e->scratch[n++] = tb_zz(e->vv[m][i]);
        kv[m] = best_k(e->scratch, n, NULL);
    }
}

const tb_snap_blob *tb_snap_encoder_key(tb_snap_encoder *e)
{
    if (!e->have_state) return NULL;
    if (e->key_valid) return &e->key_blob;
    int kp, kr, kv[TB_PROTO_MAX_MESHES];
    key_orders(e, &kp, &kr, kv);
    tb_bitw w = {e->bits, e->bits_cap, 0, 0};
    tb_bitw_put(&w, 0, 1); tb_bitw_put(&w, (uint32_t)kp, 4); tb_bitw_put(&w, (uint32_t)kr, 4);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) { tb_bitw_put(&w, 0, 1); tb_bitw_put(&w, (uint32_t)kv[m], 4); }
    for (uint32_t i = 0; i < e->cur_n; i++) put_abs_body(&w, &e->grid, &e->cur[i], kp, kr);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        for (uint32_t i = 0; i < e->frame.mesh_verts[m]; i++)
            for (int a = 0; a < 3; a++) tb_bitw_put(&w, (uint32_t)e->vq[m][3 * i + a], e->grid.vbits[a]);
        for (uint32_t i = 0; i < 3 * e->frame.mesh_verts[m]; i++) tb_bitw_eg(&w, tb_zz(e->vv[m][i]), kv[m]);
    }
    if (w.overflow) return NULL;
    size_t nbytes = (w.bit + 7) / 8;
    if (w.bit & 7) tb_bitw_put(&w, 0, (int)(8 - (w.bit & 7)));

    /* tail of [33, last_seq, tick, awake, bodies, bin] */
    msgpack_sbuffer_clear(&e->key_sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &e->key_sb, msgpack_sbuffer_write);
    msgpack_pack_uint32(&pk, e->tick);
    msgpack_pack_uint32(&pk, e->awake);
    msgpack_pack_array(&pk, e->cur_n);
    for (uint32_t i = 0; i < e->cur_n; i++) tb_snap__pack_shape(&pk, e->cur[i].id, &e->cur[i].shape);
    msgpack_pack_bin(&pk, nbytes);
    msgpack_pack_bin_body(&pk, e->bits, nbytes);
    e->key_blob = (tb_snap_blob){TB_MSG_SNAP_KEY, e->tick, 0, 6, (const uint8_t *)e->key_sb.data, e->key_sb.size};
    e->key_valid = true;
    return &e->key_blob;
}

const tb_snap_blob *tb_snap_encoder_delta(tb_snap_encoder *e)
{
    return e->have_delta ? &e->delta_blob : NULL;
}

/* Nearest cells of input body b; velocities against `old` (NULL when spawned). */
static void quantize_body(const tb_snap_encoder *e, const tb_proto_body *in, const tb_snap_body *old, tb_snap_body *out)
{
    out->id = in->id;
    out->shape = in->shape;
    for (int a = 0; a < 3; a++) {
        if (!isfinite(in->pos[a]) && old) out->qp[a] = old->qp[a];   /* never send garbage: hold the last pose */
        else out->qp[a] = tb_proto_quant_pos(in->pos[a], e->frame.bounds_min[a], e->grid.pmax[a], TB_PROTO_POS_SCALE);
        out->vp[a] = old ? out->qp[a] - old->qp[a] : 0;
    }
    int ri;
    tb_proto_quant_rot(in->rot, &ri, out->rc);
    out->ri = ri;
    for (int j = 0; j < 3; j++) out->vr[j] = (old && old->ri == ri) ? out->rc[j] - old->rc[j] : 0;
}

/* Cells within tol of p on one axis, always containing the nearest cell n. */
static void cell_range(double p, double min, int scale, int32_t gmax, double tol, int32_t n, int32_t *lo, int32_t *hi)
{
    double l = ceil((p - tol - min) * (double)scale), h = floor((p + tol - min) * (double)scale);
    *lo = n; *hi = n;
    if (!isfinite(p) || tol <= 0) return;
    if (l < (double)n) *lo = l < 0 ? 0 : (int32_t)l;
    if (h > (double)n) *hi = h > (double)gmax ? gmax : (int32_t)h;
}

static inline int32_t clamp32(int64_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : (int32_t)v; }

static bool rot_within(const tb_snap_encoder *e, int ri, const int32_t c[3], const double *t)
{
    double q[4];
    tb_proto_dequant_rot(ri, c, q);
    return fabs(q[0] * t[0] + q[1] * t[1] + q[2] * t[2] + q[3] * t[3]) >= e->cos_half_rot;
}

/* Fills next[] for every kept body given predictor `pred` (0 or 1); returns the
 * residual bits (at the best orders) it would cost, to compare predictors. */
static uint64_t choose_bodies(tb_snap_encoder *e, int pred)
{
    size_t np = 0, nr = 0;
    uint32_t *rp = e->scratch, *rr = e->scratch + 3u * (e->max_bodies + 1);
    for (uint32_t j = 0; j < e->next_n; j++) {
        tb_snap_body *b = &e->next[j];
        const tb_snap_body *near = &e->nearest[j];
        if (e->match[j] < 0) { *b = *near; continue; }
        const tb_snap_body *o = &e->cur[e->match[j]];
        const int32_t *lo = &e->plo[3 * j], *hi = &e->phi[3 * j];
        const double *t = &e->trot[4 * j];
        bool pos_ok = e->old_ok[j] & 1, rot_ok = e->old_ok[j] & 2;
        b->id = near->id;
        b->shape = near->shape;
        if (pos_ok && rot_ok) {   /* the client's pose is good enough: not sent */
            for (int a = 0; a < 3; a++) { b->qp[a] = o->qp[a]; b->rc[a] = o->rc[a]; b->vp[a] = 0; b->vr[a] = 0; }
            b->ri = o->ri;
            continue;
        }
        for (int a = 0; a < 3; a++) {
            b->qp[a] = clamp32((int64_t)o->qp[a] + pred * (int64_t)o->vp[a], lo[a], hi[a]);
            b->vp[a] = b->qp[a] - o->qp[a];
            rp[np++] = tb_zz(b->qp[a] - (o->qp[a] + pred * o->vp[a]));
        }
        if (rot_ok || near->ri == o->ri) {
            /* from an acceptable start, step each component toward the prediction while still acceptable */
            int32_t c[3];
            for (int a = 0; a < 3; a++) c[a] = rot_ok ? o->rc[a] : near->rc[a];
            for (int a = 0; a < 3; a++) {
                int32_t target = clamp32((int64_t)o->rc[a] + pred * (int64_t)o->vr[a], 0, TB_PROTO_ROT_MAXQ);
                while (c[a] != target) {
                    int32_t keep = c[a];
                    c[a] += target > c[a] ? 1 : -1;
                    if (!rot_within(e, o->ri, c, t)) { c[a] = keep; break; }
                }
            }
            b->ri = o->ri;
            for (int a = 0; a < 3; a++) {
                b->rc[a] = c[a];
                b->vr[a] = c[a] - o->rc[a];
                rr[nr++] = tb_zz(c[a] - (o->rc[a] + pred * o->vr[a]));
            }
        } else {   /* the largest component changed: absolute, nearest */
            b->ri = near->ri;
            for (int a = 0; a < 3; a++) { b->rc[a] = near->rc[a]; b->vr[a] = 0; }
        }
    }
    uint64_t bp, br;
    best_k(rp, np, &bp);
    best_k(rr, nr, &br);
    return bp + br;
}

/* Same for the vertices of mesh m. */
static uint64_t choose_mesh(tb_snap_encoder *e, uint32_t m, int pred)
{
    size_t n = 0;
    uint32_t nv = e->frame.mesh_verts[m];
    const int32_t *lo = e->vlo[m], *hi = e->vhi[m], *o = e->vq[m], *ov = e->vv[m];
    int32_t *q = e->nq[m], *v = e->nv[m];
    for (uint32_t i = 0; i < nv; i++) {
        size_t at = 3u * i;
        bool ok = o[at] >= lo[at] && o[at] <= hi[at] && o[at + 1] >= lo[at + 1] && o[at + 1] <= hi[at + 1] &&
                  o[at + 2] >= lo[at + 2] && o[at + 2] <= hi[at + 2];
        for (int a = 0; a < 3; a++) {
            size_t k = at + (size_t)a;
            q[k] = ok ? o[k] : clamp32((int64_t)o[k] + pred * (int64_t)ov[k], lo[k], hi[k]);
            v[k] = q[k] - o[k];
            if (!ok) e->scratch[n++] = tb_zz(q[k] - (o[k] + pred * ov[k]));
        }
    }
    uint64_t bits;
    best_k(e->scratch, n, &bits);
    return bits;
}

/* Starts the delta tail in delta_sb: tick, tick_gap, awake. */
static void delta_head(tb_snap_encoder *e, msgpack_packer *pk, uint32_t base_tick)
{
    msgpack_sbuffer_clear(&e->delta_sb);
    msgpack_packer_init(pk, &e->delta_sb, msgpack_sbuffer_write);
    msgpack_pack_uint32(pk, e->tick);
    msgpack_pack_uint32(pk, e->tick - base_tick);
    msgpack_pack_uint32(pk, e->awake);
}

/* Writes the delta cur -> next into delta_sb, with the predictors chosen. */
static int encode_delta(tb_snap_encoder *e, uint32_t base_tick, int best_pred, const int *mpred)
{
    /* Pass 1: classify bodies (merge by id). */
    uint32_t i = 0, j = 0, n_removed = 0, n_spawned = 0;
    while (i < e->cur_n || j < e->next_n) {
        if (j >= e->next_n || (i < e->cur_n && e->cur[i].id < e->next[j].id)) { n_removed++; i++; }
        else if (i >= e->cur_n || e->next[j].id < e->cur[i].id) { n_spawned++; j++; }
        else {
            if (!tb_snap__shape_eq(&e->cur[i].shape, &e->next[j].shape)) { n_removed++; n_spawned++; }
            i++; j++;
        }
    }
    /* Orders from the residuals of changed kept bodies and vertices. */
    int kp = 0, kr = 0, kv[TB_PROTO_MAX_MESHES] = {0};
    uint32_t mchanged[TB_PROTO_MAX_MESHES] = {0};
    {
        size_t np = 0, nr = 0;
        uint32_t *rp = e->scratch, *rr = e->scratch + 3u * (e->max_bodies + 1);
        for (j = 0; j < e->next_n; j++) {
            if (e->match[j] < 0) continue;
            const tb_snap_body *o = &e->cur[e->match[j]], *b = &e->next[j];
            if (!body_changed(o, b)) continue;
            for (int a = 0; a < 3; a++) rp[np++] = tb_zz(b->qp[a] - (o->qp[a] + best_pred * o->vp[a]));
            if (b->ri == o->ri)
                for (int a = 0; a < 3; a++) rr[nr++] = tb_zz(b->rc[a] - (o->rc[a] + best_pred * o->vr[a]));
        }
        kp = best_k(rp, np, NULL);
        kr = best_k(rr, nr, NULL);
    }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        size_t n = 0;
        for (uint32_t v = 0; v < e->frame.mesh_verts[m]; v++) {
            const int32_t *o = &e->vq[m][3 * v], *ov = &e->vv[m][3 * v], *q = &e->nq[m][3 * v];
            if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
            mchanged[m]++;
            for (int a = 0; a < 3; a++) e->scratch[n++] = tb_zz(q[a] - (o[a] + mpred[m] * ov[a]));
        }
        kv[m] = best_k(e->scratch, n, NULL);
    }
    /* Pass 2: write the bin. */
    tb_bitw w = {e->bits, e->bits_cap, 0, 0};
    tb_bitw_put(&w, (uint32_t)best_pred, 1); tb_bitw_put(&w, (uint32_t)kp, 4); tb_bitw_put(&w, (uint32_t)kr, 4);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) { tb_bitw_put(&w, (uint32_t)mpred[m], 1); tb_bitw_put(&w, (uint32_t)kv[m], 4); }
    /* spawned bodies, ascending id */
    for (i = 0, j = 0; j < e->next_n; j++) {
        while (i < e->cur_n && e->cur[i].id < e->next[j].id) i++;
        bool kept = i < e->cur_n && e->cur[i].id == e->next[j].id && tb_snap__shape_eq(&e->cur[i].shape, &e->next[j].shape);
        if (!kept) put_abs_body(&w, &e->grid, &e->next[j], kp, kr);
    }
    /* changed kept bodies: count, then gap-coded records */
    uint32_t n_changed = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) tb_bitw_eg(&w, n_changed, 0);
        int64_t last = -1, kept_index = 0;
        for (i = 0, j = 0; i < e->cur_n && j < e->next_n;) {
            if (e->cur[i].id < e->next[j].id) { i++; continue; }
            if (e->next[j].id < e->cur[i].id) { j++; continue; }
            const tb_snap_body *o = &e->cur[i], *b = &e->next[j];
            i++; j++;
            if (!tb_snap__shape_eq(&o->shape, &b->shape)) continue;
            int64_t idx = kept_index++;
            if (!body_changed(o, b)) continue;
            if (pass == 0) { n_changed++; continue; }
            tb_bitw_eg(&w, (uint32_t)(idx - last - 1), 0);
            last = idx;
            for (int a = 0; a < 3; a++) tb_bitw_eg(&w, tb_zz(b->qp[a] - (o->qp[a] + best_pred * o->vp[a])), kp);
            if (b->ri == o->ri) {
                tb_bitw_put(&w, 0, 1);
                for (int a = 0; a < 3; a++) tb_bitw_eg(&w, tb_zz(b->rc[a] - (o->rc[a] + best_pred * o->vr[a])), kr);
            } else {
                tb_bitw_put(&w, 1, 1);
                tb_bitw_put(&w, (uint32_t)b->ri, 2);
                for (int a = 0; a < 3; a++) tb_bitw_put(&w, (uint32_t)b->rc[a], TB_PROTO_ROT_BITS);
            }
        }
    }
    bool any = n_spawned > 0 || n_changed > 0;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        any = any || mchanged[m] > 0;
        tb_bitw_eg(&w, mchanged[m], 0);
        int64_t last = -1;
        for (uint32_t v = 0; v < e->frame.mesh_verts[m]; v++) {
            const int32_t *o = &e->vq[m][3 * v], *ov = &e->vv[m][3 * v], *q = &e->nq[m][3 * v];
            if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
            tb_bitw_eg(&w, (uint32_t)((int64_t)v - last - 1), 0);
            last = v;
            for (int a = 0; a < 3; a++) tb_bitw_eg(&w, tb_zz(q[a] - (o[a] + mpred[m] * ov[a])), kv[m]);
        }
    }
    if (w.overflow) return TB_ERR_INTERNAL;
    size_t nbytes = (w.bit + 7) / 8;
    if (w.bit & 7) tb_bitw_put(&w, 0, (int)(8 - (w.bit & 7)));

    /* tail of [34, last_seq, tick, tick_gap, awake, bin|nil, spawns?, removes?]:
     * spawns and removes are left out when both are empty (rest costs ~13 bytes). */
    msgpack_packer pk;
    delta_head(e, &pk, base_tick);
    if (any) { msgpack_pack_bin(&pk, nbytes); msgpack_pack_bin_body(&pk, e->bits, nbytes); }
    else msgpack_pack_nil(&pk);
    if (n_spawned || n_removed) {
        msgpack_pack_array(&pk, n_spawned);
        for (i = 0, j = 0; j < e->next_n; j++) {
            while (i < e->cur_n && e->cur[i].id < e->next[j].id) i++;
            bool kept = i < e->cur_n && e->cur[i].id == e->next[j].id && tb_snap__shape_eq(&e->cur[i].shape, &e->next[j].shape);
            if (!kept) tb_snap__pack_shape(&pk, e->next[j].id, &e->next[j].shape);
        }
        msgpack_pack_array(&pk, n_removed);
        for (i = 0, j = 0; i < e->cur_n; i++) {
            while (j < e->next_n && e->next[j].id < e->cur[i].id) j++;
            bool kept = j < e->next_n && e->next[j].id == e->cur[i].id && tb_snap__shape_eq(&e->cur[i].shape, &e->next[j].shape);
            if (!kept) msgpack_pack_uint16(&pk, e->cur[i].id);
        }
    }
    e->delta_blob = (tb_snap_blob){TB_MSG_SNAP_DELTA, e->tick, base_tick, (n_spawned || n_removed) ? 8u : 6u,
                                   (const uint8_t *)e->delta_sb.data, e->delta_sb.size};
    return TB_OK;
}

/* The input is bit-identical to the last step's (same bodies, shapes, poses
 * and vertices: a room at rest). Then every item's baseline is within
 * tolerance of its (unchanged) true pose, so the full step would send nothing
 * and keep every cell, with velocities 0. */
static bool same_input(const tb_snap_encoder *e, const tb_snap_input *in)
{
    if (!e->have_state || in->body_count != e->cur_n) return false;
    for (uint32_t k = 0; k < in->body_count; k++) {
        const tb_proto_body *b = &in->bodies[k];
        const float *pose = &e->pose_cur[7 * k];
        if (b->id != e->cur[k].id || memcmp(b->pos, pose, 3 * sizeof(float)) != 0 ||
            memcmp(b->rot, pose + 3, 4 * sizeof(float)) != 0 || !tb_snap__shape_eq(&b->shape, &e->cur[k].shape))
            return false;
    }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++)
        if (e->frame.mesh_verts[m] && (!in->verts[m] ||
            memcmp(in->verts[m], e->vin[m], 3u * e->frame.mesh_verts[m] * sizeof(float)) != 0))
            return false;
    return true;
}

/* The delta of a room at rest: [tick, tick_gap, awake, nil], and the baseline
 * keeps its cells with velocities 0 (what the full step computes). */
static void step_same(tb_snap_encoder *e, const tb_snap_input *in)
{
    uint32_t base_tick = e->tick;
    for (uint32_t k = 0; k < e->cur_n; k++)
        for (int a = 0; a < 3; a++) { e->cur[k].vp[a] = 0; e->cur[k].vr[a] = 0; }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++)
        memset(e->vv[m], 0, 3u * e->frame.mesh_verts[m] * sizeof(int32_t));
    e->tick = in->tick;
    e->awake = in->awake;
    msgpack_packer pk;
    delta_head(e, &pk, base_tick);
    msgpack_pack_nil(&pk);
    e->delta_blob = (tb_snap_blob){TB_MSG_SNAP_DELTA, e->tick, base_tick, 6u, (const uint8_t *)e->delta_sb.data, e->delta_sb.size};
    e->have_delta = true;
    e->key_valid = false;
    e->idle_steps++;
}

uint64_t tb_snap_encoder_idle_steps(const tb_snap_encoder *e) { return e->idle_steps; }
void tb_snap__encoder_idle_path(tb_snap_encoder *e, bool on) { e->idle_path_off = !on; }

int tb_snap_encoder_step(tb_snap_encoder *e, const tb_snap_input *in, tb_proto_err *err)
{
    if (!e->idle_path_off && same_input(e, in)) {   /* ids and shapes as validated before: valid */
        step_same(e, in);
        return TB_OK;
    }
    if (in->body_count > e->max_bodies)
        return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%u bodies, encoder made for %u", in->body_count, e->max_bodies);
    for (uint32_t k = 0; k < in->body_count; k++) {
        const tb_proto_body *b = &in->bodies[k];
        if (k > 0 && b->id <= in->bodies[k - 1].id)
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "bodies must be sorted by strictly increasing id");
        if (b->shape.kind > TB_SHAPE_CAPSULE || b->shape.color > 0xffffff || !isfinite(b->shape.size[0]) ||
            !isfinite(b->shape.size[1]) || !isfinite(b->shape.size[2]))
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "body %u: bad shape", b->id);
    }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++)
        if (e->frame.mesh_verts[m] && !in->verts[m]) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "mesh %u: no vertices given", m);

    /* What the new state allows: nearest cells, acceptable ranges, true orientations. */
    uint32_t i = 0;
    for (uint32_t k = 0; k < in->body_count; k++) {
        const tb_proto_body *b = &in->bodies[k];
        while (i < e->cur_n && e->cur[i].id < b->id) i++;
        bool kept = e->have_state && i < e->cur_n && e->cur[i].id == b->id && tb_snap__shape_eq(&e->cur[i].shape, &b->shape);
        e->match[k] = kept ? (int32_t)i : -1;
        tb_snap_body *near = &e->nearest[k];
        float *pose = &e->pose_next[7 * k];
        memcpy(pose, b->pos, 3 * sizeof(float));
        memcpy(pose + 3, b->rot, 4 * sizeof(float));
        if (kept && memcmp(pose, &e->pose_cur[7 * i], 7 * sizeof(float)) == 0) {
            /* bit-identical input (a sleeping body): the baseline stands, nothing to compute */
            *near = e->cur[i];
            for (int a = 0; a < 3; a++) { near->vp[a] = 0; near->vr[a] = 0; e->plo[3 * k + a] = e->phi[3 * k + a] = near->qp[a]; }
            e->old_ok[k] = 3;
            continue;
        }
        quantize_body(e, b, kept ? &e->cur[i] : NULL, near);
        for (int a = 0; a < 3; a++)
            cell_range(b->pos[a], e->frame.bounds_min[a], TB_PROTO_POS_SCALE, e->grid.pmax[a], e->tol_pos, near->qp[a],
                       &e->plo[3 * k + a], &e->phi[3 * k + a]);
        double *t = &e->trot[4 * k];
        double n2 = 0;
        for (int c = 0; c < 4; c++) n2 += (double)b->rot[c] * b->rot[c];
        if (isfinite(n2) && n2 > 1e-24) for (int c = 0; c < 4; c++) t[c] = b->rot[c] / sqrt(n2);
        else tb_proto_dequant_rot(near->ri, near->rc, t);     /* degenerate input: what we send */
        /* is the baseline still good enough? (the same for both predictors) */
        e->old_ok[k] = 0;
        if (kept) {
            const tb_snap_body *o = &e->cur[i];
            bool pos_ok = true;
            for (int a = 0; a < 3; a++) pos_ok = pos_ok && o->qp[a] >= e->plo[3 * k + a] && o->qp[a] <= e->phi[3 * k + a];
            bool rot_ok = rot_within(e, o->ri, o->rc, t);
            e->old_ok[k] = (uint8_t)((pos_ok ? 1 : 0) | (rot_ok ? 2 : 0));
        }
    }
    e->next_n = in->body_count;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        for (uint32_t v = 0; v < 3 * e->frame.mesh_verts[m]; v++) {
            int a = (int)(v % 3);
            float p = in->verts[m][v];
            int32_t q = (!isfinite(p) && e->have_state) ? e->vq[m][v]
                      : tb_proto_quant_pos(p, e->frame.bounds_min[a], e->grid.vmax[a], TB_PROTO_VERT_SCALE);
            cell_range(p, e->frame.bounds_min[a], TB_PROTO_VERT_SCALE, e->grid.vmax[a], e->tol_vert, q, &e->vlo[m][v], &e->vhi[m][v]);
            e->nq[m][v] = q;
            e->nv[m][v] = 0;
        }
        if (e->frame.mesh_verts[m]) memcpy(e->vin[m], in->verts[m], 3u * e->frame.mesh_verts[m] * sizeof(float));
    }
    uint32_t base_tick = e->tick;
    bool had = e->have_state;
    e->tick = in->tick;
    e->awake = in->awake;
    e->have_delta = false;
    if (had) {
        /* choose cells for both predictors, keep the cheaper (per channel) */
        uint64_t cost1 = choose_bodies(e, 1);
        memcpy(e->alt, e->next, e->next_n * sizeof *e->next);
        int pred = 0;
        if (cost1 < choose_bodies(e, 0)) { memcpy(e->next, e->alt, e->next_n * sizeof *e->next); pred = 1; }
        int mpred[TB_PROTO_MAX_MESHES] = {0};
        for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
            size_t n = 3u * e->frame.mesh_verts[m] * sizeof(int32_t);
            uint64_t c1 = choose_mesh(e, m, 1);
            memcpy(e->altq, e->nq[m], n);
            memcpy(e->altv, e->nv[m], n);
            if (c1 < choose_mesh(e, m, 0)) { memcpy(e->nq[m], e->altq, n); memcpy(e->nv[m], e->altv, n); mpred[m] = 1; }
        }
        int rc = encode_delta(e, base_tick, pred, mpred);
        if (rc) return tb_proto__fail(err, rc, "delta encoding overflow");
        e->have_delta = true;
    } else {
        for (uint32_t k = 0; k < e->next_n; k++) e->next[k] = e->nearest[k];
    }
    tb_snap_body *t = e->cur; e->cur = e->next; e->next = t;
    float *pt = e->pose_cur; e->pose_cur = e->pose_next; e->pose_next = pt;
    e->cur_n = e->next_n;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        int32_t *q = e->vq[m]; e->vq[m] = e->nq[m]; e->nq[m] = q;
        int32_t *v = e->vv[m]; e->vv[m] = e->nv[m]; e->nv[m] = v;
    }
    e->have_state = true;
    e->key_valid = false;
    return TB_OK;
}

/* Per-client framing: [type, last_seq] + the shared tail. */
static size_t prefix(uint8_t *p, const tb_snap_blob *b, uint32_t last_seq)
{
    size_t n = 0;
    p[n++] = (uint8_t)(0x90 | (b->fields & 0x0f));
    p[n++] = (uint8_t)b->type;
    if (last_seq < 0x80) p[n++] = (uint8_t)last_seq;
    else if (last_seq < 0x100) { p[n++] = 0xcc; p[n++] = (uint8_t)last_seq; }
    else if (last_seq < 0x10000) { p[n++] = 0xcd; p[n++] = (uint8_t)(last_seq >> 8); p[n++] = (uint8_t)last_seq; }
    else { p[n++] = 0xce; for (int s = 24; s >= 0; s -= 8) p[n++] = (uint8_t)(last_seq >> s); }
    return n;
}

size_t tb_snap_write(uint8_t *out, size_t cap, const tb_snap_blob *b, uint32_t last_seq)
{
    uint8_t p[8];
    size_t n = prefix(p, b, last_seq);
    if (cap < n + b->tail_len) return 0;
    memcpy(out, p, n);
    memcpy(out + n, b->tail, b->tail_len);
    return n + b->tail_len;
}

int tb_snap_write_sbuf(msgpack_sbuffer *sb, const tb_snap_blob *b, uint32_t last_seq)
{
    uint8_t p[8];
    size_t n = prefix(p, b, last_seq);
    int rc = msgpack_sbuffer_write(sb, (const char *)p, n);
    if (!rc) rc = msgpack_sbuffer_write(sb, (const char *)b->tail, b->tail_len);
    return rc ? TB_ERR_INTERNAL : TB_OK;
}
