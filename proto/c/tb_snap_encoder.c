/* tb_snap_encoder.c: one per room; turns world states into keyframes and deltas.
 *
 * The encoder keeps the last state it quantized (the "baseline"): grid
 * positions, smallest-three orientations, vertex cells, and for each the last
 * change ("velocity" in cells per snapshot). tb_snap_encoder_step() quantizes
 * the new state (the "candidate"), writes ONE delta from the baseline to it,
 * and makes it the new baseline; every client that
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

/* A quantized state of the room. The encoder holds two: the baseline (what
 * every up-to-date client holds, i.e. the last state stepped) and the
 * candidate (the state step() is choosing cells for). At the end of a step
 * the candidate becomes the baseline and the old baseline's arrays are
 * reused for the next candidate. */
typedef struct snap_state {
    uint32_t tick, awake;                          /* as given with the input */
    tb_snap_body *bodies;                          /* ascending id */
    uint32_t body_count;
    float *body_pose;                              /* per body: the input pose (pos, rot: 7 floats) its cells came from */
    int32_t *vert_cell[TB_PROTO_MAX_MESHES];       /* per mesh: 3 cells per vertex */
    int32_t *vert_vel[TB_PROTO_MAX_MESHES];        /* per mesh: last change of each cell, cells per snapshot */
    float *vert_input[TB_PROTO_MAX_MESHES];        /* per mesh: the input vertices (xyz) the cells came from */
    /* budget (tb_snap_encoder_set_budget): per body / per vertex, the priority
     * accumulated while out of tolerance and not sent, and for how many
     * snapshots it has been so (0: the client's copy is within tolerance) */
    float *prio;
    uint16_t *age;
    float *vert_prio[TB_PROTO_MAX_MESHES];
    uint16_t *vert_age[TB_PROTO_MAX_MESHES];
} snap_state;

/* What step() learns about the new input and works in while choosing the
 * candidate; nothing here outlives a step. Per candidate body j (input order)
 * unless said otherwise. */
enum { FITS_POS = 1, FITS_ROT = 2 };
typedef struct snap_scratch {
    int32_t *base_index;                           /* j -> index of the same body in the baseline, or -1 (spawned / shape changed) */
    uint8_t *base_fits;                            /* FITS_POS / FITS_ROT: the baseline's cells are within tolerance of the input */
    tb_snap_body *nearest;                         /* the cells nearest to the input pose */
    int32_t *pos_lo, *pos_hi;                      /* 3 per body: the position cells within tolerance, per axis */
    double *true_rot;                              /* 4 per body: the input orientation as a unit quaternion */
    double *true_rot_tp;                           /* 4 per kept body: the same in rot_target() order for the baseline's cells */
    int32_t *vert_lo[TB_PROTO_MAX_MESHES];         /* per mesh: the vertex cells within tolerance, per coordinate */
    int32_t *vert_hi[TB_PROTO_MAX_MESHES];
    tb_snap_body *other_bodies;                    /* candidate bodies as chosen for the other predictor (swapped with
                                                      cand.bodies when that one wins: the same size) */
    int body_k[2][2];                              /* per predictor: the orders (position, rotation) choose_bodies() found */
    bool body_k_exact[2];                          /* ... over exactly the bodies that change (see choose_bodies) */
    uint32_t *changed, *changed_at;                /* encode_delta: the changed kept bodies (j) and their kept index */
    uint8_t *base_kept;                            /* encode_delta: baseline bodies kept (the others are removed) */
    int32_t *other_vert_cell, *other_vert_vel;     /* the same for one mesh's vertices */
    uint32_t *residuals; size_t residual_cap;      /* zigzagged residuals while choosing exp-Golomb orders */
    uint8_t *bits; size_t bits_cap;                /* the bin being written */
    struct budget_item *items;                     /* budget: the items out of tolerance, to rank */
} snap_scratch;

/* One body (mesh = -1) or vertex out of tolerance, ranked by the budget. */
typedef struct budget_item {
    float prio;
    uint32_t cost;                                 /* estimated bits */
    int32_t mesh;
    uint32_t index;                                /* candidate body j, or vertex */
    bool forced;                                   /* unsent for refresh snapshots: goes out whatever it costs */
} budget_item;

struct tb_snap_encoder {
    /* settings */
    tb_proto_frame frame;
    tb_snap_grid grid;
    uint32_t max_bodies;
    double tol_pos, tol_vert, cos_half_rot;        /* error budget (see the top of this file) */
    bool idle_path_off;                            /* tests: always run the full step */
    bool shortcuts_off;                            /* tests: no pos_surely_within(), no guard band in the orientation test */
    /* state */
    bool have_baseline;                            /* a state has been stepped: base is valid */
    bool base_still;                               /* step_same() made every velocity of base 0 and none changed since */
    snap_state base, cand;
    snap_scratch scratch;
    /* output: the last step's delta and the baseline's keyframe (made on demand) */
    bool have_delta, key_valid;
    msgpack_sbuffer delta_sb, key_sb;
    tb_snap_blob delta_blob, key_blob;
    uint64_t idle_steps;                           /* steps that found the input bit-identical to the last one */
    /* budget (tb_snap_encoder_set_budget) */
    uint32_t budget_bits, refresh;                 /* bits per snapshot (0: none), max snapshots an item waits */
    int64_t credit;                                /* bits the next snapshot may spend */
    uint32_t pending;                              /* items the last step left out of tolerance and unsent */
    bool budget_used;                              /* ever had a budget: the states' priorities and ages may be set */
    float focus[TB_SNAP_FOCUS_MAX][3];             /* where players touched lately (tb_snap_encoder_set_focus) */
    uint32_t focus_count;
    tb_snap_budget_stats stats;
};

/* Allocates one state's arrays (zeroed); false when out of memory. */
static bool state_alloc(snap_state *s, const tb_proto_frame *frame, uint32_t max_bodies)
{
    s->bodies = calloc(max_bodies + 1, sizeof *s->bodies);
    s->body_pose = calloc(7u * (max_bodies + 1), sizeof *s->body_pose);
    s->prio = calloc(max_bodies + 1, sizeof *s->prio);
    s->age = calloc(max_bodies + 1, sizeof *s->age);
    bool ok = s->bodies && s->body_pose && s->prio && s->age;
    for (uint32_t m = 0; m < frame->mesh_count; m++) {
        size_t n = 3u * frame->mesh_verts[m] + 1;
        s->vert_cell[m] = calloc(n, sizeof(int32_t));
        s->vert_vel[m] = calloc(n, sizeof(int32_t));
        s->vert_input[m] = calloc(n, sizeof(float));
        s->vert_prio[m] = calloc(frame->mesh_verts[m] + 1, sizeof(float));
        s->vert_age[m] = calloc(frame->mesh_verts[m] + 1, sizeof(uint16_t));
        ok = ok && s->vert_cell[m] && s->vert_vel[m] && s->vert_input[m] && s->vert_prio[m] && s->vert_age[m];
    }
    return ok;
}

static void state_free(snap_state *s)
{
    free(s->bodies);
    free(s->body_pose);
    free(s->prio);
    free(s->age);
    for (int m = 0; m < TB_PROTO_MAX_MESHES; m++) {
        free(s->vert_cell[m]); free(s->vert_vel[m]); free(s->vert_input[m]); free(s->vert_prio[m]); free(s->vert_age[m]);
    }
}

