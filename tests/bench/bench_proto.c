/* bench_proto.c: tumble-bench scenario "proto" -- what the wire format costs on
 * real scenes stepped by the real physics (server/physics/).
 *
 * Each scene is stepped at 120 Hz and its state captured every 2nd step (60
 * snapshots/s); the captured states are then encoded by one tb_snap_encoder as
 * the server would (the first as a keyframe inside a welcome, then one delta
 * per snapshot) and decoded by one tb_snap_decoder as a client would. Bytes are
 * the per-client frame (envelope included; tick > 65535 and last_seq = 1000, so the
 * envelope is as large as in a long session). The naive size is
 * float32 position + quaternion per body and float32 xyz per vertex. Times are
 * per snapshot in thread CPU time: encode = quantize + delta + frame, decode =
 * apply; the median over --runs repetitions of the mean over the scene. The decoded state is
 * checked against the physics every snapshot (0.5 mm, 0.1 degree, 1 mm). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "sim/clock.h"
#include "tb_proto.h"

#if __has_include("physics/rigid.h") && __has_include("physics/cloth.h") && __has_include("physics/soft.h")
#define TB_BENCH_PROTO_WORLDS 1
#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "physics/cloth.h"
#include "physics/soft.h"
#endif

void tb_bench_proto(const tb_bench_opts *opts);
void tb_bench_proto_budget(const tb_bench_opts *opts);

#if TB_BENCH_PROTO_WORLDS

#define SNAP_HZ 60
#define DT (1.0f / 120.0f)
/* A room that has run for a while and a client that has sent inputs: the tick takes
 * 5 bytes (> 65535) and last_seq 3 bytes in every envelope, as in a long session. */
#define TICK0 1000000u
#define LAST_SEQ 1000u

/* ---- captured scenes ---------------------------------------------------------- */

typedef struct capture {
    const char *name;
    tb_proto_frame frame;
    uint32_t max_bodies;
    int count, cap;
    uint32_t *body_count, *awake;
    tb_proto_body **bodies;
    float **verts[TB_PROTO_MAX_MESHES];
} capture;

static void cap_init(capture *c, const char *name, const tb_proto_frame *f, uint32_t max_bodies)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->frame = *f;
    c->max_bodies = max_bodies;
}

static void cap_push(capture *c, const tb_proto_body *bodies, uint32_t n, uint32_t awake, const float *const *verts)
{
    if (c->count == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->body_count = realloc(c->body_count, (size_t)c->cap * sizeof *c->body_count);
        c->awake = realloc(c->awake, (size_t)c->cap * sizeof *c->awake);
        c->bodies = realloc(c->bodies, (size_t)c->cap * sizeof *c->bodies);
        for (uint32_t m = 0; m < c->frame.mesh_count; m++) c->verts[m] = realloc(c->verts[m], (size_t)c->cap * sizeof(float *));
    }
    int i = c->count++;
    c->body_count[i] = n;
    c->awake[i] = awake;
    c->bodies[i] = malloc((n + 1) * sizeof(tb_proto_body));
    if (n) memcpy(c->bodies[i], bodies, n * sizeof(tb_proto_body));
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) {
        size_t sz = 3u * c->frame.mesh_verts[m] * sizeof(float);
        c->verts[m][i] = malloc(sz);
        memcpy(c->verts[m][i], verts[m], sz);
    }
}

static void cap_free(capture *c)
{
    for (int i = 0; i < c->count; i++) {
        free(c->bodies[i]);
        for (uint32_t m = 0; m < c->frame.mesh_count; m++) free(c->verts[m][i]);
    }
    free(c->body_count); free(c->awake); free(c->bodies);
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) free(c->verts[m]);
}

/* ---- measuring ------------------------------------------------------------------ */

/* Thread CPU time: the machine is shared (other engineers' builds), and CPU time
 * does not count the time this thread sat preempted, unlike CLOCK_MONOTONIC. */
static double cpu_now_us(void) { return (double)tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID) / 1e3; }

