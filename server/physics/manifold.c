/* manifold.c: from candidate pairs to contact points, and the warm-start cache.
 *
 * tb_manifold_collide runs the narrow phase on every broad-phase pair (in key
 * order), applies the wake rule, then adds plane contacts for every awake
 * body. The contact arrays end up as [body pairs by key][planes by body id],
 * each manifold (one pair's or one body-plane's points) a run whose start
 * goes into manifold_start, so the passes over manifolds need not look for
 * where the key changes.
 *
 * The cache keeps, per contact of the last step, its pair key, its point in
 * body b's frame and its impulses. A new contact takes the impulses of the
 * nearest old contact of the same pair within 6 cm (in b's frame, so the
 * match survives the body moving), and each old contact is given to at most
 * one new contact.
 */
#include <string.h>

#include "physics/rigid_core.h"

/* local_b: the point in body b's frame, R^T (p - x) with R's columns the
 * frame's axes (three dot products, not the quaternion's two crosses), the
 * three in the lanes of a tb_f4: lane i is a_i.x d.x + a_i.y d.y + a_i.z d.z,
 * tb_v3_dot's operations in its order. The world's fields in locals: the
 * stores through the contact arrays could otherwise alias them and be read
 * again for every point. */
static inline __attribute__((always_inline)) void add_manifold(tb_rigid_world *w, uint32_t key, int body_a, int body_b,
                                                                const tb_manifold *m)
{
    const tb_vec3 pos = w->bodies[body_b].position;
    const tb_vec3 *ax = w->frames[body_b].box.axis;
    const tb_f4 col_x = {ax[0].x, ax[1].x, ax[2].x, 0.0f}, col_y = {ax[0].y, ax[1].y, ax[2].y, 0.0f},
                col_z = {ax[0].z, ax[1].z, ax[2].z, 0.0f};
    const tb_vec3 normal = m->normal;
    tb_contact_point *points = w->points;
    tb_contact *contacts = w->contacts;
    int k = w->contact_count;
    int count = m->count;
    if (count > w->contact_capacity - k) { /* full: the rest is dropped (counted once) */
        count = w->contact_capacity - k;
        w->contacts_dropped++;
    }
    if (count > 0) w->manifold_start[w->manifold_count++] = k;
    for (int i = 0; i < count; i++, k++) {
        tb_contact_point *cp = &points[k];
        const tb_vec3 p = m->point[i];
        cp->key = key;
        cp->body_a = body_a;
        cp->body_b = body_b;
        cp->separation = m->separation[i];
        cp->point = p;
        const tb_f4 local = tb_f4_splat(p.x - pos.x) * col_x + tb_f4_splat(p.y - pos.y) * col_y +
                            tb_f4_splat(p.z - pos.z) * col_z;
        cp->local_b = tb_v3(local[0], local[1], local[2]);
        contacts[k].n = normal;
    }
    w->contact_count = k;
}

/* Narrow phase for one body pair; the manifold normal runs from a to b. */
static inline __attribute__((always_inline)) int collide_pair(tb_rigid_world *w, int ia, int ib, float margin,
                                                               tb_manifold *m)
{
    const tb_body *a = &w->bodies[ia], *b = &w->bodies[ib];
    const tb_body_frame *fa = &w->frames[ia], *fb = &w->frames[ib];
    if (a->shape == TB_RIGID_BOX && b->shape == TB_RIGID_BOX) return tb_collide_box_box(&fa->box, &fb->box, margin, m);
    if (a->shape == TB_RIGID_BOX) return tb_collide_box_sphere(&fa->box, b->position, b->radius, margin, m);
    if (b->shape == TB_RIGID_BOX) {
        int n = tb_collide_box_sphere(&fb->box, a->position, a->radius, margin, m);
        m->normal = tb_v3_neg(m->normal);
        return n;
    }
    return tb_collide_sphere_sphere(a->position, a->radius, b->position, b->radius, margin, m);
}