static bool scratch_alloc(snap_scratch *s, const tb_proto_frame *frame, uint32_t max_bodies)
{
    size_t bodies = max_bodies + 1u, verts = 0, max_verts = 0;
    s->base_index = calloc(bodies, sizeof *s->base_index);
    s->base_fits = calloc(bodies, sizeof *s->base_fits);
    s->nearest = calloc(bodies, sizeof *s->nearest);
    s->pos_lo = calloc(3 * bodies, sizeof *s->pos_lo);
    s->pos_hi = calloc(3 * bodies, sizeof *s->pos_hi);
    s->true_rot = calloc(4 * bodies, sizeof *s->true_rot);
    s->true_rot_tp = calloc(4 * bodies, sizeof *s->true_rot_tp);
    s->other_bodies = calloc(bodies, sizeof *s->other_bodies);
    s->changed = calloc(bodies, sizeof *s->changed);
    s->changed_at = calloc(bodies, sizeof *s->changed_at);
    s->base_kept = calloc(bodies, sizeof *s->base_kept);
    bool ok = s->base_index && s->base_fits && s->nearest && s->pos_lo && s->pos_hi && s->true_rot && s->true_rot_tp && s->other_bodies &&
              s->changed && s->changed_at && s->base_kept;
    for (uint32_t m = 0; m < frame->mesh_count; m++) {
        size_t n = 3u * frame->mesh_verts[m] + 1;
        verts += frame->mesh_verts[m];
        if (frame->mesh_verts[m] > max_verts) max_verts = frame->mesh_verts[m];
        s->vert_lo[m] = calloc(n, sizeof(int32_t));
        s->vert_hi[m] = calloc(n, sizeof(int32_t));
        ok = ok && s->vert_lo[m] && s->vert_hi[m];
    }
    s->other_vert_cell = calloc(3 * max_verts + 1, sizeof(int32_t));
    s->other_vert_vel = calloc(3 * max_verts + 1, sizeof(int32_t));
    /* Worst case per body: 3*24 + 2 + 36 + 6*55 bits; per vertex 3*24 + 3*55. */
    s->bits_cap = 64 + 56u * bodies + 32u * verts;
    s->bits = malloc(s->bits_cap);
    s->residual_cap = 6u * bodies + 3u * verts;
    s->residuals = malloc(s->residual_cap * sizeof *s->residuals);
    s->items = malloc((bodies + verts) * sizeof *s->items);
    return ok && s->other_vert_cell && s->other_vert_vel && s->bits && s->residuals && s->items;
}

static void scratch_free(snap_scratch *s)
{
    free(s->base_index); free(s->base_fits); free(s->nearest); free(s->pos_lo); free(s->pos_hi); free(s->true_rot); free(s->true_rot_tp);
    free(s->other_bodies); free(s->changed); free(s->changed_at); free(s->base_kept); free(s->other_vert_cell); free(s->other_vert_vel); free(s->residuals); free(s->bits); free(s->items);
    for (int m = 0; m < TB_PROTO_MAX_MESHES; m++) { free(s->vert_lo[m]); free(s->vert_hi[m]); }
}

tb_snap_encoder *tb_snap_encoder_create(const tb_proto_frame *frame, uint32_t max_bodies)
{
    if (tb_proto_frame_check(frame, NULL) || max_bodies > TB_PROTO_MAX_BODIES) return NULL;
    tb_snap_encoder *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->frame = *frame;
    tb_snap__grid(frame, &e->grid, NULL);
    e->max_bodies = max_bodies;
    tb_snap_encoder_set_tolerance(e, TB_SNAP_TOL_POS, TB_SNAP_TOL_ROT_DEG, TB_SNAP_TOL_VERT);
    msgpack_sbuffer_init(&e->delta_sb);
    msgpack_sbuffer_init(&e->key_sb);
    bool ok = state_alloc(&e->base, frame, max_bodies);
    ok = state_alloc(&e->cand, frame, max_bodies) && ok;
    ok = scratch_alloc(&e->scratch, frame, max_bodies) && ok;
    if (!ok) { tb_snap_encoder_destroy(e); return NULL; }
    return e;
}

void tb_snap_encoder_destroy(tb_snap_encoder *e)
{
    if (!e) return;
    state_free(&e->base);
    state_free(&e->cand);
    scratch_free(&e->scratch);
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
 * O(n + 16*33). The choice only affects size, never correctness. The
 * histogram is gathered by eg_hist_add() (choose_bodies() does it as it goes)
 * or by best_k() from an array. */
typedef struct eg_hist {
    uint64_t count[33];   /* by bit length; 0 counts as 1 bit (only count[0] + count[1] is read) */
} eg_hist;

static inline void eg_hist_add(eg_hist *h, uint32_t v)
{
    h->count[32 - __builtin_clz(v | 1u)]++;
}

static int best_k_hist(const eg_hist *h, uint64_t *bits_out)
{
    uint64_t n = 0;
    int maxL = 0;
    for (int L = 1; L <= 32; L++)
        if (h->count[L]) { n += h->count[L]; maxL = L; }
    if (n == 0) {   /* every order costs 0 bits: the loop below would pick k = 0 */
        if (bits_out) *bits_out = 0;
        return 0;
    }
    /* A value of L bits costs 2 max(L, k + 1) - 1 - k bits at order k: k + 1
     * for L <= k + 1, else (2 L - 1) - k. With low = how many have
     * L <= k + 1, high = the others and high_sum = their sum of 2 L - 1,
     * total(k) = low (k + 1) + high_sum - k high; moving to k + 1 moves the
     * values of L = k + 2 from high to low. (Exact integers: the sum over L
     * of the same terms.) */
    const uint64_t *hist = h->count;
    uint64_t low = hist[0] + hist[1], high = n - low, high_sum = 0;
    for (int L = 2; L <= maxL; L++) high_sum += hist[L] * (uint64_t)(2 * L - 1);
    uint64_t best = UINT64_MAX;
    int bk = 0;
    for (int k = 0; k < 16; k++) {
        uint64_t total = low * (uint64_t)(k + 1) + high_sum - (uint64_t)k * high;
        if (total < best) { best = total; bk = k; }
        if (k + 1 >= maxL) break;   /* from here on every value is low: total = n (k + 1) only grows */
        uint64_t moved = hist[k + 2];
        low += moved;
        high -= moved;
        high_sum -= moved * (uint64_t)(2 * (k + 2) - 1);
    }
    if (bits_out) *bits_out = best;
    return bk;
}

static int best_k(const uint32_t *v, size_t n, uint64_t *bits_out)
{
    eg_hist h = {0};
    for (size_t i = 0; i < n; i++) eg_hist_add(&h, v[i]);
    return best_k_hist(&h, bits_out);
}

static bool body_changed(const tb_snap_body *a, const tb_snap_body *b)
{
    return a->pos_cell[0] != b->pos_cell[0] || a->pos_cell[1] != b->pos_cell[1] || a->pos_cell[2] != b->pos_cell[2] || a->rot_largest != b->rot_largest ||
           a->rot_cell[0] != b->rot_cell[0] || a->rot_cell[1] != b->rot_cell[1] || a->rot_cell[2] != b->rot_cell[2];
}

static void put_abs_body(tb_bitf *w, const tb_snap_grid *g, const tb_snap_body *b, int kp, int kr)
{
    for (int a = 0; a < 3; a++) tb_bitf_put(w, (uint32_t)b->pos_cell[a], g->pbits[a]);
    tb_bitf_put(w, (uint32_t)b->rot_largest, 2);
    for (int j = 0; j < 3; j++) tb_bitf_put(w, (uint32_t)b->rot_cell[j], TB_PROTO_ROT_BITS);
    for (int a = 0; a < 3; a++) tb_bitf_eg(w, tb_zz(b->pos_vel[a]), kp);
    for (int j = 0; j < 3; j++) tb_bitf_eg(w, tb_zz(b->rot_vel[j]), kr);
}

/* Keyframe k orders: best over the velocities it carries. */
static void key_orders(tb_snap_encoder *e, int *kp, int *kr, int *kv)
{
    size_t n = 0;
    for (uint32_t i = 0; i < e->base.body_count; i++) for (int a = 0; a < 3; a++) e->scratch.residuals[n++] = tb_zz(e->base.bodies[i].pos_vel[a]);
    *kp = best_k(e->scratch.residuals, n, NULL);
    n = 0;
    for (uint32_t i = 0; i < e->base.body_count; i++) for (int a = 0; a < 3; a++) e->scratch.residuals[n++] = tb_zz(e->base.bodies[i].rot_vel[a]);
    *kr = best_k(e->scratch.residuals, n, NULL);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        n = 0;
        for (uint32_t i = 0; i < 3 * e->frame.mesh_verts[m]; i++) e->scratch.residuals[n++] = tb_zz(e->base.vert_vel[m][i]);
        kv[m] = best_k(e->scratch.residuals, n, NULL);
    }
}