static double quat_angle_deg(const float a[4], const float b[4])
{
    /* 2 atan2(|a x b|-ish, |a.b|) would be better conditioned; acos of the normalised
     * dot in double is good to ~1e-6 degrees here, and both are normalised (the
     * decoded quaternion is float32, so its norm is 1 only to ~1e-7) */
    double d = fabs((double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2] + (double)a[3] * b[3]);
    double na = sqrt((double)a[0] * a[0] + (double)a[1] * a[1] + (double)a[2] * a[2] + (double)a[3] * a[3]);
    double nb = sqrt((double)b[0] * b[0] + (double)b[1] * b[1] + (double)b[2] * b[2] + (double)b[3] * b[3]);
    d /= na * nb;
    return 2.0 * acos(d > 1.0 ? 1.0 : d) * 57.29577951308232;
}

/* The welcome a client of a captured scene gets (its keyframe added when encoded). */
static const tb_proto_welcome *bench_welcome(const capture *c)
{
    static tb_proto_welcome wel;
    memset(&wel, 0, sizeof wel);
    wel.version = 1; wel.tick_rate = 120; wel.snap_rate = SNAP_HZ;
    strcpy(wel.room, "bench"); strcpy(wel.kind, "bench"); strcpy(wel.scene, "bench"); strcpy(wel.server, "bench");
    for (int a = 0; a < 3; a++) { wel.st.bounds_min[a] = c->frame.bounds_min[a]; wel.st.bounds_max[a] = c->frame.bounds_max[a]; }
    wel.st.mesh_count = c->frame.mesh_count;
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) { strcpy(wel.st.meshes[m].kind, "cloth"); wel.st.meshes[m].verts = c->frame.mesh_verts[m]; }
    return &wel;
}

/* Captured state i as the encoder's input (snapshot i is tick TICK0 + 2i). */
static tb_snap_input captured(const capture *c, int i)
{
    tb_snap_input in = {.tick = TICK0 + (uint32_t)(2 * i), .awake = c->awake[i], .bodies = c->bodies[i], .body_count = c->body_count[i]};
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) in.verts[m] = c->verts[m][i];
    return in;
}

static void measure_budget(const capture *c, const tb_bench_opts *opts);
static int budget_kbps;

