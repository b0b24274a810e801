/* bench_count.c: instruction counts per step, for callgrind (and step times).
 *
 *   tumble-bench tower-asleep        # timing: a tower at rest, stepped 10 s
 *   scripts/count-instructions.sh    # instructions per step of every case below
 *
 * "count" runs each case once; the measured calls are bracketed with
 * CALLGRIND_TOGGLE_COLLECT and each case ends with CALLGRIND_DUMP_STATS_AT,
 * so `valgrind --tool=callgrind --collect-atstart=no` writes one profile per
 * case holding only the measured calls (no timers: they are skipped under
 * valgrind). Cases:
 *   tower-fall       tb_rigid_world_step, 1.6-2.6 s after the ball's launch
 *   tower-asleep     tb_rigid_world_step, 1.0-2.0 s of a tower at rest
 *   tower-cycle      tb_rigid_world_step, every step of 15 s of the load test's
 *                    tower room (tb_bench_tower_cycle_input: knocked, rebuilt, poked)
 *   tower-room       tb_rigid_world_step, 30 s of the load test's tower room as the
 *                    server steps it: rebuilt settled (the tower memo), knocked at 0 s
 *                    and rebuilt at 2.5 s of every 5 s, two players poking every 3 s
 *   pile1000         tb_rigid_world_step, 0.17-1.0 s of pile 1000
 *   snap-tower-rest  tb_snap_encoder_step, 60 snapshots of a tower at rest
 *   dough-idle       tb_soft_world_step, 2-3 s of an untouched dough
 *   snap-tower-cycle tb_snap_encoder_step, every second step of the tower cycle
 *   snap-decode-tower-cycle  tb_snap_decoder_apply on those snapshots' frames, as
 *                    each tumble-load client applies every snapshot it receives
 *   rigid-fill-snapshot  the rigid room's fill_snapshot (sim/world_rigid.c: the bodies
 *                    as snapshot input), 60 snapshots of a tower room as the server builds it
 *   pose-record-tower-cycle  tb_pose_history_record on the tower cycle, as the rigid
 *                    room calls it after every step that was not idle (sim/world_rigid.c)
 *   flag+cape        tb_cloth_world_step, 1-3 s of the flag and the cape in one world
 *   dough-grab       tb_soft_world_step, 1-2 s of a dough held by two grabs
 * Outside valgrind the client requests do nothing and "count" prints the
 * same JSON lines with the wall-clock median per call.
 *
 *   tumble-bench tower-cycle         # timing: the tower-cycle case, mean us per step
 *   tumble-bench tower-rooms         # timing: 150 tower rooms stepped in turn, on one
 *                                    # shared scratch and each on its own, us per step
 *   tumble-bench world-hash          # every kernel's state hash after a fixed
 *                                    # input script (bench_world_hash.c) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#include "bench/bench.h"
#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "physics/cloth.h"
#include "physics/soft.h"
#include "sim/pose_history.h"
#include "sim/world.h"
#include "tb_proto.h"

#define DT (1.0f / 120.0f)

/* bench_proto.c: a rigid world's live bodies as snapshot input, in id order. */
uint32_t tb_bench_rigid_bodies(const tb_rigid_world *w, tb_proto_body *out);

typedef struct counter {
    const char *name;
    int calls;
    double times[4096];
} counter;

static void begin(counter *c)
{
    if (RUNNING_ON_VALGRIND) { CALLGRIND_TOGGLE_COLLECT; return; }
    c->times[c->calls] = tb_bench_now_us();
}

static void end(counter *c)
{
    if (RUNNING_ON_VALGRIND) CALLGRIND_TOGGLE_COLLECT;
    else c->times[c->calls] = tb_bench_now_us() - c->times[c->calls];
    c->calls++;
}

static void report(counter *c, const char *extra)
{
    CALLGRIND_DUMP_STATS_AT(c->name);
    double med = RUNNING_ON_VALGRIND ? 0.0 : tb_bench_median(c->times, (size_t)c->calls);
    printf("{\"case\":\"%s\",\"calls\":%d,\"median_us\":%.3f%s}\n", c->name, c->calls, med, extra ? extra : "");
    fflush(stdout);
}

