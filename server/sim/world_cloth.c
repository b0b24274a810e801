/* world_cloth.c: the cloth world (physics/cloth.h) as a room: the flag on a
 * pole and the cape on a walking figure.
 *
 * The cloth pieces are meshes (vertices streamed every snapshot, triangles
 * and pins sent once). The pole and the figure's limbs are capsules that
 * move: they are sent as kinematic capsule bodies (ids 0..n-1), and the
 * static description names each capsule's body, with its end points in
 * that body's local frame (PROTOCOL.md §6): (0, -h, 0) and (0, h, 0), h the
 * body's half height, so a client draws it from the body's pose alone.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/cloth.h"
#include "sim/error.h"
#include "sim/world.h"

typedef struct {
    tb_cloth_world *world;
    tb_cloth_scene scene;
    double wind, wind_direction;
    bool walking;
    tb_world_grabs grabs; /* who holds what, to end a leaving client's grabs */
    double bounds_min[3], bounds_max[3];
    tb_proto_body bodies[TB_CLOTH_MAX_CAPSULES];
} tb__cloth;

#define TB__GRID_MIN 6 /* the shorter side then still has TB_CLOTH_GRID_MIN points */
enum { TB__WIND, TB__WIND_DIRECTION, TB__ITERATIONS, TB__WALKING, TB__GRID };

static const tb_world_param tb__params[] = {
    {"wind", 0.0, TB_CLOTH_WIND_MAX, 6.0, 0.5},
    {"wind_direction", -3.14159, 3.14159, 0.0, 0.05},
    {"iterations", TB_CLOTH_ITERATIONS_MIN, TB_CLOTH_ITERATIONS_MAX, 8, 1},
    {"walking", 0, 1, 1, 1},
    /* points along the cloth's longer side; the default is the scene's own */
    {"grid", TB__GRID_MIN, TB_CLOTH_GRID_MAX, 16, 1},
};
#define TB__NPARAMS (int)(sizeof tb__params / sizeof tb__params[0])
_Static_assert(TB_CLOTH_MAX_GRABS <= TB_WORLD_MAX_GRABS, "the grab table holds every grab the world accepts");

static const uint32_t tb__capsule_colors[] = {0x8D8D8D, 0x4A6FA5, 0xE0B48A, 0x4A6FA5, 0x4A6FA5, 0x37474F, 0x37474F};

/* Bounds: what the scene covers at rest, widened so the flag can stream
 * out in any wind and the figure can walk its whole loop. */
static void tb__bounds(tb__cloth *c)
{
    for (int a = 0; a < 3; a++) {
        c->bounds_min[a] = -4.0;
        c->bounds_max[a] = 4.0;
    }
    c->bounds_min[1] = -0.5;
    c->bounds_max[1] = 5.0;
    for (int p = 0; p < tb_cloth_world_piece_count(c->world); p++) {
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, p, &v) != TB_PHYS_OK)
            continue;
        for (int i = 0; i < v.point_count; i++)
            for (int a = 0; a < 3; a++) {
                double x = v.positions[3 * i + a];
                if (x - 3.5 < c->bounds_min[a]) c->bounds_min[a] = x - 3.5;
                if (x + 3.5 > c->bounds_max[a]) c->bounds_max[a] = x + 3.5;
            }
    }
    if (c->bounds_min[1] < -1.0)
        c->bounds_min[1] = -1.0;
}

static int cloth_create(const char *scene, uint64_t seed, const tb_world_env *env, void **out)
{
    (void)seed; /* the cloth scenes have no randomness */
    tb_cloth_def def = tb_cloth_def_default();
    if (strcmp(scene, "flag") == 0)
        def.scene = TB_CLOTH_SCENE_FLAG;
    else if (strcmp(scene, "cape") == 0)
        def.scene = TB_CLOTH_SCENE_CAPE;
    else
        return TB_EBADSCENE;
    tb__cloth *c = calloc(1, sizeof *c);
    if (!c)
        return TB_ENOMEM;
    c->world = tb_cloth_world_create(&def, NULL);
    if (!c->world) {
        free(c);
        return TB_ENOMEM;
    }
    c->scene = def.scene;
    c->wind = def.wind_strength;
    c->wind_direction = def.wind_direction;
    c->walking = def.walking;
    tb__bounds(c);
    *out = c;
    return 0;
}