static void measure(const capture *c, const tb_bench_opts *opts)
{
    if (budget_kbps > 0) { measure_budget(c, opts); return; }
    const tb_proto_welcome *wel = bench_welcome(c);

    int runs = opts->runs;
    double *enc_us = calloc((size_t)runs, sizeof(double)), *dec_us = calloc((size_t)runs, sizeof(double));
    uint64_t bytes = 0, max_bytes = 0, key_bytes = 0, moving_bodies = 0, moving_verts = 0, naive = 0;
    uint64_t body_bytes_when_moving = 0, snaps_with_bodies = 0;
    double worst_pos = 0, worst_rot = 0, worst_vert = 0;
    int snaps = c->count - 1;
    static uint8_t frame[TB_PROTO_MAX_SERVER_MSG];
    size_t maxv = 0;
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) if (c->frame.mesh_verts[m] > maxv) maxv = c->frame.mesh_verts[m];
    float *dv = malloc((3 * maxv + 1) * sizeof(float));

    for (int r = 0; r < runs; r++) {
        tb_snap_encoder *enc = tb_snap_encoder_create(&c->frame, c->max_bodies);
        tb_snap_decoder *dec = tb_snap_decoder_create(c->max_bodies);
        tb_proto_err err;
        if (!enc || !dec) { fprintf(stderr, "bench proto: encoder/decoder create failed\n"); exit(1); }
        /* TB_BENCH_PROTO_NEAREST=1: plain nearest-cell quantization, to see what spending the error budget saves */
        const char *nearest = getenv("TB_BENCH_PROTO_NEAREST");
        if (nearest && *nearest == '1') tb_snap_encoder_set_tolerance(enc, 0, 0, 0);
        tb_snap_input in = captured(c, 0);
        if (tb_snap_encoder_step(enc, &in, &err)) { fprintf(stderr, "bench proto: %s\n", err.msg); exit(1); }
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        tb_proto_encode_welcome(&sb, wel, tb_snap_encoder_key(enc));
        /* TB_BENCH_PROTO_DUMP=dir: the frames a client receives, for proto/js/bench-decode.mjs
         * (each frame as a 4-byte little-endian length and the bytes; the welcome first) */
        const char *dump_dir = getenv("TB_BENCH_PROTO_DUMP");
        FILE *dump = NULL;
        if (dump_dir && r == 0) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s.frames", dump_dir, c->name);
            dump = fopen(path, "wb");
        }
        if (dump) { uint32_t l = (uint32_t)sb.size; fwrite(&l, 4, 1, dump); fwrite(sb.data, 1, sb.size, dump); }
        key_bytes = tb_snap_write(frame, sizeof frame, tb_snap_encoder_key(enc), 0);
        if (tb_snap_decoder_apply(dec, (const uint8_t *)sb.data, sb.size, &err)) { fprintf(stderr, "bench proto: welcome: %s\n", err.msg); exit(1); }
        msgpack_sbuffer_destroy(&sb);
        double t_enc = 0, t_dec = 0;
        for (int i = 1; i < c->count; i++) {
            in = captured(c, i);
            double t0 = cpu_now_us();
            if (tb_snap_encoder_step(enc, &in, &err)) { fprintf(stderr, "bench proto: %s\n", err.msg); exit(1); }
            size_t n = tb_snap_write(frame, sizeof frame, tb_snap_encoder_delta(enc), LAST_SEQ);
            double t1 = cpu_now_us();
            if (tb_snap_decoder_apply(dec, frame, n, &err)) { fprintf(stderr, "bench proto: decode: %s\n", err.msg); exit(1); }
            double t2 = cpu_now_us();
            t_enc += t1 - t0;
            t_dec += t2 - t1;
            if (dump) { uint32_t l = (uint32_t)n; fwrite(&l, 4, 1, dump); fwrite(frame, 1, n, dump); }
            if (r > 0) continue;
            /* sizes, motion and accuracy: first run only (all runs are identical) */
            bytes += n;
            if (n > max_bytes) max_bytes = n;
            naive += 28u * c->body_count[i];
            uint32_t moved = 0;
            for (uint32_t b = 0; b < c->body_count[i]; b++) {
                const tb_proto_body *now = &c->bodies[i][b];
                tb_proto_body got;
                tb_snap_decoder_body(dec, b, &got);
                if (got.id != now->id) { fprintf(stderr, "bench proto: body order\n"); exit(1); }
                for (int a = 0; a < 3; a++) {
                    /* outside the room's bounds a position is clamped to them by design: not an error */
                    if (now->pos[a] < c->frame.bounds_min[a] || now->pos[a] > c->frame.bounds_max[a]) continue;
                    double e = fabs((double)got.pos[a] - now->pos[a]);
                    if (e > worst_pos) worst_pos = e;
                }
                double e = quat_angle_deg(now->rot, got.rot);
                if (e > worst_rot) worst_rot = e;
                int32_t qp[3], rc[3], vp[3], vr[3];
                int ri;
                tb_snap_decoder_body_q(dec, b, qp, &ri, rc, vp, vr);
                /* a body moved in this snapshot iff its quantized pose changed, i.e. its change (v) is nonzero
                 * or it was just spawned -- count the changed ones through the velocity state */
                if (vp[0] || vp[1] || vp[2] || vr[0] || vr[1] || vr[2]) moved++;
            }
            moving_bodies += moved;
            for (uint32_t m = 0; m < c->frame.mesh_count; m++) {
                uint32_t nv = c->frame.mesh_verts[m];
                naive += 12u * nv;
                tb_snap_decoder_verts(dec, m, dv, nv);
                const int32_t *vel;
                tb_snap_decoder_verts_q(dec, m, &vel);
                for (uint32_t v = 0; v < nv; v++) {
                    for (int a = 0; a < 3; a++) {
                        double e = fabs((double)dv[3 * v + a] - c->verts[m][i][3 * v + a]);
                        if (e > worst_vert) worst_vert = e;
                    }
                    if (vel[3 * v] || vel[3 * v + 1] || vel[3 * v + 2]) moving_verts++;
                }
            }
            if (moved && c->frame.mesh_count == 0) { body_bytes_when_moving += n; snaps_with_bodies++; }
        }
        if (dump) fclose(dump);
        enc_us[r] = t_enc / snaps;
        dec_us[r] = t_dec / snaps;
        tb_snap_encoder_destroy(enc);
        tb_snap_decoder_destroy(dec);
    }
    free(dv);
    if (worst_pos > 0.0005 || worst_rot > 0.1 || worst_vert > 0.001) {
        fprintf(stderr, "bench proto %s: decoded state off: pos %.5f m, rot %.4f deg, vert %.5f m\n", c->name, worst_pos, worst_rot, worst_vert);
        exit(1);
    }
    double bps = (double)bytes / snaps;
    printf("{\"scenario\":\"proto_%s\",\"snapshots\":%d,\"bodies\":%u,\"vertices\":%u,"
           "\"bytes_per_snapshot\":%.2f,\"kbit_per_s\":%.2f,\"naive_bytes_per_snapshot\":%.1f,\"ratio\":%.2f,"
           "\"max_bytes\":%llu,\"keyframe_bytes\":%llu,\"moving_bodies_per_snapshot\":%.2f,\"bytes_per_moving_body\":%.2f,"
           "\"moving_vertices_per_snapshot\":%.1f,\"bytes_per_moving_vertex\":%.3f,"
           "\"worst_pos_mm\":%.3f,\"worst_rot_deg\":%.4f,\"worst_vertex_mm\":%.3f,\"encode_us\":%.2f,\"decode_us\":%.2f}\n",
           c->name, snaps, c->body_count[c->count - 1],
           c->frame.mesh_count ? c->frame.mesh_verts[0] : 0u,
           bps, bps * 8.0 * SNAP_HZ / 1000.0, (double)naive / snaps, (double)naive / (double)bytes,
           (unsigned long long)max_bytes, (unsigned long long)key_bytes,
           (double)moving_bodies / snaps, moving_bodies ? (double)body_bytes_when_moving / (double)moving_bodies : 0.0,
           (double)moving_verts / snaps, moving_verts ? (double)bytes / (double)moving_verts : 0.0,
           worst_pos * 1000, worst_rot, worst_vert * 1000,
           tb_bench_median(enc_us, (size_t)runs), tb_bench_median(dec_us, (size_t)runs));
    fflush(stdout);
    free(enc_us);
    free(dec_us);
}


