/* rigid_save.c: the world's full state as a flat byte image, and back.
 *
 * Saved: parameters, time and step count, planes, every body slot (pose,
 * velocities, mass, shape, sleep flag and timer, free-list link) and the
 * warm-start cache. Not saved: per-step scratch, rebuilt by the next step.
 * Because the next step depends only on what is saved, a loaded world steps
 * bit-identically to the original (tested).
 *
 * Layout (native endian): header, planes, body slots, cache entries. Load
 * treats the image as untrusted: sizes, counts, enums, ids, the free list and
 * finiteness are all checked before a world is returned.
 *
 * Body images (tb_rigid_world_save_bodies / _restore_bodies): the live slot
 * prefix and the cache only, put into an existing world whose parameters,
 * planes and clock stay; checked the same way before anything is copied.
 */
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_core.h"

#define SAVE_MAGIC 0x57524254u /* "TBRW" */
#define SAVE_VERSION 1u

typedef struct save_header {
    uint32_t magic, version, body_size, cache_size;
    int32_t capacity, contact_capacity, iterations, plane_count;
    int32_t free_head, body_end, body_count, cache_count;
    float gravity[3], restitution, friction, pad;
    double time;
    uint64_t steps;
    float planes[TB_RIGID_MAX_PLANES][4];
} save_header;

size_t tb_rigid_world_save_size(const tb_rigid_world *w)
{
    assert(w);
    return sizeof(save_header) + sizeof(tb_body) * (size_t)w->capacity + sizeof(tb_cache_entry) * (size_t)w->cache_count;
}

int tb_rigid_world_save(const tb_rigid_world *w, void *buf, size_t cap, size_t *written)
{
    assert(w);
    size_t need = tb_rigid_world_save_size(w);
    if (written) *written = 0;
    if (!buf || cap < need) return TB_PHYS_ERR_NO_SPACE;
    save_header h;
    memset(&h, 0, sizeof h);
    h.magic = SAVE_MAGIC;
    h.version = SAVE_VERSION;
    h.body_size = sizeof(tb_body);
    h.cache_size = sizeof(tb_cache_entry);
    h.capacity = w->capacity;
    h.contact_capacity = w->contact_capacity;
    h.iterations = w->iterations;
    h.plane_count = w->plane_count;
    h.free_head = w->free_head;
    h.body_end = w->body_end;
    h.body_count = w->body_count;
    h.cache_count = w->cache_count;
    h.gravity[0] = w->gravity.x;
    h.gravity[1] = w->gravity.y;
    h.gravity[2] = w->gravity.z;
    h.restitution = w->restitution;
    h.friction = w->friction;
    h.time = w->time;
    h.steps = w->steps;
    for (int i = 0; i < w->plane_count; i++) {
        h.planes[i][0] = w->plane_normal[i].x;
        h.planes[i][1] = w->plane_normal[i].y;
        h.planes[i][2] = w->plane_normal[i].z;
        h.planes[i][3] = w->plane_offset[i];
    }
    unsigned char *out = buf;
    memcpy(out, &h, sizeof h);
    out += sizeof h;
    memcpy(out, w->bodies, sizeof(tb_body) * (size_t)w->capacity);
    out += sizeof(tb_body) * (size_t)w->capacity;
    memcpy(out, w->cache, sizeof(tb_cache_entry) * (size_t)w->cache_count);
    if (written) *written = need;
    return TB_PHYS_OK;
}

static bool within(tb_vec3 v, float limit)
{
    return fabsf(v.x) <= limit && fabsf(v.y) <= limit && fabsf(v.z) <= limit;
}

/* Plausible bounds, not just finiteness: a finite but absurd value (a mass
 * of 1e-30, a speed of 1e30) would overflow to Inf within a step. */
static bool body_ok(const tb_body *b)
{
    if (b->alive > 1 || b->sleeping > 1) return false;
    if (!b->alive) return true;
    if (b->shape != TB_RIGID_BOX && b->shape != TB_RIGID_SPHERE) return false;
    const float *f = (const float *)b; /* the first 22 fields are floats */
    for (int i = 0; i < 22; i++)
        if (!isfinite(f[i])) return false;
    if (!(b->inv_mass > 0.0f) || !(b->radius > 0.0f && b->radius <= 100.0f) || b->next_free != -1) return false;
    if (!(b->inv_inertia.x > 0.0f && b->inv_inertia.y > 0.0f && b->inv_inertia.z > 0.0f)) return false;
    if (b->shape == TB_RIGID_BOX && !(b->half_extents.x > 0.0f && b->half_extents.y > 0.0f && b->half_extents.z > 0.0f &&
                                      b->half_extents.x <= 50.0f && b->half_extents.y <= 50.0f && b->half_extents.z <= 50.0f))
        return false;
    if (!(b->inv_mass <= 1e6f) || !(b->inv_inertia.x <= 1e9f && b->inv_inertia.y <= 1e9f && b->inv_inertia.z <= 1e9f))
        return false;
    if (!within(b->position, 1e5f) || !within(b->linear_velocity, 1e5f) || !within(b->angular_velocity, 1e5f))
        return false;
    if (!(b->sleep_time >= 0.0f)) return false;
    float qq = tb_q_dot(b->rotation, b->rotation);
    return qq > 0.98f && qq < 1.02f;
}

