/* bench_main.c: tumble-bench, the benchmark driver.
 *
 *   tumble-bench [--runs N] [--quick] [scenario ...]
 *
 * Each scenario prints JSON lines (one object per scene) on stdout; with no
 * scenario named, all run. Progress and errors go to stderr. Single thread. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* Scenario entry points, one per file in tests/bench/; add a line to each list. */
void tb_bench_cloth(const tb_bench_opts *opts);
void tb_bench_soft(const tb_bench_opts *opts);
void tb_bench_rigid(const tb_bench_opts *opts);
void tb_bench_proto(const tb_bench_opts *opts);
void tb_bench_proto_budget(const tb_bench_opts *opts);
void tb_bench_count(const tb_bench_opts *opts);
void tb_bench_tower_asleep(const tb_bench_opts *opts);
void tb_bench_world_hash(const tb_bench_opts *opts);
void tb_bench_tower_cycle(const tb_bench_opts *opts);
void tb_bench_tower_rooms(const tb_bench_opts *opts);
void tb_bench_stream_switch(const tb_bench_opts *opts);

static const struct { const char *name; tb_bench_fn fn; } scenarios[] = {
    {"cloth", tb_bench_cloth},
    {"soft", tb_bench_soft},
    {"rigid", tb_bench_rigid},
    {"proto", tb_bench_proto},
    {"proto-budget", tb_bench_proto_budget},
    {"tower-asleep", tb_bench_tower_asleep},
    {"count", tb_bench_count},
    {"world-hash", tb_bench_world_hash},
    {"tower-cycle", tb_bench_tower_cycle},
    {"tower-rooms", tb_bench_tower_rooms},
    {"stream-switch", tb_bench_stream_switch},
    {NULL, NULL} /* end */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tb_bench_median(double *v, size_t n)
{
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tb_bench_mean(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return n ? s / (double)n : 0.0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: tumble-bench [--runs N] [--quick] [scenario ...]\nscenarios:");
    for (size_t i = 0; scenarios[i].name; i++) fprintf(out, " %s", scenarios[i].name);
    fprintf(out, "\n");
}

int main(int argc, char **argv)
{
    tb_bench_opts opts = {.runs = 5, .quick = 0};
    const char *wanted[32];
    int nwanted = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            opts.runs = atoi(argv[++i]);
            if (opts.runs < 1 || opts.runs > 1000) { fprintf(stderr, "tumble-bench: --runs must be 1..1000\n"); return 2; }
        } else if (strcmp(argv[i], "--quick") == 0) {
            opts.quick = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || nwanted == 32) {
            usage(stderr);
            return 2;
        } else {
            wanted[nwanted++] = argv[i];
        }
    }
    for (int w = 0; w < nwanted; w++) {
        size_t i = 0;
        while (scenarios[i].name && strcmp(scenarios[i].name, wanted[w]) != 0) i++;
        if (!scenarios[i].name) { fprintf(stderr, "tumble-bench: unknown scenario '%s'\n", wanted[w]); usage(stderr); return 2; }
    }
    for (size_t i = 0; scenarios[i].name; i++) {
        int run = nwanted == 0;
        for (int w = 0; w < nwanted; w++) run |= strcmp(scenarios[i].name, wanted[w]) == 0;
        if (run) scenarios[i].fn(&opts);
    }
    return 0;
}
