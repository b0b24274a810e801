/* load_hist.c: log-linear histograms for latencies and jitter.
 *
 * A load run collects millions of samples (2,000 clients x 60 snapshots/s x a
 * minute); keeping them all would cost more than the clients themselves. A
 * histogram with 64 sub-buckets per power of two keeps every quantile within
 * about 1.5 % of the true sample, in a fixed 9 KB. */
#define _GNU_SOURCE
#include "load/load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bucket of an integer value v (us):
 *   v < 128                 : bucket v (exact)
 *   2^e <= v < 2^(e+1), e>=7 : 128 + (e - 7) * 64 + (v >> (e - 6)) - 64
 * i.e. the top 7 bits of v select the bucket inside its octave. */
static int tl__bucket(uint64_t v)
{
    if (v < 128)
        return (int)v;
    int e = 63 - __builtin_clzll(v);
    int b = 128 + (e - 7) * 64 + (int)(v >> (e - 6)) - 64;
    return b < TL_HIST_BUCKETS ? b : TL_HIST_BUCKETS - 1;
}

/* Lower edge and width of bucket b (inverse of tl__bucket). */
static void tl__edges(int b, double *lo, double *width)
{
    if (b < 128) {
        *lo = b;
        *width = 1;
        return;
    }
    int e = (b - 128) / 64 + 7, sub = (b - 128) % 64 + 64;
    *width = ldexp(1.0, e - 6);
    *lo = sub * *width;
}

void tl_hist_add(tl_hist *h, double us)
{
    if (!(us >= 0))
        us = 0;
    if (us > 1e12)
        us = 1e12;
    h->bucket[tl__bucket((uint64_t)us)]++;
    h->count++;
    h->sum_us += us;
    if (us > h->max_us)
        h->max_us = us;
}

double tl_hist_quantile(const tl_hist *h, double q)
{
    if (!h->count)
        return 0;
    double rank = q * (double)h->count, seen = 0;
    for (int b = 0; b < TL_HIST_BUCKETS; b++) {
        if (!h->bucket[b])
            continue;
        if (seen + h->bucket[b] >= rank) {
            double lo, width;
            tl__edges(b, &lo, &width);
            double v = lo + width * ((rank - seen) / h->bucket[b]);
            return v > h->max_us ? h->max_us : v;
        }
        seen += h->bucket[b];
    }
    return h->max_us;
}

void tl_hist_merge(tl_hist *into, const tl_hist *from)
{
    for (int b = 0; b < TL_HIST_BUCKETS; b++)
        into->bucket[b] += from->bucket[b];
    into->count += from->count;
    into->sum_us += from->sum_us;
    if (from->max_us > into->max_us)
        into->max_us = from->max_us;
}

static int tl__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double tl_quantile_sorted(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, tl__cmp_double);
    size_t i = (size_t)ceil(q * (double)n);
    if (i > 0)
        i--;
    return v[i < n ? i : n - 1];
}
