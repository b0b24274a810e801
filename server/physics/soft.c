/* soft.c: the soft world's lifecycle, parameters, inputs (grabs, press,
 * reset), reading and save/load. The step is in soft_solver.c, the mesh in
 * icosphere.c.
 *
 * Every input is checked in full before anything changes, so a rejected call
 * (NaN, out of range, unknown grab) leaves the world bit-identical. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "physics/soft_internal.h"
#include "physics/state_image.h"

#define SAVE_MAGIC 0x46534254u /* "TBSF" */
#define SAVE_VERSION 1u

_Static_assert(sizeof(tb_soft_grab) ==
                   16 + 12 + TB_SOFT_GRAB_MAX_VERTICES * (2 + 4 + 12),
               "grab layout has no padding");
_Static_assert(sizeof(tb_soft_state) == 72 + sizeof(float) * (3 * 3 * TB_SOFT_V + TB_SOFT_E) +
                                            TB_SOFT_MAX_GRABS * sizeof(tb_soft_grab),
               "saved state has no padding, so its bytes (and hash) are fully defined");

tb_soft_def tb_soft_def_default(void)
{
    tb_soft_def d;
    d.stiffness = 0.6f;
    d.plasticity = true;
    d.volume_preservation = true;
    d.substeps = 3;
    return d;
}

static int check_def(const tb_soft_def *d)
{
    assert(d);
    if (!tb_finitef(d->stiffness)) return TB_PHYS_ERR_INVALID;
    if (d->stiffness < 0.0f || d->stiffness > 1.0f) return TB_PHYS_ERR_RANGE;
    if (d->substeps < 1 || d->substeps > TB_SOFT_SUBSTEPS_MAX) return TB_PHYS_ERR_RANGE;
    return TB_PHYS_OK;
}

static void init_state(tb_soft_world *world)
{
    tb_soft_state *st = &world->state;
    float stiffness = st->stiffness;
    int32_t plasticity = st->plasticity, volume_on = st->volume_on, substeps = st->substeps;
    memset(st, 0, sizeof *st);
    st->stiffness = stiffness;
    st->plasticity = plasticity;
    st->volume_on = volume_on;
    st->substeps = substeps;
    memcpy(st->pos, world->sphere, sizeof st->pos);
    memcpy(st->rest_pos, world->sphere, sizeof st->rest_pos);
    memcpy(st->rest_len, world->original_len, sizeof st->rest_len);
    st->rest_volume = tb_soft__volume(world, st->pos);
}

/* Reorder the edges so that neighbours in the list share no vertex: greedy
 * colouring (each edge takes the lowest colour its two vertices have not
 * used; vertex degree <= 6 keeps it under 12 colours), then edges by colour,
 * stable. The edge loop is Gauss-Seidel with a store to both ends per edge;
 * in mesh order each edge would wait for the previous one's stores, in
 * colour order consecutive edges are independent and overlap. */
static int order_edges_by_colour(uint16_t *edges)
{
    uint8_t colour[TB_SOFT_E];
    uint32_t used[TB_SOFT_V] = {0};
    int count[33] = {0};
    for (int e = 0; e < TB_SOFT_E; e++) {
        int a = edges[2 * e], b = edges[2 * e + 1];
        uint32_t taken = used[a] | used[b];
        int c = 0;
        while (c < 32 && (taken >> c) & 1u) c++;
        if (c == 32) return -1;
        colour[e] = (uint8_t)c;
        used[a] |= 1u << c;
        used[b] |= 1u << c;
        count[c + 1]++;
    }
    for (int c = 1; c <= 32; c++) count[c] += count[c - 1]; /* start of each colour */
    uint16_t sorted[TB_SOFT_E * 2];
    for (int e = 0; e < TB_SOFT_E; e++) {
        int at = count[colour[e]]++;
        sorted[2 * at] = edges[2 * e];
        sorted[2 * at + 1] = edges[2 * e + 1];
    }
    memcpy(edges, sorted, sizeof sorted);
    return 0;
}