static void cloth_destroy(void *world)
{
    tb__cloth *c = world;
    if (!c)
        return;
    tb_cloth_world_destroy(c->world);
    free(c);
}

static int cloth_apply_input(void *world, const tb_input *in)
{
    tb__cloth *c = world;
    tb_vec3 p = tb_v3(in->pos[0], in->pos[1], in->pos[2]);
    switch (in->type) {
    case TB_INPUT_GRAB_START: {
        int grab;
        if (tb_world_grabs_find(&c->grabs, in->client, in->pointer, &grab))
            return TB_EBUSY; /* that pointer already holds a point */
        grab = tb_cloth_world_grab_start(c->world, p);
        if (grab < 0)
            return tb_world_error(grab);
        tb_world_grabs_add(&c->grabs, in->client, in->pointer, grab);
        return 0;
    }
    case TB_INPUT_GRAB_MOVE: {
        int grab;
        if (!tb_world_grabs_find(&c->grabs, in->client, in->pointer, &grab))
            return TB_ENOBODY;
        return tb_world_error(tb_cloth_world_grab_move(c->world, grab, p));
    }
    case TB_INPUT_GRAB_END: {
        int grab;
        if (!tb_world_grabs_forget(&c->grabs, in->client, in->pointer, &grab))
            return TB_ENOBODY;
        return tb_world_error(tb_cloth_world_grab_end(c->world, grab));
    }
    case TB_INPUT_POKE: {
        /* The poke's impulse is read as a velocity change (m/s) for the cloth
         * near the point, capped: cloth points have no meaningful mass. */
        tb_vec3 dv = tb_v3(in->vec[0], in->vec[1], in->vec[2]);
        float len = tb_v3_len(dv);
        if (len > 20.0f)
            dv = tb_v3_scale(dv, 20.0f / len);
        return tb_world_error(tb_cloth_world_poke(c->world, p, dv, 0.4f));
    }
    case TB_INPUT_LEAVE: {
        int grab;
        while (tb_world_grabs_take(&c->grabs, in->client, &grab))
            tb_cloth_world_grab_end(c->world, grab);
        return 0;
    }
    case TB_INPUT_RESET:
        if (in->flags)
            return TB_ENOTSUP;
        tb_cloth_world_reset(c->world);
        c->grabs.count = 0;
        return 0;
    case TB_INPUT_CONTACTS:
        return 0;
    default:
        return TB_ENOTSUP;
    }
}

static void cloth_step(void *world, float dt)
{
    int rc = tb_cloth_world_step(((tb__cloth *)world)->world, dt); /* the room's 1/120 s is TB_CLOTH_DT */
    assert(rc == TB_PHYS_OK);
    (void)rc;
}

static void cloth_info(const void *world, tb_world_info *out)
{
    const tb__cloth *c = world;
    int points = 0, free_points = 0;
    for (int p = 0; p < tb_cloth_world_piece_count(c->world); p++) {
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, p, &v) == TB_PHYS_OK) {
            points += v.point_count;
            free_points += v.point_count - v.pin_count;
        }
    }
    out->bodies = points;
    out->awake = free_points; /* PROTOCOL.md §7.4: a cloth never sleeps; its pins are held */
}

/* The scene's default grid (tb_cloth_def_default), width x height. */
static void tb__default_grid(const tb__cloth *c, int *w, int *h)
{
    tb_cloth_def d = tb_cloth_def_default();
    *w = c->scene == TB_CLOTH_SCENE_FLAG ? d.flag_width : d.cape_width;
    *h = c->scene == TB_CLOTH_SCENE_FLAG ? d.flag_height : d.cape_height;
}

/* The `grid` parameter: points along the longer side of the room's cloth
 * (the flag is wider than tall, the cape taller than wide). */
static int tb__grid(const tb__cloth *c)
{
    tb_cloth_view v;
    if (tb_cloth_world_get_cloth(c->world, 0, &v) != TB_PHYS_OK)
        return 0;
    return v.width > v.height ? v.width : v.height;
}

