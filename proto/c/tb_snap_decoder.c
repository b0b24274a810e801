/* tb_snap_decoder.c: the receiving side of snapshots (load tool, tests).
 *
 * Holds the baseline exactly as the encoder does (quantized cells plus the
 * last change of each), applies a keyframe or a delta into a second buffer
 * and swaps only when the whole message decoded, so a bad frame never leaves
 * a half-applied state (a delta that only moves bodies decodes its changes
 * aside and writes them back in place: apply_delta_in_place). Everything is checked: ids sorted and known, counts
 * within the capacities fixed at create (or by the static description's mesh
 * sizes, themselves capped), every cell inside the grid, the bin consumed to
 * the last byte with zero padding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tb_proto_internal.h"

struct tb_snap_decoder {
    uint32_t max_bodies;
    tb_proto_frame frame;
    tb_snap_grid grid;
    bool ready;
    uint32_t tick, last_seq, awake;
    tb_snap_body *cur, *next, *tmp;
    uint32_t cur_n, next_n;
    /* The bodies whose velocities (last change) may be non-zero: those the last
     * in-place delta changed, or every body after any other apply. The second
     * half of the array lists the ones the delta being applied changes. */
    uint16_t *moved;
    uint32_t moved_n;
    bool moved_all;
    bool in_place_off;                 /* tests: always take apply_delta's general path */
    uint32_t mesh_cap[TB_PROTO_MAX_MESHES];
    int32_t *vq[TB_PROTO_MAX_MESHES], *vv[TB_PROTO_MAX_MESHES], *nq[TB_PROTO_MAX_MESHES], *nv[TB_PROTO_MAX_MESHES];
    /* The unpacked message's objects: kept and cleared after each apply instead
     * of a zone allocated and freed per message (msgpack_unpack_next's way). */
    msgpack_zone *zone;
};

#define TRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

tb_snap_decoder *tb_snap_decoder_create(uint32_t max_bodies)
{
    if (max_bodies > TB_PROTO_MAX_BODIES) return NULL;
    tb_snap_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->max_bodies = max_bodies;
    d->cur = calloc(max_bodies + 1, sizeof *d->cur);
    d->next = calloc(max_bodies + 1, sizeof *d->next);
    d->tmp = calloc(max_bodies + 1, sizeof *d->tmp);
    d->moved = calloc(2 * ((size_t)max_bodies + 1), sizeof *d->moved);
    d->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
    if (!d->cur || !d->next || !d->tmp || !d->moved || !d->zone) { tb_snap_decoder_destroy(d); return NULL; }
    return d;
}

void tb_snap_decoder_destroy(tb_snap_decoder *d)
{
    if (!d) return;
    if (d->zone) msgpack_zone_free(d->zone);
    free(d->cur); free(d->next); free(d->tmp); free(d->moved);
    for (int m = 0; m < TB_PROTO_MAX_MESHES; m++) { free(d->vq[m]); free(d->vv[m]); free(d->nq[m]); free(d->nv[m]); }
    free(d);
}

/* Sets the frame; (re)allocates vertex storage to the new mesh sizes (capped by the frame check). */
static int set_frame(tb_snap_decoder *d, const tb_proto_frame *f, tb_proto_err *err)
{
    TRY(tb_proto_frame_check(f, err));
    d->ready = false;
    d->frame = *f;
    tb_snap__grid(f, &d->grid, NULL);
    for (uint32_t m = 0; m < TB_PROTO_MAX_MESHES; m++) {
        uint32_t n = m < f->mesh_count ? f->mesh_verts[m] : 0;
        if (n > d->mesh_cap[m] || (n == 0 && d->mesh_cap[m])) {
            free(d->vq[m]); free(d->vv[m]); free(d->nq[m]); free(d->nv[m]);
            d->vq[m] = d->vv[m] = d->nq[m] = d->nv[m] = NULL;
            d->mesh_cap[m] = 0;
            if (n) {
                size_t sz = 3u * n * sizeof(int32_t);
                d->vq[m] = calloc(1, sz); d->vv[m] = calloc(1, sz); d->nq[m] = calloc(1, sz); d->nv[m] = calloc(1, sz);
                if (!d->vq[m] || !d->vv[m] || !d->nq[m] || !d->nv[m]) return tb_proto__fail(err, TB_ERR_INTERNAL, "out of memory");
                d->mesh_cap[m] = n;
            }
        }
    }
    return TB_OK;
}