const tb_snap_blob *tb_snap_encoder_key(tb_snap_encoder *e)
{
    if (!e->have_baseline) return NULL;
    if (e->key_valid) return &e->key_blob;
    int kp, kr, kv[TB_PROTO_MAX_MESHES];
    key_orders(e, &kp, &kr, kv);
    tb_bitf w = tb_bitf_init(e->scratch.bits, e->scratch.bits_cap);
    tb_bitf_put(&w, 0, 1); tb_bitf_put(&w, (uint32_t)kp, 4); tb_bitf_put(&w, (uint32_t)kr, 4);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) { tb_bitf_put(&w, 0, 1); tb_bitf_put(&w, (uint32_t)kv[m], 4); }
    for (uint32_t i = 0; i < e->base.body_count; i++) put_abs_body(&w, &e->grid, &e->base.bodies[i], kp, kr);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        for (uint32_t i = 0; i < e->frame.mesh_verts[m]; i++)
            for (int a = 0; a < 3; a++) tb_bitf_put(&w, (uint32_t)e->base.vert_cell[m][3 * i + a], e->grid.vbits[a]);
        for (uint32_t i = 0; i < 3 * e->frame.mesh_verts[m]; i++) tb_bitf_eg(&w, tb_zz(e->base.vert_vel[m][i]), kv[m]);
    }
    size_t nbytes = (tb_bitf_end(&w) + 7) / 8;
    if (w.overflow) return NULL;

    /* tail of [33, last_seq, tick, awake, bodies, bin] */
    msgpack_sbuffer_clear(&e->key_sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &e->key_sb, msgpack_sbuffer_write);
    msgpack_pack_uint32(&pk, e->base.tick);
    msgpack_pack_uint32(&pk, e->base.awake);
    msgpack_pack_array(&pk, e->base.body_count);
    for (uint32_t i = 0; i < e->base.body_count; i++) tb_snap__pack_shape(&pk, e->base.bodies[i].id, &e->base.bodies[i].shape);
    msgpack_pack_bin(&pk, nbytes);
    msgpack_pack_bin_body(&pk, e->scratch.bits, nbytes);
    e->key_blob = (tb_snap_blob){TB_MSG_SNAP_KEY, e->base.tick, 0, 6, (const uint8_t *)e->key_sb.data, e->key_sb.size};
    e->key_valid = true;
    return &e->key_blob;
}

const tb_snap_blob *tb_snap_encoder_delta(tb_snap_encoder *e)
{
    return e->have_delta ? &e->delta_blob : NULL;
}

/* Nearest cells of input body b; velocities against `old` (NULL when spawned);
 * rot_n2: the sum of the squares of in->rot (tb_snap__quant_rot_n2). */
static void quantize_body(const tb_snap_encoder *e, const tb_proto_body *in, double rot_n2, const tb_snap_body *old, tb_snap_body *out)
{
    out->id = in->id;
    out->shape = in->shape;
    for (int a = 0; a < 3; a++) {
        if (!isfinite(in->pos[a]) && old) out->pos_cell[a] = old->pos_cell[a];   /* never send garbage: hold the last pose */
        else out->pos_cell[a] = tb_snap__quant_pos(in->pos[a], e->frame.bounds_min[a], e->grid.pmax[a], TB_PROTO_POS_SCALE);
        out->pos_vel[a] = old ? out->pos_cell[a] - old->pos_cell[a] : 0;
    }
    int ri;
    tb_snap__quant_rot_n2(in->rot, rot_n2, &ri, out->rot_cell);
    out->rot_largest = ri;
    for (int j = 0; j < 3; j++) out->rot_vel[j] = (old && old->rot_largest == ri) ? out->rot_cell[j] - old->rot_cell[j] : 0;
}

/* Cells within tol of p on one axis, always containing the nearest cell n
 * (0 <= n <= gmax): lo = ceil(x) for x = (p - tol - min) scale when that is
 * below n, but not below 0; hi = floor(y), y = (p + tol - min) scale, when
 * that is above n, but not above gmax. Without ceil() and floor(), for n and
 * gmax whole: ceil(x) < n exactly when x <= n - 1, ceil(x) < 0 when x <= -1,
 * and in between (-1, n - 1] the truncation of x is its ceiling unless x is
 * above it; floor(y) > n when y >= n + 1, floor(y) > gmax when y >= gmax + 1,
 * and in between a positive y truncates to its floor. */
static inline void tol_span(double p, double min, int scale, double tol, double *x, double *y)
{
    *x = (p - tol - min) * (double)scale;
    *y = (p + tol - min) * (double)scale;
}

static inline void cell_range(double p, double min, int scale, int32_t gmax, double tol, int32_t n, int32_t *lo, int32_t *hi)
{
    *lo = n; *hi = n;
    if (!isfinite(p) || tol <= 0) return;
    double x, y;
    tol_span(p, min, scale, tol, &x, &y);
    if (x <= (double)n - 1.0) {
        if (x <= -1.0) *lo = 0;
        else { int32_t t = (int32_t)x; *lo = (double)t < x ? t + 1 : t; }
    }
    if (y >= (double)n + 1.0) *hi = y >= (double)gmax + 1.0 ? gmax : (int32_t)y;
}

/* Is cell o (0 <= o <= gmax, a baseline's) in the cell_range() of position p
 * on every axis, whatever nearest cell n quantization gives? Only a yes is
 * sure: with x, y as cell_range() has them, lo <= max(ceil(x), 0) (lo is
 * that or n <= ceil(x)) and hi >= min(floor(y), gmax), so x <= o <= y puts o
 * in [lo, hi] without knowing n. A no (or a position not finite, or no
 * tolerance, where cell_range() gives only n) needs n: the caller
 * quantizes. */
static bool pos_surely_within(const tb_snap_encoder *e, const float *pos, const int32_t *o)
{
    if (!(e->tol_pos > 0) || e->shortcuts_off) return false;
    for (int a = 0; a < 3; a++) {
        double x, y;
        tol_span(pos[a], e->frame.bounds_min[a], TB_PROTO_POS_SCALE, e->tol_pos, &x, &y);
        if (!(x <= (double)o[a] && (double)o[a] <= y)) return false;   /* NaN and infinities fail too */
    }
    return true;
}

static inline int32_t clamp32(int64_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : (int32_t)v; }

/* The true orientation t with its component `largest` moved last: the
 * order of the cells' quaternion (v0, v1, v2, w) in rot_within()'s guard band. */
static inline void rot_target(int largest, const double *t, double *tp)
{
    tp[0] = t[largest == 0 ? 1 : 0];
    tp[1] = t[largest <= 1 ? 2 : 1];
    tp[2] = t[largest <= 2 ? 3 : 2];
    tp[3] = t[largest];
}

/* Is the orientation of cells (ri, c) within tolerance of t: |q . t| >=
 * cos(tol / 2), q = tb_snap__dequant_rot(ri, c)? That decides which cells are
 * sent, so this is the exact test; rot_within() and rot_walk() first try a
 * cheaper one that can only give the same answer. */
static bool rot_within_exact(const tb_snap_encoder *e, int ri, const int32_t c[3], const double *t)
{
    double q[4];
    tb_snap__dequant_rot(ri, c, q);
    return fabs(q[0] * t[0] + q[1] * t[1] + q[2] * t[2] + q[3] * t[3]) >= e->cos_half_rot;
}

/* The guard band. The cells give v0 v1 v2 (the same doubles as the exact
 * test's) and, for s = v.v, w = sqrt(1 - s). Each of s (summed in any
 * order), 1 - s, w, and the exact test's norm and quotients is rounded once
 * (relative error u = 2^-53), so (v, w) has norm 1 within about 8u and the
 * exact test's normalized q differs from it by under 10u per component; the
 * two w differ by |dw^2| / (w + w') < 16u / 0.6 while s < ROT_S_MAX (w > 0.31;
 * a smallest-three orientation has w >= 0.5). With |t| = 1 the two dot
 * products (each rounded within 4u) then differ by under 1e-14, so a dot
 * d = (v, w) . t more than ROT_MARGIN from the threshold gives the exact
 * test's answer without the norm's square root and four divisions; nearer
 * (one cell of the 87,000 the tower cycle's snapshots try), or for
 * s >= ROT_S_MAX, the exact test runs. */
#define ROT_MARGIN 1e-12
#define ROT_S_MAX 0.9