/* A `grid` of n points along the longer side; the shorter side keeps the
 * scene's default proportions (16 x 10 flag, 12 x 17 cape), so only the
 * resolution changes, never the look. */
static void tb__grid_size(const tb__cloth *c, int n, int *w, int *h)
{
    int dw, dh;
    tb__default_grid(c, &dw, &dh);
    int longer = dw > dh ? dw : dh, shorter = dw > dh ? dh : dw;
    int m = (int)lround((double)n * shorter / longer);
    if (m < TB_CLOTH_GRID_MIN)
        m = TB_CLOTH_GRID_MIN;
    *w = dw > dh ? n : m;
    *h = dw > dh ? m : n;
}

/* A capsule as the kinematic body that carries it: centre at the segment's
 * middle, local +y along it, sizes snapped as the snapshot encoder needs. */
static void tb__capsule_body(const tb_cloth_capsule *cap, int id, tb_proto_body *out)
{
    const float a[3] = {cap->a.x, cap->a.y, cap->a.z}, b[3] = {cap->b.x, cap->b.y, cap->b.z};
    int part = cap->part >= 0 && cap->part <= 6 ? cap->part : 0;
    tb_proto_body_from_segment(out, (uint16_t)id, a, b, cap->radius, tb__capsule_colors[part], 0);
}

static void cloth_describe(const void *world, tb_proto_welcome *out)
{
    const tb__cloth *c = world;
    double values[TB__NPARAMS] = {c->wind, c->wind_direction, tb_cloth_world_iterations(c->world),
                                  c->walking ? 1 : 0, tb__grid(c)};
    out->param_count = TB__NPARAMS;
    for (int i = 0; i < TB__NPARAMS; i++)
        tb_world_param_describe(&tb__params[i], values[i], &out->params[i]);
    int dw, dh;
    tb__default_grid(c, &dw, &dh);
    out->params[TB__GRID].def = dw > dh ? dw : dh;
    tb_proto_static *st = &out->st;
    memset(st, 0, sizeof *st);
    for (int a = 0; a < 3; a++) {
        st->bounds_min[a] = c->bounds_min[a];
        st->bounds_max[a] = c->bounds_max[a];
    }
    st->plane_count = 1;
    st->planes[0].normal[1] = 1.0;
    int ncaps = tb_cloth_world_capsule_count(c->world);
    const tb_cloth_capsule *caps = tb_cloth_world_capsules(c->world);
    st->capsule_count = (uint32_t)ncaps;
    for (int i = 0; i < ncaps; i++) {
        tb_proto_body body;
        tb__capsule_body(&caps[i], i, &body);
        tb_proto_capsule *pc = &st->capsules[i];
        memset(pc, 0, sizeof *pc);
        pc->has_body = true;
        pc->body = (uint32_t)i;
        pc->a[1] = -body.shape.size[1];
        pc->b[1] = body.shape.size[1];
        pc->radius = body.shape.size[0];
        pc->color = body.shape.color;
    }
    int pieces = tb_cloth_world_piece_count(c->world);
    st->mesh_count = 0;
    for (int p = 0; p < pieces && p < TB_PROTO_MAX_MESHES; p++) {
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, p, &v) != TB_PHYS_OK)
            continue;
        tb_proto_mesh *m = &st->meshes[st->mesh_count++];
        strcpy(m->kind, "cloth");
        m->verts = (uint32_t)v.point_count;
        m->tri_count = (uint32_t)v.triangle_count;
        m->tris = (const uint8_t *)v.triangles; /* uint16 little-endian on every target we build */
        m->pin_count = (uint32_t)v.pin_count;
        m->pins = (const uint8_t *)v.pins;
        m->color = v.kind == TB_CLOTH_KIND_FLAG ? 0xC62828 : 0x283593;
        m->grid_w = (uint32_t)v.width;
        m->grid_h = (uint32_t)v.height;
    }
}