static int read_shape(const msgpack_object *o, uint32_t *id, tb_proto_shape *s, tb_proto_err *err)
{
    TRY(tb_proto__array(o, 7, UINT32_MAX, "body", err));
    const msgpack_object *f = o->via.array.ptr;
    uint32_t kind, color, material;
    double size[3];
    TRY(tb_proto__uint(&f[0], 0xffff, id, "body.id", err));
    TRY(tb_proto__uint(&f[1], TB_SHAPE_CAPSULE, &kind, "body.shape", err));
    for (int i = 0; i < 3; i++) {
        TRY(tb_proto__num(&f[2 + i], TB_PROTO_MAX_COORD, &size[i], "body.size", err));
        if (size[i] < 0) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "body.size: negative");
    }
    TRY(tb_proto__uint(&f[5], 0xffffff, &color, "body.color", err));
    TRY(tb_proto__uint(&f[6], 0xff, &material, "body.material", err));
    s->kind = (uint8_t)kind; s->color = color; s->material = (uint8_t)material;
    for (int i = 0; i < 3; i++) s->size[i] = (float)size[i];
    return TB_OK;
}

static int bad(tb_bitr *r, tb_proto_err *err, const char *what)
{
    return tb_proto__fail(err, r->error ? TB_ERR_BAD_SNAPSHOT : TB_ERR_BAD_SNAPSHOT, "snapshot bin: %s%s", what,
                          r->error ? " (bits run out or over-long code)" : "");
}

static int read_abs_body(tb_bitr *r, const tb_snap_grid *g, tb_snap_body *b, int kp, int kr, tb_proto_err *err)
{
    for (int a = 0; a < 3; a++) {
        b->pos_cell[a] = (int32_t)tb_bitr__get(r, g->pbits[a]);
        if (b->pos_cell[a] > g->pmax[a]) return bad(r, err, "position outside the room grid");
    }
    b->rot_largest = (int32_t)tb_bitr__get(r, 2);
    for (int j = 0; j < 3; j++) b->rot_cell[j] = (int32_t)tb_bitr__get(r, TB_PROTO_ROT_BITS);
    for (int a = 0; a < 3; a++) b->pos_vel[a] = tb_unzz(tb_bitr__eg(r, kp));
    for (int j = 0; j < 3; j++) b->rot_vel[j] = tb_unzz(tb_bitr__eg(r, kr));
    for (int a = 0; a < 3; a++)
        if (b->pos_vel[a] > g->pmax[a] || b->pos_vel[a] < -g->pmax[a] || b->rot_vel[a] > TB_PROTO_ROT_MAXQ || b->rot_vel[a] < -TB_PROTO_ROT_MAXQ)
            return bad(r, err, "velocity state out of range");
    return r->error ? bad(r, err, "body record") : TB_OK;
}

/* One changed body of a delta: b (a copy of o, the baseline's) gets o's cells
 * plus pred x o's last change plus the residuals read. */
