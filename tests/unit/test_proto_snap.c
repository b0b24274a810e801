/* test_proto_snap.c: snapshot quantization and delta coding (proto/c/tb_snap_*.c).
 *
 * The bounds the protocol promises (PROTOCOL.md "Quantization"), checked over
 * many random poses, and the delta law: applying every delta to the baseline
 * gives exactly the state a keyframe gives, for any mix of moving, resting,
 * spawned and removed bodies and moving meshes. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tb_proto.h"
#include "tb_proto_internal.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void)   /* [0, 1) */
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double rnd_range(double a, double b) { return a + (b - a) * rnd(); }

static void random_quat(float q[4])
{
    /* uniform on S3 (Shoemake) */
    double u1 = rnd(), u2 = rnd() * 2 * 3.141592653589793, u3 = rnd() * 2 * 3.141592653589793;
    q[0] = (float)(sqrt(1 - u1) * sin(u2)); q[1] = (float)(sqrt(1 - u1) * cos(u2));
    q[2] = (float)(sqrt(u1) * sin(u3));     q[3] = (float)(sqrt(u1) * cos(u3));
}

static double angle_deg(const float a[4], const double b[4])
{
    double na = sqrt((double)a[0] * a[0] + (double)a[1] * a[1] + (double)a[2] * a[2] + (double)a[3] * a[3]);
    double d = fabs((a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]) / na);
    if (d > 1) d = 1;
    return 2 * acos(d) * 180.0 / 3.141592653589793;
}

static const tb_proto_frame room = {{-8, -1, -8}, {8, 15, 8}, 0, {0}};

static void rigid_positions_stay_within_half_a_millimetre(void **s)
{
    (void)s;
    double worst = 0;
    for (int i = 0; i < 200000; i++) {
        for (int a = 0; a < 3; a++) {
            int32_t gmax = tb_proto_grid_max(room.bounds_min[a], room.bounds_max[a], TB_PROTO_POS_SCALE);
            float p = (float)rnd_range(room.bounds_min[a], room.bounds_max[a]);
            int32_t q = tb_proto_quant_pos(p, room.bounds_min[a], gmax, TB_PROTO_POS_SCALE);
            float back = (float)tb_proto_dequant_pos(q, room.bounds_min[a], TB_PROTO_POS_SCALE);
            double e = fabs((double)back - (double)p);
            if (e > worst) worst = e;
        }
    }
    print_message("worst rigid position error %.4f mm\n", worst * 1000);
    assert_true(worst <= 0.0005);
}

static void vertices_stay_within_one_millimetre(void **s)
{
    (void)s;
    double worst = 0;
    for (int i = 0; i < 200000; i++) {
        int a = i % 3;
        int32_t gmax = tb_proto_grid_max(room.bounds_min[a], room.bounds_max[a], TB_PROTO_VERT_SCALE);
        float p = (float)rnd_range(room.bounds_min[a], room.bounds_max[a]);
        int32_t q = tb_proto_quant_pos(p, room.bounds_min[a], gmax, TB_PROTO_VERT_SCALE);
        double e = fabs(tb_proto_dequant_pos(q, room.bounds_min[a], TB_PROTO_VERT_SCALE) - (double)p);
        if (e > worst) worst = e;
    }
    print_message("worst vertex error %.4f mm\n", worst * 1000);
    assert_true(worst <= 0.001);
}

static void orientations_stay_within_a_tenth_of_a_degree(void **s)
{
    (void)s;
    double worst = 0;
    for (int i = 0; i < 400000; i++) {
        float q[4];
        if (i % 4 == 0) {
            /* the worst region: all four components near 1/2 */
            for (int k = 0; k < 4; k++) q[k] = (float)(0.5 + rnd_range(-0.01, 0.01)) * (rnd() < 0.5 ? -1.0f : 1.0f);
        } else if (i % 4 == 1) {
            /* near a tie between the two largest components */
            double a = rnd_range(0.6, 0.7071);
            q[0] = (float)a; q[1] = (float)(a + rnd_range(-1e-4, 1e-4)); q[2] = (float)rnd_range(-0.1, 0.1); q[3] = (float)rnd_range(-0.1, 0.1);
        } else {
            random_quat(q);
        }
        int idx;
        int32_t c[3];
        double back[4];
        tb_proto_quant_rot(q, &idx, c);
        tb_proto_dequant_rot(idx, c, back);
        double e = angle_deg(q, back);
        if (e > worst) worst = e;
    }
    print_message("worst orientation error %.4f degrees\n", worst);
    assert_true(worst <= 0.1);
}

static void degenerate_quaternions_become_identity(void **s)
{
    (void)s;
    float zero[4] = {0, 0, 0, 0}, nan4[4] = {NAN, 0, 0, 1};
    int idx; int32_t c[3]; double q[4];
    tb_proto_quant_rot(zero, &idx, c);
    tb_proto_dequant_rot(idx, c, q);
    assert_true(fabs(q[3]) > 0.9999);
    tb_proto_quant_rot(nan4, &idx, c);
    tb_proto_dequant_rot(idx, c, q);
    assert_true(isfinite(q[0]) && fabs(q[3]) > 0.9999);
}

/* The quantizers as PROTOCOL.md states them, with floor(): the codec's
 * (written without it, for speed) must give the same cells for every input. */
static int32_t floor_quant_pos(double p, double min, int32_t grid_max, int scale)
{
    double q = floor((p - min) * (double)scale + 0.5);
    if (!(q > 0.0)) return 0;
    if (q >= (double)grid_max) return grid_max;
    return (int32_t)q;
}

static void floor_quant_rot(const float qf[4], int *index, int32_t c[3])
{
    double q[4], n = 0.0;
    for (int i = 0; i < 4; i++) { q[i] = qf[i]; n += q[i] * q[i]; }
    n = sqrt(n);
    if (!isfinite(n) || n < 1e-12) { q[0] = q[1] = q[2] = 0.0; q[3] = 1.0; n = 1.0; }
    int big = 0;
    for (int i = 1; i < 4; i++)
        if (fabs(q[i]) > fabs(q[big])) big = i;
    double sign = q[big] < 0.0 ? -1.0 : 1.0;
    for (int i = 0, j = 0; i < 4; i++) {
        if (i == big) continue;
        double v = q[i] * sign / n;
        double cq = 2047.0 + floor(v * (2047.0 / 0.7071067811865476) + 0.5);
        if (!(cq > 0.0)) cq = 0.0;
        if (cq > 4094.0) cq = 4094.0;
        c[j++] = (int32_t)cq;
    }
    *index = big;
}

/* Random values, values on and next to cell edges (x + 0.5 whole), beyond
 * the grid, infinities and NaN. */
