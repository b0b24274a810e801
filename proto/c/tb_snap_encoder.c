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
 * a gap code, so a room at rest costs only the envelope. */
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
    size_t verts = 0;
    bool ok = e->cur && e->next;
    for (uint32_t m = 0; m < frame->mesh_count; m++) {
        size_t n = 3u * frame->mesh_verts[m] + 1;
        verts += frame->mesh_verts[m];
        e->vq[m] = calloc(n, sizeof(int32_t)); e->vv[m] = calloc(n, sizeof(int32_t));
        e->nq[m] = calloc(n, sizeof(int32_t)); e->nv[m] = calloc(n, sizeof(int32_t));
        ok = ok && e->vq[m] && e->vv[m] && e->nq[m] && e->nv[m];
    }
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
    for (int m = 0; m < TB_PROTO_MAX_MESHES; m++) { free(e->vq[m]); free(e->vv[m]); free(e->nq[m]); free(e->nv[m]); }
    msgpack_sbuffer_destroy(&e->delta_sb);
    msgpack_sbuffer_destroy(&e->key_sb);
    free(e);
}

/* Order k in 0..15 for n zigzag values. The cost of v at order k is 2n - 1 - k
 * with n the bit length of v + 2^k, which is max(L, k+1) (or L+1 on a carry) for
 * L the bit length of v; a histogram of L gives a near-exact cost for every k in
 * O(n + 16*33). The choice only affects size, never correctness. */
static int best_k(const uint32_t *v, size_t n, uint64_t *bits_out)
{
    uint64_t hist[33] = {0};
    for (size_t i = 0; i < n; i++) hist[v[i] ? 32 - __builtin_clz(v[i]) : 0]++;
    uint64_t best = UINT64_MAX;
    int bk = 0;
    for (int k = 0; k < 16; k++) {
        uint64_t total = 0;
        for (int L = 0; L <= 32; L++) {
            if (!hist[L]) continue;
            int len = L > k + 1 ? L : k + 1;
            total += hist[L] * (uint64_t)(2 * len - 1 - k);
        }
        if (total < best) { best = total; bk = k; }
    }
    if (bits_out) *bits_out = n ? best : 0;
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

/* Quantize input body b against its baseline `old` (NULL when spawned). */
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

/* Writes the delta cur -> next into delta_sb. */
static int encode_delta(tb_snap_encoder *e, uint32_t base_tick)
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
    /* Choose predictor and orders for bodies: residuals of kept, changed bodies. */
    int best_pred = 0, kp = 0, kr = 0;
    uint64_t best_bits = UINT64_MAX;
    for (int pred = 0; pred < 2; pred++) {
        size_t np = 0, nr = 0;
        uint32_t *rp = e->scratch, *rr = e->scratch + 3u * (e->max_bodies + 1);
        for (i = 0, j = 0; i < e->cur_n && j < e->next_n;) {
            if (e->cur[i].id < e->next[j].id) { i++; continue; }
            if (e->next[j].id < e->cur[i].id) { j++; continue; }
            const tb_snap_body *o = &e->cur[i], *b = &e->next[j];
            if (tb_snap__shape_eq(&o->shape, &b->shape) && body_changed(o, b)) {
                for (int a = 0; a < 3; a++) rp[np++] = tb_zz(b->qp[a] - (o->qp[a] + pred * o->vp[a]));
                if (b->ri == o->ri)
                    for (int a = 0; a < 3; a++) rr[nr++] = tb_zz(b->rc[a] - (o->rc[a] + pred * o->vr[a]));
            }
            i++; j++;
        }
        uint64_t bp, br;
        int kpp = best_k(rp, np, &bp), krr = best_k(rr, nr, &br);
        if (bp + br < best_bits) { best_bits = bp + br; best_pred = pred; kp = kpp; kr = krr; }
    }
    int mpred[TB_PROTO_MAX_MESHES] = {0}, kv[TB_PROTO_MAX_MESHES] = {0};
    uint32_t mchanged[TB_PROTO_MAX_MESHES] = {0};
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        best_bits = UINT64_MAX;
        uint32_t nv = e->frame.mesh_verts[m];
        for (int pred = 0; pred < 2; pred++) {
            size_t n = 0;
            uint32_t changed = 0;
            for (uint32_t v = 0; v < nv; v++) {
                const int32_t *o = &e->vq[m][3 * v], *ov = &e->vv[m][3 * v], *q = &e->nq[m][3 * v];
                if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
                changed++;
                for (int a = 0; a < 3; a++) e->scratch[n++] = tb_zz(q[a] - (o[a] + pred * ov[a]));
            }
            uint64_t bits;
            int k = best_k(e->scratch, n, &bits);
            if (bits < best_bits) { best_bits = bits; mpred[m] = pred; kv[m] = k; }
            mchanged[m] = changed;
        }
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
    msgpack_sbuffer_clear(&e->delta_sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &e->delta_sb, msgpack_sbuffer_write);
    msgpack_pack_uint32(&pk, e->tick);
    msgpack_pack_uint32(&pk, e->tick - base_tick);
    msgpack_pack_uint32(&pk, e->awake);
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

int tb_snap_encoder_step(tb_snap_encoder *e, const tb_snap_input *in, tb_proto_err *err)
{
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

    uint32_t i = 0;
    for (uint32_t k = 0; k < in->body_count; k++) {
        while (i < e->cur_n && e->cur[i].id < in->bodies[k].id) i++;
        const tb_snap_body *old = (e->have_state && i < e->cur_n && e->cur[i].id == in->bodies[k].id &&
                                   tb_snap__shape_eq(&e->cur[i].shape, &in->bodies[k].shape)) ? &e->cur[i] : NULL;
        quantize_body(e, &in->bodies[k], old, &e->next[k]);
    }
    e->next_n = in->body_count;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        for (uint32_t v = 0; v < 3 * e->frame.mesh_verts[m]; v++) {
            int a = (int)(v % 3);
            float p = in->verts[m][v];
            int32_t q = (!isfinite(p) && e->have_state) ? e->vq[m][v]
                      : tb_proto_quant_pos(p, e->frame.bounds_min[a], e->grid.vmax[a], TB_PROTO_VERT_SCALE);
            e->nq[m][v] = q;
            e->nv[m][v] = e->have_state ? q - e->vq[m][v] : 0;
        }
    }
    uint32_t base_tick = e->tick;
    bool had = e->have_state;
    e->tick = in->tick;
    e->awake = in->awake;
    e->have_delta = false;
    if (had) {
        int rc = encode_delta(e, base_tick);
        if (rc) return tb_proto__fail(err, rc, "delta encoding overflow");
        e->have_delta = true;
    }
    tb_snap_body *t = e->cur; e->cur = e->next; e->next = t;
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