/* ---- a bandwidth budget (issue 17 point 3) ------------------------------------------ */

/* proto-budget: the same captured scenes through an encoder with a budget of
 * budget_kbps (tb_snap_encoder_set_budget, refresh 0.5 s), decoded as a client
 * would. The error is what the client holds against the server's truth after
 * each snapshot: the position of every body (or vertex), every snapshot. */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void measure_budget(const capture *c, const tb_bench_opts *opts)
{
    const tb_proto_welcome *wel = bench_welcome(c);
    static uint8_t frame[TB_PROTO_MAX_SERVER_MSG];
    uint32_t bits = (uint32_t)((uint64_t)budget_kbps * 1000u / SNAP_HZ), refresh = SNAP_HZ / 2;
    int runs = opts->runs;
    double *enc_us = calloc((size_t)runs, sizeof(double));
    size_t samples_cap = 0;
    for (int i = 1; i < c->count; i++) {
        samples_cap += c->body_count[i];
        for (uint32_t m = 0; m < c->frame.mesh_count; m++) samples_cap += c->frame.mesh_verts[m];
    }
    float *err_all = malloc((samples_cap + 1) * sizeof(float));
    size_t maxv = 0;
    for (uint32_t m = 0; m < c->frame.mesh_count; m++) if (c->frame.mesh_verts[m] > maxv) maxv = c->frame.mesh_verts[m];
    float *dv = malloc((3 * maxv + 1) * sizeof(float));
    size_t ns = 0;
    uint64_t bytes = 0, max_bytes = 0, window_max = 0;
    double err_sum = 0;
    tb_snap_budget_stats st = {0};
    int snaps = c->count - 1;
    uint64_t *per_snap = calloc((size_t)c->count, sizeof *per_snap);
    for (int r = 0; r < runs; r++) {
        tb_snap_encoder *enc = tb_snap_encoder_create(&c->frame, c->max_bodies);
        tb_snap_decoder *dec = tb_snap_decoder_create(c->max_bodies);
        tb_proto_err err;
        if (!enc || !dec) { fprintf(stderr, "bench proto: encoder/decoder create failed\n"); exit(1); }
        tb_snap_encoder_set_budget(enc, bits, refresh);
        tb_snap_input in = captured(c, 0);
        if (tb_snap_encoder_step(enc, &in, &err)) { fprintf(stderr, "bench proto: %s\n", err.msg); exit(1); }
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        tb_proto_encode_welcome(&sb, wel, tb_snap_encoder_key(enc));
        if (tb_snap_decoder_apply(dec, (const uint8_t *)sb.data, sb.size, &err)) { fprintf(stderr, "bench proto: welcome: %s\n", err.msg); exit(1); }
        msgpack_sbuffer_destroy(&sb);
        double t_enc = 0;
        for (int i = 1; i < c->count; i++) {
            in = captured(c, i);
            double t0 = cpu_now_us();
            if (tb_snap_encoder_step(enc, &in, &err)) { fprintf(stderr, "bench proto: %s\n", err.msg); exit(1); }
            size_t n = tb_snap_write(frame, sizeof frame, tb_snap_encoder_delta(enc), LAST_SEQ);
            t_enc += cpu_now_us() - t0;
            if (tb_snap_decoder_apply(dec, frame, n, &err)) { fprintf(stderr, "bench proto: decode: %s\n", err.msg); exit(1); }
            if (r > 0) continue;
            bytes += n;
            per_snap[i] = n;
            if (n > max_bytes) max_bytes = n;
            for (uint32_t b = 0; b < c->body_count[i]; b++) {
                const tb_proto_body *now = &c->bodies[i][b];
                tb_proto_body got;
                tb_snap_decoder_body(dec, b, &got);
                if (got.id != now->id) { fprintf(stderr, "bench proto: body order\n"); exit(1); }
                double d2 = 0;
                for (int a = 0; a < 3; a++) {
                    double p = now->pos[a] < c->frame.bounds_min[a] ? c->frame.bounds_min[a] : now->pos[a] > c->frame.bounds_max[a] ? c->frame.bounds_max[a] : now->pos[a];
                    d2 += ((double)got.pos[a] - p) * ((double)got.pos[a] - p);
                }
                err_all[ns++] = (float)sqrt(d2);
                err_sum += sqrt(d2);
            }
            for (uint32_t m = 0; m < c->frame.mesh_count; m++) {
                uint32_t nv = c->frame.mesh_verts[m];
                tb_snap_decoder_verts(dec, m, dv, nv);
                for (uint32_t v = 0; v < nv; v++) {
                    double d2 = 0;
                    for (int a = 0; a < 3; a++) { double d = (double)dv[3 * v + a] - c->verts[m][i][3 * v + a]; d2 += d * d; }
                    err_all[ns++] = (float)sqrt(d2);
                    err_sum += sqrt(d2);
                }
            }
        }
        enc_us[r] = t_enc / snaps;
        if (r == 0) st = tb_snap_encoder_budget_stats(enc);
        tb_snap_encoder_destroy(enc);
        tb_snap_decoder_destroy(dec);
    }
    /* the busiest second: what a link of budget_kbps must carry at once */
    for (int i = 1; i + SNAP_HZ <= c->count; i++) {
        uint64_t w = 0;
        for (int k = i; k < i + SNAP_HZ; k++) w += per_snap[k];
        if (w > window_max) window_max = w;
    }
    qsort(err_all, ns, sizeof *err_all, cmp_float);
    double p99 = ns ? err_all[(size_t)(0.99 * (double)(ns - 1))] : 0, p999 = ns ? err_all[(size_t)(0.999 * (double)(ns - 1))] : 0;
    double bps = (double)bytes / snaps;
    printf("{\"scenario\":\"proto_budget_%s\",\"budget_kbit_per_s\":%d,\"snapshots\":%d,\"kbit_per_s\":%.2f,"
           "\"busiest_second_kbit\":%.1f,\"max_bytes\":%llu,\"error_mean_mm\":%.3f,\"error_p99_mm\":%.2f,\"error_p999_mm\":%.2f,"
           "\"error_max_mm\":%.2f,\"cut_snapshots\":%llu,\"deferred_per_snapshot\":%.1f,\"forced\":%llu,\"max_wait_snapshots\":%u,"
           "\"encode_us\":%.2f}\n",
           c->name, budget_kbps, snaps, bps * 8.0 * SNAP_HZ / 1000.0, (double)window_max * 8.0 / 1000.0,
           (unsigned long long)max_bytes, ns ? err_sum / (double)ns * 1000 : 0, p99 * 1000, p999 * 1000,
           ns ? err_all[ns - 1] * 1000.0 : 0, (unsigned long long)st.cut_steps, (double)st.items_deferred / snaps,
           (unsigned long long)st.items_forced, st.max_age, tb_bench_median(enc_us, (size_t)runs));
    fflush(stdout);
    free(per_snap);
    free(err_all);
    free(dv);
    free(enc_us);
}

