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
 * padded with empty lanes that move nothing).
 *
 * Gauss-Seidel order becomes colour by colour instead of contact by contact;
 * still a fixed order for a given state, so the step stays deterministic.
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
    g->overflow = malloc(sizeof *g->overflow * (size_t)contact_capacity);
    g->groups = aligned_alloc(64, ((sizeof *g->groups * (size_t)g->group_capacity) + 63) / 64 * 64);
    if (!g->body_colors || !g->color_of || !g->order || !g->overflow || !g->groups) {
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
    free(g->overflow);
    free(g->groups);
    memset(g, 0, sizeof *g);
}

/* The 15 vector rows of tb_contact (n .. ib_t2) and of tb_contact_wide, in
 * the same order, so one loop moves them all. */
#define ROWS 15
_Static_assert(offsetof(tb_contact, ib_t2) - offsetof(tb_contact, n) == (ROWS - 1) * sizeof(tb_vec3) &&
                   offsetof(tb_contact, mass_n) == offsetof(tb_contact, ib_t2) + sizeof(tb_vec3),
               "tb_contact rows n .. ib_t2 are contiguous and followed by a float (read as the pad)");
_Static_assert(offsetof(tb_contact_wide, ib_t2) - offsetof(tb_contact_wide, n) == (ROWS - 1) * sizeof(tb_v3_4),
               "tb_contact_wide rows n .. ib_t2 are contiguous");

/* Four contacts (c[k] for lane k; an all-zero contact for an empty lane)
 * into one group: each row is a 4x4 transpose, the scalars lane by lane. */
static void put_group(tb_contact_wide *g, const tb_contact *const c[TB_LANES], const int index[TB_LANES])
{
    tb_v3_4 *rows = &g->n;
    for (int f = 0; f < ROWS; f++)
        rows[f] = tb__transpose_in(tb__load_row(&c[0]->n + f), tb__load_row(&c[1]->n + f), tb__load_row(&c[2]->n + f),
                                   tb__load_row(&c[3]->n + f));
#define LANES(field) ((tb_f4){c[0]->field, c[1]->field, c[2]->field, c[3]->field})
    g->ima = LANES(ima);
    g->imb = LANES(imb);
    g->mass_n = LANES(mass_n);
    g->mass_t1 = LANES(mass_t1);
    g->mass_t2 = LANES(mass_t2);
    g->target = LANES(target);
    g->jn = LANES(jn);
    g->jt1 = LANES(jt1);
    g->jt2 = LANES(jt2);
#undef LANES
    for (int k = 0; k < TB_LANES; k++) {
        g->sa[k] = c[k]->sa;
        g->sb[k] = c[k]->sb;
        g->index[k] = index[k];
    }
}

void tb_constraint_graph_build(tb_rigid_world *w)
{
    tb_constraint_graph *g = &w->graph;
    int color_count[TB_GRAPH_COLORS] = {0};
    g->overflow_count = 0;

    for (int i = 0; i < w->contact_count; i++) {
        const tb_contact *c = &w->contacts[i];
        /* slot 0 is static: its mask stays 0 so it never blocks a colour */
        uint32_t used = g->body_colors[c->sa] | g->body_colors[c->sb];
        if (used == 0xFFFFFFFFu) {
            g->color_of[i] = -1;
            g->overflow[g->overflow_count++] = i;
            continue;
        }
        int color = __builtin_ctz(~used);
        if (c->sa) g->body_colors[c->sa] |= 1u << color;
        if (c->sb) g->body_colors[c->sb] |= 1u << color;
        g->color_of[i] = color;
        color_count[color]++;
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

    /* pack each colour into groups of four lanes */
    tb_contact empty; /* zero masses and arms: a lane that moves nothing */
    memset(&empty, 0, sizeof empty);
    int n = 0;
    for (int k = 0; k < TB_GRAPH_COLORS; k++) {
        for (int i = start[k]; i < start[k + 1]; i += TB_LANES) {
            assert(n < g->group_capacity);
            const tb_contact *lane_contact[TB_LANES];
            int lane_index[TB_LANES];
            for (int lane = 0; lane < TB_LANES; lane++) {
                bool used = i + lane < start[k + 1];
                lane_index[lane] = used ? g->order[i + lane] : -1;
                lane_contact[lane] = used ? &w->contacts[lane_index[lane]] : &empty;
            }
            put_group(&g->groups[n++], lane_contact, lane_index);
        }
    }
    g->group_count = n;
}