static tb_rigid_world *tray(int capacity)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w || tb_rigid_scene_tray(w) != TB_PHYS_OK) { fprintf(stderr, "bench count: rigid world\n"); exit(1); }
    return w;
}

static void rigid_case(const char *name, int scene_n, double launch_s, double from_s, double to_s)
{
    static counter c;
    c.name = name;
    c.calls = 0;
    tb_rigid_world *w = tray(scene_n > 0 ? scene_n : 32);
    if (scene_n > 0) tb_rigid_scene_pile(w, scene_n);
    else tb_rigid_scene_tower(w, NULL);
    int from = (int)(from_s * 120.0 + 0.5), to = (int)(to_s * 120.0 + 0.5), launch = (int)(launch_s * 120.0 + 0.5);
    for (int s = 0; s < to; s++) {
        if (launch_s > 0 && s == launch) tb_rigid_scene_tower_launch_ball(w);
        if (s < from) { tb_rigid_world_step(w, DT); continue; }
        begin(&c);
        tb_rigid_world_step(w, DT);
        end(&c);
    }
    tb_rigid_world_stats st;
    tb_rigid_world_get_stats(w, &st);
    char extra[96];
    snprintf(extra, sizeof extra, ",\"awake_end\":%d,\"idle_steps\":%llu", st.awake, (unsigned long long)st.idle_steps);
    report(&c, extra);
    tb_rigid_world_destroy(w);
}

static void tower_cycle_case(void)
{
    static counter c;
    c.name = "tower-cycle";
    c.calls = 0;
    tb_rigid_rng rng;
    tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
    long awake_steps = 0;
    for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
        tb_bench_tower_cycle_input(w, s, &rng);
        begin(&c);
        tb_rigid_world_step(w, DT);
        end(&c);
        awake_steps += tb_rigid_world_awake_count(w) > 0;
    }
    char extra[64];
    snprintf(extra, sizeof extra, ",\"steps_with_awake\":%ld", awake_steps);
    report(&c, extra);
    tb_rigid_world_destroy(w);
}

/* A poke as the server applies it (sim/world_rigid.c): the load client's
 * impulse at a random live body's centre, capped at 1.5 m/s of speed change. */
static void room_poke(tb_rigid_world *w, tb_rigid_rng *rng)
{
    int ids[64], n = 0;
    for (int id = tb_rigid_world_next_body(w, -1); id >= 0 && n < 64; id = tb_rigid_world_next_body(w, id)) ids[n++] = id;
    if (n == 0) return;
    int id = ids[tb_rigid_rng_next(rng) % (uint64_t)n];
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, id, &info);
    tb_vec3 impulse = tb_v3((tb_rigid_rng_float(rng) - 0.5f) * 0.6f, 0.3f, (tb_rigid_rng_float(rng) - 0.5f) * 0.6f);
    float dv = tb_v3_len(impulse) / info.mass;
    if (dv > 1.5f) impulse = tb_v3_scale(impulse, 1.5f / dv);
    tb_rigid_body_apply_impulse(w, id, impulse, info.position);
}

/* The load test's tower room as the server steps it (tumble-load: client 0
 * knocks, then rebuilds 2.5 s later; each of the 2 players pokes every 3 s;
 * the server rebuilds from the settled tower): what one tower room costs
 * the physics per second is 120 times its instructions per step. */
static void tower_room_case(void)
{
    static counter c;
    c.name = "tower-room";
    c.calls = 0;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = TB_SCENE_TOWER_BODIES + 24 + 4; /* as sim/world_rigid.c */
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w || tb_rigid_scene_tower_settled(w, NULL) < 0) { fprintf(stderr, "bench count: tower room\n"); exit(1); }
    tb_rigid_rng rng = tb_rigid_rng_seed(1);
    long awake_steps = 0;
    for (int s = 0; s < 3600; s++) {
        if (s % 600 == 0) tb_rigid_scene_tower_launch_ball(w);
        if (s % 600 == 300) tb_rigid_scene_tower_settled(w, NULL); /* the memo's result, without the memo */
        if (s % 360 == 100 || s % 360 == 280) room_poke(w, &rng);
        begin(&c);
        tb_rigid_world_step(w, DT);
        end(&c);
        awake_steps += tb_rigid_world_awake_count(w) > 0;
    }
    char extra[64];
    snprintf(extra, sizeof extra, ",\"steps_with_awake\":%ld", awake_steps);
    report(&c, extra);
    tb_rigid_world_destroy(w);
}

