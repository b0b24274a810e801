/* broad_phase.c: candidate pairs from a uniform grid, rebuilt every step.
 *
 * The cell size is the largest body's AABB (so a body covers at most 2x2x2
 * cells); a body spanning more (a fast or a huge one) goes on an "oversized"
 * list tested against every body. Entries (cell, body) are bucketed by a hash
 * of the cell with a counting sort into a table sized for this step's entry
 * count, so an almost empty world pays almost nothing. Inside a bucket every
 * two entries of the same cell are a candidate; a pair that shares several
 * cells is reported once, by the cell that holds the minimum corner of the
 * two AABBs' overlap. Pairs of two sleeping bodies are skipped (nothing
 * between them can change).
 *
 * Pairs are then radix-sorted by key (lower id, higher id), which fixes the
 * solver's order independently of the hash: determinism (handbook 168) and a
 * monotone walk through the warm-start cache.
 *
 * Worlds of at most SMALL_WORLD (32) bodies skip the grid and test all pairs,
 * which is cheaper at that size; the grid takes over beyond it.
 */
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

#define MAX_CELLS_PER_BODY 8
#define CELL_BIAS (1 << 20) /* cell coordinates are stored offset, 21 bits each */

void tb_broad_phase_size(tb_broad_phase *bp, int body_capacity)
{
    memset(bp, 0, sizeof *bp);
    bp->entry_capacity = body_capacity * MAX_CELLS_PER_BODY;
    int table = 64;
    while (table < 2 * bp->entry_capacity) table *= 2;
    bp->table_capacity = table;
}

/* floor(x / cell), clamped to the packable range. Truncation plus a fix-up
 * for negatives: floorf is a library call without SSE4.1, and this runs nine
 * times per body and pair. */
static inline int cell_coord(float x, float inv_cell)
{
    /* positions are bounded (|x| <= 1e4 at creation), but velocities are not */
    float c = tb_clampf(x * inv_cell, -(float)(CELL_BIAS - 2), (float)(CELL_BIAS - 2));
    int i = (int)c;
    return (float)i > c ? i - 1 : i;
}

static inline uint64_t cell_pack(int x, int y, int z)
{
    return ((uint64_t)(uint32_t)(x + CELL_BIAS) << 42) | ((uint64_t)(uint32_t)(y + CELL_BIAS) << 21) |
           (uint64_t)(uint32_t)(z + CELL_BIAS);
}

static inline uint32_t cell_hash(uint64_t cell)
{
    cell ^= cell >> 31;
    cell *= 0x9E3779B97F4A7C15ull;
    cell ^= cell >> 29;
    return (uint32_t)cell;
}

static inline bool aabb_overlap(const tb_body_frame *a, const tb_body_frame *b)
{
    return a->aabb_min.x <= b->aabb_max.x && b->aabb_min.x <= a->aabb_max.x && a->aabb_min.y <= b->aabb_max.y &&
           b->aabb_min.y <= a->aabb_max.y && a->aabb_min.z <= b->aabb_max.z && b->aabb_min.z <= a->aabb_max.z;
}

static inline void add_pair(tb_rigid_world *w, int a, int b)
{
    if (a > b) { int t = a; a = b; b = t; }
    if (w->pair_count == w->pair_capacity) { w->broad_phase.pairs_dropped++; return; }
    tb_pair *p = &w->pairs[w->pair_count++];
    p->key = ((uint32_t)a << 16) | (uint32_t)b;
    p->a = a;
    p->b = b;
}

/* LSD radix sort on the 32-bit key, 8 bits per pass; insertion sort when short. */
static void sort_pairs(tb_pair *pairs, tb_pair *tmp, int n)
{
    if (n < 48) {
        for (int i = 1; i < n; i++) {
            tb_pair p = pairs[i];
            int j = i - 1;
            while (j >= 0 && pairs[j].key > p.key) { pairs[j + 1] = pairs[j]; j--; }
            pairs[j + 1] = p;
        }
        return;
    }
    tb_pair *src = pairs, *dst = tmp;
    for (int shift = 0; shift < 32; shift += 8) {
        uint32_t count[257] = {0};
        for (int i = 0; i < n; i++) count[((src[i].key >> shift) & 0xFF) + 1]++;
        if (count[1] == (uint32_t)n && shift > 0) continue; /* all zero in this byte */
        for (int i = 0; i < 256; i++) count[i + 1] += count[i];
        for (int i = 0; i < n; i++) dst[count[(src[i].key >> shift) & 0xFF]++] = src[i];
        tb_pair *t = src; src = dst; dst = t;
    }
    if (src != pairs) memcpy(pairs, src, sizeof *pairs * (size_t)n);
}