static void the_quantizers_give_the_floor_definitions_cells(void **s)
{
    (void)s;
    uint64_t saved = rng_state;   /* the tests after this one see the stream they always saw */
    const double min = -8.0;
    const int32_t gmax = 32768;
    const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30, 3e38, -3e38, 1e-300};
    int edges = 0;
    for (int trial = 0; trial < 200000; trial++) {
        double p;
        if (trial < 10) p = special[trial];
        else if (trial % 3 == 0) {   /* a cell edge, or one ulp either side */
            static const double ends[] = {-1, 0, 1, 2, gmax - 1, gmax, gmax + 1};
            double x = (rnd() < 0.25 ? ends[(int)(rnd() * 7)] : floor(rnd_range(-5, gmax + 5))) - 0.5;
            p = min + x / 2048.0;
            int side = trial % 9 / 3;
            if (side == 1) p = nextafter(p, INFINITY);
            if (side == 2) p = nextafter(p, -INFINITY);
            edges += (p - min) * 2048.0 + 0.5 == floor((p - min) * 2048.0 + 0.5);
        } else p = (double)(float)rnd_range(-20, 20);
        assert_int_equal(tb_proto_quant_pos(p, min, gmax, 2048), floor_quant_pos(p, min, gmax, 2048));
        assert_int_equal(tb_proto_quant_pos(p, min, 1, 1024), floor_quant_pos(p, min, 1, 1024));
    }
    for (int trial = 0; trial < 200000; trial++) {   /* the floor the rotation quantizer uses */
        double y = trial < 4 ? special[trial] : trial % 2 ? floor(rnd_range(-3e9, 3e9)) * (trial % 4 == 1 ? 1.0 : 0.5)
                                              : rnd_range(-5000, 5000);
        if (trial % 3 == 1) y = nextafter(y, trial % 6 == 1 ? INFINITY : -INFINITY);
        double a = tb_snap__floor(y), b = floor(y);
        assert_true(a == b || (isnan(a) && isnan(b)));
    }
    for (int trial = 0; trial < 200000; trial++) {
        float q[4];
        if (trial % 4 == 0) {   /* a component on a cell edge of the unit quaternion */
            double c = (floor(rnd_range(-2047, 2047)) + 0.5) * (0.7071067811865476 / 2047.0);
            double r = sqrt(1.0 - c * c) / sqrt(3.0);
            q[0] = (float)c; q[1] = (float)r; q[2] = (float)-r; q[3] = (float)r;
        } else if (trial % 4 == 1) {
            for (int k = 0; k < 4; k++) q[k] = (float)(rnd() < 0.3 ? 0.0 : rnd() < 0.5 ? -0.0 : rnd_range(-1, 1));
            if (rnd() < 0.1) q[(int)(rnd() * 4)] = rnd() < 0.5 ? NAN : INFINITY;
        } else random_quat(q);
        int ia, ib;
        int32_t ca[3], cb[3];
        tb_proto_quant_rot(q, &ia, ca);
        floor_quant_rot(q, &ib, cb);
        assert_int_equal(ia, ib);
        assert_memory_equal(ca, cb, sizeof ca);
    }
    rng_state = saved;
    assert_true(edges > 1000);
}

/* ---- a small changing world --------------------------------------------------- */

#define MAXB 64
#define NV 150
typedef struct world {
    tb_proto_body bodies[MAXB];
    uint32_t n;
    float verts[2][NV * 3];
    float vel[MAXB][3];
} world;

static void world_init(world *w, uint32_t n)
{
    memset(w, 0, sizeof *w);
    for (uint32_t i = 0; i < n; i++) {
        tb_proto_body *b = &w->bodies[i];
        b->id = (uint16_t)(i * 3 + 1);
        b->shape = (tb_proto_shape){TB_SHAPE_BOX, 1, 0x8b5a2b, {0.5f, 0.1f, 0.2f}};
        for (int a = 0; a < 3; a++) b->pos[a] = (float)rnd_range(-2, 2);
        b->pos[1] += 5;
        random_quat(b->rot);
    }
    w->n = n;
    for (int m = 0; m < 2; m++)
        for (int v = 0; v < NV * 3; v++) w->verts[m][v] = (float)rnd_range(-1, 1) + (v % 3 == 1 ? 3.0f : 0.0f);
}

static void world_step(world *w, int t)
{
    for (uint32_t i = 0; i < w->n; i++) {
        tb_proto_body *b = &w->bodies[i];
        if ((i + (uint32_t)t / 30) % 3 == 0) continue;             /* a third at rest at any time */
        w->vel[i][1] -= 9.81f / 60.0f;
        for (int a = 0; a < 3; a++) b->pos[a] += w->vel[i][a] / 60.0f;
        if (b->pos[1] < 0) { b->pos[1] = 0; w->vel[i][1] = -0.5f * w->vel[i][1]; }
        float dq = 0.02f;                                           /* spin about x */
        float x = b->rot[0], y = b->rot[1], z = b->rot[2], ww = b->rot[3];
        float c = cosf(dq), sn = sinf(dq);
        b->rot[0] = c * x + sn * ww; b->rot[1] = c * y + sn * z; b->rot[2] = c * z - sn * y; b->rot[3] = c * ww - sn * x;
    }
    if (t % 17 == 5 && w->n < MAXB) {                               /* spawn a ball with a new id */
        tb_proto_body *b = &w->bodies[w->n++];
        b->id = (uint16_t)(1000 + t);
        b->shape = (tb_proto_shape){TB_SHAPE_SPHERE, 2, 0xff3030, {0.3f, 0, 0}};
        b->pos[0] = 0; b->pos[1] = 6; b->pos[2] = 0;
        b->rot[0] = b->rot[1] = b->rot[2] = 0; b->rot[3] = 1;
    }
    if (t % 23 == 11 && w->n > 4) {                                 /* remove body 2 */
        memmove(&w->bodies[2], &w->bodies[3], (w->n - 3) * sizeof w->bodies[0]);
        memmove(&w->vel[2], &w->vel[3], (w->n - 3) * sizeof w->vel[0]);
        w->n--;
    }
    for (int m = 0; m < 2; m++)
        for (int v = 0; v < NV; v++) {
            if (m == 1 && t % 40 > 20) break;                        /* second mesh rests sometimes */
            if (v < 10) continue;                                    /* pinned */
            w->verts[m][3 * v + 0] += 0.01f * sinf(0.1f * (float)t + (float)v);
            w->verts[m][3 * v + 1] += 0.004f * cosf(0.13f * (float)t + (float)v);
        }
}

static tb_snap_input world_input(const world *w, uint32_t tick)
{
    tb_snap_input in = {.tick = tick, .awake = w->n, .bodies = w->bodies, .body_count = w->n};
    in.verts[0] = w->verts[0];
    in.verts[1] = w->verts[1];
    return in;
}

static void assert_same_state(const tb_snap_decoder *a, const tb_snap_decoder *b)
{
    assert_int_equal(tb_snap_decoder_tick(a), tb_snap_decoder_tick(b));
    assert_int_equal(tb_snap_decoder_body_count(a), tb_snap_decoder_body_count(b));
    for (uint32_t i = 0; i < tb_snap_decoder_body_count(a); i++) {
        int32_t qa[3], ca[3], va[3], ra[3], qb[3], cb[3], vb[3], rb[3];
        int ia, ib;
        tb_snap_decoder_body_q(a, i, qa, &ia, ca, va, ra);
        tb_snap_decoder_body_q(b, i, qb, &ib, cb, vb, rb);
        assert_memory_equal(qa, qb, sizeof qa);
        assert_int_equal(ia, ib);
        assert_memory_equal(ca, cb, sizeof ca);
        assert_memory_equal(va, vb, sizeof va);
        assert_memory_equal(ra, rb, sizeof ra);
        tb_proto_body ba, bb;
        tb_snap_decoder_body(a, i, &ba);
        tb_snap_decoder_body(b, i, &bb);
        assert_int_equal(ba.id, bb.id);
    }
    for (uint32_t m = 0; m < tb_snap_decoder_frame(a)->mesh_count; m++) {
        const int32_t *va, *vb;
        const int32_t *qa = tb_snap_decoder_verts_q(a, m, &va), *qb = tb_snap_decoder_verts_q(b, m, &vb);
        size_t n = 3u * tb_snap_decoder_frame(a)->mesh_verts[m] * sizeof(int32_t);
        assert_memory_equal(qa, qb, n);
        assert_memory_equal(va, vb, n);
    }
}