/* rot_within_exact() through the guard band; tp: t in rot_target() order for ri. */
static inline bool rot_within(const tb_snap_encoder *e, int ri, const int32_t c[3], const double *t, const double *tp)
{
    const double f = TB_SNAP_SQRT1_2 / (double)TB_PROTO_ROT_HALF;
    const double v0 = (double)(c[0] - TB_PROTO_ROT_HALF) * f, v1 = (double)(c[1] - TB_PROTO_ROT_HALF) * f,
                 v2 = (double)(c[2] - TB_PROTO_ROT_HALF) * f;
    const double s = v0 * v0 + v1 * v1 + v2 * v2;
    if (s < (e->shortcuts_off ? -1.0 : ROT_S_MAX)) {
        double d = fabs(v0 * tp[0] + v1 * tp[1] + v2 * tp[2] + sqrt(1.0 - s) * tp[3]);
        if (d >= e->cos_half_rot + ROT_MARGIN) return true;
        if (d <= e->cos_half_rot - ROT_MARGIN) return false;
    }
    return rot_within_exact(e, ri, c, t);
}

/* The search's running sums for cells c: per component v^2 and v tp. */
typedef struct rot_sums { double vv[3], vt[3]; } rot_sums;

static inline rot_sums rot_sums_of(const int32_t c[3], const double *tp)
{
    const double f = TB_SNAP_SQRT1_2 / (double)TB_PROTO_ROT_HALF;
    rot_sums r;
    for (int a = 0; a < 3; a++) {
        double v = (double)(c[a] - TB_PROTO_ROT_HALF) * f;
        r.vv[a] = v * v;
        r.vt[a] = v * tp[a];
    }
    return r;
}

/* From cells c (largest ri; at: their rot_sums_of()), steps each component in
 * turn toward target's while the orientation stays within tolerance
 * (rot_within() of every cell tried, kept incrementally: only the component
 * stepped changes). */
static void rot_walk(const tb_snap_encoder *e, int ri, int32_t c[3], const int32_t target[3], const double *t, const double *tp,
                     rot_sums at)
{
    const double f = TB_SNAP_SQRT1_2 / (double)TB_PROTO_ROT_HALF, s_max = e->shortcuts_off ? -1.0 : ROT_S_MAX;
    const double hi = e->cos_half_rot + ROT_MARGIN, lo = e->cos_half_rot - ROT_MARGIN;
    double *vv = at.vv, *vt = at.vt;
    for (int a = 0; a < 3; a++) {
        if (c[a] == target[a]) continue;
        int b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2;   /* the other two */
        double rest_s = vv[b0] + vv[b1], rest_t = vt[b0] + vt[b1];
        int32_t dir = target[a] > c[a] ? 1 : -1;
        while (c[a] != target[a]) {
            int32_t next = c[a] + dir;
            double v = (double)(next - TB_PROTO_ROT_HALF) * f, s = rest_s + v * v;
            bool ok;
            bool guarded = s < s_max;
            double d = guarded ? fabs(rest_t + v * tp[a] + sqrt(1.0 - s) * tp[3]) : 0.0;
            if (guarded && d >= hi) ok = true;
            else if (guarded && d <= lo) ok = false;
            else {
                int32_t tried[3] = {c[0], c[1], c[2]};
                tried[a] = next;
                ok = rot_within_exact(e, ri, tried, t);
            }
            if (!ok) break;
            c[a] = next;
            vv[a] = v * v;
            vt[a] = v * tp[a];
        }
    }
}

/* b keeps o's cells, velocities 0. Written out: as a loop the compiler makes
 * two memmove calls of 12 bytes (it cannot tell b from o). */
static inline void hold_baseline(tb_snap_body *b, const tb_snap_body *o)
{
    int32_t p0 = o->pos_cell[0], p1 = o->pos_cell[1], p2 = o->pos_cell[2];
    int32_t r0 = o->rot_cell[0], r1 = o->rot_cell[1], r2 = o->rot_cell[2], largest = o->rot_largest;
    b->pos_cell[0] = p0; b->pos_cell[1] = p1; b->pos_cell[2] = p2;
    b->rot_cell[0] = r0; b->rot_cell[1] = r1; b->rot_cell[2] = r2;
    b->rot_largest = largest;
    b->pos_vel[0] = b->pos_vel[1] = b->pos_vel[2] = 0;
    b->rot_vel[0] = b->rot_vel[1] = b->rot_vel[2] = 0;
}

/* Chooses the candidate's cells for every body, for both predictors p (0:
 * the baseline's cells, 1: plus their last change) at once, into out[p];
 * returns in cost[p] the residual bits (at the best orders) each would cost,
 * to compare them, and keeps those orders in body_k[p]. They are the delta's
 * orders too when every body given residuals here changes (body_k_exact): a
 * body is sent here when its position or its orientation is out of
 * tolerance, and then it changes, but for one case (position in tolerance,
 * the orientation search ends on the baseline's own cells, as it can with the
 * nearest cell itself out of tolerance). */
static void choose_bodies(tb_snap_encoder *e, tb_snap_body *out[2], uint64_t cost[2])
{
    eg_hist hp[2] = {{{0}}}, hr[2] = {{{0}}};
    bool exact[2] = {true, true};
    for (uint32_t j = 0; j < e->cand.body_count; j++) {
        const tb_snap_body *near = &e->scratch.nearest[j];
        if (e->scratch.base_index[j] < 0) { out[0][j] = *near; out[1][j] = *near; continue; }
        const tb_snap_body *o = &e->base.bodies[e->scratch.base_index[j]];
        const int32_t *lo = &e->scratch.pos_lo[3 * j], *hi = &e->scratch.pos_hi[3 * j];
        bool pos_ok = e->scratch.base_fits[j] & FITS_POS, rot_ok = e->scratch.base_fits[j] & FITS_ROT;
        for (int p = 0; p < 2; p++) {
            out[p][j].id = near->id;
            out[p][j].shape = near->shape;
        }
        if (pos_ok && rot_ok) {   /* the client's pose is good enough: not sent */
            hold_baseline(&out[0][j], o);
            hold_baseline(&out[1][j], o);
            continue;
        }
        for (int p = 0; p < 2; p++) {
            tb_snap_body *b = &out[p][j];
            for (int a = 0; a < 3; a++) {
                b->pos_cell[a] = clamp32((int64_t)o->pos_cell[a] + p * (int64_t)o->pos_vel[a], lo[a], hi[a]);
                b->pos_vel[a] = b->pos_cell[a] - o->pos_cell[a];
                eg_hist_add(&hp[p], tb_zz(b->pos_cell[a] - (o->pos_cell[a] + p * o->pos_vel[a])));
            }
        }
        if (rot_ok || near->rot_largest == o->rot_largest) {
            /* from an acceptable start, step each component toward the prediction while still acceptable */
            const int32_t *start = rot_ok ? o->rot_cell : near->rot_cell;
            const double *t = &e->scratch.true_rot[4 * j], *tp = &e->scratch.true_rot_tp[4 * j];
            rot_sums at = rot_sums_of(start, tp);
            for (int p = 0; p < 2; p++) {
                tb_snap_body *b = &out[p][j];
                int32_t c[3], target[3];
                for (int a = 0; a < 3; a++) {
                    c[a] = start[a];
                    target[a] = clamp32((int64_t)o->rot_cell[a] + p * (int64_t)o->rot_vel[a], 0, TB_PROTO_ROT_MAXQ);
                }
                rot_walk(e, o->rot_largest, c, target, t, tp, at);
                b->rot_largest = o->rot_largest;
                for (int a = 0; a < 3; a++) {
                    b->rot_cell[a] = c[a];
                    b->rot_vel[a] = c[a] - o->rot_cell[a];
                    eg_hist_add(&hr[p], tb_zz(c[a] - (o->rot_cell[a] + p * o->rot_vel[a])));
                }
                if (pos_ok && c[0] == o->rot_cell[0] && c[1] == o->rot_cell[1] && c[2] == o->rot_cell[2]) exact[p] = false;
            }
        } else {   /* the largest component changed: absolute, nearest */
            for (int p = 0; p < 2; p++) {
                tb_snap_body *b = &out[p][j];
                b->rot_largest = near->rot_largest;
                for (int a = 0; a < 3; a++) { b->rot_cell[a] = near->rot_cell[a]; b->rot_vel[a] = 0; }
            }
        }
    }
    for (int p = 0; p < 2; p++) {
        uint64_t bp, br;
        e->scratch.body_k[p][0] = best_k_hist(&hp[p], &bp);
        e->scratch.body_k[p][1] = best_k_hist(&hr[p], &br);
        e->scratch.body_k_exact[p] = exact[p];
        cost[p] = bp + br;
    }
}