/* A handful of bodies (the tower, the dice tray) is cheaper to test all
 * against all than to hash into a grid: 300 AABB tests for 25 bodies cost
 * less than clearing and scanning the bucket table. The live bodies' AABB
 * bounds are gathered by axis, then each body is tested against the later
 * ones eight at a time (the six comparisons of aabb_overlap, lane by lane,
 * as a bit per body); the hits come out in id order, so the pairs are in key
 * order directly. */
#define SMALL_WORLD 32

/* tb_f8_splat as two halves: GCC 12 warns (-Wmaybe-uninitialized, a false
 * alarm) about tb_f8_splat's lanes where its result meets these loads. */
TB_SIMD_INLINE tb_f8 splat_halves(float x)
{
    const tb_f4 h = tb_f4_splat(x);
    return TB_F8_JOIN(h, h);
}

static inline __attribute__((always_inline)) void all_pairs(tb_rigid_world *w)
{
    const tb_body *bodies = w->bodies;
    /* lane k: the k-th live body; lanes past the last stay zero, masked off */
    float lo[3][SMALL_WORLD] = {{0.0f}}, hi[3][SMALL_WORLD] = {{0.0f}};
    int32_t id[SMALL_WORLD];
    uint32_t awake = 0;
    int n = 0;
    for (int i = 0; i < w->body_end; i++) {
        if (!bodies[i].alive) continue;
        const tb_body_frame *f = &w->frames[i];
        lo[0][n] = f->aabb_min.x, lo[1][n] = f->aabb_min.y, lo[2][n] = f->aabb_min.z;
        hi[0][n] = f->aabb_max.x, hi[1][n] = f->aabb_max.y, hi[2][n] = f->aabb_max.z;
        awake |= (uint32_t)!bodies[i].sleeping << n;
        id[n++] = i;
    }
    const uint64_t live = ((uint64_t)1 << n) - 1;
    for (int k = 0; k + 1 < n; k++) {
        /* the later bodies, and of those only the awake when k sleeps */
        uint32_t want = (uint32_t)(live & ~(((uint64_t)2 << k) - 1));
        if (!(awake >> k & 1u)) want &= awake;
        if (!want) continue;
        const tb_f8 lx = splat_halves(lo[0][k]), ly = splat_halves(lo[1][k]), lz = splat_halves(lo[2][k]);
        const tb_f8 hx = splat_halves(hi[0][k]), hy = splat_halves(hi[1][k]), hz = splat_halves(hi[2][k]);
        uint32_t hit = 0;
        for (int j = (k + 1) & ~7; j < n; j += 8) {
            tb_f8 v = tb_f8_lane_weights();
            v = tb_f8_keep_le(v, lx, tb_f8_load(&hi[0][j])), v = tb_f8_keep_le(v, tb_f8_load(&lo[0][j]), hx);
            v = tb_f8_keep_le(v, ly, tb_f8_load(&hi[1][j])), v = tb_f8_keep_le(v, tb_f8_load(&lo[1][j]), hy);
            v = tb_f8_keep_le(v, lz, tb_f8_load(&hi[2][j])), v = tb_f8_keep_le(v, tb_f8_load(&lo[2][j]), hz);
            hit |= tb_f8_weight_bits(v) << j;
        }
        for (hit &= want; hit; hit &= hit - 1) add_pair(w, id[k], id[__builtin_ctz(hit)]);
    }
}

/* The update in four phases, each a function of its own (inlined into the
 * AVX and baseline clones of tb_broad_phase_update_pairs alike). */
#define TB__PHASE static inline __attribute__((always_inline))

/* Every live body into the grid cells its AABB touches (at most 2 per axis);
 * a body that spans more goes to the oversized list. Returns the entry count. */
TB__PHASE int insert_entries(tb_rigid_world *w, float inv_cell, int *oversized_count)
{
    tb_broad_phase *bp = &w->broad_phase;
    const tb_body *bodies = w->bodies;
    int entry_count = 0, oversized = 0;
    for (int i = 0; i < w->body_end; i++) {
        if (!bodies[i].alive) continue;
        const tb_body_frame *f = &w->frames[i];
        int x0 = cell_coord(f->aabb_min.x, inv_cell), x1 = cell_coord(f->aabb_max.x, inv_cell);
        int y0 = cell_coord(f->aabb_min.y, inv_cell), y1 = cell_coord(f->aabb_max.y, inv_cell);
        int z0 = cell_coord(f->aabb_min.z, inv_cell), z1 = cell_coord(f->aabb_max.z, inv_cell);
        bp->min_cell[3 * i] = x0;
        bp->min_cell[3 * i + 1] = y0;
        bp->min_cell[3 * i + 2] = z0;
        /* at most 2 cells per axis (2x2x2 = MAX_CELLS_PER_BODY); compared per
         * axis so that a huge AABB cannot overflow a product */
        if (x1 - x0 > 1 || y1 - y0 > 1 || z1 - z0 > 1) {
            bp->oversized[oversized++] = i;
            continue;
        }
        for (int x = x0; x <= x1; x++)
            for (int y = y0; y <= y1; y++)
                for (int z = z0; z <= z1; z++) {
                    tb_grid_entry *e = &bp->entries[entry_count++];
                    e->cell = cell_pack(x, y, z);
                    e->body = i;
                }
    }
    *oversized_count = oversized;
    return entry_count;
}