/* Makes a WELCOME-free decoder start: a keyframe needs the frame, given by a SCENE message. */
static void prime_decoder(tb_snap_decoder *d, const tb_proto_frame *fr, const tb_snap_blob *key)
{
    static tb_proto_welcome w;
    memset(&w, 0, sizeof w);
    strcpy(w.kind, "rigid"); strcpy(w.scene, "test");
    for (int a = 0; a < 3; a++) { w.st.bounds_min[a] = fr->bounds_min[a]; w.st.bounds_max[a] = fr->bounds_max[a]; }
    w.st.mesh_count = fr->mesh_count;
    for (uint32_t m = 0; m < fr->mesh_count; m++) { strcpy(w.st.meshes[m].kind, "cloth"); w.st.meshes[m].verts = fr->mesh_verts[m]; }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    assert_int_equal(tb_proto_encode_scene(&sb, &w, key), TB_OK);
    tb_proto_err err;
    int rc = tb_snap_decoder_apply(d, (const uint8_t *)sb.data, sb.size, &err);
    if (rc) print_message("prime: %s\n", err.msg);
    assert_int_equal(rc, TB_OK);
    msgpack_sbuffer_destroy(&sb);
}

static int apply_blob(tb_snap_decoder *d, const tb_snap_blob *b, uint32_t seq, size_t *bytes)
{
    static uint8_t buf[1 << 20];
    size_t n = tb_snap_write(buf, sizeof buf, b, seq);
    assert_true(n > 0);
    if (bytes) *bytes = n;
    tb_proto_err err;
    int rc = tb_snap_decoder_apply(d, buf, n, &err);
    if (rc) print_message("apply: %s\n", err.msg);
    return rc;
}

static void deltas_applied_in_order_equal_the_keyframe(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 24);
    tb_proto_frame fr = room;
    fr.mesh_count = 2; fr.mesh_verts[0] = NV; fr.mesh_verts[1] = NV;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *stream = tb_snap_decoder_create(MAXB), *fresh = tb_snap_decoder_create(MAXB);
    assert_non_null(enc); assert_non_null(stream); assert_non_null(fresh);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 100);
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
    assert_null(tb_snap_encoder_delta(enc));
    prime_decoder(stream, &fr, tb_snap_encoder_key(enc));
    prime_decoder(fresh, &fr, tb_snap_encoder_key(enc));
    for (int t = 1; t <= 300; t++) {
        world_step(&w, t);
        in = world_input(&w, 100 + 2 * (uint32_t)t);
        assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
        const tb_snap_blob *d = tb_snap_encoder_delta(enc);
        assert_non_null(d);
        assert_int_equal(d->base_tick, 100 + 2 * (uint32_t)(t - 1));
        assert_int_equal(apply_blob(stream, d, (uint32_t)t, NULL), TB_OK);
        assert_int_equal(apply_blob(fresh, tb_snap_encoder_key(enc), (uint32_t)t, NULL), TB_OK);
        assert_same_state(stream, fresh);
        assert_int_equal(tb_snap_decoder_last_seq(stream), (uint32_t)t);
        /* and the decoded poses are the inputs within the bounds */
        assert_int_equal(tb_snap_decoder_body_count(stream), w.n);
        for (uint32_t i = 0; i < w.n; i++) {
            tb_proto_body b;
            tb_snap_decoder_body(stream, i, &b);
            assert_int_equal(b.id, w.bodies[i].id);
            for (int a = 0; a < 3; a++) assert_true(fabsf(b.pos[a] - w.bodies[i].pos[a]) <= 0.0005f);
            double q[4] = {b.rot[0], b.rot[1], b.rot[2], b.rot[3]};
            assert_true(angle_deg(w.bodies[i].rot, q) <= 0.1);
        }
        static float verts[NV * 3];
        assert_int_equal(tb_snap_decoder_verts(stream, 0, verts, NV), NV);
        for (int v = 0; v < NV * 3; v++) assert_true(fabsf(verts[v] - w.verts[0][v]) <= 0.001f);
    }
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(stream);
    tb_snap_decoder_destroy(fresh);
}

/* Without meshes, a delta with no spawns and no removals is applied in place
 * (tb_snap_decoder.c): the same state, last changes included, as the general
 * path and as the keyframe, across spawns and removals (general path) in
 * between; a corrupted one of them leaves the baseline untouched. */
static void deltas_applied_in_place_equal_the_general_path_and_the_keyframe(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 24);
    tb_proto_frame fr = room;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *in_place = tb_snap_decoder_create(MAXB), *general = tb_snap_decoder_create(MAXB),
                    *fresh = tb_snap_decoder_create(MAXB);
    assert_non_null(enc); assert_non_null(in_place); assert_non_null(general); assert_non_null(fresh);
    tb_snap__decoder_in_place(general, false);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 100);
    in.verts[0] = in.verts[1] = NULL;
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
    prime_decoder(in_place, &fr, tb_snap_encoder_key(enc));
    prime_decoder(general, &fr, tb_snap_encoder_key(enc));
    prime_decoder(fresh, &fr, tb_snap_encoder_key(enc));
    static uint8_t buf[1 << 16], bad[1 << 16];
    int plain = 0, refused = 0;
    for (int t = 1; t <= 300; t++) {
        uint32_t before = w.n;
        world_step(&w, t);
        /* bodies at rest for a while, then all moving: the in-place path clears
         * last changes both of the few and of the many */
        if (t % 40 >= 30) for (uint32_t i = 0; i < w.n; i++) w.bodies[i].pos[0] += 0.01f;
        in = world_input(&w, 100 + 2 * (uint32_t)t);
        in.verts[0] = in.verts[1] = NULL;
        assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
        const tb_snap_blob *d = tb_snap_encoder_delta(enc);
        assert_non_null(d);
        size_t n = tb_snap_write(buf, sizeof buf, d, (uint32_t)t);
        plain += w.n == before && t % 23 != 11;
        bool resynced = false;
        if (t % 10 == 3) { /* corrupted first: refused ones must not touch the baseline */
            for (int trial = 0; trial < 50 && !resynced; trial++) {
                memcpy(bad, buf, n);
                size_t len = trial % 3 == 0 ? (size_t)(rnd() * (double)n) : n;
                if (trial % 3) bad[(size_t)(rnd() * (double)n)] ^= (uint8_t)(1u << (int)(rnd() * 8));
                if (tb_snap_decoder_apply(in_place, bad, len, &err) == TB_OK) {
                    /* a flip the checks cannot see (a different but valid state): resync */
                    assert_int_equal(apply_blob(in_place, tb_snap_encoder_key(enc), (uint32_t)t, NULL), TB_OK);
                    assert_int_equal(apply_blob(general, tb_snap_encoder_key(enc), (uint32_t)t, NULL), TB_OK);
                    resynced = true;
                    break;
                }
                refused++;
                assert_same_state(in_place, general);
            }
        }
        if (!resynced) {
            assert_int_equal(tb_snap_decoder_apply(in_place, buf, n, &err), TB_OK);
            assert_int_equal(tb_snap_decoder_apply(general, buf, n, &err), TB_OK);
        }
        assert_int_equal(apply_blob(fresh, tb_snap_encoder_key(enc), (uint32_t)t, NULL), TB_OK);
        assert_same_state(in_place, general);
        assert_same_state(in_place, fresh);
        assert_int_equal(tb_snap_decoder_last_seq(in_place), tb_snap_decoder_last_seq(general));
    }
    print_message("%d deltas without spawns or removals, %d corrupted ones refused\n", plain, refused);
    assert_true(plain > 250 && refused > 100);
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(in_place);
    tb_snap_decoder_destroy(general);
    tb_snap_decoder_destroy(fresh);
}