static int read_body_change(tb_bitr *r, const tb_snap_grid *g, const tb_snap_body *o, tb_snap_body *b, int pred, int kp, int kr,
                            tb_proto_err *err)
{
    for (int a = 0; a < 3; a++) {
        int64_t q = (int64_t)o->pos_cell[a] + pred * (int64_t)o->pos_vel[a] + tb_unzz(tb_bitr__eg(r, kp));
        if (r->error || q < 0 || q > g->pmax[a]) return bad(r, err, "body position outside the room grid");
        b->pos_cell[a] = (int32_t)q;
        b->pos_vel[a] = b->pos_cell[a] - o->pos_cell[a];
    }
    if (tb_bitr__get(r, 1) == 0) {
        for (int a = 0; a < 3; a++) {
            int64_t q = (int64_t)o->rot_cell[a] + pred * (int64_t)o->rot_vel[a] + tb_unzz(tb_bitr__eg(r, kr));
            if (r->error || q < 0 || q > TB_PROTO_ROT_MAXQ) return bad(r, err, "rotation component out of range");
            b->rot_cell[a] = (int32_t)q;
            b->rot_vel[a] = b->rot_cell[a] - o->rot_cell[a];
        }
    } else {
        b->rot_largest = (int32_t)tb_bitr__get(r, 2);
        for (int a = 0; a < 3; a++) { b->rot_cell[a] = (int32_t)tb_bitr__get(r, TB_PROTO_ROT_BITS); b->rot_vel[a] = 0; }
    }
    return r->error ? bad(r, err, "body record") : TB_OK;
}

static int finish_bits(tb_bitr *r, tb_proto_err *err)
{
    if (r->error) return bad(r, err, "truncated");
    size_t total = r->len * 8;
    if (total - r->bit >= 8) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snapshot bin: %zu unused bytes", (total - r->bit) / 8);
    if (tb_bitr__get(r, (int)(total - r->bit)) != 0) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snapshot bin: padding bits not zero");
    return TB_OK;
}

static void commit(tb_snap_decoder *d)
{
    tb_snap_body *t = d->cur; d->cur = d->next; d->next = t;
    d->cur_n = d->next_n;
    d->moved_all = true;
    for (uint32_t m = 0; m < d->frame.mesh_count; m++) {
        int32_t *q = d->vq[m]; d->vq[m] = d->nq[m]; d->nq[m] = q;
        int32_t *v = d->vv[m]; d->vv[m] = d->nv[m]; d->nv[m] = v;
    }
}

static int read_bin(const msgpack_object *o, tb_bitr *r, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_BIN) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected bin", what);
    *r = (tb_bitr){(const uint8_t *)o->via.bin.ptr, o->via.bin.size, 0, 0};
    return TB_OK;
}

/* [33, last_seq, tick, awake, bodies, bin] */
static int apply_key(tb_snap_decoder *d, const msgpack_object *root, tb_proto_err *err)
{
    TRY(tb_proto__array(root, 6, UINT32_MAX, "snap_key", err));
    const msgpack_object *f = root->via.array.ptr;
    uint32_t last_seq, tick, awake;
    TRY(tb_proto__uint(&f[1], UINT32_MAX, &last_seq, "snap_key.last_seq", err));
    TRY(tb_proto__uint(&f[2], UINT32_MAX, &tick, "snap_key.tick", err));
    TRY(tb_proto__uint(&f[3], TB_PROTO_MAX_BODIES, &awake, "snap_key.awake", err));
    TRY(tb_proto__array(&f[4], 0, d->max_bodies, "snap_key.bodies", err));
    const msgpack_object *bodies = f[4].via.array.ptr;
    uint32_t n = f[4].via.array.size;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id;
        TRY(read_shape(&bodies[i], &id, &d->next[i].shape, err));
        if (i > 0 && id <= d->next[i - 1].id) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_key.bodies: ids not increasing");
        d->next[i].id = (uint16_t)id;
    }
    tb_bitr r;
    TRY(read_bin(&f[5], &r, "snap_key.bin", err));
    tb_bitr__get(&r, 1);
    int kp = (int)tb_bitr__get(&r, 4), kr = (int)tb_bitr__get(&r, 4), kv[TB_PROTO_MAX_MESHES];
    for (uint32_t m = 0; m < d->frame.mesh_count; m++) { tb_bitr__get(&r, 1); kv[m] = (int)tb_bitr__get(&r, 4); }
    for (uint32_t i = 0; i < n; i++) TRY(read_abs_body(&r, &d->grid, &d->next[i], kp, kr, err));
    for (uint32_t m = 0; m < d->frame.mesh_count; m++) {
        uint32_t nv = d->frame.mesh_verts[m];
        for (uint32_t v = 0; v < 3 * nv; v++) {
            int a = (int)(v % 3);
            d->nq[m][v] = (int32_t)tb_bitr__get(&r, d->grid.vbits[a]);
            if (d->nq[m][v] > d->grid.vmax[a]) return bad(&r, err, "vertex outside the room grid");
        }
        for (uint32_t v = 0; v < 3 * nv; v++) {
            d->nv[m][v] = tb_unzz(tb_bitr__eg(&r, kv[m]));
            int32_t lim = d->grid.vmax[v % 3];
            if (d->nv[m][v] > lim || d->nv[m][v] < -lim) return bad(&r, err, "vertex velocity out of range");
        }
        if (r.error) return bad(&r, err, "vertex records");
    }
    TRY(finish_bits(&r, err));
    d->next_n = n;
    commit(d);
    d->tick = tick; d->last_seq = last_seq; d->awake = awake;
    d->ready = true;
    return TB_OK;
}

