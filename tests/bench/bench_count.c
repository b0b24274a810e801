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
 *   pile1000         tb_rigid_world_step, 0.17-1.0 s of pile 1000
 *   snap-tower-rest  tb_snap_encoder_step, 60 snapshots of a tower at rest
 *   dough-idle       tb_soft_world_step, 2-3 s of an untouched dough
 * Outside valgrind the client requests do nothing and "count" prints the
 * same JSON lines with the wall-clock median per call.
 *
 *   tumble-bench rigid-hash          # FNV-1a of the saved world after the tower
 *                                    # (10 s, ball at 1.6 s) and pile 1000 (6 s)
 * Two builds (say AVX clone and -DTB_NO_CLONES, or before and after a change)
 * step bit-identically iff they print the same hashes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#include "bench/bench.h"
#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "physics/soft.h"
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
    if (!w || tb_rigid_scene_tray(w) != TB_RIGID_OK) { fprintf(stderr, "bench count: rigid world\n"); exit(1); }
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

void tb_bench_count(const tb_bench_opts *opts)
{
    (void)opts;
    rigid_case("tower-fall", 0, 1.6, 1.6, 2.6);
    rigid_case("tower-asleep", 0, 0.0, 1.0, 2.0);
    rigid_case("pile1000", 1000, 0.0, 0.17, 1.0);
    snap_case();
    dough_case();
}

static uint64_t world_hash(const tb_rigid_world *w)
{
    size_t size = tb_rigid_world_save_size(w);
    unsigned char *buf = malloc(size);
    if (!buf || tb_rigid_world_save(w, buf, size, NULL) != TB_RIGID_OK) { fprintf(stderr, "bench count: save\n"); exit(1); }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ buf[i]) * 1099511628211ull;
    free(buf);
    return h;
}

void tb_bench_rigid_hash(const tb_bench_opts *opts)
{
    (void)opts;
    for (int scene = 0; scene < 2; scene++) {
        int n = scene ? 1000 : 0, steps = scene ? 720 : 1200;
        tb_rigid_world *w = tray(scene ? n : 32);
        if (scene) tb_rigid_scene_pile(w, n);
        else tb_rigid_scene_tower(w, NULL);
        for (int s = 0; s < steps; s++) {
            if (!scene && s == 192) tb_rigid_scene_tower_launch_ball(w);
            tb_rigid_world_step(w, DT);
        }
        printf("{\"scene\":\"%s\",\"steps\":%d,\"hash\":\"%016llx\"}\n", scene ? "pile1000" : "tower", steps,
               (unsigned long long)world_hash(w));
        tb_rigid_world_destroy(w);
    }
    fflush(stdout);
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
