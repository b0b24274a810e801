/* bench_cloth_soft.c: tumble-bench scenarios for the cloth and soft worlds.
 *
 *   cloth: scenes "flag" (16 x 10, wind 6 m/s), "cape" (12 x 17 on the walking
 *          figure) and "flag+cape" (both in one world, the budget case), at the
 *          default 8 iterations.
 *   soft:  scene "dough" (812 vertices) idle and with two grabs held.
 *
 * Each run warms the world up for 1 s (so it is in motion, not at rest), then
 * times every step of the measured stretch; a run reports its median and mean
 * step, and the line gives the medians of those over opts->runs runs. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in bench.h */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "physics/cloth.h"
#include "physics/soft.h"

void tb_bench_cloth(const tb_bench_opts *opts);
void tb_bench_soft(const tb_bench_opts *opts);

#define MAX_RUNS 1000

typedef struct run_times { double median[MAX_RUNS], mean[MAX_RUNS]; } run_times;

static void time_cloth_scene(const char *name, tb_cloth_scene scene, const tb_bench_opts *opts)
{
    int steps = opts->quick ? 240 : 1200;
    double *step_us = malloc(sizeof(double) * (size_t)steps);
    static run_times rt;
    int points = 0, constraints = 0;
    if (!step_us) return;
    for (int r = 0; r < opts->runs; r++) {
        tb_cloth_def def = tb_cloth_def_default();
        def.scene = scene;
        tb_cloth_world *w = tb_cloth_world_create(&def, NULL);
        if (!w) { fprintf(stderr, "tumble-bench: cloth world create failed\n"); free(step_us); return; }
        for (int s = 0; s < 120; s++) tb_cloth_world_step(w, TB_CLOTH_DT);
        for (int s = 0; s < steps; s++) {
            double t0 = tb_bench_now_us();
            tb_cloth_world_step(w, TB_CLOTH_DT);
            step_us[s] = tb_bench_now_us() - t0;
        }
        rt.mean[r] = tb_bench_mean(step_us, (size_t)steps);
        rt.median[r] = tb_bench_median(step_us, (size_t)steps);
        points = constraints = 0;
        for (int i = 0; i < tb_cloth_world_piece_count(w); i++) {
            tb_cloth_view v;
            tb_cloth_world_get_cloth(w, i, &v);
            points += v.point_count;
            constraints += v.constraint_count;
        }
        tb_cloth_world_destroy(w);
    }
    printf("{\"scene\":\"%s\",\"steps\":%d,\"runs\":%d,\"median_us\":%.2f,\"mean_us\":%.2f,\"points\":%d,"
           "\"constraints\":%d,\"iterations\":8,\"capsules\":%d}\n",
           name, steps, opts->runs, tb_bench_median(rt.median, (size_t)opts->runs),
           tb_bench_median(rt.mean, (size_t)opts->runs), points, constraints,
           scene == TB_CLOTH_SCENE_FLAG ? 1 : (scene == TB_CLOTH_SCENE_CAPE ? 6 : 7));
    fflush(stdout);
    free(step_us);
}

void tb_bench_cloth(const tb_bench_opts *opts)
{
    time_cloth_scene("flag", TB_CLOTH_SCENE_FLAG, opts);
    time_cloth_scene("cape", TB_CLOTH_SCENE_CAPE, opts);
    time_cloth_scene("flag+cape", TB_CLOTH_SCENE_FLAG_AND_CAPE, opts);
}

static void time_dough(const char *name, int grabs, const tb_bench_opts *opts)
{
    int steps = opts->quick ? 240 : 1200;
    double *step_us = malloc(sizeof(double) * (size_t)steps);
    static run_times rt;
    tb_soft_def def = tb_soft_def_default();
    if (!step_us) return;
    for (int r = 0; r < opts->runs; r++) {
        tb_soft_world *w = tb_soft_world_create(&def, NULL);
        if (!w) { fprintf(stderr, "tumble-bench: soft world create failed\n"); free(step_us); return; }
        const float *p = tb_soft_world_positions(w);
        for (int g = 0; g < grabs; g++) {
            int v = g == 0 ? 0 : 3; /* two corners of the icosahedron, far apart */
            int held = tb_soft_world_grab_start(w, tb_v3(p[3 * v], p[3 * v + 1], p[3 * v + 2]));
            tb_soft_world_grab_move(w, held, tb_v3(p[3 * v] * 1.8f, p[3 * v + 1] * 1.8f, p[3 * v + 2] * 1.8f));
        }
        for (int s = 0; s < 120; s++) tb_soft_world_step(w, 1.0f / 120.0f);
        for (int s = 0; s < steps; s++) {
            double t0 = tb_bench_now_us();
            tb_soft_world_step(w, 1.0f / 120.0f);
            step_us[s] = tb_bench_now_us() - t0;
        }
        rt.mean[r] = tb_bench_mean(step_us, (size_t)steps);
        rt.median[r] = tb_bench_median(step_us, (size_t)steps);
        tb_soft_world_destroy(w);
    }
    printf("{\"scene\":\"%s\",\"steps\":%d,\"runs\":%d,\"median_us\":%.2f,\"mean_us\":%.2f,\"vertices\":812,"
           "\"edges\":2430,\"triangles\":1620,\"substeps\":%d,\"grabs\":%d}\n",
           name, steps, opts->runs, tb_bench_median(rt.median, (size_t)opts->runs),
           tb_bench_median(rt.mean, (size_t)opts->runs), def.substeps, grabs);
    fflush(stdout);
    free(step_us);
}

void tb_bench_soft(const tb_bench_opts *opts)
{
    time_dough("dough", 0, opts);
    time_dough("dough-2-grabs", 2, opts);
}