static int find_body(const tb_snap_body *b, uint32_t n, uint32_t id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (b[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return lo < n && b[lo].id == id ? (int)lo : -1;
}

/* The common delta: no removals, no spawns, no meshes (a tower between
 * knocks), applied to cur in place instead of rebuilding every body in next
 * (a copy of the whole baseline per snapshot, most of the load generator's
 * decoding time). The changed bodies are decoded into tmp first and written
 * back only when the whole bin checked out, so a bad frame still leaves the
 * baseline as it was; the bodies that did not change get a zero last change,
 * as in apply_delta, by clearing only those that may have one (moved). The
 * result is the state apply_delta's general path gives, field for field. */
static int apply_delta_in_place(tb_snap_decoder *d, const msgpack_object *fbin, uint32_t tick, uint32_t last_seq,
                                uint32_t awake, tb_proto_err *err)
{
    uint32_t nch = 0;
    if (fbin->type != MSGPACK_OBJECT_NIL) {
        tb_bitr r;
        TRY(read_bin(fbin, &r, "snap_delta.bin", err));
        int pred = (int)tb_bitr__get(&r, 1), kp = (int)tb_bitr__get(&r, 4), kr = (int)tb_bitr__get(&r, 4);
        nch = tb_bitr__eg(&r, 0);
        if (r.error || nch > d->cur_n) return bad(&r, err, "changed-body count");
        int64_t idx = -1;
        for (uint32_t c = 0; c < nch; c++) {
            uint32_t g = tb_bitr__eg(&r, 0);
            idx += (int64_t)g + 1;
            if (r.error || idx >= (int64_t)d->cur_n) return bad(&r, err, "changed-body index");
            const tb_snap_body *o = &d->cur[idx];
            tb_snap_body *b = &d->tmp[c];
            *b = *o;
            TRY(read_body_change(&r, &d->grid, o, b, pred, kp, kr, err));
            d->moved[d->max_bodies + 1 + c] = (uint16_t)idx;
        }
        TRY(finish_bits(&r, err));
    }
    /* commit: clear the last changes, then write the new records */
    if (d->moved_all) {
        for (uint32_t i = 0; i < d->cur_n; i++)
            for (int a = 0; a < 3; a++) { d->cur[i].pos_vel[a] = 0; d->cur[i].rot_vel[a] = 0; }
    } else {
        for (uint32_t k = 0; k < d->moved_n; k++)
            for (int a = 0; a < 3; a++) { d->cur[d->moved[k]].pos_vel[a] = 0; d->cur[d->moved[k]].rot_vel[a] = 0; }
    }
    for (uint32_t c = 0; c < nch; c++) {
        uint32_t i = d->moved[d->max_bodies + 1 + c];
        d->cur[i] = d->tmp[c];
        d->moved[c] = (uint16_t)i;
    }
    d->moved_n = nch;
    d->moved_all = false;
    d->tick = tick; d->last_seq = last_seq; d->awake = awake;
    return TB_OK;
}

/* [34, last_seq, tick, tick_gap, awake, bin|nil, spawns?, removes?] */
static int apply_delta(tb_snap_decoder *d, const msgpack_object *root, tb_proto_err *err)
{
    if (!d->ready) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "delta without a baseline");
    TRY(tb_proto__array(root, 6, UINT32_MAX, "snap_delta", err));
    const msgpack_object *f = root->via.array.ptr;
    uint32_t last_seq, tick, gap, awake;
    TRY(tb_proto__uint(&f[1], UINT32_MAX, &last_seq, "snap_delta.last_seq", err));
    TRY(tb_proto__uint(&f[2], UINT32_MAX, &tick, "snap_delta.tick", err));
    TRY(tb_proto__uint(&f[3], UINT32_MAX, &gap, "snap_delta.tick_gap", err));
    if (gap == 0) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "snap_delta.tick_gap: must be >= 1");
    if (tick - gap != d->tick)
        return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "delta against tick %u, baseline is tick %u", tick - gap, d->tick);
    TRY(tb_proto__uint(&f[4], TB_PROTO_MAX_BODIES, &awake, "snap_delta.awake", err));
    static const msgpack_object empty = {.type = MSGPACK_OBJECT_ARRAY};
    const msgpack_object *fsp = root->via.array.size > 6 ? &f[6] : &empty;
    const msgpack_object *frm = root->via.array.size > 7 ? &f[7] : &empty;
    const msgpack_object *fbin = &f[5];
    TRY(tb_proto__array(fsp, 0, d->max_bodies, "snap_delta.spawns", err));
    TRY(tb_proto__array(frm, 0, d->cur_n, "snap_delta.removes", err));
    const msgpack_object *sp = fsp->via.array.ptr, *rm = frm->via.array.ptr;
    uint32_t nsp = fsp->via.array.size, nrm = frm->via.array.size;
    if (nsp == 0 && nrm == 0 && d->frame.mesh_count == 0 && !d->in_place_off)
        return apply_delta_in_place(d, &f[5], tick, last_seq, awake, err);

    /* removals: sorted, each present in the baseline */
    uint32_t prev_id = 0;
    for (uint32_t k = 0; k < nrm; k++) {
        uint32_t id;
        TRY(tb_proto__uint(&rm[k], 0xffff, &id, "snap_delta.removes", err));
        if (k > 0 && id <= prev_id) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta.removes: ids not increasing");
        if (find_body(d->cur, d->cur_n, id) < 0) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta.removes: unknown body %u", id);
        prev_id = id;
    }
    uint32_t nkept = d->cur_n - nrm;
    if ((uint64_t)nkept + nsp > d->max_bodies) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta: more bodies than capacity %u", d->max_bodies);

    /* Build next: kept bodies first at the end region? Simpler: spawned into next[nkept..], kept into next[0..nkept). */
    tb_snap_body *kept = d->next, *spawned = d->next + nkept;
    uint32_t kk = 0, ri = 0;
    for (uint32_t i = 0; i < d->cur_n; i++) {
        uint32_t id = d->cur[i].id;
        while (ri < nrm && rm[ri].via.u64 < id) ri++;
        if (ri < nrm && rm[ri].via.u64 == id) continue;
        kept[kk] = d->cur[i];
        for (int a = 0; a < 3; a++) { kept[kk].pos_vel[a] = 0; kept[kk].rot_vel[a] = 0; }
        kk++;
    }
    for (uint32_t k = 0; k < nsp; k++) {
        uint32_t id;
        TRY(read_shape(&sp[k], &id, &spawned[k].shape, err));
        if (k > 0 && id <= spawned[k - 1].id) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta.spawns: ids not increasing");
        if (find_body(kept, nkept, id) >= 0) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta.spawns: body %u already exists", id);
        spawned[k].id = (uint16_t)id;
    }
    for (uint32_t m = 0; m < d->frame.mesh_count; m++) {
        size_t n = 3u * d->frame.mesh_verts[m];
        memcpy(d->nq[m], d->vq[m], n * sizeof(int32_t));
        memset(d->nv[m], 0, n * sizeof(int32_t));
    }
    if (fbin->type == MSGPACK_OBJECT_NIL) {
        if (nsp) return tb_proto__fail(err, TB_ERR_BAD_SNAPSHOT, "snap_delta: spawns without a bin");
    } else {
        tb_bitr r;
        TRY(read_bin(fbin, &r, "snap_delta.bin", err));
        int pred = (int)tb_bitr__get(&r, 1), kp = (int)tb_bitr__get(&r, 4), kr = (int)tb_bitr__get(&r, 4);
        int mpred[TB_PROTO_MAX_MESHES], kv[TB_PROTO_MAX_MESHES];
        for (uint32_t m = 0; m < d->frame.mesh_count; m++) { mpred[m] = (int)tb_bitr__get(&r, 1); kv[m] = (int)tb_bitr__get(&r, 4); }
        for (uint32_t k = 0; k < nsp; k++) TRY(read_abs_body(&r, &d->grid, &spawned[k], kp, kr, err));
        uint32_t nch = tb_bitr__eg(&r, 0);
        if (r.error || nch > nkept) return bad(&r, err, "changed-body count");
        int64_t idx = -1;
        for (uint32_t c = 0; c < nch; c++) {
            uint32_t g = tb_bitr__eg(&r, 0);
            idx += (int64_t)g + 1;
            if (r.error || idx >= (int64_t)nkept) return bad(&r, err, "changed-body index");
            tb_snap_body *b = &kept[idx];
            const tb_snap_body *o = &d->cur[find_body(d->cur, d->cur_n, b->id)];
            TRY(read_body_change(&r, &d->grid, o, b, pred, kp, kr, err));
        }
        for (uint32_t m = 0; m < d->frame.mesh_count; m++) {
            uint32_t nv = d->frame.mesh_verts[m];
            uint32_t nchm = tb_bitr__eg(&r, 0);
            if (r.error || nchm > nv) return bad(&r, err, "changed-vertex count");
            int64_t v = -1;
            for (uint32_t c = 0; c < nchm; c++) {
                v += (int64_t)tb_bitr__eg(&r, 0) + 1;
                if (r.error || v >= (int64_t)nv) return bad(&r, err, "changed-vertex index");
                for (int a = 0; a < 3; a++) {
                    size_t at = 3u * (size_t)v + (size_t)a;
                    int64_t q = (int64_t)d->vq[m][at] + mpred[m] * (int64_t)d->vv[m][at] + tb_unzz(tb_bitr__eg(&r, kv[m]));
                    if (r.error || q < 0 || q > d->grid.vmax[a]) return bad(&r, err, "vertex outside the room grid");
                    d->nq[m][at] = (int32_t)q;
                    d->nv[m][at] = (int32_t)q - d->vq[m][at];
                }
            }
        }
        TRY(finish_bits(&r, err));
    }
    /* merge kept [0, nkept) and spawned [nkept, total), both ascending, into id order */
    uint32_t total = nkept + nsp;
    if (nsp) {
        uint32_t a = 0, b = nkept, o = 0;
        while (a < nkept || b < total)
            d->tmp[o++] = (b >= total || (a < nkept && d->next[a].id < d->next[b].id)) ? d->next[a++] : d->next[b++];
        tb_snap_body *t = d->next; d->next = d->tmp; d->tmp = t;
    }
    d->next_n = total;
    commit(d);
    d->tick = tick; d->last_seq = last_seq; d->awake = awake;
    return TB_OK;
}