/* ---- rigid scenes ------------------------------------------------------------------ */

static const tb_proto_frame rigid_frame = {{-8.0, -1.0, -8.0}, {8.0, 15.0, 8.0}, 0, {0}};

uint32_t tb_bench_rigid_bodies(const tb_rigid_world *w, tb_proto_body *out)
{
    uint32_t n = 0;
    for (int id = tb_rigid_world_next_body(w, -1); id >= 0; id = tb_rigid_world_next_body(w, id)) {
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, id, &info);
        tb_proto_body *b = &out[n++];
        b->id = (uint16_t)id;
        if (info.shape == TB_RIGID_SPHERE) b->shape = (tb_proto_shape){TB_SHAPE_SPHERE, info.look.kind, info.look.color, {info.radius, 0, 0}};
        else b->shape = (tb_proto_shape){TB_SHAPE_BOX, info.look.kind, info.look.color, {info.half_extents.x, info.half_extents.y, info.half_extents.z}};
        b->pos[0] = info.position.x; b->pos[1] = info.position.y; b->pos[2] = info.position.z;
        b->rot[0] = info.rotation.x; b->rot[1] = info.rotation.y; b->rot[2] = info.rotation.z; b->rot[3] = info.rotation.w;
    }
    return n;
}

static void rigid_capture_steps(capture *c, tb_rigid_world *w, tb_proto_body *scratch, int steps, void (*input)(tb_rigid_world *, int step))
{
    for (int s = 0; s < steps; s++) {
        if (input) input(w, s);
        tb_rigid_world_step(w, DT);
        if (s % 2 == 1) {
            uint32_t n = tb_bench_rigid_bodies(w, scratch);
            cap_push(c, scratch, n, (uint32_t)tb_rigid_world_awake_count(w), NULL);
        }
    }
}

