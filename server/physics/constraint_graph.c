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
 *
 * The groups are then packed: in that order, each contact goes to the first
 * group with a free lane after the last group holding one of its awake
 * bodies. Every body still sees its contacts in the same order, each from
 * the same velocities, so the sweep computes the same bits as with one
 * colour's groups after another's; but a colour's partly empty last group
 * takes contacts of later colours (a tower's colours hold a few contacts
 * each; over the tower cycle the lanes go from 63 % to 67 % full: a
 * manifold's points share both bodies, so they still take one group each).
 * A contact never lands later than its colour's group would be (the contacts
 * before it in that order fill at most the lanes of the groups up to its
 * own), so packing needs no more groups; it costs a few dozen instructions
 * a contact, so it runs only where the colours' last groups leave at least
 * a sixteenth of the groups to gain.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

_Static_assert(TB_GRAPH_COLORS == 32, "one bit per colour in a uint32_t");

int tb_constraint_graph_init(tb_constraint_graph *g, int body_capacity, int contact_capacity)
{
    memset(g, 0, sizeof *g);
    g->group_capacity = contact_capacity / TB_LANES + TB_GRAPH_COLORS + 1;
    g->body_colors = calloc((size_t)body_capacity + 1, sizeof *g->body_colors);
    g->color_of = malloc(sizeof *g->color_of * (size_t)contact_capacity);
    g->order = malloc(sizeof *g->order * (size_t)contact_capacity);
    g->slot = malloc(sizeof *g->slot * (size_t)contact_capacity);
    g->overflow = malloc(sizeof *g->overflow * (size_t)contact_capacity);
    g->groups = aligned_alloc(64, ((sizeof *g->groups * (size_t)g->group_capacity) + 63) / 64 * 64);
    g->last_bodies = malloc(sizeof *g->last_bodies * (size_t)contact_capacity);
    g->body_group = calloc((size_t)body_capacity + 1, sizeof *g->body_group);
    g->next_open = malloc(sizeof *g->next_open * ((size_t)g->group_capacity + 1));
    g->lanes_used = malloc((size_t)g->group_capacity + 1);
    g->last_count = -1;
    if (!g->body_colors || !g->color_of || !g->order || !g->slot || !g->overflow || !g->groups || !g->last_bodies ||
        !g->body_group || !g->next_open || !g->lanes_used) {
        tb_constraint_graph_free(g);
        return TB_RIGID_ERR_NO_MEMORY;
    }
    return TB_RIGID_OK;
}

void tb_constraint_graph_free(tb_constraint_graph *g)
{
    free(g->body_colors);
    free(g->color_of);
    free(g->order);
    free(g->slot);
    free(g->overflow);
    free(g->groups);
    free(g->last_bodies);
    free(g->body_group);
    free(g->next_open);
    free(g->lanes_used);
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

static void open_group(tb_contact_wide *group)
{
    for (int lane = 0; lane < TB_LANES; lane++) { /* empty: index -1, static slot 0 */
        group->index[lane] = -1;
        group->sa[lane] = group->sb[lane] = 0;
        group->off_a[lane] = group->off_b[lane] = 0;
    }
}

static inline void put_lane(tb_constraint_graph *g, const tb_rigid_world *w, int at, int lane, int index)
{
    tb_contact_wide *group = &g->groups[at];
    const int sa = w->contacts[index].sa, sb = w->contacts[index].sb;
    group->index[lane] = index;
    group->sa[lane] = sa;
    group->sb[lane] = sb;
    group->off_a[lane] = (uint32_t)sa * (uint32_t)sizeof(tb_solver_body);
    group->off_b[lane] = (uint32_t)sb * (uint32_t)sizeof(tb_solver_body);
    g->slot[index] = at * TB_LANES + lane;
}

/* Each colour cut into groups of four, the last one padded with empty lanes. */
static int cut_by_colour(tb_constraint_graph *g, const tb_rigid_world *w, const int start[TB_GRAPH_COLORS + 1])
{
    int n = 0;
    for (int k = 0; k < TB_GRAPH_COLORS; k++) {
        for (int i = start[k]; i < start[k + 1]; i += TB_LANES, n++) {
            assert(n < g->group_capacity);
            open_group(&g->groups[n]);
            for (int lane = 0; lane < TB_LANES && i + lane < start[k + 1]; lane++) put_lane(g, w, n, lane, g->order[i + lane]);
        }
    }
    return n;
}

/* The `total` coloured contacts in colour order, each into the first group
 * with a free lane after the last group holding one of its awake bodies
 * (see the top of the file); next_open[n] = n opens a new group. */
static int pack(tb_constraint_graph *g, const tb_rigid_world *w, int total)
{
    int n = 0;
    g->next_open[0] = 0;
    for (int j = 0; j < total; j++) {
        const int index = g->order[j];
        const int sa = w->contacts[index].sa, sb = w->contacts[index].sb;
        /* static sides (slot 0) never wait: body_group[0] stays 0 */
        int at = g->body_group[sa] > g->body_group[sb] ? g->body_group[sa] : g->body_group[sb];
        while (g->next_open[at] != at) { /* path halving */
            g->next_open[at] = g->next_open[g->next_open[at]];
            at = g->next_open[at];
        }
        if (at == n) {
            assert(n < g->group_capacity);
            open_group(&g->groups[n]);
            g->lanes_used[n] = 0;
            n++;
            g->next_open[n] = n;
        }
        put_lane(g, w, at, g->lanes_used[at]++, index);
        if (g->lanes_used[at] == TB_LANES) g->next_open[at] = at + 1;
        if (sa) g->body_group[sa] = at + 1;
        if (sb) g->body_group[sb] = at + 1;
    }
    for (int j = 0; j < total; j++) {
        const tb_contact *c = &w->contacts[g->order[j]];
        g->body_group[c->sa] = g->body_group[c->sb] = 0;
    }
    return n;
}

TB_HOT_CLONES void tb_constraint_graph_build(tb_rigid_world *w)
{
    tb_constraint_graph *g = &w->graph;
    if (same_as_last(g, w)) return;
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
            g->slot[i] = -1;
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
    int start[TB_GRAPH_COLORS + 1];
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

    /* Colour by colour into groups of four lanes (rows: tb_contact_solver_prepare),
     * packed where a perfect packing would save a sixteenth of the groups. */
    int groups = 0, total = start[TB_GRAPH_COLORS];
    for (int k = 0; k < TB_GRAPH_COLORS; k++) groups += (color_count[k] + TB_LANES - 1) / TB_LANES;
    int n = (groups - (total + TB_LANES - 1) / TB_LANES) * 16 >= groups ? pack(g, w, total) : cut_by_colour(g, w, start);
    g->group_count = n;
    g->last_count = w->contact_count;
}