/* The writer as first written (a byte at a time), the reference for the
 * windowed writer tb_bitf and the source of the reader tests' streams. */
typedef struct tb_bitw { uint8_t *buf; size_t cap, bit; int overflow; } tb_bitw;

static void tb_bitw_put(tb_bitw *w, uint32_t v, int n) /* n <= 32 */
{
    while (n > 0) {
        size_t byte = w->bit >> 3;
        if (byte >= w->cap) { w->overflow = 1; return; }
        int used = (int)(w->bit & 7), room = 8 - used, take = n < room ? n : room;
        if (used == 0) w->buf[byte] = 0;
        uint32_t chunk = (v >> (n - take)) & ((1u << take) - 1u);
        w->buf[byte] |= (uint8_t)(chunk << (room - take));
        w->bit += (size_t)take;
        n -= take;
    }
}

/* Exp-Golomb order k of v >= 0: m = v + 2^k has n bits; n-1-k zeros, then m in n bits. */
static void tb_bitw_eg(tb_bitw *w, uint32_t v, int k)
{
    uint64_t m = (uint64_t)v + (1ull << k);
    int n = 0;
    while (n < 40 && (m >> n)) n++;
    tb_bitw_put(w, 0, n - 1 - k);
    if (n > 32) { tb_bitw_put(w, (uint32_t)(m >> 32), n - 32); tb_bitw_put(w, (uint32_t)m, 32); }
    else tb_bitw_put(w, (uint32_t)m, n);
}

/* The reader as first written (a bit or a byte at a time), the reference
 * for the word-at-a-time tb_bitr_get / tb_bitr_eg. */
static uint32_t ref_get(tb_bitr *r, int n)
{
    uint32_t v = 0;
    if (r->error) return 0;
    if ((r->len * 8 - r->bit) < (size_t)n) { r->error = 1; return 0; }
    while (n > 0) {
        int used = (int)(r->bit & 7), room = 8 - used, take = n < room ? n : room;
        uint32_t byte = r->buf[r->bit >> 3];
        v = (v << take) | ((byte >> (room - take)) & ((1u << take) - 1u));
        r->bit += (size_t)take;
        n -= take;
    }
    return v;
}

static uint32_t ref_eg(tb_bitr *r, int k)
{
    int zeros = 0;
    while (!r->error) {
        if (r->bit >= r->len * 8) { r->error = 1; return 0; }
        if ((r->buf[r->bit >> 3] >> (7 - (r->bit & 7))) & 1u) break;
        r->bit++;
        if (++zeros + k + 1 > 28) { r->error = 1; return 0; }
    }
    if (r->error) return 0;
    return ref_get(r, zeros + k + 1) - (1u << k);
}

/* Random streams (written codes, then random bytes and cuts): every read gives
 * the reference's value and error, and the same position while there is no error. */
static void the_bit_reader_reads_what_the_reference_reads(void **s)
{
    (void)s;
    static uint8_t buf[64];
    int reads = 0, errors = 0;
    for (int trial = 0; trial < 20000; trial++) {
        size_t len = (size_t)(rnd() * 40);
        if (trial % 2) {
            tb_bitw w = {buf, sizeof buf, 0, 0};
            while (w.bit < len * 8 + 8 && !w.overflow) {
                if (rnd() < 0.5) tb_bitw_eg(&w, (uint32_t)(rnd() * (rnd() < 0.1 ? 1e8 : 300)), (int)(rnd() * 16));
                else tb_bitw_put(&w, (uint32_t)(rnd() * 4294967296.0), 1 + (int)(rnd() * 32));
            }
        } else {
            for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(rnd() < 0.3 ? 0 : rnd() * 256);
        }
        tb_bitr a = {buf, len, 0, 0}, b = {buf, len, 0, 0};
        while (!a.error) {
            uint32_t va, vb;
            if (rnd() < 0.5) {
                int k = (int)(rnd() * 16);
                va = tb_bitr_eg(&a, k); vb = ref_eg(&b, k);
            } else {
                int n = (int)(rnd() * 33);
                va = tb_bitr_get(&a, n); vb = ref_get(&b, n);
            }
            reads++;
            assert_int_equal(a.error, b.error);
            assert_int_equal(va, vb);
            if (!a.error) assert_int_equal(a.bit, b.bit);
        }
        errors++;
    }
    print_message("%d reads, %d streams read to their error\n", reads, errors);
}

/* Random codes (any width 0..32, exp-Golomb of any order 0..31 up to 2^32 - 1)
 * into buffers of random size: the windowed writer gives the reference's
 * bytes, bit count and overflow. */
static void the_fast_bit_writer_writes_what_the_reference_writes(void **s)
{
    (void)s;
    uint64_t saved = rng_state;   /* the tests after this one see the stream they always saw */
    static uint8_t ref[64], fast[64];
    int overflows = 0;
    for (int trial = 0; trial < 20000; trial++) {
        size_t cap = 1 + (size_t)(rnd() * 63);
        memset(ref, 0xa5, sizeof ref);
        memset(fast, 0x5a, sizeof fast);
        tb_bitw r = {ref, cap, 0, 0};
        tb_bitf f = tb_bitf_init(fast, cap);
        int codes = (int)(rnd() * 30);
        for (int c = 0; c < codes; c++) {
            double u = rnd();
            if (u < 0.4) {
                int n = (int)(rnd() * 33);
                uint32_t v = (uint32_t)(rnd() * 4294967296.0);
                tb_bitw_put(&r, v, n);
                tb_bitf_put(&f, v, n);
            } else {
                int k = rnd() < 0.8 ? (int)(rnd() * 16) : (int)(rnd() * 32);
                double range = u < 0.8 ? 8 : u < 0.95 ? 1e5 : 4294967296.0;
                uint32_t v = (uint32_t)(rnd() * range);
                tb_bitw_eg(&r, v, k);
                tb_bitf_eg(&f, v, k);
            }
        }
        size_t bits = tb_bitf_end(&f), ref_bits = r.bit;
        if (r.bit & 7) tb_bitw_put(&r, 0, (int)(8 - (r.bit & 7)));
        assert_int_equal(f.overflow, r.overflow);
        overflows += r.overflow;
        if (!r.overflow) assert_int_equal(bits, ref_bits);
        size_t n = (r.bit + 7) / 8;   /* overflowed: the reference stops at cap */
        assert_memory_equal(fast, ref, n < cap ? n : cap);
    }
    rng_state = saved;
    print_message("%d of 20000 streams overflowed\n", overflows);
    assert_true(overflows > 1000 && overflows < 19000);
}