/* Slots and cache entries are read one by one through memcpy: a body image
 * (tb_rigid_world_restore_bodies) is checked in the caller's buffer, which
 * need not be aligned, before anything is copied into the world. */
static int check_slots(const unsigned char *in, int n, int *alive, int *end)
{
    *alive = 0;
    *end = 0;
    for (int i = 0; i < n; i++) {
        tb_body b;
        memcpy(&b, in + sizeof b * (size_t)i, sizeof b);
        if (!body_ok(&b)) return TB_PHYS_ERR_FORMAT;
        if (b.alive) { ++*alive; *end = i + 1; }
    }
    return TB_PHYS_OK;
}

static int check_cache(const unsigned char *in, int n)
{
    uint32_t prev = 0;
    for (int i = 0; i < n; i++) {
        tb_cache_entry e;
        memcpy(&e, in + sizeof e * (size_t)i, sizeof e);
        if (i > 0 && prev > e.key) return TB_PHYS_ERR_FORMAT;
        if (!(fabsf(e.jn) <= 1e6f) || !within(e.local_b, 1e3f) || !within(e.friction, 1e6f)) return TB_PHYS_ERR_FORMAT;
        prev = e.key;
    }
    return TB_PHYS_OK;
}

static int validate(const save_header *h, const tb_body *bodies, const tb_cache_entry *cache)
{
    int alive, end;
    if (check_slots((const unsigned char *)bodies, h->capacity, &alive, &end) != TB_PHYS_OK) return TB_PHYS_ERR_FORMAT;
    if (alive != h->body_count || end != h->body_end) return TB_PHYS_ERR_FORMAT;
    /* the free list visits exactly the dead slots, once each */
    int n = 0;
    for (int i = h->free_head; i != -1; i = bodies[i].next_free) {
        if (i < 0 || i >= h->capacity || bodies[i].alive || ++n > h->capacity - alive) return TB_PHYS_ERR_FORMAT;
    }
    if (n != h->capacity - alive) return TB_PHYS_ERR_FORMAT;
    return check_cache((const unsigned char *)cache, h->cache_count);
}

tb_rigid_world *tb_rigid_world_load(const void *buf, size_t len, int *err)
{
    int dummy;
    if (!err) err = &dummy;
    *err = TB_PHYS_ERR_FORMAT;
    save_header h;
    if (!buf || len < sizeof h) return NULL;
    memcpy(&h, buf, sizeof h);
    if (h.magic != SAVE_MAGIC || h.version != SAVE_VERSION || h.body_size != sizeof(tb_body) ||
        h.cache_size != sizeof(tb_cache_entry))
        return NULL;
    if (h.capacity < 1 || h.capacity > TB_RIGID_MAX_BODIES || h.contact_capacity < 1 ||
        h.contact_capacity > 64 * TB_RIGID_MAX_BODIES || h.cache_count < 0 || h.cache_count > h.contact_capacity ||
        h.plane_count < 0 || h.plane_count > TB_RIGID_MAX_PLANES || h.free_head < -1 || h.free_head >= h.capacity)
        return NULL;
    size_t need = sizeof h + sizeof(tb_body) * (size_t)h.capacity + sizeof(tb_cache_entry) * (size_t)h.cache_count;
    if (len != need) return NULL;
    tb_vec3 g = tb_v3(h.gravity[0], h.gravity[1], h.gravity[2]);
    if (!tb_v3_finite(g) || !(h.restitution >= 0.0f && h.restitution <= TB_RIGID_RESTITUTION_MAX) ||
        !(h.friction >= 0.0f && h.friction <= TB_RIGID_FRICTION_MAX) || h.iterations < TB_RIGID_ITERATIONS_MIN ||
        h.iterations > TB_RIGID_ITERATIONS_MAX || !isfinite(h.time))
        return NULL;
    if (!within(g, 1e3f)) return NULL;
    for (int i = 0; i < h.plane_count; i++) {
        tb_vec3 n = tb_v3(h.planes[i][0], h.planes[i][1], h.planes[i][2]);
        float nn = tb_v3_len_sq(n);
        if (!(nn > 0.99f && nn < 1.01f) || !(fabsf(h.planes[i][3]) <= 1e5f)) return NULL;
    }

    const unsigned char *in = (const unsigned char *)buf + sizeof h;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = h.capacity;
    def.contact_capacity = h.contact_capacity;
    def.gravity = g;
    def.restitution = h.restitution;
    def.friction = h.friction;
    def.iterations = h.iterations;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w) { *err = TB_PHYS_ERR_NO_MEMORY; return NULL; }
    memcpy(w->bodies, in, sizeof(tb_body) * (size_t)h.capacity);
    memcpy(w->cache, in + sizeof(tb_body) * (size_t)h.capacity, sizeof(tb_cache_entry) * (size_t)h.cache_count);
    int v = validate(&h, w->bodies, w->cache);
    if (v != TB_PHYS_OK) {
        tb_rigid_world_destroy(w);
        *err = v;
        return NULL;
    }
    w->free_head = h.free_head;
    w->body_end = h.body_end;
    w->body_count = h.body_count;
    w->cache_count = h.cache_count;
    w->plane_count = h.plane_count;
    for (int i = 0; i < h.plane_count; i++) {
        w->plane_normal[i] = tb_v3(h.planes[i][0], h.planes[i][1], h.planes[i][2]);
        w->plane_offset[i] = h.planes[i][3];
    }
    w->time = h.time;
    w->steps = h.steps;
    *err = TB_PHYS_OK;
    return w;
}

