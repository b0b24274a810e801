/* rigid_scratch.c: the arrays a step rebuilds from nothing (rigid_core.h),
 * a world's own or shared by the worlds one thread steps (rigid.h).
 *
 * Why share: a knocked tower's step writes some 150 KB of contacts, solver
 * rows and groups. A server worker steps a hundred or more rooms in turn, so
 * with a scratch per room every step found its arrays evicted by the rooms
 * stepped since and brought them back from memory: a tower room stepped
 * among 149 others took about a tenth longer than with one scratch for all.
 * A world's persistent state (bodies, warm-start cache, its colouring) stays
 * its own either way, so the results are the same bits.
 *
 * Growing replaces every array at once (and counts an attach, so each world
 * points its fields at the new ones before its next step); the never-written
 * contact past the end, which an empty solver lane reads, is then at the
 * new capacity, which no world's step reaches.
 */
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

tb_rigid_scratch *tb_rigid_scratch_create(void) { return calloc(1, sizeof(tb_rigid_scratch)); }

static void free_arrays(tb_rigid_scratch *s)
{
    free(s->frames);
    free(s->solver_index);
    free(s->solver_bodies);
    free(s->inv_inertia_world);
    free(s->inv_mass);
    free(s->grid_entries);
    free(s->grid_sorted);
    free(s->bucket_start);
    free(s->oversized);
    free(s->min_cell);
    free(s->pairs);
    free(s->pairs_tmp);
    free(s->contacts);
    free(s->points);
    free(s->manifold_start);
    free(s->cache_used);
    free(s->body_colors);
    free(s->color_of);
    free(s->slot);
    free(s->groups);
}

void tb_rigid_scratch_destroy(tb_rigid_scratch *s)
{
    if (!s) return;
    free_arrays(s);
    free(s);
}

static int max_int(int a, int b) { return a > b ? a : b; }

int tb_rigid__scratch_fit(tb_rigid_scratch *s, const tb_rigid_world *w)
{
    if (s->body_cap >= w->capacity && s->contact_cap >= w->contact_capacity && s->pair_cap >= w->pair_capacity &&
        s->entry_cap >= w->broad_phase.entry_capacity && s->table_cap >= w->broad_phase.table_capacity &&
        s->group_cap >= w->graph.group_capacity)
        return TB_PHYS_OK;
    tb_rigid_scratch n = {
        .body_cap = max_int(s->body_cap, w->capacity),
        .contact_cap = max_int(s->contact_cap, w->contact_capacity),
        .pair_cap = max_int(s->pair_cap, w->pair_capacity),
        .entry_cap = max_int(s->entry_cap, w->broad_phase.entry_capacity),
        .table_cap = max_int(s->table_cap, w->broad_phase.table_capacity),
        .group_cap = max_int(s->group_cap, w->graph.group_capacity),
    };
    size_t cap = (size_t)n.body_cap, ccap = (size_t)n.contact_cap;
    n.frames = calloc(cap, sizeof *n.frames);
    n.solver_index = calloc(cap, sizeof *n.solver_index);
    n.solver_bodies = calloc(cap + 1, sizeof *n.solver_bodies);
    /* + 2: the wide preparation loads each matrix row as 16 bytes */
    n.inv_inertia_world = calloc(cap + 2, sizeof *n.inv_inertia_world);
    n.inv_mass = calloc(cap + 1, sizeof *n.inv_mass);
    n.grid_entries = malloc(sizeof *n.grid_entries * (size_t)n.entry_cap);
    n.grid_sorted = malloc(sizeof *n.grid_sorted * (size_t)n.entry_cap);
    n.bucket_start = malloc(sizeof *n.bucket_start * ((size_t)n.table_cap + 1));
    n.oversized = malloc(sizeof *n.oversized * cap);
    n.min_cell = malloc(sizeof *n.min_cell * 3 * cap);
    n.pairs = calloc((size_t)n.pair_cap, sizeof *n.pairs);
    n.pairs_tmp = calloc((size_t)n.pair_cap, sizeof *n.pairs_tmp);
    /* + 1: the zeroed entry at the capacity is what an empty solver lane
     * reads (contact_solver.c); nothing writes it */
    n.contacts = calloc(ccap + 1, sizeof *n.contacts);
    n.points = calloc(ccap + 1, sizeof *n.points);
    n.manifold_start = calloc(ccap + 1, sizeof *n.manifold_start);
    n.cache_used = calloc(ccap, 1);
    n.body_colors = calloc(cap + 1, sizeof *n.body_colors);
    n.color_of = malloc(sizeof *n.color_of * ccap);
    n.slot = malloc(sizeof *n.slot * ccap);
    n.groups = aligned_alloc(64, ((sizeof *n.groups * (size_t)n.group_cap) + 63) / 64 * 64);
    if (!n.frames || !n.solver_index || !n.solver_bodies || !n.inv_inertia_world || !n.inv_mass || !n.grid_entries ||
        !n.grid_sorted || !n.bucket_start || !n.oversized || !n.min_cell || !n.pairs || !n.pairs_tmp || !n.contacts ||
        !n.points || !n.manifold_start || !n.cache_used || !n.body_colors || !n.color_of || !n.slot || !n.groups) {
        free_arrays(&n);
        return TB_PHYS_ERR_NO_MEMORY;
    }
    free_arrays(s);
    n.attached = s->attached + 1; /* no world's count: every one attaches again */
    *s = n;
    return TB_PHYS_OK;
}

void tb_rigid__attach(tb_rigid_world *w)
{
    tb_rigid_scratch *s = w->scratch;
    w->frames = s->frames;
    w->solver_index = s->solver_index;
    w->solver_bodies = s->solver_bodies;
    w->inv_inertia_world = s->inv_inertia_world;
    w->inv_mass = s->inv_mass;
    w->broad_phase.entries = s->grid_entries;
    w->broad_phase.sorted = s->grid_sorted;
    w->broad_phase.bucket_start = s->bucket_start;
    w->broad_phase.oversized = s->oversized;
    w->broad_phase.min_cell = s->min_cell;
    w->pairs = s->pairs;
    w->pairs_tmp = s->pairs_tmp;
    w->contacts = s->contacts;
    w->points = s->points;
    w->manifold_start = s->manifold_start;
    w->cache_used = s->cache_used;
    w->graph.body_colors = s->body_colors;
    w->graph.color_of = s->color_of;
    w->graph.slot = s->slot;
    w->graph.groups = s->groups;
    w->zero_contact = s->contact_cap;
    w->scratch_fresh = true;
    w->attached = ++s->attached;
}