static void a_client_that_skipped_catches_up_with_a_keyframe_then_shares_deltas(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 10);
    tb_proto_frame fr = room;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *a = tb_snap_decoder_create(MAXB), *b = tb_snap_decoder_create(MAXB);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 0);
    in.verts[0] = in.verts[1] = NULL;
    tb_snap_encoder_step(enc, &in, &err);
    prime_decoder(a, &fr, tb_snap_encoder_key(enc));
    prime_decoder(b, &fr, tb_snap_encoder_key(enc));
    for (int t = 1; t < 40; t++) {
        world_step(&w, t);
        in = world_input(&w, (uint32_t)t);
        in.verts[0] = in.verts[1] = NULL;
        assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
        assert_int_equal(apply_blob(a, tb_snap_encoder_delta(enc), 0, NULL), TB_OK);
        if (t >= 10 && t < 15) continue;                 /* b is a slow reader: skipped five */
        if (t == 15) {
            /* the shared delta does not fit b's baseline: refused, state kept */
            uint32_t before = tb_snap_decoder_tick(b);
            assert_int_equal(apply_blob(b, tb_snap_encoder_delta(enc), 0, NULL), TB_ERR_BAD_SNAPSHOT);
            assert_int_equal(tb_snap_decoder_tick(b), before);
        }
        assert_int_equal(apply_blob(b, t == 15 ? tb_snap_encoder_key(enc) : tb_snap_encoder_delta(enc), 0, NULL), TB_OK);
        if (t >= 15) assert_same_state(a, b);
    }
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(a);
    tb_snap_decoder_destroy(b);
}

static void a_room_at_rest_costs_under_16_bytes(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 24);
    tb_proto_frame fr = room;
    fr.mesh_count = 1; fr.mesh_verts[0] = NV;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 70000);
    tb_snap_encoder_step(enc, &in, &err);
    in.tick = 70002;
    in.awake = 0;
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
    uint8_t buf[64];
    size_t n = tb_snap_write(buf, sizeof buf, tb_snap_encoder_delta(enc), 40000);
    print_message("rest snapshot: %zu bytes\n", n);
    assert_true(n > 0 && n < 16);
    tb_snap_encoder_destroy(enc);
}

static void a_delta_without_any_baseline_is_refused(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 8);
    tb_proto_frame fr = room;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *d = tb_snap_decoder_create(MAXB);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 0);
    in.verts[0] = in.verts[1] = NULL;
    tb_snap_encoder_step(enc, &in, &err);
    world_step(&w, 1);
    in = world_input(&w, 2);
    in.verts[0] = in.verts[1] = NULL;
    tb_snap_encoder_step(enc, &in, &err);
    assert_int_equal(apply_blob(d, tb_snap_encoder_delta(enc), 0, NULL), TB_ERR_BAD_SNAPSHOT);
    assert_false(tb_snap_decoder_ready(d));
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(d);
}

static void corrupted_snapshots_never_crash_and_never_half_apply(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 30);
    tb_proto_frame fr = room;
    fr.mesh_count = 1; fr.mesh_verts[0] = NV;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *d = tb_snap_decoder_create(MAXB), *ref = tb_snap_decoder_create(MAXB);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 0);
    tb_snap_encoder_step(enc, &in, &err);
    static uint8_t key[1 << 16], buf[1 << 16], bad[1 << 16];
    prime_decoder(d, &fr, tb_snap_encoder_key(enc));
    prime_decoder(ref, &fr, tb_snap_encoder_key(enc));
    size_t nkey = tb_snap_write(key, sizeof key, tb_snap_encoder_key(enc), 0);
    for (int t = 1; t < 20; t++) world_step(&w, t);          /* spawns and a removal happen in between */
    in = world_input(&w, 2);
    tb_snap_encoder_step(enc, &in, &err);
    size_t n = tb_snap_write(buf, sizeof buf, tb_snap_encoder_delta(enc), 7);
    int refused = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(bad, buf, n);
        size_t len = n;
        if (trial % 3 == 0) len = (size_t)(rnd() * (double)n);                 /* truncated */
        else for (int k = 0; k < 1 + trial % 5; k++) bad[(size_t)(rnd() * (double)n)] ^= (uint8_t)(1u << (int)(rnd() * 8));
        if (tb_snap_decoder_apply(d, bad, len, &err)) {
            refused++;
            assert_true(err.msg[0] != '\0');
            assert_same_state(d, ref);      /* untouched */
        } else {
            assert_int_equal(tb_snap_decoder_apply(d, key, nkey, &err), TB_OK);   /* back to the baseline */
        }
    }
    print_message("%d of 3000 corrupted deltas refused\n", refused);
    assert_true(refused > 1500);
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(d);
    tb_snap_decoder_destroy(ref);
}

static void unsorted_bodies_are_an_encoder_error(void **s)
{
    (void)s;
    tb_proto_frame fr = room;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, 8);
    tb_proto_body b[2] = {{.id = 5, .rot = {0, 0, 0, 1}}, {.id = 3, .rot = {0, 0, 0, 1}}};
    tb_snap_input in = {.tick = 1, .bodies = b, .body_count = 2};
    tb_proto_err err;
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_ERR_BAD_VALUE);
    tb_snap_encoder_destroy(enc);
}

static void a_segment_becomes_a_capsule_body_along_it(void **s)
{
    (void)s;
    const float segs[][6] = {{0, 0, 0, 0, 2, 0}, {1, 1, 1, 1, 1, 3}, {0, 0, 0, 0, -1, 0}, {0, 1, 0, 0.6f, 0.2f, -0.3f}};
    for (int i = 0; i < 4; i++) {
        tb_proto_body b;
        tb_proto_body_from_segment(&b, 9, segs[i], segs[i] + 3, 0.25f, 0x101010, 3);
        float dx = segs[i][3] - segs[i][0], dy = segs[i][4] - segs[i][1], dz = segs[i][5] - segs[i][2];
        float len = sqrtf(dx * dx + dy * dy + dz * dz);
        assert_float_equal(b.shape.size[1], 0.5f * len, 0.5f / 1024);
        assert_int_equal(b.shape.kind, TB_SHAPE_CAPSULE);
        /* rotate +y by q: y' = 2(xy - wz), 1 - 2(x^2 + z^2), 2(yz + wx) */
        float x = b.rot[0], y = b.rot[1], z = b.rot[2], w = b.rot[3];
        float ry[3] = {2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)};
        assert_float_equal(ry[0] * len, dx, 1e-5f);
        assert_float_equal(ry[1] * len, dy, 1e-5f);
        assert_float_equal(ry[2] * len, dz, 1e-5f);
        assert_float_equal(b.pos[1], 0.5f * (segs[i][1] + segs[i][4]), 1e-6f);
    }
}

static void assert_same_blob(const tb_snap_blob *a, const tb_snap_blob *b)
{
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->tick, b->tick);
    assert_int_equal(a->base_tick, b->base_tick);
    assert_int_equal(a->fields, b->fields);
    assert_int_equal(a->tail_len, b->tail_len);
    assert_memory_equal(a->tail, b->tail, a->tail_len);
}

/* Repeated identical input (bodies and meshes at rest) takes the shortcut,
 * and every delta and keyframe is byte-identical to the full step's. */