/* Same for the vertices of mesh m. */
static uint64_t choose_mesh(tb_snap_encoder *e, uint32_t m, int pred)
{
    size_t n = 0;
    uint32_t nv = e->frame.mesh_verts[m];
    const int32_t *lo = e->scratch.vert_lo[m], *hi = e->scratch.vert_hi[m], *o = e->base.vert_cell[m], *ov = e->base.vert_vel[m];
    int32_t *q = e->cand.vert_cell[m], *v = e->cand.vert_vel[m];
    for (uint32_t i = 0; i < nv; i++) {
        size_t at = 3u * i;
        bool ok = o[at] >= lo[at] && o[at] <= hi[at] && o[at + 1] >= lo[at + 1] && o[at + 1] <= hi[at + 1] &&
                  o[at + 2] >= lo[at + 2] && o[at + 2] <= hi[at + 2];
        for (int a = 0; a < 3; a++) {
            size_t k = at + (size_t)a;
            q[k] = ok ? o[k] : clamp32((int64_t)o[k] + pred * (int64_t)ov[k], lo[k], hi[k]);
            v[k] = q[k] - o[k];
            if (!ok) e->scratch.residuals[n++] = tb_zz(q[k] - (o[k] + pred * ov[k]));
        }
    }
    uint64_t bits;
    best_k(e->scratch.residuals, n, &bits);
    return bits;
}

/* Starts the delta tail in delta_sb: tick, tick_gap, awake. */
static void delta_head(tb_snap_encoder *e, msgpack_packer *pk, uint32_t tick, uint32_t base_tick, uint32_t awake)
{
    msgpack_sbuffer_clear(&e->delta_sb);
    msgpack_packer_init(pk, &e->delta_sb, msgpack_sbuffer_write);
    msgpack_pack_uint32(pk, tick);
    msgpack_pack_uint32(pk, tick - base_tick);
    msgpack_pack_uint32(pk, awake);
}

/* The exp-Golomb orders of a delta baseline -> candidate: from the residuals
 * of the changed kept bodies and of each mesh's changed vertices (counted in
 * mchanged). */
static void delta_mesh_orders(tb_snap_encoder *e, const int *mpred, int *kv, uint32_t *mchanged);

static void delta_orders(tb_snap_encoder *e, int best_pred, const int *mpred, int *kp, int *kr, int *kv, uint32_t *mchanged)
{
    size_t np = 0, nr = 0;
    uint32_t *rp = e->scratch.residuals, *rr = e->scratch.residuals + 3u * (e->max_bodies + 1);
    for (uint32_t j = 0; j < e->cand.body_count; j++) {
        if (e->scratch.base_index[j] < 0) continue;
        const tb_snap_body *o = &e->base.bodies[e->scratch.base_index[j]], *b = &e->cand.bodies[j];
        if (!body_changed(o, b)) continue;
        for (int a = 0; a < 3; a++) rp[np++] = tb_zz(b->pos_cell[a] - (o->pos_cell[a] + best_pred * o->pos_vel[a]));
        if (b->rot_largest == o->rot_largest)
            for (int a = 0; a < 3; a++) rr[nr++] = tb_zz(b->rot_cell[a] - (o->rot_cell[a] + best_pred * o->rot_vel[a]));
    }
    *kp = best_k(rp, np, NULL);
    *kr = best_k(rr, nr, NULL);
    delta_mesh_orders(e, mpred, kv, mchanged);
}

/* The meshes' part of delta_orders(). */
static void delta_mesh_orders(tb_snap_encoder *e, const int *mpred, int *kv, uint32_t *mchanged)
{
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        size_t n = 0;
        mchanged[m] = 0;
        for (uint32_t v = 0; v < e->frame.mesh_verts[m]; v++) {
            const int32_t *o = &e->base.vert_cell[m][3 * v], *ov = &e->base.vert_vel[m][3 * v], *q = &e->cand.vert_cell[m][3 * v];
            if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
            mchanged[m]++;
            for (int a = 0; a < 3; a++) e->scratch.residuals[n++] = tb_zz(q[a] - (o[a] + mpred[m] * ov[a]));
        }
        kv[m] = best_k(e->scratch.residuals, n, NULL);
    }
}

/* Writes the delta baseline -> candidate into delta_sb, with the predictors
 * chosen; body_k: the bodies' orders when choose_bodies() found them for
 * exactly this candidate (NULL: count them here). Kept, spawned and removed
 * bodies are as step() matched them (base_index: same id, same shape). */
static int encode_delta(tb_snap_encoder *e, int best_pred, const int *mpred, const int *body_k)
{
    snap_scratch *sc = &e->scratch;
    /* Pass 1: the kept bodies that changed, in id order, and their index among
     * the kept. With body_k they are the bodies choose_bodies() sent (not both
     * within tolerance): it holds the others on their baseline, and
     * body_k_exact says every one it sent changed. */
    uint32_t n_kept = 0, n_changed = 0;
    for (uint32_t j = 0; j < e->cand.body_count; j++) {
        int32_t i = sc->base_index[j];
        if (i < 0) continue;
        bool changed = body_k ? sc->base_fits[j] != (FITS_POS | FITS_ROT) : body_changed(&e->base.bodies[i], &e->cand.bodies[j]);
        if (changed) { sc->changed[n_changed] = j; sc->changed_at[n_changed++] = n_kept; }
        n_kept++;
    }
    uint32_t n_spawned = e->cand.body_count - n_kept, n_removed = e->base.body_count - n_kept;
    int kp, kr, kv[TB_PROTO_MAX_MESHES];
    uint32_t mchanged[TB_PROTO_MAX_MESHES];
    if (body_k) {
        kp = body_k[0];
        kr = body_k[1];
        delta_mesh_orders(e, mpred, kv, mchanged);
    } else {
        delta_orders(e, best_pred, mpred, &kp, &kr, kv, mchanged);
    }
    /* Pass 2: write the bin. */
    tb_bitf w = tb_bitf_init(sc->bits, sc->bits_cap);
    tb_bitf_put(&w, (uint32_t)best_pred, 1); tb_bitf_put(&w, (uint32_t)kp, 4); tb_bitf_put(&w, (uint32_t)kr, 4);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) { tb_bitf_put(&w, (uint32_t)mpred[m], 1); tb_bitf_put(&w, (uint32_t)kv[m], 4); }
    /* spawned bodies, ascending id */
    if (n_spawned)
        for (uint32_t j = 0; j < e->cand.body_count; j++)
            if (sc->base_index[j] < 0) put_abs_body(&w, &e->grid, &e->cand.bodies[j], kp, kr);
    /* changed kept bodies: count, then gap-coded records */
    tb_bitf_eg(&w, n_changed, 0);
    int64_t last = -1;
    for (uint32_t c = 0; c < n_changed; c++) {
        uint32_t j = sc->changed[c];
        const tb_snap_body *o = &e->base.bodies[sc->base_index[j]], *b = &e->cand.bodies[j];
        tb_bitf_eg(&w, (uint32_t)(sc->changed_at[c] - last - 1), 0);
        last = sc->changed_at[c];
        for (int a = 0; a < 3; a++) tb_bitf_eg(&w, tb_zz(b->pos_cell[a] - (o->pos_cell[a] + best_pred * o->pos_vel[a])), kp);
        if (b->rot_largest == o->rot_largest) {
            tb_bitf_put(&w, 0, 1);
            for (int a = 0; a < 3; a++) tb_bitf_eg(&w, tb_zz(b->rot_cell[a] - (o->rot_cell[a] + best_pred * o->rot_vel[a])), kr);
        } else {
            tb_bitf_put(&w, 1, 1);
            tb_bitf_put(&w, (uint32_t)b->rot_largest, 2);
            for (int a = 0; a < 3; a++) tb_bitf_put(&w, (uint32_t)b->rot_cell[a], TB_PROTO_ROT_BITS);
        }
    }
    bool any = n_spawned > 0 || n_changed > 0;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        any = any || mchanged[m] > 0;
        tb_bitf_eg(&w, mchanged[m], 0);
        int64_t last = -1;
        for (uint32_t v = 0; v < e->frame.mesh_verts[m]; v++) {
            const int32_t *o = &e->base.vert_cell[m][3 * v], *ov = &e->base.vert_vel[m][3 * v], *q = &e->cand.vert_cell[m][3 * v];
            if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
            tb_bitf_eg(&w, (uint32_t)((int64_t)v - last - 1), 0);
            last = v;
            for (int a = 0; a < 3; a++) tb_bitf_eg(&w, tb_zz(q[a] - (o[a] + mpred[m] * ov[a])), kv[m]);
        }
    }
    size_t nbytes = (tb_bitf_end(&w) + 7) / 8;
    if (w.overflow) return TB_ERR_INTERNAL;

    /* tail of [34, last_seq, tick, tick_gap, awake, bin|nil, spawns?, removes?]:
     * spawns and removes are left out when both are empty (rest costs ~13 bytes). */
    msgpack_packer pk;
    delta_head(e, &pk, e->cand.tick, e->base.tick, e->cand.awake);
    if (any) { msgpack_pack_bin(&pk, nbytes); msgpack_pack_bin_body(&pk, e->scratch.bits, nbytes); }
    else msgpack_pack_nil(&pk);
    if (n_spawned || n_removed) {
        msgpack_pack_array(&pk, n_spawned);
        memset(sc->base_kept, 0, e->base.body_count);
        for (uint32_t j = 0; j < e->cand.body_count; j++) {
            if (sc->base_index[j] >= 0) sc->base_kept[sc->base_index[j]] = 1;
            else tb_snap__pack_shape(&pk, e->cand.bodies[j].id, &e->cand.bodies[j].shape);
        }
        msgpack_pack_array(&pk, n_removed);
        for (uint32_t i = 0; i < e->base.body_count; i++)
            if (!sc->base_kept[i]) msgpack_pack_uint16(&pk, e->base.bodies[i].id);
    }
    e->delta_blob = (tb_snap_blob){TB_MSG_SNAP_DELTA, e->cand.tick, e->base.tick, (n_spawned || n_removed) ? 8u : 6u,
                                   (const uint8_t *)e->delta_sb.data, e->delta_sb.size};
    return TB_OK;
}