void tb_rigid_world_get_def(const tb_rigid_world *w, tb_rigid_world_def *out)
{
    assert(w && out);
    *out = tb_rigid_world_def_default();
    out->body_capacity = w->capacity;
    out->contact_capacity = w->contact_capacity;
    out->gravity = w->gravity;
    out->restitution = w->restitution;
    out->friction = w->friction;
    out->iterations = w->iterations;
}

/* ---- body images: header, slots 0 .. body_end-1, cache entries ---------------------- */

#define BODIES_MAGIC 0x42524254u /* "TBRB" */
#define BODIES_VERSION 1u

typedef struct bodies_header {
    uint32_t magic, version, body_size, cache_size;
    int32_t slots, cache_count;
} bodies_header;

size_t tb_rigid_world_bodies_size(const tb_rigid_world *w)
{
    assert(w);
    return sizeof(bodies_header) + sizeof(tb_body) * (size_t)w->body_end + sizeof(tb_cache_entry) * (size_t)w->cache_count;
}

int tb_rigid_world_save_bodies(const tb_rigid_world *w, void *buf, size_t cap, size_t *written)
{
    assert(w);
    size_t need = tb_rigid_world_bodies_size(w);
    if (written) *written = 0;
    if (!buf || cap < need) return TB_PHYS_ERR_NO_SPACE;
    bodies_header h = {BODIES_MAGIC, BODIES_VERSION, sizeof(tb_body), sizeof(tb_cache_entry), w->body_end, w->cache_count};
    unsigned char *out = buf;
    memcpy(out, &h, sizeof h);
    out += sizeof h;
    memcpy(out, w->bodies, sizeof(tb_body) * (size_t)w->body_end);
    out += sizeof(tb_body) * (size_t)w->body_end;
    memcpy(out, w->cache, sizeof(tb_cache_entry) * (size_t)w->cache_count);
    if (written) *written = need;
    return TB_PHYS_OK;
}

int tb_rigid_world_restore_bodies(tb_rigid_world *w, const void *buf, size_t len)
{
    assert(w);
    bodies_header h;
    if (!buf || len < sizeof h) return TB_PHYS_ERR_FORMAT;
    memcpy(&h, buf, sizeof h);
    if (h.magic != BODIES_MAGIC || h.version != BODIES_VERSION || h.body_size != sizeof(tb_body) ||
        h.cache_size != sizeof(tb_cache_entry) || h.slots < 0 || h.slots > TB_RIGID_MAX_BODIES || h.cache_count < 0 ||
        h.cache_count > 64 * TB_RIGID_MAX_BODIES)
        return TB_PHYS_ERR_FORMAT;
    size_t body_bytes = sizeof(tb_body) * (size_t)h.slots;
    if (len != sizeof h + body_bytes + sizeof(tb_cache_entry) * (size_t)h.cache_count) return TB_PHYS_ERR_FORMAT;
    if (h.slots > w->capacity || h.cache_count > w->contact_capacity) return TB_PHYS_ERR_RANGE;
    const unsigned char *in = (const unsigned char *)buf + sizeof h;
    int alive, end;
    if (check_slots(in, h.slots, &alive, &end) != TB_PHYS_OK || end != h.slots ||
        check_cache(in + body_bytes, h.cache_count) != TB_PHYS_OK)
        return TB_PHYS_ERR_FORMAT;

    tb_rigid__drop_all_grabs(w); /* the ids may name other bodies now */
    memset(w->bodies, 0, sizeof(tb_body) * (size_t)w->capacity);
    memcpy(w->bodies, in, body_bytes);
    w->free_head = -1;
    for (int i = w->capacity - 1; i >= 0; i--) {
        if (w->bodies[i].alive) continue;
        memset(&w->bodies[i], 0, sizeof w->bodies[i]); /* a dead slot keeps nothing of its last body */
        w->bodies[i].next_free = w->free_head;
        w->free_head = i;
    }
    w->body_end = end;
    w->body_count = alive;
    memcpy(w->cache, in + body_bytes, sizeof(tb_cache_entry) * (size_t)h.cache_count);
    w->cache_count = h.cache_count;
    w->contact_count = 0;
    w->contacts_dropped = 0;
    w->pair_count = 0;
    tb_constraint_graph_reset(&w->graph);
    return TB_PHYS_OK;
}