static void a_room_at_rest_takes_the_shortcut_with_the_same_bytes(void **s)
{
    (void)s;
    static world w;
    world_init(&w, 24);
    tb_proto_frame fr = room;
    fr.mesh_count = 2; fr.mesh_verts[0] = NV; fr.mesh_verts[1] = NV;
    tb_snap_encoder *enc[2] = {tb_snap_encoder_create(&fr, MAXB), tb_snap_encoder_create(&fr, MAXB)};
    tb_snap__encoder_idle_path(enc[1], false);
    tb_proto_err err;
    for (int t = 0; t < 240; t++) {
        if ((t / 12) % 2 == 0) world_step(&w, t);        /* 12 moving ticks, then 12 at rest */
        if (t == 100) w.verts[1][40] += 0.5f;            /* at rest but for one vertex */
        tb_snap_input in = world_input(&w, 500u + 2u * (uint32_t)t);
        in.awake = (t / 12) % 2 == 0 ? w.n : 0;
        for (int k = 0; k < 2; k++) assert_int_equal(tb_snap_encoder_step(enc[k], &in, &err), TB_OK);
        if (t == 0) continue;
        assert_same_blob(tb_snap_encoder_delta(enc[0]), tb_snap_encoder_delta(enc[1]));
        if (t % 5 == 0) assert_same_blob(tb_snap_encoder_key(enc[0]), tb_snap_encoder_key(enc[1]));
    }
    /* 10 rest periods of 12 ticks, the first tick of each still differs from the last moving one */
    assert_true(tb_snap_encoder_idle_steps(enc[0]) >= 100);
    assert_int_equal(tb_snap_encoder_idle_steps(enc[1]), 0);
    tb_snap_encoder_destroy(enc[0]);
    tb_snap_encoder_destroy(enc[1]);
}

/* The encoder takes two shortcuts that must not change a byte: it decides
 * "within tolerance" for most orientation cells it tries from a dot product
 * without the normalization (a guard band, rot_within() in tb_snap_encoder.c),
 * and it skips quantizing a body whose baseline position is surely within
 * tolerance (pos_surely_within()). Every delta must be the one the exact
 * path gives, at every tolerance, including none and ones that put the
 * threshold among the cells' dot products, for bodies creeping in and out of
 * tolerance. */
static void the_encoders_shortcuts_change_no_byte(void **s)
{
    (void)s;
    static world w;
    static const double tol_deg[] = {0.095, 0.0, 0.03, 0.0475, 0.07, 0.0001};
    static const double tol_pos[] = {0.00049, 0.0, 0.0001, 0.00024, 0.00049, 0.0003};
    uint64_t saved = rng_state;
    for (size_t k = 0; k < sizeof tol_deg / sizeof tol_deg[0]; k++) {
        rng_state = 0xfeedull + k;
        world_init(&w, 40);
        for (uint32_t i = 0; i < w.n; i += 4) {   /* some orientations exactly on cells */
            w.bodies[i].rot[0] = w.bodies[i].rot[1] = w.bodies[i].rot[2] = 0;
            w.bodies[i].rot[3] = 1;
        }
        tb_proto_frame fr = room;
        fr.mesh_count = 2; fr.mesh_verts[0] = NV; fr.mesh_verts[1] = NV;
        tb_snap_encoder *enc[2] = {tb_snap_encoder_create(&fr, MAXB), tb_snap_encoder_create(&fr, MAXB)};
        tb_snap__encoder_shortcuts(enc[1], false);
        for (int e = 0; e < 2; e++) tb_snap_encoder_set_tolerance(enc[e], tol_pos[k], tol_deg[k], TB_SNAP_TOL_VERT);
        tb_proto_err err;
        for (int t = 0; t <= 90; t++) {
            if (t > 0) world_step(&w, t);
            for (uint32_t i = 1; i < w.n; i += 5)   /* creeping: orientations a few ulps off each step */
                for (int c = 0; c < 4; c++) w.bodies[i].rot[c] = nextafterf(w.bodies[i].rot[c], (t + c) % 2 ? 2.0f : -2.0f);
            for (uint32_t i = 2; i < w.n; i += 5)   /* drifting 0.1 mm a step, back and forth: in and out of tolerance */
                w.bodies[i].pos[i % 3] += (t / 10) % 2 ? 0.0001f : -0.0001f;
            tb_snap_input in = world_input(&w, 100 + 2 * (uint32_t)t);
            for (int e = 0; e < 2; e++) assert_int_equal(tb_snap_encoder_step(enc[e], &in, &err), TB_OK);
            if (t == 0) continue;
            assert_same_blob(tb_snap_encoder_delta(enc[0]), tb_snap_encoder_delta(enc[1]));
            if (t % 10 == 0) assert_same_blob(tb_snap_encoder_key(enc[0]), tb_snap_encoder_key(enc[1]));
        }
        tb_snap_encoder_destroy(enc[0]);
        tb_snap_encoder_destroy(enc[1]);
    }
    rng_state = saved;
}

/* ---- a bandwidth budget (tb_snap_encoder_set_budget) ---------------------------- */

/* Two encoders over the same world, one with `bits` per snapshot and a refresh
 * of `refresh` snapshots; each delta of the budgeted one is applied by a
 * client and must equal that encoder's keyframe. Counts bytes of both and the
 * longest run of snapshots any body or vertex spent out of the promised bounds
 * in the client's copy. */
static tb_proto_frame two_meshes(void)
{
    tb_proto_frame fr = room;
    fr.mesh_count = 2; fr.mesh_verts[0] = NV; fr.mesh_verts[1] = NV;
    return fr;
}

/* A client holds exactly the state the encoder's keyframe carries. */
static void assert_holds_the_keyframe(const tb_snap_decoder *client, const tb_proto_frame *fr, tb_snap_encoder *enc)
{
    tb_snap_decoder *keyed = tb_snap_decoder_create(MAXB);
    prime_decoder(keyed, fr, tb_snap_encoder_key(enc));
    assert_same_state(client, keyed);
    tb_snap_decoder_destroy(keyed);
}

typedef struct budget_run { size_t plain_bytes, budget_bytes; int longest_stale, stale_at_end; uint64_t deferred; } budget_run;