int tb_snap_decoder_apply(tb_snap_decoder *d, const uint8_t *buf, size_t len, tb_proto_err *err)
{
    if (err) { err->code = TB_OK; err->msg[0] = '\0'; }
    if (len > TB_PROTO_MAX_SERVER_MSG) return tb_proto__fail(err, TB_ERR_TOO_BIG, "frame of %zu bytes", len);
    msgpack_object msg;
    const msgpack_object *root = &msg;
    int rc = tb_proto__parse_in(buf, len, TB_SNAP_DEPTH, d->zone, &msg, err);
    uint32_t type = 0;
    if (!rc && (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 1))
        rc = tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "message must be an array [type, ...]");
    if (!rc) rc = tb_proto__uint(&root->via.array.ptr[0], 255, &type, "type", err);
    if (!rc) {
        if (type == TB_MSG_SNAP_KEY) rc = apply_key(d, root, err);
        else if (type == TB_MSG_SNAP_DELTA) rc = apply_delta(d, root, err);
        else if (type == TB_MSG_WELCOME || type == TB_MSG_SCENE) {
            tb_proto_welcome *w = malloc(sizeof *w);
            const msgpack_object *state = NULL;
            if (!w) rc = tb_proto__fail(err, TB_ERR_INTERNAL, "out of memory");
            if (!rc) rc = tb_proto__read_welcome_like(root, (int)type, w, &state, err);
            tb_proto_frame fr;
            if (!rc) { tb_proto_frame_from_static(&fr, &w->st); rc = set_frame(d, &fr, err); }
            if (!rc) {
                if (state->type != MSGPACK_OBJECT_ARRAY || state->via.array.size < 1 ||
                    state->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || state->via.array.ptr[0].via.u64 != TB_MSG_SNAP_KEY)
                    rc = tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "welcome.state: expected a snap_key message");
                else rc = apply_key(d, state, err);
            }
            free(w);
        } else rc = tb_proto__fail(err, TB_ERR_UNKNOWN_TYPE, "message type %u carries no snapshot", type);
    }
    msgpack_zone_clear(d->zone);
    return rc;
}