TB_HOT_CLONES void tb_manifold_collide(tb_rigid_world *w)
{
    tb_manifold m;
    w->contact_count = 0;
    w->manifold_count = 0;
    w->contacts_dropped = 0;
    for (int p = 0; p < w->pair_count; p++) {
        const tb_pair *pair = &w->pairs[p];
        tb_body *a = &w->bodies[pair->a], *b = &w->bodies[pair->b];
        /* speculative distance: the margin plus how far both may move this step */
        float margin = TB_SPECULATIVE_MARGIN + w->frames[pair->a].speculative + w->frames[pair->b].speculative;
        if (collide_pair(w, pair->a, pair->b, margin, &m) == 0) continue;
        add_manifold(w, pair->key, pair->a, pair->b, &m);
        /* Seed warning: wake a sleeping body touched by one that is not slow
         * enough to sleep, so waking spreads through contacts (otherwise a
         * body stays floating when what held it is knocked away). */
        if (a->sleeping != b->sleeping) {
            tb_body *awake = a->sleeping ? b : a, *asleep = a->sleeping ? a : b;
            if (!tb_body_is_slow(awake)) tb_body_wake(asleep);
        }
    }
    w->pair_contact_count = w->contact_count;
    /* The planes by lane (at most TB_RIGID_MAX_PLANES = 8), so that a body's
     * bounding-sphere test against all of them is one tb_f8 pass: lane k is
     * tb_v3_dot(n_k, x) - offset_k, its operations in its order. */
    _Static_assert(TB_RIGID_MAX_PLANES <= 8, "the planes fit the lanes of one tb_f8");
    float plane_x[8] = {0.0f}, plane_y[8] = {0.0f}, plane_z[8] = {0.0f}, plane_d[8] = {0.0f};
    for (int k = 0; k < w->plane_count; k++) {
        plane_x[k] = w->plane_normal[k].x, plane_y[k] = w->plane_normal[k].y, plane_z[k] = w->plane_normal[k].z;
        plane_d[k] = w->plane_offset[k];
    }
    const tb_f8 nx = tb_f8_load(plane_x), ny = tb_f8_load(plane_y), nz = tb_f8_load(plane_z), off = tb_f8_load(plane_d);
    const unsigned planes = (1u << w->plane_count) - 1u;
    for (int i = 0; i < w->body_end; i++) {
        const tb_body *b = &w->bodies[i];
        if (!b->alive || b->sleeping) continue;
        const tb_body_frame *f = &w->frames[i];
        float margin = TB_SPECULATIVE_MARGIN + f->speculative;
        const tb_vec3 x = b->position;
        const tb_f8 dist = ((nx * tb_f8_splat(x.x) + ny * tb_f8_splat(x.y)) + nz * tb_f8_splat(x.z)) - off;
        /* the planes within reach: not (dist > radius + margin) */
        unsigned near = ~tb_f8_bits_lt(tb_f8_splat(b->radius + margin), dist) & planes;
        for (; near; near &= near - 1u) {
            const int k = __builtin_ctz(near);
            tb_vec3 n = w->plane_normal[k];
            int count;
            if (b->shape == TB_RIGID_BOX) {
                count = tb_collide_plane_box(n, w->plane_offset[k], &f->box, margin, &m);
            } else {
                count = tb_collide_plane_sphere(n, w->plane_offset[k], b->position, b->radius, margin, &m);
            }
            if (count) add_manifold(w, ((uint32_t)i << 16) | (TB_PLANE_KEY_BASE + (uint32_t)k), -1, i, &m);
        }
    }
    w->manifold_start[w->manifold_count] = w->contact_count;
}

/* The contacts are two key-sorted runs ([pairs][planes]) and the cache is
 * sorted by key, so the first cache entry of each manifold's key is found by
 * walking one cursor forward (reset once, where the plane run starts): the
 * same entry a binary search would find, in O(contacts + cache) for the step. */
TB_HOT_CLONES void tb_manifold_warm_start(tb_rigid_world *w)
{
    memset(w->cache_used, 0, (size_t)w->cache_count);
    const tb_cache_entry *cache = w->cache;
    const int cache_count = w->cache_count;
    int first = 0;
    uint32_t prev_key = 0;
    for (int mi = 0; mi < w->manifold_count; mi++) {
        const int i = w->manifold_start[mi], end = w->manifold_start[mi + 1];
        uint32_t key = w->points[i].key;
        if (key < prev_key) first = 0; /* the plane run starts again from small keys */
        prev_key = key;
        while (first < cache_count && cache[first].key < key) first++;
        int last = first;
        while (last < cache_count && cache[last].key == key) last++;
        if (last == first) continue; /* nothing to inherit: the impulses stay zero */
        for (int c = i; c < end; c++) {
            tb_contact *con = &w->contacts[c]; /* impulses cleared by tb_contact_solver_begin */
            /* Seed warning: each old impulse goes to at most one new contact;
             * two contacts sharing one would double it every step. */
            float best = TB_WARM_MATCH_DIST_SQ;
            int match = -1;
            const tb_vec3 p = w->points[c].local_b;
            for (int o = first; o < last; o++) {
                if (w->cache_used[o]) continue;
                float d = tb_v3_len_sq(tb_v3_sub(cache[o].local_b, p));
                if (d < best) { best = d; match = o; }
            }
            if (match < 0) continue;
            w->cache_used[match] = 1;
            const tb_cache_entry *e = &cache[match];
            con->jn = e->jn;
            con->jt1 = tb_v3_dot(e->friction, con->t1);
            con->jt2 = tb_v3_dot(e->friction, con->t2);
        }
        first = last;
    }
}

/* The contacts are [pairs sorted by key][planes by body id]; merge the two
 * runs into one key-sorted cache for the next step's binary searches. */
TB_HOT_CLONES void tb_manifold_store_cache(tb_rigid_world *w)
{
    /* in locals: the stores into the cache could alias the world's fields */
    const tb_contact_point *points = w->points;
    const tb_contact *contacts = w->contacts;
    tb_cache_entry *next = w->cache_next;
    const int n = w->contact_count;
    const int split = w->pair_contact_count;
    int i = 0, j = split, k = 0;
    while (i < split || j < n) {
        int src;
        if (j >= n || (i < split && points[i].key <= points[j].key)) src = i++;
        else src = j++;
        const tb_contact *c = &contacts[src];
        /* a contact that ended with no impulse (speculative, never touched)
         * leaves nothing: the next step's contact there starts from zero
         * anyway */
        if (c->jn == 0.0f && c->jt1 == 0.0f && c->jt2 == 0.0f) continue;
        tb_cache_entry *e = &next[k++];
        e->key = points[src].key;
        e->jn = c->jn;
        e->local_b = points[src].local_b;
        e->friction = tb_v3_add(tb_v3_scale(c->t1, c->jt1), tb_v3_scale(c->t2, c->jt2));
    }
    w->cache_next = w->cache;
    w->cache = next;
    w->cache_count = k;
}