/* The input is bit-identical to the last step's (same bodies, shapes, poses
 * and vertices: a room at rest). Then every item's baseline is within
 * tolerance of its (unchanged) true pose, so the full step would send nothing
 * and keep every cell, with velocities 0. */
static bool same_input(const tb_snap_encoder *e, const tb_snap_input *in)
{
    if (!e->have_baseline || in->body_count != e->base.body_count) return false;
    for (uint32_t k = 0; k < in->body_count; k++) {
        const tb_proto_body *b = &in->bodies[k];
        const float *pose = &e->base.body_pose[7 * k];
        if (b->id != e->base.bodies[k].id || memcmp(b->pos, pose, 3 * sizeof(float)) != 0 ||
            memcmp(b->rot, pose + 3, 4 * sizeof(float)) != 0 || !tb_snap__shape_eq(&b->shape, &e->base.bodies[k].shape))
            return false;
    }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++)
        if (e->frame.mesh_verts[m] && (!in->verts[m] ||
            memcmp(in->verts[m], e->base.vert_input[m], 3u * e->frame.mesh_verts[m] * sizeof(float)) != 0))
            return false;
    return true;
}

/* The delta of a room at rest: [tick, tick_gap, awake, nil], and the baseline
 * keeps its cells with velocities 0 (what the full step computes). */
static void step_same(tb_snap_encoder *e, const tb_snap_input *in)
{
    uint32_t base_tick = e->base.tick;
    if (!e->base_still) {   /* the first step at rest; the next ones find the velocities 0 */
        for (uint32_t k = 0; k < e->base.body_count; k++)
            for (int a = 0; a < 3; a++) { e->base.bodies[k].pos_vel[a] = 0; e->base.bodies[k].rot_vel[a] = 0; }
        for (uint32_t m = 0; m < e->frame.mesh_count; m++)
            memset(e->base.vert_vel[m], 0, 3u * e->frame.mesh_verts[m] * sizeof(int32_t));
        e->base_still = true;
    }
    e->base.tick = in->tick;
    e->base.awake = in->awake;
    msgpack_packer pk;
    delta_head(e, &pk, e->base.tick, base_tick, e->base.awake);
    msgpack_pack_nil(&pk);
    e->delta_blob = (tb_snap_blob){TB_MSG_SNAP_DELTA, e->base.tick, base_tick, 6u, (const uint8_t *)e->delta_sb.data, e->delta_sb.size};
    e->have_delta = true;
    e->key_valid = false;
    e->idle_steps++;
}

uint64_t tb_snap_encoder_idle_steps(const tb_snap_encoder *e) { return e->idle_steps; }
void tb_snap__encoder_idle_path(tb_snap_encoder *e, bool on) { e->idle_path_off = !on; }
void tb_snap__encoder_shortcuts(tb_snap_encoder *e, bool on) { e->shortcuts_off = !on; }

/* ---- the budget (tb_snap_encoder_set_budget) ---------------------------------- */

void tb_snap_encoder_set_budget(tb_snap_encoder *e, uint32_t bits_per_snapshot, uint32_t refresh_snapshots)
{
    if (bits_per_snapshot != e->budget_bits)
        e->credit = bits_per_snapshot;
    e->budget_bits = bits_per_snapshot;
    e->budget_used = e->budget_used || bits_per_snapshot > 0;
    e->refresh = refresh_snapshots < 1 ? 1 : refresh_snapshots > 60000 ? 60000 : refresh_snapshots;
}

void tb_snap_encoder_set_focus(tb_snap_encoder *e, const float *xyz, uint32_t count)
{
    e->focus_count = 0;
    for (uint32_t k = 0; k < count && e->focus_count < TB_SNAP_FOCUS_MAX; k++) {
        const float *p = &xyz[3 * k];
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
            continue;
        memcpy(e->focus[e->focus_count++], p, sizeof e->focus[0]);
    }
}

/* How much faster an item at p gathers priority: where a player touched
 * lately is where that player (and everyone watching) looks (1 with no
 * focus). */
static float focus_gain(const tb_snap_encoder *e, const float *p)
{
    double best = INFINITY;
    for (uint32_t k = 0; k < e->focus_count; k++) {
        double d2 = 0;
        for (int a = 0; a < 3; a++) {
            double d = (double)p[a] - e->focus[k][a];
            d2 += d * d;
        }
        best = d2 < best ? d2 : best;
    }
    if (best == INFINITY)
        return 1.0f;
    double d = sqrt(best), near = TB_SNAP_FOCUS_NEAR;
    double w = d <= near ? 1.0 : d >= 2 * near ? 0.0 : (2 * near - d) / near;
    return (float)(1.0 + TB_SNAP_FOCUS_GAIN * w);
}

tb_snap_budget_stats tb_snap_encoder_budget_stats(const tb_snap_encoder *e)
{
    tb_snap_budget_stats s = e->stats;
    s.pending = e->pending;
    return s;
}

int tb_snap_encoder_copy_baseline(tb_snap_encoder *dst, const tb_snap_encoder *src)
{
    if (!src->have_baseline || dst->max_bodies != src->max_bodies || dst->frame.mesh_count != src->frame.mesh_count)
        return TB_ERR_BAD_VALUE;
    for (uint32_t m = 0; m < src->frame.mesh_count; m++)
        if (dst->frame.mesh_verts[m] != src->frame.mesh_verts[m]) return TB_ERR_BAD_VALUE;
    snap_state *d = &dst->base;
    const snap_state *s = &src->base;
    d->tick = s->tick;
    d->awake = s->awake;
    d->body_count = s->body_count;
    memcpy(d->bodies, s->bodies, s->body_count * sizeof *s->bodies);
    memcpy(d->body_pose, s->body_pose, 7u * s->body_count * sizeof *s->body_pose);
    memcpy(d->prio, s->prio, s->body_count * sizeof *s->prio);
    memcpy(d->age, s->age, s->body_count * sizeof *s->age);
    for (uint32_t m = 0; m < src->frame.mesh_count; m++) {
        size_t n = src->frame.mesh_verts[m];
        memcpy(d->vert_cell[m], s->vert_cell[m], 3 * n * sizeof(int32_t));
        memcpy(d->vert_vel[m], s->vert_vel[m], 3 * n * sizeof(int32_t));
        memcpy(d->vert_input[m], s->vert_input[m], 3 * n * sizeof(float));
        memcpy(d->vert_prio[m], s->vert_prio[m], n * sizeof(float));
        memcpy(d->vert_age[m], s->vert_age[m], n * sizeof(uint16_t));
    }
    dst->have_baseline = true;
    dst->base_still = false;
    dst->have_delta = false;
    dst->key_valid = false;
    dst->pending = src->pending;
    dst->budget_used = dst->budget_used || src->budget_used;
    return TB_OK;
}