static void cloth_fill_snapshot(void *world, tb_snap_input *in)
{
    tb__cloth *c = world;
    memset(in, 0, sizeof *in);
    int ncaps = tb_cloth_world_capsule_count(c->world);
    const tb_cloth_capsule *caps = tb_cloth_world_capsules(c->world);
    for (int i = 0; i < ncaps && i < TB_CLOTH_MAX_CAPSULES; i++)
        tb__capsule_body(&caps[i], i, &c->bodies[i]);
    in->bodies = c->bodies;
    in->body_count = (uint32_t)ncaps;
    int points = 0;
    for (int p = 0, m = 0; p < tb_cloth_world_piece_count(c->world) && m < TB_PROTO_MAX_MESHES; p++) {
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, p, &v) != TB_PHYS_OK)
            continue;
        in->verts[m++] = v.positions;
        points += v.point_count - v.pin_count;
    }
    in->awake = (uint32_t)points; /* the free vertices, as in cloth_info */
}

static uint32_t cloth_max_bodies(const void *world) { return TB_CLOTH_MAX_CAPSULES; }

static int tb__param_index(const char *name) { return tb_world_param_find(tb__params, TB__NPARAMS, name); }

static int cloth_param_set(void *world, const char *name, double value)
{
    tb__cloth *c = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    if (tb_world_param_check(&tb__params[i], value) < 0)
        return TB_ERANGE;
    int r = TB_PHYS_OK;
    switch (i) {
    case TB__WIND:
        r = tb_cloth_world_set_wind(c->world, (float)value, (float)c->wind_direction);
        if (r == TB_PHYS_OK) c->wind = value;
        break;
    case TB__WIND_DIRECTION:
        r = tb_cloth_world_set_wind(c->world, (float)c->wind, (float)value);
        if (r == TB_PHYS_OK) c->wind_direction = value;
        break;
    case TB__ITERATIONS: r = tb_cloth_world_set_iterations(c->world, (int)lround(value)); break;
    case TB__WALKING:
        r = tb_cloth_world_set_walking(c->world, value >= 0.5);
        if (r == TB_PHYS_OK) c->walking = value >= 0.5;
        break;
    default: { /* TB__GRID: the cloth is rebuilt flat at the new resolution */
        int n = (int)lround(value), w, h;
        if (n == tb__grid(c))
            return 0;
        tb__grid_size(c, n, &w, &h);
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, 0, &v) != TB_PHYS_OK)
            return TB_EINVAL;
        r = tb_cloth_world_set_grid(c->world, v.kind, w, h);
        if (r != TB_PHYS_OK)
            return tb_world_error(r);
        c->grabs.count = 0; /* the rebuild ended every grab on it */
        return TB_WORLD_STATIC_CHANGED;
    }
    }
    return tb_world_error(r);
}

static int cloth_param_get(const void *world, const char *name, double *value)
{
    const tb__cloth *c = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    switch (i) {
    case TB__WIND: *value = c->wind; break;
    case TB__WIND_DIRECTION: *value = c->wind_direction; break;
    case TB__ITERATIONS: *value = tb_cloth_world_iterations(c->world); break;
    case TB__WALKING: *value = c->walking; break;
    default: *value = tb__grid(c); break;
    }
    return 0;
}

/* ---- persistence, replay hash, fault check ---------------------------------
 * A save is a small header (scene, the parameter mirrors, bounds, who held
 * which grab) and the physics image (physics/cloth.c). On load the grabs of
 * the saved clients are ended: those clients are gone after a restart. */
#define TB__SAVE_MAGIC 0x31434254u /* "TBC1" */

typedef struct {
    uint32_t magic, header_size;
    int32_t scene, walking, grab_count, pad;
    double wind, wind_direction;
    double bounds_min[3], bounds_max[3];
    uint32_t grab_client[TB_CLOTH_MAX_GRABS], grab_pointer[TB_CLOTH_MAX_GRABS];
    uint64_t world_len;
} tb__cloth_save;
TB_WORLD_SAVE_HEADER_OK(tb__cloth_save);