/* Counting sort of the entries into hash buckets; afterwards
 * bucket_start[b] is the END of bucket b. */
TB__PHASE void sort_into_buckets(tb_broad_phase *bp, int entry_count)
{
    uint32_t table = 64;
    while (table < (uint32_t)(2 * entry_count)) table *= 2;
    assert((int)table <= bp->table_capacity);
    uint32_t mask = table - 1;
    uint32_t *start = bp->bucket_start;
    memset(start, 0, sizeof *start * ((size_t)table + 1));
    for (int i = 0; i < entry_count; i++) {
        bp->entries[i].bucket = cell_hash(bp->entries[i].cell) & mask;
        start[bp->entries[i].bucket + 1]++;
    }
    for (uint32_t i = 0; i < table; i++) start[i + 1] += start[i];
    for (int i = 0; i < entry_count; i++) {
        /* start[b] is advanced while filling; it ends as the start of b + 1 */
        bp->sorted[start[bp->entries[i].bucket]++] = bp->entries[i];
    }
}

/* Pairs of entries that share a cell, each reported once. */
TB__PHASE void pairs_in_buckets(tb_rigid_world *w, int entry_count)
{
    tb_broad_phase *bp = &w->broad_phase;
    const tb_body *bodies = w->bodies;
    const uint32_t *start = bp->bucket_start;
    /* entry by entry, each against the rest of its bucket (which ends where
     * the next begins): no walk over the table's empty buckets */
    for (int i = 0; i + 1 < entry_count; i++) {
        const tb_grid_entry *ei = &bp->sorted[i];
        const tb_body *bi = &bodies[ei->body];
        const uint32_t end = start[ei->bucket];
        for (uint32_t j = (uint32_t)i + 1; j < end; j++) {
            const tb_grid_entry *ej = &bp->sorted[j];
            if (ej->cell != ei->cell) continue;
            const tb_body *bj = &bodies[ej->body];
            if (bi->sleeping && bj->sleeping) continue;
            const tb_body_frame *fi = &w->frames[ei->body], *fj = &w->frames[ej->body];
            if (!aabb_overlap(fi, fj)) continue;
            /* report in the cell holding the overlap's minimum corner only:
             * floor is monotonic, so that cell is the max of the two
             * bodies' minimum cells */
            const int32_t *mi = &bp->min_cell[3 * ei->body], *mj = &bp->min_cell[3 * ej->body];
            int cx = mi[0] > mj[0] ? mi[0] : mj[0];
            int cy = mi[1] > mj[1] ? mi[1] : mj[1];
            int cz = mi[2] > mj[2] ? mi[2] : mj[2];
            if (cell_pack(cx, cy, cz) != ei->cell) continue;
            add_pair(w, ei->body, ej->body);
        }
    }
}

/* Oversized bodies against everything (once per pair). */
TB__PHASE void pairs_of_oversized(tb_rigid_world *w, int oversized)
{
    const tb_broad_phase *bp = &w->broad_phase;
    const tb_body *bodies = w->bodies;
    for (int k = 0; k < oversized; k++) {
        int o = bp->oversized[k];
        for (int i = 0; i < w->body_end; i++) {
            if (i == o || !bodies[i].alive) continue;
            if (bodies[i].sleeping && bodies[o].sleeping) continue;
            bool i_oversized = false;
            for (int m = 0; m < oversized; m++) i_oversized |= bp->oversized[m] == i;
            if (i_oversized && i < o) continue;
            if (aabb_overlap(&w->frames[o], &w->frames[i])) add_pair(w, o, i);
        }
    }
}

TB_HOT_CLONES void tb_broad_phase_update_pairs(tb_rigid_world *w)
{
    const tb_body *bodies = w->bodies;
    w->pair_count = 0;
    if (w->body_count <= SMALL_WORLD) {
        all_pairs(w);
        return;
    }

    /* cell size: the largest AABB among non-moving extents (bounding diameter) */
    float cell = 0.1f;
    for (int i = 0; i < w->body_end; i++)
        if (bodies[i].alive) cell = tb_maxf(cell, 2.0f * bodies[i].radius + TB_SPECULATIVE_MARGIN);
    cell = tb_minf(cell, 8.0f);

    int oversized = 0;
    int entry_count = insert_entries(w, 1.0f / cell, &oversized);
    sort_into_buckets(&w->broad_phase, entry_count);
    pairs_in_buckets(w, entry_count);
    pairs_of_oversized(w, oversized);
    sort_pairs(w->pairs, w->pairs_tmp, w->pair_count);
}