static void settle(tb_rigid_world *w, int max_steps)
{
    for (int s = 0; s < max_steps && (s < 60 || tb_rigid_world_awake_count(w) > 0); s++) tb_rigid_world_step(w, DT);
}

static tb_rigid_world *rigid_world(int capacity)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w || tb_rigid_scene_tray(w) != TB_PHYS_OK) { fprintf(stderr, "bench proto: rigid world\n"); exit(1); }
    return w;
}

static void tower_scenes(const tb_bench_opts *opts)
{
    tb_rigid_world *w = rigid_world(64);
    int ids[TB_TOWER_PLANKS];
    tb_rigid_scene_tower(w, ids);
    settle(w, 120 * 10);
    tb_proto_body *scratch = malloc(64 * sizeof *scratch);
    capture c;
    cap_init(&c, "tower_rest", &rigid_frame, 64);
    rigid_capture_steps(&c, w, scratch, opts->quick ? 120 : 240, NULL);
    measure(&c, opts);
    cap_free(&c);
    cap_init(&c, "tower_topple", &rigid_frame, 64);
    tb_rigid_scene_tower_launch_ball(w);
    rigid_capture_steps(&c, w, scratch, opts->quick ? 240 : 120 * 5, NULL);
    measure(&c, opts);
    cap_free(&c);
    free(scratch);
    tb_rigid_world_destroy(w);
}

static uint64_t pile_rng = 0x1234567u;
static float pile_rand(void)
{
    pile_rng = pile_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(pile_rng >> 40) / 16777216.0f;
}

/* Every 2 s a heavy ball (r = 0.38 m, density 7, the tower's) drops into the pile from 2 m above it. */
static void pile_throw(tb_rigid_world *w, int step)
{
    if (step % 240 != 0) return;
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.shape = TB_RIGID_SPHERE;
    d.radius = 0.38f;
    d.density = 7.0f;
    d.position = tb_v3(-3.0f + 6.0f * pile_rand(), 9.0f, -1.8f + 3.6f * pile_rand());
    d.linear_velocity = tb_v3(4.0f * (pile_rand() - 0.5f), -10.0f, 4.0f * (pile_rand() - 0.5f));
    d.look.kind = TB_LOOK_BALL;
    d.look.color = (uint8_t)(step / 240);
    if (tb_rigid_world_add_body(w, &d) < 0) fprintf(stderr, "bench proto: pile throw refused\n");
}

/* The same cadence with the seed's light poke ball (r = 0.22 m, density 1.2) thrown
 * from the front of the tray at 9 m/s into the pile: what an ordinary user throw costs. */