static int build_mesh(tb_soft_world *world)
{
    if (tb_icosphere_build(world->sphere, world->triangles, world->edges) != 0) return -1;
    if (order_edges_by_colour(world->edges) != 0) return -1;
    for (int e = 0; e < TB_SOFT_E; e++) {
        int a = world->edges[2 * e], b = world->edges[2 * e + 1];
        tb_vec3 pa = tb_v3(world->sphere[3 * a], world->sphere[3 * a + 1], world->sphere[3 * a + 2]);
        tb_vec3 pb = tb_v3(world->sphere[3 * b], world->sphere[3 * b + 1], world->sphere[3 * b + 2]);
        world->original_len[e] = tb_v3_dist(pa, pb);
    }
    /* Neighbour lists (CSR) from the edges, in edge order. */
    int degree[TB_SOFT_V] = {0};
    for (int e = 0; e < TB_SOFT_E; e++) {
        degree[world->edges[2 * e]]++;
        degree[world->edges[2 * e + 1]]++;
    }
    world->neighbour_start[0] = 0;
    for (int i = 0; i < TB_SOFT_V; i++) world->neighbour_start[i + 1] = (uint16_t)(world->neighbour_start[i] + degree[i]);
    int fill[TB_SOFT_V];
    for (int i = 0; i < TB_SOFT_V; i++) fill[i] = world->neighbour_start[i];
    for (int e = 0; e < TB_SOFT_E; e++) {
        int a = world->edges[2 * e], b = world->edges[2 * e + 1];
        world->neighbours[fill[a]++] = (uint16_t)b;
        world->neighbours[fill[b]++] = (uint16_t)a;
    }
    /* Corner lists (CSR): triangle (a, b, c) gives a the pair (b, c), b the
     * pair (c, a), c the pair (a, b), in triangle order. */
    int corners[TB_SOFT_V] = {0};
    for (int k = 0; k < 3 * TB_SOFT_T; k++) corners[world->triangles[k]]++;
    world->corner_start[0] = 0;
    for (int i = 0; i < TB_SOFT_V; i++) world->corner_start[i + 1] = (uint16_t)(world->corner_start[i] + corners[i]);
    for (int i = 0; i < TB_SOFT_V; i++) fill[i] = world->corner_start[i];
    for (int t = 0; t < TB_SOFT_T; t++)
        for (int k = 0; k < 3; k++) {
            int v = world->triangles[3 * t + k], m = fill[v]++;
            world->corner_pairs[2 * m] = world->triangles[3 * t + (k + 1) % 3];
            world->corner_pairs[2 * m + 1] = world->triangles[3 * t + (k + 2) % 3];
        }
    return 0;
}

tb_soft_world *tb_soft_world_create(const tb_soft_def *def, int *err)
{
    int r = check_def(def);
    if (r != TB_PHYS_OK) {
        if (err) *err = r;
        return NULL;
    }
    tb_soft_world *world = calloc(1, sizeof *world);
    if (!world) {
        if (err) *err = TB_PHYS_ERR_NO_MEMORY;
        return NULL;
    }
    if (build_mesh(world) != 0) {
        free(world);
        if (err) *err = TB_PHYS_ERR_INTERNAL;
        return NULL;
    }
    world->state.stiffness = def->stiffness;
    world->state.plasticity = def->plasticity ? 1 : 0;
    world->state.volume_on = def->volume_preservation ? 1 : 0;
    world->state.substeps = def->substeps;
    init_state(world);
    if (err) *err = TB_PHYS_OK;
    return world;
}

void tb_soft_world_destroy(tb_soft_world *world) { free(world); }

void tb_soft_world_reset(tb_soft_world *world)
{
    if (world) init_state(world);
}