/* Many tower rooms stepped in turn, as a worker steps its share of the load
 * test's rooms: TOWER_ROOMS worlds (one worker's half of 300), each on the
 * tower-room case's inputs with its cycle started 4 steps after the last
 * one's (a knock somewhere every 33 ms), all stepped once per tick. Each run
 * times 5 s of ticks twice, alternately in one-second blocks: the worlds
 * on one shared scratch (tb_rigid_world_use_scratch, as the server's
 * workers run them) and twins on scratches of their own, the same inputs
 * and the same bits. Mean us per step of each. */
#define TOWER_ROOMS 150

typedef struct tower_rooms {
    tb_rigid_world *w[TOWER_ROOMS];
    tb_rigid_rng rng[TOWER_ROOMS];
} tower_rooms;

static void tower_rooms_make(tower_rooms *t, tb_rigid_scratch *shared)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = TB_SCENE_TOWER_BODIES + 24 + 4; /* as sim/world_rigid.c */
    for (int i = 0; i < TOWER_ROOMS; i++) {
        t->w[i] = tb_rigid_world_create(&def);
        if (!t->w[i] || tb_rigid_scene_tower_settled(t->w[i], NULL) < 0 ||
            (shared && tb_rigid_world_use_scratch(t->w[i], shared) != TB_PHYS_OK)) {
            fprintf(stderr, "bench tower-rooms: out of memory\n");
            exit(1);
        }
        t->rng[i] = tb_rigid_rng_seed((uint64_t)i + 1);
    }
}

/* Ticks [from, to) of every room; the seconds spent in the steps. */
static double tower_rooms_run(tower_rooms *t, int from, int to)
{
    double us = 0.0;
    for (int s = from; s < to; s++)
        for (int i = 0; i < TOWER_ROOMS; i++) {
            tb_rigid_world *w = t->w[i];
            int c = s + 4 * i;
            if (c % 600 == 0) tb_rigid_scene_tower_launch_ball(w);
            if (c % 600 == 300) tb_rigid_scene_tower_settled(w, NULL);
            if (c % 360 == 100 || c % 360 == 280) room_poke(w, &t->rng[i]);
            double t0 = tb_bench_now_us();
            tb_rigid_world_step(w, DT);
            us += tb_bench_now_us() - t0;
        }
    return us;
}

void tb_bench_tower_rooms(const tb_bench_opts *opts)
{
    int runs = opts->runs, seconds = opts->quick ? 1 : 5;
    double *shared_us = calloc((size_t)runs, sizeof *shared_us), *own_us = calloc((size_t)runs, sizeof *own_us);
    static tower_rooms shared, own;
    for (int r = 0; r < runs; r++) {
        tb_rigid_scratch *scratch = tb_rigid_scratch_create();
        if (!scratch) { fprintf(stderr, "bench tower-rooms: out of memory\n"); exit(1); }
        tower_rooms_make(&shared, scratch);
        tower_rooms_make(&own, NULL);
        double a = 0.0, b = 0.0;
        for (int sec = 0; sec < seconds; sec++) {
            a += tower_rooms_run(&shared, sec * 120, sec * 120 + 120);
            b += tower_rooms_run(&own, sec * 120, sec * 120 + 120);
        }
        shared_us[r] = a / (seconds * 120.0 * TOWER_ROOMS);
        own_us[r] = b / (seconds * 120.0 * TOWER_ROOMS);
        for (int i = 0; i < TOWER_ROOMS; i++) {
            tb_rigid_world_destroy(shared.w[i]);
            tb_rigid_world_destroy(own.w[i]);
        }
        tb_rigid_scratch_destroy(scratch);
    }
    printf("{\"scene\":\"tower-rooms\",\"rooms\":%d,\"seconds\":%d,\"runs\":%d,"
           "\"median_shared_scratch_us\":%.2f,\"median_own_scratch_us\":%.2f}\n",
           TOWER_ROOMS, seconds, runs, tb_bench_median(shared_us, (size_t)runs), tb_bench_median(own_us, (size_t)runs));
    fflush(stdout);
    free(shared_us);
    free(own_us);
}