static void pile_user_throw(tb_rigid_world *w, int step)
{
    if (step % 240 != 0) return;
    tb_vec3 origin = tb_v3(-3.0f + 6.0f * pile_rand(), 4.0f, 2.2f);
    tb_vec3 vel = tb_v3(2.0f * (pile_rand() - 0.5f), 1.0f, -9.0f);
    if (tb_rigid_throw(w, TB_THROW_BALL, origin, vel, tb_v3(0, 0, 0), (uint8_t)(step / 240)) < 0)
        fprintf(stderr, "bench proto: pile user throw refused\n");
}

static void pile_capture(const tb_bench_opts *opts, capture *c, const char *name, void (*throw_fn)(tb_rigid_world *, int))
{
    int cubes = 1000, seconds = opts->quick ? 4 : 20;
    pile_rng = 0x1234567u;
    tb_rigid_world *w = rigid_world(cubes + 32);
    tb_rigid_scene_pile(w, cubes);
    double t0 = tb_bench_now_us();
    settle(w, 120 * 20);
    fprintf(stderr, "bench proto: pile settled in %.1f s wall, %d awake\n", (tb_bench_now_us() - t0) / 1e6, tb_rigid_world_awake_count(w));
    tb_proto_body *scratch = malloc((size_t)(cubes + 32) * sizeof *scratch);
    cap_init(c, name, &rigid_frame, (uint32_t)cubes + 32);
    rigid_capture_steps(c, w, scratch, 120 * seconds, throw_fn);
    free(scratch);
    tb_rigid_world_destroy(w);
}

static void pile_scene(const tb_bench_opts *opts, const char *name, void (*throw_fn)(tb_rigid_world *, int))
{
    capture c;
    pile_capture(opts, &c, name, throw_fn);
    measure(&c, opts);
    cap_free(&c);
}

/* ---- cloth and soft ---------------------------------------------------------------- */

static const tb_proto_frame cloth_bounds = {{-8.0, -1.0, -8.0}, {8.0, 7.0, 8.0}, 0, {0}};

static void cloth_scene(const tb_bench_opts *opts, tb_cloth_scene scene, const char *name)
{
    tb_cloth_def def = tb_cloth_def_default();
    def.scene = scene;
    def.walking = scene == TB_CLOTH_SCENE_CAPE;
    int err;
    tb_cloth_world *w = tb_cloth_world_create(&def, &err);
    if (!w) { fprintf(stderr, "bench proto: cloth world: %s\n", tb_phys_strerror(err)); exit(1); }
    for (int s = 0; s < 120; s++) tb_cloth_world_step(w, TB_CLOTH_DT);    /* 1 s of wind before measuring */
    tb_cloth_view view;
    tb_cloth_world_get_cloth(w, 0, &view);
    tb_proto_frame f = cloth_bounds;
    f.mesh_count = 1;
    f.mesh_verts[0] = (uint32_t)view.point_count;
    capture c;
    cap_init(&c, name, &f, 16);
    tb_proto_body bodies[16];
    int steps = opts->quick ? 240 : 120 * 5;
    for (int s = 0; s < steps; s++) {
        tb_cloth_world_step(w, TB_CLOTH_DT);
        if (s % 2 == 0) continue;
        tb_cloth_world_get_cloth(w, 0, &view);
        /* figure parts move: they stream as capsule bodies; the pole is static (welcome) */
        uint32_t n = 0;
        const tb_cloth_capsule *caps = tb_cloth_world_capsules(w);
        for (int k = 0; k < tb_cloth_world_capsule_count(w) && n < 16; k++) {
            if (caps[k].part == TB_CLOTH_PART_POLE) continue;
            float a[3] = {caps[k].a.x, caps[k].a.y, caps[k].a.z}, b[3] = {caps[k].b.x, caps[k].b.y, caps[k].b.z};
            tb_proto_body_from_segment(&bodies[n], (uint16_t)(k + 1), a, b, caps[k].radius, 0x303040, 0);
            n++;
        }
        const float *verts[1] = {view.positions};
        cap_push(&c, bodies, n, n, verts);
    }
    measure(&c, opts);
    cap_free(&c);
    tb_cloth_world_destroy(w);
}