static budget_run run_budget(uint32_t bits, uint32_t refresh, int steps, int rest_after)
{
    static world w;
    rng_state = 0x9E3779B97F4A7C15ull;
    world_init(&w, 40);
    tb_proto_frame fr = two_meshes();
    tb_snap_encoder *plain = tb_snap_encoder_create(&fr, MAXB), *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *client = tb_snap_decoder_create(MAXB), *fresh = tb_snap_decoder_create(MAXB);
    assert_non_null(plain); assert_non_null(enc); assert_non_null(client); assert_non_null(fresh);
    tb_snap_encoder_set_budget(enc, bits, refresh);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 100);
    assert_int_equal(tb_snap_encoder_step(plain, &in, &err), TB_OK);
    assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
    prime_decoder(client, &fr, tb_snap_encoder_key(enc));
    prime_decoder(fresh, &fr, tb_snap_encoder_key(enc));
    static int stale_body[1 << 16], stale_vert[2][NV];
    memset(stale_body, 0, sizeof stale_body);
    memset(stale_vert, 0, sizeof stale_vert);
    budget_run r = {0, 0, 0, 0, 0};
    for (int t = 1; t <= steps; t++) {
        if (t <= rest_after) world_step(&w, t);
        in = world_input(&w, 100 + 2 * (uint32_t)t);
        assert_int_equal(tb_snap_encoder_step(plain, &in, &err), TB_OK);
        assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
        size_t n;
        assert_int_equal(apply_blob(fresh, tb_snap_encoder_delta(plain), 1, &n), TB_OK);
        r.plain_bytes += n;
        assert_int_equal(apply_blob(client, tb_snap_encoder_delta(enc), 1, &n), TB_OK);
        r.budget_bytes += n;
        assert_holds_the_keyframe(client, &fr, enc); /* the client's state is the budgeted encoder's baseline */
        int stale_now = 0;
        for (uint32_t i = 0; i < w.n; i++) {
            tb_proto_body b;
            tb_snap_decoder_body(client, i, &b);
            assert_int_equal(b.id, w.bodies[i].id);
            bool off = false;
            for (int a = 0; a < 3; a++) off = off || fabsf(b.pos[a] - w.bodies[i].pos[a]) > 0.0005f;
            double q[4] = {b.rot[0], b.rot[1], b.rot[2], b.rot[3]};
            off = off || angle_deg(w.bodies[i].rot, q) > 0.1;
            stale_body[b.id] = off ? stale_body[b.id] + 1 : 0;
            if (stale_body[b.id] > r.longest_stale) r.longest_stale = stale_body[b.id];
            stale_now += off;
        }
        static float verts[NV * 3];
        for (int m = 0; m < 2; m++) {
            assert_int_equal(tb_snap_decoder_verts(client, (uint32_t)m, verts, NV), NV);
            for (int v = 0; v < NV; v++) {
                bool off = false;
                for (int a = 0; a < 3; a++) off = off || fabsf(verts[3 * v + a] - w.verts[m][3 * v + a]) > 0.001f;
                stale_vert[m][v] = off ? stale_vert[m][v] + 1 : 0;
                if (stale_vert[m][v] > r.longest_stale) r.longest_stale = stale_vert[m][v];
                stale_now += off;
            }
        }
        r.stale_at_end = stale_now;
    }
    r.deferred = tb_snap_encoder_budget_stats(enc).items_deferred;
    tb_snap_encoder_destroy(plain);
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(client);
    tb_snap_decoder_destroy(fresh);
    return r;
}

static void a_budget_caps_the_bytes_and_every_delta_still_chains(void **s)
{
    (void)s;
    /* 1,200 bits a snapshot (72 kbit/s at 60/s) where the plain stream needs about 250 bytes */
    budget_run r = run_budget(1200, 30, 300, 300);
    print_message("plain %.1f B, budget %.1f B per snapshot, %llu items deferred, longest stale %d\n",
                  (double)r.plain_bytes / 300, (double)r.budget_bytes / 300, (unsigned long long)r.deferred, r.longest_stale);
    assert_true(r.plain_bytes / 300 > 1200 / 8 + 50);        /* the world does need more */
    assert_true(r.deferred > 0);
    /* the credit lends at most one snapshot's worth: on average within the budget plus a frame's prefix */
    assert_true(r.budget_bytes / 300 <= 1200 / 8 + 16);
}

static void a_budget_refreshes_every_item_within_its_wait(void **s)
{
    (void)s;
    budget_run r = run_budget(1200, 30, 300, 300);
    /* an item out of bounds in the client's copy is sent at the latest after 30 snapshots of waiting */
    assert_true(r.longest_stale > 0);
    assert_true(r.longest_stale <= 30);
}

static void a_budget_catches_up_once_the_room_rests(void **s)
{
    (void)s;
    budget_run r = run_budget(1200, 30, 260, 200);
    assert_int_equal(r.stale_at_end, 0);
}

static void a_budget_that_fits_sends_the_plain_bytes(void **s)
{
    (void)s;
    budget_run r = run_budget(1u << 22, 30, 300, 300);
    assert_int_equal(r.budget_bytes, r.plain_bytes);
    assert_int_equal(r.deferred, 0);
    assert_int_equal(r.longest_stale, 0);
}

/* Without a budget the encoder reuses the exp-Golomb orders it found while
 * choosing cells; with one it counts them again from the delta. A budget
 * that never cuts must therefore give the same bytes, at the default
 * tolerance and at none (where a creeping body is sent but can end on its
 * baseline's cells, which the reused orders must not count). */
static void a_budget_that_never_cuts_writes_the_same_bytes_at_any_tolerance(void **s)
{
    (void)s;
    static world w;
    for (int tol = 0; tol < 2; tol++) {
        uint64_t saved = rng_state;
        rng_state = 0x5eedull + (uint64_t)tol;
        world_init(&w, 40);
        tb_proto_frame fr = two_meshes();
        tb_snap_encoder *plain = tb_snap_encoder_create(&fr, MAXB), *enc = tb_snap_encoder_create(&fr, MAXB);
        tb_snap_encoder_set_budget(enc, 1u << 22, 30);
        if (tol == 0) { tb_snap_encoder_set_tolerance(plain, 0, 0, 0); tb_snap_encoder_set_tolerance(enc, 0, 0, 0); }
        tb_proto_err err;
        for (int t = 0; t <= 120; t++) {
            if (t > 0 && t <= 100) world_step(&w, t);
            for (uint32_t i = 0; i < w.n; i += 3)   /* creeping by an ulp: new input, mostly the same cells */
                w.bodies[i].pos[0] = nextafterf(w.bodies[i].pos[0], t % 2 ? INFINITY : -INFINITY);
            tb_snap_input in = world_input(&w, 100 + 2 * (uint32_t)t);
            assert_int_equal(tb_snap_encoder_step(plain, &in, &err), TB_OK);
            assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
            const tb_snap_blob *a = tb_snap_encoder_delta(plain), *b = tb_snap_encoder_delta(enc);
            assert_true((a == NULL) == (b == NULL));
            if (!a) continue;
            assert_int_equal(a->tail_len, b->tail_len);
            assert_memory_equal(a->tail, b->tail, a->tail_len);
        }
        tb_snap_encoder_destroy(plain);
        tb_snap_encoder_destroy(enc);
        rng_state = saved;
    }
}