static int cloth_save(const void *world, unsigned char **buf, size_t *len)
{
    const tb__cloth *c = world;
    tb__cloth_save h;
    memset(&h, 0, sizeof h);
    h.scene = (int32_t)c->scene;
    h.walking = c->walking;
    h.wind = c->wind;
    h.wind_direction = c->wind_direction;
    for (int a = 0; a < 3; a++) {
        h.bounds_min[a] = c->bounds_min[a];
        h.bounds_max[a] = c->bounds_max[a];
    }
    h.grab_count = tb_world_grabs_copy(&c->grabs, h.grab_client, h.grab_pointer);
    size_t wlen = tb_cloth_world_save_size(c->world), written = 0;
    unsigned char *out = tb_world_save_begin(&h, sizeof h, TB__SAVE_MAGIC, wlen);
    if (!out)
        return TB_ENOMEM;
    bool ok = tb_cloth_world_save(c->world, out + sizeof h, wlen, &written) == TB_PHYS_OK && written == wlen;
    return tb_world_save_end(out, ok, sizeof h + wlen, buf, len);
}

static int cloth_load(const char *scene, uint64_t seed, const tb_world_env *env, const unsigned char *buf, size_t len,
                      void **out)
{
    tb__cloth_save h;
    const unsigned char *image = tb_world_load_begin(buf, len, TB__SAVE_MAGIC, &h, sizeof h);
    if (!image || h.grab_count < 0 || h.grab_count > TB_CLOTH_MAX_GRABS || !isfinite(h.wind) ||
        !isfinite(h.wind_direction))
        return TB_EINVAL;
    for (int a = 0; a < 3; a++)
        if (!(h.bounds_min[a] >= -1e4 && h.bounds_max[a] <= 1e4 && h.bounds_min[a] < h.bounds_max[a]))
            return TB_EINVAL;
    void *made = NULL;
    int rc = cloth_create(scene, seed, env, &made);
    if (rc < 0)
        return rc;
    tb__cloth *c = made;
    if ((int32_t)c->scene != h.scene || tb_cloth_world_load(c->world, image, h.world_len) != TB_PHYS_OK) {
        cloth_destroy(c);
        return TB_EINVAL;
    }
    /* the saved grabs' clients are gone after a restart: end their grabs */
    for (int grab = 0; grab < TB_CLOTH_MAX_GRABS; grab++)
        tb_cloth_world_grab_end(c->world, grab); /* TB_PHYS_ERR_UNKNOWN_GRAB for a free handle: nothing to end */
    c->wind = h.wind;
    c->wind_direction = h.wind_direction;
    c->walking = h.walking != 0;
    for (int a = 0; a < 3; a++) {
        c->bounds_min[a] = h.bounds_min[a];
        c->bounds_max[a] = h.bounds_max[a];
    }
    *out = c;
    return 0;
}

static uint64_t cloth_hash(const void *world) { return tb_cloth_world_hash(((const tb__cloth *)world)->world); }

/* A point that went non-finite or far outside the room (an extreme grab or
 * poke that the solver could not absorb) resets the cloth to its scene's
 * start with the same parameters, ending every grab: better a flag that
 * starts over than a room that streams NaN. Returns 1 when it reset. */
static int cloth_check(void *world)
{
    tb__cloth *c = world;
    for (int p = 0; p < tb_cloth_world_piece_count(c->world); p++) {
        tb_cloth_view v;
        if (tb_cloth_world_get_cloth(c->world, p, &v) != TB_PHYS_OK)
            continue;
        for (int i = 0; i < 3 * v.point_count; i++) {
            float x = v.positions[i];
            int a = i % 3;
            if (!isfinite(x) || x < c->bounds_min[a] - 20.0 || x > c->bounds_max[a] + 20.0) {
                tb_cloth_world_reset(c->world);
                c->grabs.count = 0;
                return 1;
            }
        }
    }
    return 0;
}

const tb_world_ops tb_world_cloth_ops = {
    .kind = "cloth",
    .create = cloth_create,
    .destroy = cloth_destroy,
    .apply_input = cloth_apply_input,
    .step = cloth_step,
    .info = cloth_info,
    .describe = cloth_describe,
    .fill_snapshot = cloth_fill_snapshot,
    .max_bodies = cloth_max_bodies,
    .param_set = cloth_param_set,
    .param_get = cloth_param_get,
    .save = cloth_save,
    .load = cloth_load,
    .hash = cloth_hash,
    .check = cloth_check,
};