bool tb_snap_decoder_ready(const tb_snap_decoder *d) { return d->ready; }
void tb_snap__decoder_in_place(tb_snap_decoder *d, bool on) { d->in_place_off = !on; }
uint32_t tb_snap_decoder_tick(const tb_snap_decoder *d) { return d->tick; }
uint32_t tb_snap_decoder_last_seq(const tb_snap_decoder *d) { return d->last_seq; }
uint32_t tb_snap_decoder_awake(const tb_snap_decoder *d) { return d->awake; }
const tb_proto_frame *tb_snap_decoder_frame(const tb_snap_decoder *d) { return &d->frame; }
uint32_t tb_snap_decoder_body_count(const tb_snap_decoder *d) { return d->ready ? d->cur_n : 0; }

void tb_snap_decoder_body(const tb_snap_decoder *d, uint32_t i, tb_proto_body *out)
{
    const tb_snap_body *b = &d->cur[i];
    out->id = b->id;
    out->shape = b->shape;
    for (int a = 0; a < 3; a++) out->pos[a] = (float)tb_proto_dequant_pos(b->pos_cell[a], d->frame.bounds_min[a], TB_PROTO_POS_SCALE);
    double q[4];
    tb_proto_dequant_rot(b->rot_largest, b->rot_cell, q);
    for (int k = 0; k < 4; k++) out->rot[k] = (float)q[k];
}