static void a_copied_baseline_lets_a_client_change_streams_without_a_keyframe(void **s)
{
    (void)s;
    static world w;
    rng_state = 0x1234ull;
    world_init(&w, 20);
    tb_proto_frame fr = two_meshes();
    tb_snap_encoder *room_enc = tb_snap_encoder_create(&fr, MAXB), *lane = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *client = tb_snap_decoder_create(MAXB);
    tb_proto_err err;
    tb_snap_input in = world_input(&w, 100);
    assert_int_equal(tb_snap_encoder_copy_baseline(lane, room_enc), TB_ERR_BAD_VALUE); /* nothing to copy yet */
    assert_int_equal(tb_snap_encoder_step(room_enc, &in, &err), TB_OK);
    prime_decoder(client, &fr, tb_snap_encoder_key(room_enc));
    for (int t = 1; t <= 20; t++) { /* the client follows the room's own stream */
        world_step(&w, t);
        in = world_input(&w, 100 + 2 * (uint32_t)t);
        assert_int_equal(tb_snap_encoder_step(room_enc, &in, &err), TB_OK);
        assert_int_equal(apply_blob(client, tb_snap_encoder_delta(room_enc), 1, NULL), TB_OK);
    }
    assert_int_equal(tb_snap_encoder_copy_baseline(lane, room_enc), TB_OK);
    tb_snap_encoder_set_budget(lane, 1200, 30);
    for (int t = 21; t <= 80; t++) { /* then the lane's, from its first delta on */
        world_step(&w, t);
        in = world_input(&w, 100 + 2 * (uint32_t)t);
        assert_int_equal(tb_snap_encoder_step(room_enc, &in, &err), TB_OK);
        assert_int_equal(tb_snap_encoder_step(lane, &in, &err), TB_OK);
        assert_int_equal(apply_blob(client, tb_snap_encoder_delta(lane), 1, NULL), TB_OK);
        assert_holds_the_keyframe(client, &fr, lane);
    }
    /* another frame cannot take it */
    tb_proto_frame other = room;
    tb_snap_encoder *odd = tb_snap_encoder_create(&other, MAXB);
    assert_int_equal(tb_snap_encoder_copy_baseline(odd, room_enc), TB_ERR_BAD_VALUE);
    tb_snap_encoder_destroy(odd);
    tb_snap_encoder_destroy(room_enc);
    tb_snap_encoder_destroy(lane);
    tb_snap_decoder_destroy(client);
}

/* 40 boxes in a row along x, 0.35 m apart, all bobbing and spinning alike,
 * under a budget that sends about a third of them a snapshot. Returns the
 * mean position error in the client's copy (metres, over 240 snapshots) of
 * the box under a player's touch (index `touched`, followed as it moves) and
 * of the boxes more than 1 m from it. */
static void run_focus(bool focus, uint32_t touched, double *near_err, double *far_err)
{
    enum { N = 40, STEPS = 240 };
    static tb_proto_body bodies[N];
    for (uint32_t i = 0; i < N; i++) {
        bodies[i] = (tb_proto_body){.id = (uint16_t)(i + 1), .shape = {TB_SHAPE_BOX, 1, 0x8b5a2b, {0.1f, 0.1f, 0.1f}}};
        bodies[i].pos[0] = -7.0f + 0.35f * (float)i;
        bodies[i].rot[3] = 1;
    }
    tb_proto_frame fr = room;
    tb_snap_encoder *enc = tb_snap_encoder_create(&fr, MAXB);
    tb_snap_decoder *client = tb_snap_decoder_create(MAXB);
    tb_snap_encoder_set_budget(enc, 600, 30);
    tb_proto_err err;
    double near_sum = 0, far_sum = 0;
    int near_n = 0, far_n = 0;
    for (int t = 0; t <= STEPS; t++) {
        for (uint32_t i = 0; i < N; i++) {
            bodies[i].pos[1] = 2.0f + 0.5f * sinf(0.05f * (float)t + 0.3f * (float)i);
            float a = 0.03f * (float)t + (float)i;
            bodies[i].rot[0] = sinf(a / 2); bodies[i].rot[3] = cosf(a / 2);
        }
        tb_snap_encoder_set_focus(enc, focus ? bodies[touched].pos : NULL, focus ? 1 : 0);
        tb_snap_input in = {.tick = 100 + 2 * (uint32_t)t, .awake = N, .bodies = bodies, .body_count = N};
        assert_int_equal(tb_snap_encoder_step(enc, &in, &err), TB_OK);
        if (t == 0) {
            prime_decoder(client, &fr, tb_snap_encoder_key(enc));
            continue;
        }
        assert_int_equal(apply_blob(client, tb_snap_encoder_delta(enc), 1, NULL), TB_OK);
        for (uint32_t i = 0; i < N; i++) {
            tb_proto_body b;
            tb_snap_decoder_body(client, i, &b);
            double d2 = 0;
            for (int k = 0; k < 3; k++) d2 += (double)(b.pos[k] - bodies[i].pos[k]) * (b.pos[k] - bodies[i].pos[k]);
            double dx = fabs((double)bodies[i].pos[0] - bodies[touched].pos[0]);
            if (i == touched) { near_sum += sqrt(d2); near_n++; }
            else if (dx > 1.0) { far_sum += sqrt(d2); far_n++; }
        }
    }
    assert_true(tb_snap_encoder_budget_stats(enc).items_deferred > 0); /* the budget does bind */
    *near_err = near_sum / near_n;
    *far_err = far_sum / far_n;
    tb_snap_encoder_destroy(enc);
    tb_snap_decoder_destroy(client);
}

static void under_a_budget_what_a_player_touches_is_sent_first(void **s)
{
    (void)s;
    double near_plain, far_plain, near_focus, far_focus;
    run_focus(false, 20, &near_plain, &far_plain);
    run_focus(true, 20, &near_focus, &far_focus);
    print_message("mean error without focus: touched %.1f mm, far %.1f mm; with: touched %.1f mm, far %.1f mm\n",
                  1e3 * near_plain, 1e3 * far_plain, 1e3 * near_focus, 1e3 * far_focus);
    /* without a focus the touched box is one of many */
    assert_true(near_plain > 0.5 * far_plain);
    /* with it, its error is well under the rest's and under its own without */
    assert_true(near_focus < 0.5 * far_focus);
    assert_true(near_focus < 0.5 * near_plain);
    /* the budget still holds the rest within reach (priority still reaches them) */
    assert_true(far_focus < 2.0 * far_plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rigid_positions_stay_within_half_a_millimetre),
        cmocka_unit_test(vertices_stay_within_one_millimetre),
        cmocka_unit_test(orientations_stay_within_a_tenth_of_a_degree),
        cmocka_unit_test(degenerate_quaternions_become_identity),
        cmocka_unit_test(the_quantizers_give_the_floor_definitions_cells),
        cmocka_unit_test(deltas_applied_in_order_equal_the_keyframe),
        cmocka_unit_test(deltas_applied_in_place_equal_the_general_path_and_the_keyframe),
        cmocka_unit_test(the_bit_reader_reads_what_the_reference_reads),
        cmocka_unit_test(the_fast_bit_writer_writes_what_the_reference_writes),
        cmocka_unit_test(a_client_that_skipped_catches_up_with_a_keyframe_then_shares_deltas),
        cmocka_unit_test(a_room_at_rest_costs_under_16_bytes),
        cmocka_unit_test(a_room_at_rest_takes_the_shortcut_with_the_same_bytes),
        cmocka_unit_test(the_encoders_shortcuts_change_no_byte),
        cmocka_unit_test(a_delta_without_any_baseline_is_refused),
        cmocka_unit_test(corrupted_snapshots_never_crash_and_never_half_apply),
        cmocka_unit_test(unsorted_bodies_are_an_encoder_error),
        cmocka_unit_test(a_segment_becomes_a_capsule_body_along_it),
        cmocka_unit_test(a_budget_caps_the_bytes_and_every_delta_still_chains),
        cmocka_unit_test(a_budget_refreshes_every_item_within_its_wait),
        cmocka_unit_test(a_budget_catches_up_once_the_room_rests),
        cmocka_unit_test(a_budget_that_fits_sends_the_plain_bytes),
        cmocka_unit_test(a_budget_that_never_cuts_writes_the_same_bytes_at_any_tolerance),
        cmocka_unit_test(a_copied_baseline_lets_a_client_change_streams_without_a_keyframe),
        cmocka_unit_test(under_a_budget_what_a_player_touches_is_sent_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