/* Bits of v written exp-Golomb of order k. */
static uint32_t eg_bits(uint32_t v, int k)
{
    uint64_t m = (uint64_t)v + (1ull << k);
    int n = 64 - __builtin_clzll(m);
    return (uint32_t)(2 * n - 1 - k);
}

static int item_cmp(const void *pa, const void *pb)
{
    const budget_item *a = pa, *b = pb;
    if (a->forced != b->forced) return a->forced ? -1 : 1;
    if (a->prio != b->prio) return a->prio > b->prio ? -1 : 1;
    if (a->mesh != b->mesh) return a->mesh < b->mesh ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* How far the client's copy of candidate body j (the baseline's cells) is
 * from the truth: metres of position plus the angle times the body's size. */
static float body_error(const tb_snap_encoder *e, uint32_t j, const tb_snap_body *o)
{
    const float *pose = &e->cand.body_pose[7 * j];
    double d2 = 0;
    for (int a = 0; a < 3; a++) {
        double d = tb_proto_dequant_pos(o->pos_cell[a], e->frame.bounds_min[a], TB_PROTO_POS_SCALE) - pose[a];
        d2 += d * d;
    }
    double q[4];
    const double *t = &e->scratch.true_rot[4 * j];
    tb_snap__dequant_rot(o->rot_largest, o->rot_cell, q);
    double dot = fabs(q[0] * t[0] + q[1] * t[1] + q[2] * t[2] + q[3] * t[3]);
    double angle = 2.0 * acos(dot < 1.0 ? dot : 1.0);
    const float *sz = o->shape.size;
    double r = sz[0] > sz[1] ? sz[0] : sz[1];
    r = r > sz[2] ? r : sz[2];
    if (o->shape.kind == TB_SHAPE_CAPSULE) r = sz[0] + sz[1];
    return (float)(sqrt(d2) + angle * r);
}

/* With a budget: the candidate's cells are chosen (every item out of
 * tolerance moved toward the truth). If sending them all would cost more
 * than the credit, rank them by accumulated priority and keep the baseline's
 * cells (velocity 0: what the receiver does with an unlisted item) for those
 * that do not fit. Writes every candidate item's priority and age. */
static void budget_select(tb_snap_encoder *e, int pred, const int *mpred)
{
    snap_scratch *sc = &e->scratch;
    uint32_t n = 0, spawned = 0, kept = 0;
    int kp, kr, kv[TB_PROTO_MAX_MESHES];
    uint32_t mchanged[TB_PROTO_MAX_MESHES];
    delta_orders(e, pred, mpred, &kp, &kr, kv, mchanged);
    uint32_t changed = 0;
    for (uint32_t j = 0; j < e->cand.body_count; j++) {
        e->cand.prio[j] = 0;
        e->cand.age[j] = 0;
        int32_t i = sc->base_index[j];
        if (i < 0) { spawned++; continue; }
        kept++;
        const tb_snap_body *o = &e->base.bodies[i], *b = &e->cand.bodies[j];
        if (body_changed(o, b)) changed++;
    }
    uint32_t gap_bits = eg_bits(changed ? kept / changed : 0, 0);
    for (uint32_t j = 0; j < e->cand.body_count; j++) {
        int32_t i = sc->base_index[j];
        if (i < 0) continue;
        const tb_snap_body *o = &e->base.bodies[i], *b = &e->cand.bodies[j];
        if (!body_changed(o, b)) continue;
        uint32_t cost = gap_bits + 1;
        for (int a = 0; a < 3; a++) cost += eg_bits(tb_zz(b->pos_cell[a] - (o->pos_cell[a] + pred * o->pos_vel[a])), kp);
        if (b->rot_largest == o->rot_largest)
            for (int a = 0; a < 3; a++) cost += eg_bits(tb_zz(b->rot_cell[a] - (o->rot_cell[a] + pred * o->rot_vel[a])), kr);
        else cost += 2 + 3 * TB_PROTO_ROT_BITS;
        uint16_t age = e->base.age[i];
        sc->items[n++] = (budget_item){e->base.prio[i] + focus_gain(e, &e->cand.body_pose[7 * j]) * body_error(e, j, o), cost, -1, j, age + 1u >= e->refresh};
    }
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        uint32_t vgap = eg_bits(mchanged[m] ? e->frame.mesh_verts[m] / mchanged[m] : 0, 0);
        double min = 0;
        for (uint32_t v = 0; v < e->frame.mesh_verts[m]; v++) {
            e->cand.vert_prio[m][v] = 0;
            e->cand.vert_age[m][v] = 0;
            const int32_t *o = &e->base.vert_cell[m][3 * v], *ov = &e->base.vert_vel[m][3 * v], *q = &e->cand.vert_cell[m][3 * v];
            if (o[0] == q[0] && o[1] == q[1] && o[2] == q[2]) continue;
            uint32_t cost = vgap;
            double d2 = 0;
            for (int a = 0; a < 3; a++) {
                cost += eg_bits(tb_zz(q[a] - (o[a] + mpred[m] * ov[a])), kv[m]);
                min = e->frame.bounds_min[a];
                double d = tb_proto_dequant_pos(o[a], min, TB_PROTO_VERT_SCALE) - e->cand.vert_input[m][3 * v + a];
                d2 += d * d;
            }
            uint16_t age = e->base.vert_age[m][v];
            float gain = focus_gain(e, &e->cand.vert_input[m][3 * v]);
            sc->items[n++] = (budget_item){e->base.vert_prio[m][v] + gain * (float)sqrt(d2), cost, (int32_t)m, v, age + 1u >= e->refresh};
        }
    }
    /* what the delta costs anyway: envelope and header, the spawned bodies, the counts */
    uint64_t fixed = 8 * 24 + 5 * e->frame.mesh_count + 120u * spawned;
    uint64_t total = fixed;
    for (uint32_t k = 0; k < n; k++) total += sc->items[k].cost;
    e->pending = 0;
    if ((int64_t)total <= e->credit) return;   /* everything fits: priorities and ages stay 0 */

    qsort(sc->items, n, sizeof *sc->items, item_cmp);
    uint64_t spent = fixed;
    uint32_t deferred = 0;
    for (uint32_t k = 0; k < n; k++) {
        budget_item *it = &sc->items[k];
        /* an item that has waited its refresh may overdraw the credit by one
         * snapshot's budget, no more: the credit never falls below minus one
         * budget, so on average the budget holds even when refreshing
         * everything would cost more (then the longest waiting go first) */
        bool send = (int64_t)(spent + it->cost) <= e->credit + (it->forced ? (int64_t)e->budget_bits : 0);
        if (send) {
            spent += it->cost;
            if (it->forced) e->stats.items_forced++;
            continue;
        }
        deferred++;
        if (it->mesh < 0) {
            uint32_t j = it->index;
            int32_t i = sc->base_index[j];
            const tb_snap_body *o = &e->base.bodies[i];
            tb_snap_body *b = &e->cand.bodies[j];
            hold_baseline(b, o);
            e->cand.prio[j] = it->prio;
            e->cand.age[j] = (uint16_t)(e->base.age[i] < 60000 ? e->base.age[i] + 1 : 60000);
            if (e->cand.age[j] > e->stats.max_age) e->stats.max_age = e->cand.age[j];
        } else {
            uint32_t m = (uint32_t)it->mesh, v = it->index;
            for (int a = 0; a < 3; a++) {
                e->cand.vert_cell[m][3 * v + a] = e->base.vert_cell[m][3 * v + a];
                e->cand.vert_vel[m][3 * v + a] = 0;
            }
            e->cand.vert_prio[m][v] = it->prio;
            e->cand.vert_age[m][v] = (uint16_t)(e->base.vert_age[m][v] < 60000 ? e->base.vert_age[m][v] + 1 : 60000);
            if (e->cand.vert_age[m][v] > e->stats.max_age) e->stats.max_age = e->cand.vert_age[m][v];
        }
    }
    e->pending = deferred;
    if (deferred) {
        e->stats.cut_steps++;
        e->stats.items_deferred += deferred;
    }
}