static void dough_scene(const tb_bench_opts *opts)
{
    tb_soft_def def = tb_soft_def_default();
    int err;
    tb_soft_world *w = tb_soft_world_create(&def, &err);
    if (!w) { fprintf(stderr, "bench proto: soft world: %s\n", tb_phys_strerror(err)); exit(1); }
    for (int s = 0; s < 60; s++) tb_soft_world_step(w, DT);
    int nv = tb_soft_world_vertex_count(w);
    const float *p = tb_soft_world_positions(w);
    /* grab the vertex furthest along +x and the one furthest along -x, pull them apart */
    int right = 0, left = 0;
    for (int v = 1; v < nv; v++) {
        if (p[3 * v] > p[3 * right]) right = v;
        if (p[3 * v] < p[3 * left]) left = v;
    }
    tb_vec3 ra = tb_v3(p[3 * right], p[3 * right + 1], p[3 * right + 2]), la = tb_v3(p[3 * left], p[3 * left + 1], p[3 * left + 2]);
    int right_hand = tb_soft_world_grab_start(w, ra), left_hand = tb_soft_world_grab_start(w, la);
    if (right_hand < 0 || left_hand < 0)
        fprintf(stderr, "bench proto: dough grab refused\n");
    tb_proto_frame f = {{-4.0, -2.0, -4.0}, {4.0, 4.0, 4.0}, 1, {(uint32_t)nv}};
    capture c;
    cap_init(&c, "dough_pull", &f, 1);
    int pull = opts->quick ? 120 : 180, steps = opts->quick ? 240 : 360;
    for (int s = 0; s < steps; s++) {
        if (s < pull) {
            float d = 0.006f * (float)(s + 1);    /* 0.72 m/s outward for 1.5 s */
            tb_soft_world_grab_move(w, right_hand, tb_v3(ra.x + d, ra.y + 0.3f * d, ra.z));
            tb_soft_world_grab_move(w, left_hand, tb_v3(la.x - d, la.y + 0.3f * d, la.z));
        } else if (s == pull) {
            tb_soft_world_grab_end(w, right_hand);
            tb_soft_world_grab_end(w, left_hand);
        }
        tb_soft_world_step(w, DT);
        if (s % 2 == 0) continue;
        const float *verts[1] = {tb_soft_world_positions(w)};
        cap_push(&c, NULL, 0, 0, verts);
    }
    measure(&c, opts);
    cap_free(&c);
    tb_soft_world_destroy(w);
}

void tb_bench_proto(const tb_bench_opts *opts)
{
    tower_scenes(opts);
    pile_scene(opts, "pile_1000_heavy_ball_every_2s", pile_throw);
    pile_scene(opts, "pile_1000_user_ball_every_2s", pile_user_throw);
    cloth_scene(opts, TB_CLOTH_SCENE_FLAG, "flag_wind");
    cloth_scene(opts, TB_CLOTH_SCENE_CAPE, "cape_walk");
    dough_scene(opts);
}

/* proto-budget: the pile with a heavy ball at 256 and 128 kbit/s, the user
 * ball at 256; flag, cape and dough at 64 kbit/s (TB_BENCH_PROTO_KBPS=N: one
 * budget for every scene instead). */
void tb_bench_proto_budget(const tb_bench_opts *opts)
{
    const char *fixed = getenv("TB_BENCH_PROTO_KBPS");
    int k = fixed ? atoi(fixed) : 0;
    budget_kbps = k > 0 ? k : 256;
    pile_scene(opts, "pile_1000_heavy_ball_every_2s", pile_throw);
    pile_scene(opts, "pile_1000_user_ball_every_2s", pile_user_throw);
    if (k <= 0) {
        budget_kbps = 128;
        pile_scene(opts, "pile_1000_heavy_ball_every_2s", pile_throw);
    }
    budget_kbps = k > 0 ? k : 64;
    cloth_scene(opts, TB_CLOTH_SCENE_FLAG, "flag_wind");
    cloth_scene(opts, TB_CLOTH_SCENE_CAPE, "cape_walk");
    dough_scene(opts);
    budget_kbps = 0;
}

#else /* the physics worlds are not in this tree yet: say so, measure nothing */

void tb_bench_proto(const tb_bench_opts *opts)
{
    (void)opts;
    fprintf(stderr, "tumble-bench proto: server/physics rigid/cloth/soft not in this build; no figures\n");
}

void tb_bench_proto_budget(const tb_bench_opts *opts) { tb_bench_proto(opts); }

#endif
