/* bench.h: what every tumble-bench scenario file shares.
 *
 * A scenario is a function that runs its scenes opts->runs times and prints
 * one JSON object per line on stdout (median over the runs for each timing).
 * Scenarios are listed in bench_main.c; `tumble-bench NAME...` runs some. */
#ifndef TB_BENCH_H
#define TB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "physics/rigid_scenes.h"

typedef struct tb_bench_opts {
    int runs;          /* repetitions per scene; report medians (default 5) */
    int quick;         /* 1: shorter scenes, for a smoke run */
} tb_bench_opts;

typedef void (*tb_bench_fn)(const tb_bench_opts *opts);

/* Monotonic time in microseconds, for timing steps. */
static inline double tb_bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Median of n doubles (sorts the array in place). */
double tb_bench_median(double *v, size_t n);
double tb_bench_mean(const double *v, size_t n);

/* The load test's tower room as a fixed script (bench_world_hash.c): a tray
 * with the tower and rng seeded, and the input to give before step s. */
#define TB_BENCH_TOWER_CYCLE_STEPS 1800 /* 15 s: three knock-rebuild cycles */
tb_rigid_world *tb_bench_tower_cycle_world(tb_rigid_rng *rng);
void tb_bench_tower_cycle_input(tb_rigid_world *w, int s, tb_rigid_rng *rng);

#endif