/* No budget: nothing waits. An encoder that never had one keeps its
 * priorities and ages at 0 from the start (the snapshot path of every
 * unbudgeted room pays nothing for budgets). */
static void budget_clear(tb_snap_encoder *e)
{
    e->pending = 0;
    if (!e->budget_used)
        return;
    memset(e->cand.prio, 0, e->cand.body_count * sizeof *e->cand.prio);
    memset(e->cand.age, 0, e->cand.body_count * sizeof *e->cand.age);
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        memset(e->cand.vert_prio[m], 0, e->frame.mesh_verts[m] * sizeof(float));
        memset(e->cand.vert_age[m], 0, e->frame.mesh_verts[m] * sizeof(uint16_t));
    }
    e->pending = 0;
}

int tb_snap_encoder_step(tb_snap_encoder *e, const tb_snap_input *in, tb_proto_err *err)
{
    if (!e->idle_path_off && e->pending == 0 && same_input(e, in)) {   /* ids and shapes as validated before: valid */
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
        while (i < e->base.body_count && e->base.bodies[i].id < b->id) i++;
        bool kept = e->have_baseline && i < e->base.body_count && e->base.bodies[i].id == b->id && tb_snap__shape_eq(&e->base.bodies[i].shape, &b->shape);
        e->scratch.base_index[k] = kept ? (int32_t)i : -1;
        tb_snap_body *near = &e->scratch.nearest[k];
        float *pose = &e->cand.body_pose[7 * k];
        memcpy(pose, b->pos, 3 * sizeof(float));
        memcpy(pose + 3, b->rot, 4 * sizeof(float));
        if (kept && e->base.age[i] == 0 && memcmp(pose, &e->base.body_pose[7 * i], 7 * sizeof(float)) == 0) {
            /* bit-identical input (a sleeping body): the baseline stands, nothing to compute */
            *near = e->base.bodies[i];
            for (int a = 0; a < 3; a++) { near->pos_vel[a] = 0; near->rot_vel[a] = 0; e->scratch.pos_lo[3 * k + a] = e->scratch.pos_hi[3 * k + a] = near->pos_cell[a]; }
            e->scratch.base_fits[k] = FITS_POS | FITS_ROT;
            continue;
        }
        double n2 = 0;
        for (int c = 0; c < 4; c++) n2 += (double)b->rot[c] * b->rot[c];
        double *t = &e->scratch.true_rot[4 * k], *tp = &e->scratch.true_rot_tp[4 * k];
        bool t_known = isfinite(n2) && n2 > 1e-24, rot_known = false, rot_ok = false;
        if (t_known) for (int c = 0; c < 4; c++) t[c] = b->rot[c] / sqrt(n2);
        if (kept && t_known) {
            const tb_snap_body *o = &e->base.bodies[i];
            rot_target(o->rot_largest, t, tp);
            rot_ok = rot_within(e, o->rot_largest, o->rot_cell, t, tp);
            rot_known = true;
            if (rot_ok && pos_surely_within(e, b->pos, o->pos_cell)) {
                /* the baseline is within tolerance (what the lines below would find): it is not
                 * sent, and choose_bodies() reads no more of this body than its id and shape */
                near->id = b->id;
                near->shape = b->shape;
                e->scratch.base_fits[k] = FITS_POS | FITS_ROT;
                continue;
            }
        }
        quantize_body(e, b, n2, kept ? &e->base.bodies[i] : NULL, near);
        for (int a = 0; a < 3; a++)
            cell_range(b->pos[a], e->frame.bounds_min[a], TB_PROTO_POS_SCALE, e->grid.pmax[a], e->tol_pos, near->pos_cell[a],
                       &e->scratch.pos_lo[3 * k + a], &e->scratch.pos_hi[3 * k + a]);
        if (!t_known) tb_snap__dequant_rot(near->rot_largest, near->rot_cell, t);     /* degenerate input: what we send */
        /* is the baseline still good enough? (the same for both predictors) */
        e->scratch.base_fits[k] = 0;
        if (kept) {
            const tb_snap_body *o = &e->base.bodies[i];
            bool pos_ok = true;
            for (int a = 0; a < 3; a++) pos_ok = pos_ok && o->pos_cell[a] >= e->scratch.pos_lo[3 * k + a] && o->pos_cell[a] <= e->scratch.pos_hi[3 * k + a];
            if (!rot_known) {
                rot_target(o->rot_largest, t, tp);
                rot_ok = rot_within(e, o->rot_largest, o->rot_cell, t, tp);
            }
            e->scratch.base_fits[k] = (uint8_t)((pos_ok ? FITS_POS : 0) | (rot_ok ? FITS_ROT : 0));
        }
    }
    e->cand.body_count = in->body_count;
    for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
        for (uint32_t v = 0; v < 3 * e->frame.mesh_verts[m]; v++) {
            int a = (int)(v % 3);
            float p = in->verts[m][v];
            int32_t q = (!isfinite(p) && e->have_baseline) ? e->base.vert_cell[m][v]
                      : tb_snap__quant_pos(p, e->frame.bounds_min[a], e->grid.vmax[a], TB_PROTO_VERT_SCALE);
            cell_range(p, e->frame.bounds_min[a], TB_PROTO_VERT_SCALE, e->grid.vmax[a], e->tol_vert, q, &e->scratch.vert_lo[m][v], &e->scratch.vert_hi[m][v]);
            e->cand.vert_cell[m][v] = q;
            e->cand.vert_vel[m][v] = 0;
        }
        if (e->frame.mesh_verts[m]) memcpy(e->cand.vert_input[m], in->verts[m], 3u * e->frame.mesh_verts[m] * sizeof(float));
    }
    e->cand.tick = in->tick;
    e->cand.awake = in->awake;
    e->have_delta = false;
    if (e->have_baseline) {
        /* choose cells for both predictors, keep the cheaper (per channel) */
        tb_snap_body *out[2] = {e->cand.bodies, e->scratch.other_bodies};
        uint64_t cost[2];
        choose_bodies(e, out, cost);
        int pred = 0;
        if (cost[1] < cost[0]) {
            tb_snap_body *won = e->scratch.other_bodies;
            e->scratch.other_bodies = e->cand.bodies;
            e->cand.bodies = won;
            pred = 1;
        }
        int mpred[TB_PROTO_MAX_MESHES] = {0};
        for (uint32_t m = 0; m < e->frame.mesh_count; m++) {
            size_t n = 3u * e->frame.mesh_verts[m] * sizeof(int32_t);
            uint64_t c1 = choose_mesh(e, m, 1);
            memcpy(e->scratch.other_vert_cell, e->cand.vert_cell[m], n);
            memcpy(e->scratch.other_vert_vel, e->cand.vert_vel[m], n);
            if (c1 < choose_mesh(e, m, 0)) { memcpy(e->cand.vert_cell[m], e->scratch.other_vert_cell, n); memcpy(e->cand.vert_vel[m], e->scratch.other_vert_vel, n); mpred[m] = 1; }
        }
        if (e->budget_bits) {
            int64_t cap = 2 * (int64_t)e->budget_bits;
            e->credit = e->credit + e->budget_bits > cap ? cap : e->credit + e->budget_bits;
            budget_select(e, pred, mpred);
        } else {
            budget_clear(e);
        }
        /* without a budget the candidate is what choose_bodies() chose: its orders stand when exact */
        bool orders_known = !e->budget_bits && e->scratch.body_k_exact[pred];
        int rc = encode_delta(e, pred, mpred, orders_known ? e->scratch.body_k[pred] : NULL);
        if (rc) return tb_proto__fail(err, rc, "delta encoding overflow");
        if (e->budget_bits) e->credit -= 8 * (int64_t)(e->delta_blob.tail_len + 8);
        e->have_delta = true;
    } else {
        for (uint32_t k = 0; k < e->cand.body_count; k++) e->cand.bodies[k] = e->scratch.nearest[k];
        budget_clear(e);
    }
    /* the candidate becomes the baseline; the old baseline's arrays hold the next candidate */
    snap_state old = e->base;
    e->base = e->cand;
    e->cand = old;
    e->have_baseline = true;
    e->base_still = false;
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