/* Timing of the tower cycle: mean us per step over the 15 s, per run, and
 * the mean of the 1.0-3.5 s falling phase of every cycle. */
void tb_bench_tower_cycle(const tb_bench_opts *opts)
{
    int runs = opts->runs;
    double *mean = calloc((size_t)runs, sizeof *mean), *fall = calloc((size_t)runs, sizeof *fall);
    for (int r = 0; r < runs; r++) {
        tb_rigid_rng rng;
        tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
        double sum = 0.0, fall_sum = 0.0;
        int fall_n = 0;
        for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
            tb_bench_tower_cycle_input(w, s, &rng);
            double t0 = tb_bench_now_us();
            tb_rigid_world_step(w, DT);
            double d = tb_bench_now_us() - t0;
            sum += d;
            if (s % 600 >= 120 && s % 600 < 420) { fall_sum += d; fall_n++; }
        }
        mean[r] = sum / TB_BENCH_TOWER_CYCLE_STEPS;
        fall[r] = fall_sum / fall_n;
        tb_rigid_world_destroy(w);
    }
    printf("{\"scene\":\"tower-cycle\",\"steps\":%d,\"runs\":%d,\"median_mean_us\":%.2f,"
           "\"median_fall_mean_us\":%.2f}\n",
           TB_BENCH_TOWER_CYCLE_STEPS, runs, tb_bench_median(mean, (size_t)runs), tb_bench_median(fall, (size_t)runs));
    fflush(stdout);
    free(mean);
    free(fall);
}

static void snap_case(void)
{
    static counter c;
    static const tb_proto_frame frame = {{-8.0, -1.0, -8.0}, {8.0, 15.0, 8.0}, 0, {0}};
    c.name = "snap-tower-rest";
    c.calls = 0;
    tb_rigid_world *w = tray(32);
    tb_rigid_scene_tower(w, NULL);
    tb_snap_encoder *e = tb_snap_encoder_create(&frame, 64);
    tb_proto_body bodies[64];
    size_t bytes = 0;
    for (int s = 0; s < 240; s++) {
        tb_rigid_world_step(w, DT);
        if (s % 2 == 0) continue;
        tb_snap_input in = {.tick = (uint32_t)s, .awake = (uint32_t)tb_rigid_world_awake_count(w), .bodies = bodies,
                            .body_count = tb_bench_rigid_bodies(w, bodies)};
        tb_proto_err err;
        bool measured = s >= 120;
        if (measured) begin(&c);
        int rc = tb_snap_encoder_step(e, &in, &err);
        if (measured) end(&c);
        if (rc) { fprintf(stderr, "bench count: encoder: %s\n", err.msg); exit(1); }
        const tb_snap_blob *d = tb_snap_encoder_delta(e);
        if (measured && d) bytes = d->tail_len;
    }
    char extra[64];
    snprintf(extra, sizeof extra, ",\"delta_tail_bytes\":%zu", bytes);
    report(&c, extra);
    tb_snap_encoder_destroy(e);
    tb_rigid_world_destroy(w);
}

/* The encoder on the tower cycle (every second step, 60 snapshots a second,
 * as the server sends them): knocked planks falling and sliding, the
 * moving-body work of the load test's tower rooms (rot_within, quantizing). */
