/* bench_rigid.c: the rigid world's scenes timed step by step.
 *
 *   tumble-bench rigid
 *
 * Scenes: tower (24 planks, ball launched at 1.6 s), dice (seed 1), pile of
 * N = 100, 400, 1000 cubes. dt = 1/120, 10 iterations, single thread. Each
 * scene runs opts->runs times; every figure is the median over runs of that
 * run's value. The busy window is 1.6-2.6 s for the tower (the collapse) and
 * 0.17-1.0 s otherwise (landing and piling up).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "physics/rigid.h"
#include "physics/rigid_scenes.h"

#define DT (1.0f / 120.0f)

typedef struct scene_run {
    double median_us, mean_us, mean_us_window;
    int asleep_end;
    /* tower only */
    int all_planks_asleep_before_launch;
    double planks_asleep_at;
    double max_plank_speed;
    double min_plank_y;
    int max_contacts;
    int contacts_dropped; /* summed over steps: must be 0 (capacity is enough) */
} scene_run;

enum { SCENE_TOWER, SCENE_DICE, SCENE_PILE };

static void run_scene(int scene, int n, int steps, scene_run *out)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = scene == SCENE_PILE ? n : 32;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w) { fprintf(stderr, "bench_rigid: cannot create world\n"); exit(1); }
    int planks[TB_TOWER_PLANKS];
    tb_rigid_rng rng = tb_rigid_rng_seed(1);
    if (scene == SCENE_TOWER) tb_rigid_scene_tower(w, planks);
    else if (scene == SCENE_DICE) tb_rigid_scene_dice(w, &rng, NULL, NULL);
    else tb_rigid_scene_pile(w, n);

    double *times = malloc(sizeof *times * (size_t)steps);
    double win_lo = scene == SCENE_TOWER ? 1.6 : 0.17, win_hi = scene == SCENE_TOWER ? 2.6 : 1.0;
    double win_sum = 0.0;
    int win_n = 0, launched = 0;
    out->max_plank_speed = 0.0;
    out->min_plank_y = 1e9;
    out->planks_asleep_at = -1.0;
    out->all_planks_asleep_before_launch = 0;
    out->max_contacts = 0;
    out->contacts_dropped = 0;
    for (int s = 0; s < steps; s++) {
        double t = (double)s * DT; /* time at the start of this step */
        if (scene == SCENE_TOWER && !launched && t >= TB_TOWER_LAUNCH_TIME - 1e-6) {
            int awake_planks = 0;
            for (int i = 0; i < TB_TOWER_PLANKS; i++) awake_planks += tb_rigid_body_is_awake(w, planks[i]);
            out->all_planks_asleep_before_launch = awake_planks == 0;
            tb_rigid_scene_tower_launch_ball(w);
            launched = 1;
        }
        double t0 = tb_bench_now_us();
        tb_rigid_world_step(w, DT);
        times[s] = tb_bench_now_us() - t0;
        double t_end = (double)(s + 1) * DT;
        if (t >= win_lo && t < win_hi) { win_sum += times[s]; win_n++; }
        tb_rigid_world_stats stats;
        tb_rigid_world_get_stats(w, &stats);
        if (stats.contacts > out->max_contacts) out->max_contacts = stats.contacts;
        out->contacts_dropped += stats.contacts_dropped + stats.pairs_dropped;
        if (scene == SCENE_TOWER) {
            int asleep = 0;
            for (int i = 0; i < TB_TOWER_PLANKS; i++) {
                tb_rigid_body_info info;
                tb_rigid_body_get_info(w, planks[i], &info);
                asleep += !info.awake;
                if (t_end >= 0.5 && t_end <= 1.5) {
                    double v = tb_v3_len(info.linear_velocity);
                    if (v > out->max_plank_speed) out->max_plank_speed = v;
                }
                if (info.position.y < out->min_plank_y) out->min_plank_y = info.position.y;
            }
            if (asleep == TB_TOWER_PLANKS && out->planks_asleep_at < 0 && !launched) out->planks_asleep_at = t_end;
        }
    }
    out->mean_us = tb_bench_mean(times, (size_t)steps);
    out->median_us = tb_bench_median(times, (size_t)steps);
    out->mean_us_window = win_n ? win_sum / win_n : 0.0;
    out->asleep_end = tb_rigid_world_body_count(w) - tb_rigid_world_awake_count(w);
    free(times);
    tb_rigid_world_destroy(w);
}

static double median_of(scene_run *runs, int n, size_t offset)
{
    double v[1000];
    for (int i = 0; i < n; i++) v[i] = *(double *)((char *)&runs[i] + offset);
    return tb_bench_median(v, (size_t)n);
}

/* The least disturbed run: on a shared machine the other processes only
 * ever add time, so the minimum is the better estimate of the code's cost. */
static double min_of(scene_run *runs, int n, size_t offset)
{
    double m = 1e300;
    for (int i = 0; i < n; i++) {
        double v = *(double *)((char *)&runs[i] + offset);
        if (v < m) m = v;
    }
    return m;
}

static void bench_scene(const tb_bench_opts *opts, const char *name, int scene, int n, double seconds)
{
    int steps = (int)(seconds * 120.0 + 0.5);
    int runs = opts->runs;
    scene_run *r = calloc((size_t)runs, sizeof *r);
    for (int i = 0; i < runs; i++) run_scene(scene, n, steps, &r[i]);
    printf("{\"scene\":\"%s\",\"n\":%d,\"steps\":%d,\"runs\":%d,\"median_us\":%.2f,\"mean_us\":%.2f,"
           "\"mean_us_window\":%.2f,\"min_run_mean_us_window\":%.2f,\"asleep_end\":%d,\"max_contacts\":%d,\"dropped\":%d",
           name, n, steps, runs, median_of(r, runs, offsetof(scene_run, median_us)),
           median_of(r, runs, offsetof(scene_run, mean_us)), median_of(r, runs, offsetof(scene_run, mean_us_window)),
           min_of(r, runs, offsetof(scene_run, mean_us_window)), r[0].asleep_end, r[0].max_contacts,
           r[0].contacts_dropped);
    if (scene == SCENE_TOWER)
        printf(",\"all_planks_asleep_before_launch\":%s,\"planks_asleep_at_s\":%.3f,"
               "\"max_plank_speed_0_5_to_1_5\":%.5f,\"min_plank_y\":%.4f",
               r[0].all_planks_asleep_before_launch ? "true" : "false", r[0].planks_asleep_at, r[0].max_plank_speed,
               r[0].min_plank_y);
    printf("}\n");
    fflush(stdout);
    free(r);
}

void tb_bench_rigid(const tb_bench_opts *opts)
{
    double tower_s = opts->quick ? 3.0 : 10.0, other_s = opts->quick ? 1.5 : 6.0;
    bench_scene(opts, "tower", SCENE_TOWER, TB_SCENE_TOWER_BODIES, tower_s);
    bench_scene(opts, "dice", SCENE_DICE, TB_SCENE_DICE_BODIES, other_s);
    bench_scene(opts, "pile", SCENE_PILE, 100, other_s);
    bench_scene(opts, "pile", SCENE_PILE, 400, other_s);
    bench_scene(opts, "pile", SCENE_PILE, 1000, other_s);
}
