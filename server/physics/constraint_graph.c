/* constraint_graph.c: colouring contacts so four can be solved at once.
 *
 * Two contacts may share a SIMD group only if they touch no common awake
 * body (otherwise both lanes would read the same velocity and one update
 * would be lost). Greedy colouring in contact order: each contact takes the
 * lowest colour holding neither of its awake bodies, found in one step from
 * a 32-bit mask of colours per body; static sides (planes, sleeping bodies:
 * solver index 0) never conflict. Contacts
 * that fit none of the TB_GRAPH_COLORS go to an overflow list solved one by
 * one. Each colour is then cut into groups of four lanes (the last one
 * padded with empty lanes that move nothing); contact_solver.c prepares the
 * rows in the lanes.
 *
 * Gauss-Seidel order becomes colour by colour instead of contact by contact;
 * still a fixed order for a given state, so the step stays deterministic.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

_Static_assert(TB_GRAPH_COLORS == 32, "one bit per colour in a uint32_t");

int tb_constraint_graph_init(tb_constraint_graph *g, int contact_capacity)
{
    memset(g, 0, sizeof *g);
    g->group_capacity = contact_capacity / TB_LANES + TB_GRAPH_COLORS + 1;
    g->order = malloc(sizeof *g->order * (size_t)contact_capacity);
    g->overflow = malloc(sizeof *g->overflow * (size_t)contact_capacity);
    g->last_bodies = malloc(sizeof *g->last_bodies * (size_t)contact_capacity);
    g->last_count = -1;
    if (!g->order || !g->overflow || !g->last_bodies) {
        tb_constraint_graph_free(g);
        return TB_PHYS_ERR_NO_MEMORY;
    }
    return TB_PHYS_OK;
}

void tb_constraint_graph_free(tb_constraint_graph *g)
{
    free(g->order);
    free(g->overflow);
    free(g->last_bodies);
    memset(g, 0, sizeof *g);
}

void tb_constraint_graph_reset(tb_constraint_graph *g)
{
    g->group_count = 0;
    g->overflow_count = 0;
    g->last_count = -1;
}

static inline uint64_t pair_of(const tb_contact *c) { return (uint64_t)(uint32_t)c->sa << 32 | (uint32_t)c->sb; }

/* The contacts' solver bodies are those the current groups were built from. */
static bool same_as_last(const tb_constraint_graph *g, const tb_rigid_world *w)
{
    if (g->last_count != w->contact_count) return false;
    for (int i = 0; i < w->contact_count; i++)
        if (g->last_bodies[i] != pair_of(&w->contacts[i])) return false;
    return true;
}

/* Each colour cut into groups of four lanes (rows: tb_contact_solver_prepare),
 * and the slot map, from the colouring. */
static void lay_groups(tb_rigid_world *w)
{
    tb_constraint_graph *g = &w->graph;
    const int *start = g->color_start;
    int n = 0;
    for (int k = 0; k < TB_GRAPH_COLORS; k++) {
        for (int i = start[k]; i < start[k + 1]; i += TB_LANES) {
            assert(n < g->group_capacity);
            tb_contact_wide *group = &g->groups[n];
            for (int lane = 0; lane < TB_LANES; lane++) {
                bool used = i + lane < start[k + 1];
                int index = used ? g->order[i + lane] : -1;
                group->index[lane] = index;
                group->sa[lane] = used ? w->contacts[index].sa : 0;
                group->sb[lane] = used ? w->contacts[index].sb : 0;
                group->body_a[lane] = &w->solver_bodies[group->sa[lane]];
                group->body_b[lane] = &w->solver_bodies[group->sb[lane]];
                if (used) g->slot[index] = n * TB_LANES + lane;
            }
            n++;
        }
    }
    for (int i = 0; i < g->overflow_count; i++) g->slot[g->overflow[i]] = -1;
    g->group_count = n;
}

TB_HOT_CLONES void tb_constraint_graph_build(tb_rigid_world *w)
{
    tb_constraint_graph *g = &w->graph;
    const bool fresh = w->scratch_fresh;
    w->scratch_fresh = false;
    if (same_as_last(g, w)) {
        if (fresh) lay_groups(w);
        return;
    }
    int color_count[TB_GRAPH_COLORS] = {0};
    uint32_t partial = 0; /* colours holding a multiple of four plus 1..3 contacts */
    g->overflow_count = 0;

    for (int i = 0; i < w->contact_count; i++) {
        const tb_contact *c = &w->contacts[i];
        g->last_bodies[i] = pair_of(c);
        /* slot 0 is static: its mask stays 0 so it never blocks a colour */
        uint32_t used = g->body_colors[c->sa] | g->body_colors[c->sb];
        if (used == 0xFFFFFFFFu) {
            g->color_of[i] = -1;
            g->overflow[g->overflow_count++] = i;
            continue;
        }
        /* a colour whose last group of four has an empty lane first */
        uint32_t fill = ~used & partial;
        int color = __builtin_ctz(fill ? fill : ~used);
        if (c->sa) g->body_colors[c->sa] |= 1u << color;
        if (c->sb) g->body_colors[c->sb] |= 1u << color;
        g->color_of[i] = color;
        color_count[color]++;
        partial ^= (color_count[color] % TB_LANES == 1 || color_count[color] % TB_LANES == 0) ? 1u << color : 0u;
    }

    /* contacts by colour (counting sort), clearing the masks on the way */
    int *start = g->color_start;
    start[0] = 0;
    for (int k = 0; k < TB_GRAPH_COLORS; k++) start[k + 1] = start[k] + color_count[k];
    int fill[TB_GRAPH_COLORS];
    memcpy(fill, start, sizeof fill);
    for (int i = 0; i < w->contact_count; i++) {
        g->body_colors[w->contacts[i].sa] = 0;
        g->body_colors[w->contacts[i].sb] = 0;
        int color = g->color_of[i];
        if (color >= 0) g->order[fill[color]++] = i;
    }
    lay_groups(w);
    g->last_count = w->contact_count;
}