static void snap_cycle_case(void)
{
    static counter c;
    static const tb_proto_frame frame = {{-8.0, -1.0, -8.0}, {8.0, 15.0, 8.0}, 0, {0}};
    c.name = "snap-tower-cycle";
    c.calls = 0;
    tb_rigid_rng rng;
    tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
    tb_snap_encoder *e = tb_snap_encoder_create(&frame, 64);
    tb_proto_body bodies[64];
    size_t bytes = 0;
    uint64_t hash = 0xcbf29ce484222325ull;
    for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
        tb_bench_tower_cycle_input(w, s, &rng);
        tb_rigid_world_step(w, DT);
        if (s % 2 == 0) continue;
        tb_snap_input in = {.tick = (uint32_t)s, .awake = (uint32_t)tb_rigid_world_awake_count(w), .bodies = bodies,
                            .body_count = tb_bench_rigid_bodies(w, bodies)};
        tb_proto_err err;
        begin(&c);
        int rc = tb_snap_encoder_step(e, &in, &err);
        end(&c);
        if (rc) { fprintf(stderr, "bench count: encoder: %s\n", err.msg); exit(1); }
        const tb_snap_blob *d = tb_snap_encoder_delta(e);
        if (d) bytes += d->tail_len;
        /* FNV-1a over every delta's tail bytes: the encoder's output must not change */
        for (size_t k = 0; d && k < d->tail_len; k++) hash = (hash ^ d->tail[k]) * 0x100000001b3ull;
    }
    char extra[96];
    snprintf(extra, sizeof extra, ",\"delta_tail_bytes_total\":%zu,\"delta_hash\":\"%016llx\"", bytes,
             (unsigned long long)hash);
    report(&c, extra);
    tb_snap_encoder_destroy(e);
    tb_rigid_world_destroy(w);
}

extern const tb_world_ops tb_world_rigid_ops;

/* What the worker does first for every snapshot of a rigid room (sim/worker_room.c):
 * the world's bodies as the encoder's input. */
static void rigid_fill_case(void)
{
    static counter c;
    c.name = "rigid-fill-snapshot";
    c.calls = 0;
    const tb_world_ops *ops = &tb_world_rigid_ops;
    void *w = NULL;
    if (ops->create("tower", 1, NULL, &w) != 0) { fprintf(stderr, "bench count: rigid room\n"); exit(1); }
    for (int s = 0; s < 240; s++) {
        ops->step(w, DT);
        if (s % 2 == 0 || s < 120) continue;
        tb_snap_input in;
        begin(&c);
        ops->fill_snapshot(w, &in);
        end(&c);
        if (in.body_count == 0) { fprintf(stderr, "bench count: no bodies\n"); exit(1); }
    }
    report(&c, NULL);
    ops->destroy(w);
}

/* The lag-compensation history of a tower room (sim/world_rigid.c's rigid_step:
 * recorded after every step that moved something; it records every second step). */
static void pose_record_case(void)
{
    static counter c;
    c.name = "pose-record-tower-cycle";
    c.calls = 0;
    tb_rigid_rng rng;
    tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
    tb_pose_history *h = tb_pose_history_create(TB_SCENE_TOWER_BODIES + 24 + 4);
    if (!h) { fprintf(stderr, "bench count: pose history\n"); exit(1); }
    for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
        tb_bench_tower_cycle_input(w, s, &rng);
        uint64_t idle = tb_rigid_world_idle_steps(w);
        tb_rigid_world_step(w, DT);
        if (tb_rigid_world_idle_steps(w) != idle || tb_rigid_world_step_count(w) % TB_POSE_HISTORY_EVERY != 0) continue;
        begin(&c);
        tb_pose_history_record(h, w);
        end(&c);
    }
    report(&c, NULL);
    tb_pose_history_destroy(h);
    tb_rigid_world_destroy(w);
}

static const tb_proto_frame tower_frame = {{-8.0, -1.0, -8.0}, {8.0, 15.0, 8.0}, 0, {0}};