void tb_snap_decoder_body_q(const tb_snap_decoder *d, uint32_t i, int32_t qpos[3], int *ridx,
                            int32_t rc[3], int32_t vpos[3], int32_t vrot[3])
{
    const tb_snap_body *b = &d->cur[i];
    *ridx = b->rot_largest;
    for (int a = 0; a < 3; a++) { qpos[a] = b->pos_cell[a]; rc[a] = b->rot_cell[a]; vpos[a] = b->pos_vel[a]; vrot[a] = b->rot_vel[a]; }
}

uint32_t tb_snap_decoder_verts(const tb_snap_decoder *d, uint32_t m, float *out, uint32_t cap)
{
    if (!d->ready || m >= d->frame.mesh_count) return 0;
    uint32_t n = d->frame.mesh_verts[m];
    if (n > cap) n = cap;
    for (uint32_t v = 0; v < 3 * n; v++)
        out[v] = (float)tb_proto_dequant_pos(d->vq[m][v], d->frame.bounds_min[v % 3], TB_PROTO_VERT_SCALE);
    return n;
}

const int32_t *tb_snap_decoder_verts_q(const tb_snap_decoder *d, uint32_t m, const int32_t **vel)
{
    if (!d->ready || m >= d->frame.mesh_count) return NULL;
    if (vel) *vel = d->vv[m];
    return d->vq[m];
}