int tb_soft_world_step(tb_soft_world *world, float dt)
{
    assert(world);
    if (!tb_finitef(dt)) return TB_PHYS_ERR_INVALID;
    if (!(dt > 0.0f) || dt > TB_SOFT_DT_MAX) return TB_PHYS_ERR_RANGE;
    tb_soft__solve_step(world, dt);
    return TB_PHYS_OK;
}

/* ---- parameters ---------------------------------------------------------------- */

int tb_soft_world_set_stiffness(tb_soft_world *world, float stiffness)
{
    assert(world);
    if (!tb_finitef(stiffness)) return TB_PHYS_ERR_INVALID;
    if (stiffness < 0.0f || stiffness > 1.0f) return TB_PHYS_ERR_RANGE;
    world->state.stiffness = stiffness;
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

int tb_soft_world_set_plasticity(tb_soft_world *world, bool on)
{
    assert(world);
    world->state.plasticity = on ? 1 : 0;
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

int tb_soft_world_set_volume_preservation(tb_soft_world *world, bool on)
{
    assert(world);
    /* Turning it back on keeps the volume it has now, not an old one. */
    if (on && !world->state.volume_on) world->state.rest_volume = tb_soft__volume(world, world->state.pos);
    world->state.volume_on = on ? 1 : 0;
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

/* ---- inputs ---------------------------------------------------------------------- */

static bool vec_ok(tb_vec3 v) { return tb_v3_finite(v); }
static bool vec_in_room(tb_vec3 v) { return fabsf(v.x) <= 1000.0f && fabsf(v.y) <= 1000.0f && fabsf(v.z) <= 1000.0f; }

/* The slot a grab handle names, or -1 when it holds nothing. */
static int find_grab(const tb_soft_state *st, int grab)
{
    return grab >= 0 && grab < TB_SOFT_MAX_GRABS && st->grabs[grab].active ? grab : -1;
}

static int nearest_vertex(const tb_soft_state *st, tb_vec3 at, float *dist2)
{
    int best = 0;
    float bd = INFINITY;
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 p = tb_v3(st->pos[3 * i], st->pos[3 * i + 1], st->pos[3 * i + 2]);
        float d2 = tb_v3_len_sq(tb_v3_sub(p, at));
        if (d2 < bd) {
            bd = d2;
            best = i;
        }
    }
    *dist2 = bd;
    return best;
}

int tb_soft_world_grab_start(tb_soft_world *world, tb_vec3 at)
{
    assert(world);
    if (!vec_ok(at)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(at)) return TB_PHYS_ERR_RANGE;
    tb_soft_state *st = &world->state;
    int slot = -1;
    for (int g = 0; g < TB_SOFT_MAX_GRABS && slot < 0; g++)
        if (!st->grabs[g].active) slot = g;
    if (slot < 0) return TB_PHYS_ERR_TOO_MANY_GRABS;
    float d2;
    nearest_vertex(st, at, &d2);
    if (d2 > TB_SOFT_GRAB_REACH * TB_SOFT_GRAB_REACH) return TB_PHYS_ERR_NOTHING_THERE;

    /* The nearest vertices within the grab radius, nearest first (ties by
     * index, as vertices are visited in index order and inserted after equals). */
    tb_soft_grab *gr = &st->grabs[slot];
    memset(gr, 0, sizeof *gr);
    float dist[TB_SOFT_GRAB_MAX_VERTICES];
    int count = 0;
    const float r = TB_SOFT_GRAB_RADIUS;
    for (int i = 0; i < TB_SOFT_V; i++) {
        tb_vec3 p = tb_v3(st->pos[3 * i], st->pos[3 * i + 1], st->pos[3 * i + 2]);
        float d = tb_v3_dist(p, at);
        if (d >= r) continue;
        if (count == TB_SOFT_GRAB_MAX_VERTICES && d >= dist[count - 1]) continue;
        int m = count < TB_SOFT_GRAB_MAX_VERTICES ? count++ : count - 1;
        while (m > 0 && dist[m - 1] > d) {
            dist[m] = dist[m - 1];
            gr->vertex[m] = gr->vertex[m - 1];
            m--;
        }
        dist[m] = d;
        gr->vertex[m] = (uint16_t)i;
    }
    for (int m = 0; m < count; m++) {
        int i = gr->vertex[m];
        float fall = 1.0f - dist[m] / r;
        gr->weight[m] = fall * fall;
        gr->offset[3 * m] = st->pos[3 * i] - at.x;
        gr->offset[3 * m + 1] = st->pos[3 * i + 1] - at.y;
        gr->offset[3 * m + 2] = st->pos[3 * i + 2] - at.z;
    }
    gr->active = 1;
    gr->count = count;
    gr->target = at;
    st->grab_count++;
    tb_soft__wake(world);
    return slot;
}

int tb_soft_world_grab_move(tb_soft_world *world, int grab, tb_vec3 target)
{
    assert(world);
    if (!vec_ok(target)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(target)) return TB_PHYS_ERR_RANGE;
    int g = find_grab(&world->state, grab);
    if (g < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    world->state.grabs[g].target = target;
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

int tb_soft_world_grab_end(tb_soft_world *world, int grab)
{
    assert(world);
    tb_soft_state *st = &world->state;
    int g = find_grab(st, grab);
    if (g < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    memset(&st->grabs[g], 0, sizeof st->grabs[g]);
    st->grab_count--;
    /* The last hand lets go: whatever is left of the stretch becomes the shape. */
    if (st->grab_count == 0 && st->plasticity) tb_soft__commit(world);
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

int tb_soft_world_press(tb_soft_world *world, tb_vec3 at, float depth)
{
    assert(world);
    if (!vec_ok(at) || !tb_finitef(depth)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(at) || !(depth > 0.0f) || depth > TB_SOFT_PRESS_DEPTH_MAX) return TB_PHYS_ERR_RANGE;
    tb_soft_state *st = &world->state;
    if (st->press_active) return TB_PHYS_ERR_BUSY;
    float d2;
    int v = nearest_vertex(st, at, &d2);
    if (d2 > TB_SOFT_GRAB_REACH * TB_SOFT_GRAB_REACH) return TB_PHYS_ERR_NOTHING_THERE;
    tb_vec3 p = tb_v3(st->pos[3 * v], st->pos[3 * v + 1], st->pos[3 * v + 2]);
    tb_vec3 n = tb_v3_norm(p); /* the centre of mass is the origin */
    if (tb_v3_len_sq(n) == 0.0f) return TB_PHYS_ERR_NOTHING_THERE;
    st->press_active = 1;
    st->press_time = 0.0f;
    st->press_depth = depth;
    st->press_point = p;
    st->press_normal = n;
    tb_soft__wake(world);
    return TB_PHYS_OK;
}

/* ---- reading ---------------------------------------------------------------------- */

int tb_soft_world_vertex_count(const tb_soft_world *world) { assert(world); return TB_SOFT_V; }
const float *tb_soft_world_positions(const tb_soft_world *world) { assert(world); return world->state.pos; }
int tb_soft_world_triangle_count(const tb_soft_world *world) { assert(world); return TB_SOFT_T; }
const uint16_t *tb_soft_world_triangles(const tb_soft_world *world) { assert(world); return world->triangles; }
int tb_soft_world_edge_count(const tb_soft_world *world) { assert(world); return TB_SOFT_E; }
const uint16_t *tb_soft_world_edges(const tb_soft_world *world) { assert(world); return world->edges; }
const float *tb_soft_world_rest_lengths(const tb_soft_world *world) { assert(world); return world->state.rest_len; }
const float *tb_soft_world_original_rest_lengths(const tb_soft_world *world) { assert(world); return world->original_len; }
const float *tb_soft_world_velocities(const tb_soft_world *world) { assert(world); return world->state.vel; }
float tb_soft_world_volume(const tb_soft_world *world) { return tb_soft__volume(world, world->state.pos); }
float tb_soft_world_rest_volume(const tb_soft_world *world) { return world->state.rest_volume; }
int tb_soft_world_grab_count(const tb_soft_world *world) { assert(world); return world->state.grab_count; }
bool tb_soft_world_pressing(const tb_soft_world *world) { return world && world->state.press_active; }
bool tb_soft_world_asleep(const tb_soft_world *world) { return world && world->state.sleep_steps >= TB_SOFT_SLEEP_STEPS; }
uint64_t tb_soft_world_idle_steps(const tb_soft_world *world) { assert(world); return world->idle_steps; }

/* ---- save / load ------------------------------------------------------------------- */

size_t tb_soft_world_save_size(const tb_soft_world *world)
{
    (void)world;
    return tb_state_image_size(sizeof(tb_soft_state));
}

int tb_soft_world_save(const tb_soft_world *world, void *buffer, size_t capacity, size_t *written)
{
    assert(world && buffer);
    if (!tb_state_image_write(buffer, capacity, SAVE_MAGIC, SAVE_VERSION, &world->state, sizeof world->state, written))
        return TB_PHYS_ERR_NO_SPACE;
    return TB_PHYS_OK;
}

/* A save may come from disk: check counts, indices and numbers before use. */
static bool state_valid(const tb_soft_state *s)
{
    if (!tb_finitef(s->stiffness) || s->stiffness < 0.0f || s->stiffness > 1.0f) return false;
    if ((s->plasticity != 0 && s->plasticity != 1) || (s->volume_on != 0 && s->volume_on != 1)) return false;
    if (s->substeps < 1 || s->substeps > TB_SOFT_SUBSTEPS_MAX) return false;
    if (!tb_finitef(s->rest_volume) || !(s->rest_volume > 0.0f)) return false;
    if (s->press_active != 0 && s->press_active != 1) return false;
    if (s->sleep_steps < 0 || s->sleep_steps > TB_SOFT_SLEEP_STEPS) return false;
    if (s->sleep_steps == TB_SOFT_SLEEP_STEPS && (s->grab_count != 0 || s->press_active)) return false;
    if (!tb_finitef(s->press_time) || !tb_finitef(s->press_depth) || !tb_v3_finite(s->press_point) ||
        !tb_v3_finite(s->press_normal))
        return false;
    if (!tb_floats_finite(s->pos, 3 * TB_SOFT_V) || !tb_floats_finite(s->vel, 3 * TB_SOFT_V) ||
        !tb_floats_finite(s->rest_pos, 3 * TB_SOFT_V) || !tb_floats_finite(s->rest_len, TB_SOFT_E))
        return false;
    int active = 0;
    for (int g = 0; g < TB_SOFT_MAX_GRABS; g++) {
        const tb_soft_grab *gr = &s->grabs[g];
        if (gr->active == 0) continue;
        if (gr->active != 1 || gr->count < 0 || gr->count > TB_SOFT_GRAB_MAX_VERTICES) return false;
        if (!tb_v3_finite(gr->target) || !tb_floats_finite(gr->weight, gr->count) || !tb_floats_finite(gr->offset, 3 * gr->count))
            return false;
        for (int m = 0; m < gr->count; m++)
            if (gr->vertex[m] >= TB_SOFT_V) return false;
        active++;
    }
    return active == s->grab_count;
}

int tb_soft_world_load(tb_soft_world *world, const void *buffer, size_t size)
{
    assert(world && buffer);
    if (!tb_state_image_read(buffer, size, SAVE_MAGIC, SAVE_VERSION, &world->load_scratch, sizeof world->load_scratch) ||
        !state_valid(&world->load_scratch))
        return TB_PHYS_ERR_FORMAT;
    world->state = world->load_scratch;
    return TB_PHYS_OK;
}

uint64_t tb_soft_world_hash(const tb_soft_world *world)
{
    return tb_state_image_hash(&world->state, sizeof world->state);
}