/* A decoder set to encoder e's state (its keyframe in a welcome), as a client joining. */
static void prime_from(tb_snap_decoder *d, tb_snap_encoder *e)
{
    static tb_proto_welcome wel;
    memset(&wel, 0, sizeof wel);
    wel.version = 1; wel.tick_rate = 120; wel.snap_rate = 60;
    strcpy(wel.room, "bench"); strcpy(wel.kind, "rigid"); strcpy(wel.scene, "tower"); strcpy(wel.server, "bench");
    for (int a = 0; a < 3; a++) { wel.st.bounds_min[a] = tower_frame.bounds_min[a]; wel.st.bounds_max[a] = tower_frame.bounds_max[a]; }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_encode_welcome(&sb, &wel, tb_snap_encoder_key(e));
    tb_proto_err err;
    int rc = tb_snap_decoder_apply(d, (const uint8_t *)sb.data, sb.size, &err);
    msgpack_sbuffer_destroy(&sb);
    if (rc) { fprintf(stderr, "bench: welcome: %s\n", err.msg); exit(1); }
}

/* The client's side of snap-tower-cycle: every delta framed as the server
 * sends it and applied by one decoder, primed by the welcome. */
static void snap_decode_cycle_case(void)
{
    static counter c;
    static uint8_t buf[TB_PROTO_MAX_SERVER_MSG];
    c.name = "snap-decode-tower-cycle";
    c.calls = 0;
    tb_rigid_rng rng;
    tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
    tb_snap_encoder *e = tb_snap_encoder_create(&tower_frame, 64);
    tb_snap_decoder *d = tb_snap_decoder_create(256); /* tumble-load's capacity for a tower */
    tb_proto_body bodies[64];
    tb_proto_err err;
    bool primed = false;
    for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
        tb_bench_tower_cycle_input(w, s, &rng);
        tb_rigid_world_step(w, DT);
        if (s % 2 == 0) continue;
        tb_snap_input in = {.tick = (uint32_t)s, .awake = (uint32_t)tb_rigid_world_awake_count(w), .bodies = bodies,
                            .body_count = tb_bench_rigid_bodies(w, bodies)};
        if (tb_snap_encoder_step(e, &in, &err)) { fprintf(stderr, "bench count: encoder: %s\n", err.msg); exit(1); }
        int rc = TB_OK;
        if (!primed) {
            prime_from(d, e);
            primed = true;
        } else {
            size_t n = tb_snap_write(buf, sizeof buf, tb_snap_encoder_delta(e), (uint32_t)s);
            begin(&c);
            rc = tb_snap_decoder_apply(d, buf, n, &err);
            end(&c);
        }
        if (rc) { fprintf(stderr, "bench count: decoder: %s\n", err.msg); exit(1); }
    }
    report(&c, NULL);
    tb_snap_decoder_destroy(d);
    tb_snap_encoder_destroy(e);
    tb_rigid_world_destroy(w);
}

/* Both of a decoder's states agree, cells and last changes. */
static bool same_state(const tb_snap_decoder *a, const tb_snap_decoder *b)
{
    if (tb_snap_decoder_body_count(a) != tb_snap_decoder_body_count(b)) return false;
    for (uint32_t i = 0; i < tb_snap_decoder_body_count(a); i++) {
        int32_t qa[3], ca[3], va[3], ra[3], qb[3], cb[3], vb[3], rb[3];
        int ia, ib;
        tb_snap_decoder_body_q(a, i, qa, &ia, ca, va, ra);
        tb_snap_decoder_body_q(b, i, qb, &ib, cb, vb, rb);
        if (memcmp(qa, qb, sizeof qa) || ia != ib || memcmp(ca, cb, sizeof ca) || memcmp(va, vb, sizeof va) ||
            memcmp(ra, rb, sizeof ra))
            return false;
    }
    return true;
}

/* tumble-bench stream-switch: a client holding the room's own stream (every
 * snapshot of the tower cycle) that moves to a lane's full-rate stream by
 * tick alone, as net/outbox.c's tb__deliver_snapshot once let it (the lane's
 * delta has the base tick the client holds; it now also needs the lane to
 * hold the room's own state, msg->from_room: a budget that has held nothing
 * back since the lane was made from the room's). The lane's encoder starts from a
 * copy of the room's baseline (sim/worker_room.c); lane_bits_per_snapshot is
 * its budget (0: none). At every snapshot the client is set back to the room's
 * state, takes the lane's delta, and is compared with the lane's own state
 * (its keyframe): "wrong" is a client that from then on shows another world
 * than the lane's encoder believes it holds, until its next keyframe. */
void tb_bench_stream_switch(const tb_bench_opts *opts)
{
    (void)opts;
    /* none; 48 kbit/s (a remote client's start, net/link.c) and 24 kbit/s at 60 snapshots/s */
    static const uint32_t budgets[] = {0, 800, 400};
    static uint8_t buf[TB_PROTO_MAX_SERVER_MSG];
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        tb_rigid_rng rng;
        tb_rigid_world *w = tb_bench_tower_cycle_world(&rng);
        tb_snap_encoder *room = tb_snap_encoder_create(&tower_frame, 64), *lane = NULL;
        tb_snap_decoder *client = tb_snap_decoder_create(256), *truth = tb_snap_decoder_create(256);
        tb_proto_body bodies[64];
        int snap = 0, switches = 0, right = 0, wrong = 0, refused = 0;
        for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
            tb_bench_tower_cycle_input(w, s, &rng);
            tb_rigid_world_step(w, DT);
            if (s % 2 == 0) continue;
            tb_snap_input in = {.tick = (uint32_t)s, .awake = (uint32_t)tb_rigid_world_awake_count(w), .bodies = bodies,
                                .body_count = tb_bench_rigid_bodies(w, bodies)};
            tb_proto_err err;
            if (tb_snap_encoder_step(room, &in, &err)) { fprintf(stderr, "bench stream-switch: %s\n", err.msg); exit(1); }
            if (++snap == 1) { prime_from(client, room); continue; }
            if (!lane) { /* as the worker makes a lane's stream: from the room's state of this tick */
                lane = tb_snap_encoder_create(&tower_frame, 64);
                if (!lane || tb_snap_encoder_copy_baseline(lane, room) != TB_OK) { fprintf(stderr, "bench stream-switch: copy\n"); exit(1); }
                if (budgets[b]) tb_snap_encoder_set_budget(lane, budgets[b], 30); /* refresh within 0.5 s, as the worker */
                prime_from(client, room);
                continue;
            }
            if (tb_snap_encoder_step(lane, &in, &err)) { fprintf(stderr, "bench stream-switch: %s\n", err.msg); exit(1); }
            const tb_snap_blob *d = tb_snap_encoder_delta(lane);
            if (d && d->base_tick == tb_snap_decoder_tick(client)) {
                switches++;
                size_t n = tb_snap_write(buf, sizeof buf, d, 0);
                int rc = tb_snap_decoder_apply(client, buf, n, &err);
                prime_from(truth, lane);
                if (rc) refused++;
                else if (same_state(client, truth)) right++;
                else wrong++;
            }
            prime_from(client, room); /* back on the room's own stream, holding its state of this tick */
        }
        printf("{\"case\":\"stream-switch\",\"lane_bits_per_snapshot\":%u,\"switches_by_tick\":%d,\"right\":%d,"
               "\"wrong_state\":%d,\"refused\":%d}\n", budgets[b], switches, right, wrong, refused);
        tb_snap_decoder_destroy(client);
        tb_snap_decoder_destroy(truth);
        tb_snap_encoder_destroy(lane);
        tb_snap_encoder_destroy(room);
        tb_rigid_world_destroy(w);
    }
}

static void dough_case(void)
{
    static counter c;
    c.name = "dough-idle";
    c.calls = 0;
    tb_soft_def def = tb_soft_def_default();
    tb_soft_world *w = tb_soft_world_create(&def, NULL);
    if (!w) { fprintf(stderr, "bench count: soft world\n"); exit(1); }
    for (int s = 0; s < 360; s++) {
        if (s < 240) { tb_soft_world_step(w, DT); continue; }
        begin(&c);
        tb_soft_world_step(w, DT);
        end(&c);
    }
    report(&c, NULL);
    tb_soft_world_destroy(w);
}

/* The cloth budget case: flag and cape in one world (default def: wind
 * 6 m/s, the figure walking, 8 iterations), 1-3 s after creation. */
static void cloth_case(void)
{
    static counter c;
    c.name = "flag+cape";
    c.calls = 0;
    tb_cloth_def def = tb_cloth_def_default();
    def.scene = TB_CLOTH_SCENE_FLAG_AND_CAPE;
    tb_cloth_world *w = tb_cloth_world_create(&def, NULL);
    if (!w) { fprintf(stderr, "bench count: cloth world\n"); exit(1); }
    for (int s = 0; s < 360; s++) {
        if (s < 120) { tb_cloth_world_step(w, TB_CLOTH_DT); continue; }
        begin(&c);
        tb_cloth_world_step(w, TB_CLOTH_DT);
        end(&c);
    }
    report(&c, NULL);
    tb_cloth_world_destroy(w);
}

/* An awake dough: two grabs (opposite corners of the icosahedron) pulled
 * out to 1.8x and held, 1-2 s after they start (an idle dough sleeps). */
static void dough_grab_case(void)
{
    static counter c;
    c.name = "dough-grab";
    c.calls = 0;
    tb_soft_def def = tb_soft_def_default();
    tb_soft_world *w = tb_soft_world_create(&def, NULL);
    if (!w) { fprintf(stderr, "bench count: soft world\n"); exit(1); }
    const float *p = tb_soft_world_positions(w);
    for (int g = 0; g < 2; g++) {
        int v = g == 0 ? 0 : 3;
        int held = tb_soft_world_grab_start(w, tb_v3(p[3 * v], p[3 * v + 1], p[3 * v + 2]));
        tb_soft_world_grab_move(w, held, tb_v3(p[3 * v] * 1.8f, p[3 * v + 1] * 1.8f, p[3 * v + 2] * 1.8f));
    }
    for (int s = 0; s < 240; s++) {
        if (s < 120) { tb_soft_world_step(w, DT); continue; }
        begin(&c);
        tb_soft_world_step(w, DT);
        end(&c);
    }
    report(&c, NULL);
    tb_soft_world_destroy(w);
}

void tb_bench_count(const tb_bench_opts *opts)
{
    (void)opts;
    rigid_case("tower-fall", 0, 1.6, 1.6, 2.6);
    rigid_case("tower-asleep", 0, 0.0, 1.0, 2.0);
    rigid_case("pile1000", 1000, 0.0, 0.17, 1.0);
    tower_cycle_case();
    tower_room_case();
    snap_case();
    dough_case();
    snap_cycle_case();
    snap_decode_cycle_case();
    rigid_fill_case();
    pose_record_case();
    cloth_case();
    dough_grab_case();
}

/* Timing of a tower at rest (all planks asleep from 0.51 s), 1.0-11.0 s. */
void tb_bench_tower_asleep(const tb_bench_opts *opts)
{
    int runs = opts->runs, steps = opts->quick ? 240 : 1200;
    double *med = calloc((size_t)runs, sizeof *med), *times = calloc((size_t)steps, sizeof *times);
    tb_rigid_world_stats st = {0};
    for (int r = 0; r < runs; r++) {
        tb_rigid_world *w = tray(32);
        tb_rigid_scene_tower(w, NULL);
        for (int s = 0; s < 120; s++) tb_rigid_world_step(w, DT);
        for (int s = 0; s < steps; s++) {
            double t0 = tb_bench_now_us();
            tb_rigid_world_step(w, DT);
            times[s] = tb_bench_now_us() - t0;
        }
        med[r] = tb_bench_median(times, (size_t)steps);
        tb_rigid_world_get_stats(w, &st);
        tb_rigid_world_destroy(w);
    }
    printf("{\"scene\":\"tower-asleep\",\"n\":%d,\"steps\":%d,\"runs\":%d,\"median_us\":%.3f,\"awake\":%d,\"idle_steps\":%llu}\n",
           st.bodies, steps, runs, tb_bench_median(med, (size_t)runs), st.awake, (unsigned long long)st.idle_steps);
    fflush(stdout);
    free(med);
    free(times);
}
