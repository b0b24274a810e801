/* world_soft.c: the soft world (physics/soft.h) as a room: the dough.
 *
 * One mesh (the icosphere's vertices streamed, triangles sent once). Grabs
 * are per (client, pointer), several at once; a poke presses a dent whose
 * depth grows with the impulse.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/soft.h"
#include "sim/error.h"
#include "sim/world.h"

typedef struct {
    tb_soft_world *world;
    tb_soft_def def;
    tb_world_grabs grabs; /* (client, pointer) pairs holding a grab, to end them on leave */
} tb__soft;

static const tb_world_param tb__params[] = {
    {"stiffness", 0.0, 1.0, 0.6, 0.05},
    {"plasticity", 0, 1, 1, 1},
    {"volume", 0, 1, 1, 1},
};
#define TB__NPARAMS (int)(sizeof tb__params / sizeof tb__params[0])
_Static_assert(TB_SOFT_MAX_GRABS <= TB_WORLD_MAX_GRABS, "the grab table holds every grab the world accepts");

static int soft_create(const char *scene, uint64_t seed, const tb_world_env *env, void **out)
{
    (void)seed;
    if (strcmp(scene, "dough") != 0)
        return TB_EBADSCENE;
    tb__soft *s = calloc(1, sizeof *s);
    if (!s)
        return TB_ENOMEM;
    s->def = tb_soft_def_default();
    s->world = tb_soft_world_create(&s->def, NULL);
    if (!s->world) {
        free(s);
        return TB_ENOMEM;
    }
    *out = s;
    return 0;
}

static void soft_destroy(void *world)
{
    tb__soft *s = world;
    if (!s)
        return;
    tb_soft_world_destroy(s->world);
    free(s);
}

static int soft_apply_input(void *world, const tb_input *in)
{
    tb__soft *s = world;
    tb_vec3 p = tb_v3(in->pos[0], in->pos[1], in->pos[2]);
    int r;
    switch (in->type) {
    case TB_INPUT_GRAB_START:
        if (tb_world_grabs_find(&s->grabs, in->client, in->pointer, &r))
            return TB_EBUSY; /* that pointer already holds */
        r = tb_soft_world_grab_start(s->world, p);
        if (r < 0)
            return tb_world_error(r);
        tb_world_grabs_add(&s->grabs, in->client, in->pointer, r);
        return 0;
    case TB_INPUT_GRAB_MOVE:
        if (!tb_world_grabs_find(&s->grabs, in->client, in->pointer, &r))
            return TB_ENOBODY;
        return tb_world_error(tb_soft_world_grab_move(s->world, r, p));
    case TB_INPUT_GRAB_END:
        if (!tb_world_grabs_forget(&s->grabs, in->client, in->pointer, &r))
            return TB_ENOBODY;
        return tb_world_error(tb_soft_world_grab_end(s->world, r));
    case TB_INPUT_LEAVE:
        while (tb_world_grabs_take(&s->grabs, in->client, &r))
            tb_soft_world_grab_end(s->world, r);
        return 0;
    case TB_INPUT_POKE: {
        float strength = sqrtf(in->vec[0] * in->vec[0] + in->vec[1] * in->vec[1] + in->vec[2] * in->vec[2]);
        float depth = tb_clampf(0.05f * strength, 0.05f, TB_SOFT_PRESS_DEPTH_MAX);
        return tb_world_error(tb_soft_world_press(s->world, p, depth));
    }
    case TB_INPUT_RESET:
        if (in->flags)
            return TB_ENOTSUP;
        tb_soft_world_reset(s->world);
        s->grabs.count = 0;
        return 0;
    case TB_INPUT_CONTACTS:
        return 0;
    default:
        return TB_ENOTSUP;
    }
}

static void soft_step(void *world, float dt)
{
    int rc = tb_soft_world_step(((tb__soft *)world)->world, dt); /* the room's 1/120 s is in range */
    assert(rc == TB_PHYS_OK);
    (void)rc;
}

static void soft_info(const void *world, tb_world_info *out)
{
    const tb__soft *s = world;
    out->bodies = tb_soft_world_vertex_count(s->world);
    out->awake = tb_soft_world_asleep(s->world) ? 0 : out->bodies; /* PROTOCOL.md §7.4: vertices still moving */
}

static void soft_describe(const void *world, tb_proto_welcome *out)
{
    const tb__soft *s = world;
    double values[TB__NPARAMS] = {s->def.stiffness, s->def.plasticity, s->def.volume_preservation};
    out->param_count = TB__NPARAMS;
    for (int i = 0; i < TB__NPARAMS; i++)
        tb_world_param_describe(&tb__params[i], values[i], &out->params[i]);
    tb_proto_static *st = &out->st;
    memset(st, 0, sizeof *st);
    for (int a = 0; a < 3; a++) {
        st->bounds_min[a] = -TB_SOFT_MAX_RADIUS - 1.5;
        st->bounds_max[a] = TB_SOFT_MAX_RADIUS + 1.5;
    }
    st->mesh_count = 1;
    tb_proto_mesh *m = &st->meshes[0];
    strcpy(m->kind, "soft");
    m->verts = (uint32_t)tb_soft_world_vertex_count(s->world);
    m->tri_count = (uint32_t)tb_soft_world_triangle_count(s->world);
    m->tris = (const uint8_t *)tb_soft_world_triangles(s->world); /* uint16 little-endian */
    m->color = 0xF3D9A4;
}

static void soft_fill_snapshot(void *world, tb_snap_input *in)
{
    tb__soft *s = world;
    memset(in, 0, sizeof *in);
    in->verts[0] = tb_soft_world_positions(s->world);
    in->awake = tb_soft_world_asleep(s->world) ? 0 : (uint32_t)tb_soft_world_vertex_count(s->world);
}

static uint32_t soft_max_bodies(const void *world) { return 0; }

static int tb__param_index(const char *name) { return tb_world_param_find(tb__params, TB__NPARAMS, name); }

static int soft_param_set(void *world, const char *name, double value)
{
    tb__soft *s = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    if (tb_world_param_check(&tb__params[i], value) < 0)
        return TB_ERANGE;
    int r;
    if (i == 0) {
        r = tb_soft_world_set_stiffness(s->world, (float)value);
        if (r == TB_PHYS_OK) s->def.stiffness = (float)value;
    } else if (i == 1) {
        r = tb_soft_world_set_plasticity(s->world, value >= 0.5);
        if (r == TB_PHYS_OK) s->def.plasticity = value >= 0.5;
    } else {
        r = tb_soft_world_set_volume_preservation(s->world, value >= 0.5);
        if (r == TB_PHYS_OK) s->def.volume_preservation = value >= 0.5;
    }
    return tb_world_error(r);
}

static int soft_param_get(const void *world, const char *name, double *value)
{
    const tb__soft *s = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    *value = i == 0 ? s->def.stiffness : i == 1 ? s->def.plasticity : s->def.volume_preservation;
    return 0;
}

/* ---- persistence, replay hash, fault check ---------------------------------
 * A save is a small header (the parameter mirror, who held which grab) and
 * the physics image (physics/soft.c). On load the saved grabs are ended
 * (their clients are gone), which commits the shape they pulled. */
#define TB__SAVE_MAGIC 0x31534254u /* "TBS1" */

typedef struct {
    uint32_t magic, header_size;
    float stiffness;
    int32_t plasticity, volume, substeps, grab_count, pad;
    uint32_t grab_client[TB_SOFT_MAX_GRABS], grab_pointer[TB_SOFT_MAX_GRABS];
    uint64_t world_len;
} tb__soft_save;
TB_WORLD_SAVE_HEADER_OK(tb__soft_save);

static int soft_save(const void *world, unsigned char **buf, size_t *len)
{
    const tb__soft *s = world;
    tb__soft_save h;
    memset(&h, 0, sizeof h);
    h.stiffness = s->def.stiffness;
    h.plasticity = s->def.plasticity;
    h.volume = s->def.volume_preservation;
    h.substeps = s->def.substeps;
    h.grab_count = tb_world_grabs_copy(&s->grabs, h.grab_client, h.grab_pointer);
    size_t wlen = tb_soft_world_save_size(s->world), written = 0;
    unsigned char *out = tb_world_save_begin(&h, sizeof h, TB__SAVE_MAGIC, wlen);
    if (!out)
        return TB_ENOMEM;
    bool ok = tb_soft_world_save(s->world, out + sizeof h, wlen, &written) == TB_PHYS_OK && written == wlen;
    return tb_world_save_end(out, ok, sizeof h + wlen, buf, len);
}

static int soft_load(const char *scene, uint64_t seed, const tb_world_env *env, const unsigned char *buf, size_t len,
                     void **out)
{
    tb__soft_save h;
    const unsigned char *image = tb_world_load_begin(buf, len, TB__SAVE_MAGIC, &h, sizeof h);
    if (!image || h.grab_count < 0 || h.grab_count > TB_SOFT_MAX_GRABS ||
        !(h.stiffness >= 0.0f && h.stiffness <= 1.0f) || h.substeps < 1 || h.substeps > TB_SOFT_SUBSTEPS_MAX)
        return TB_EINVAL;
    void *made = NULL;
    int rc = soft_create(scene, seed, env, &made);
    if (rc < 0)
        return rc;
    tb__soft *s = made;
    if (tb_soft_world_load(s->world, image, h.world_len) != TB_PHYS_OK) {
        soft_destroy(s);
        return TB_EINVAL;
    }
    /* the saved grabs' clients are gone: ending them commits what they pulled */
    for (int grab = 0; grab < TB_SOFT_MAX_GRABS; grab++)
        tb_soft_world_grab_end(s->world, grab); /* TB_PHYS_ERR_UNKNOWN_GRAB for a free handle: nothing to end */
    s->def.stiffness = h.stiffness;
    s->def.plasticity = h.plasticity != 0;
    s->def.volume_preservation = h.volume != 0;
    s->def.substeps = h.substeps;
    *out = s;
    return 0;
}

static uint64_t soft_hash(const void *world) { return tb_soft_world_hash(((const tb__soft *)world)->world); }

/* Non-finite or far-flung vertices (an extreme grab the solver could not
 * absorb) reset the dough to the round ball with the same parameters. */
static int soft_check(void *world)
{
    tb__soft *s = world;
    const float *p = tb_soft_world_positions(s->world);
    const float limit = 3.0f * TB_SOFT_MAX_RADIUS + 10.0f;
    for (int i = 0; i < 3 * tb_soft_world_vertex_count(s->world); i++)
        if (!isfinite(p[i]) || fabsf(p[i]) > limit) {
            tb_soft_world_reset(s->world);
            s->grabs.count = 0;
            return 1;
        }
    return 0;
}

const tb_world_ops tb_world_soft_ops = {
    .kind = "soft",
    .create = soft_create,
    .destroy = soft_destroy,
    .apply_input = soft_apply_input,
    .step = soft_step,
    .info = soft_info,
    .describe = soft_describe,
    .fill_snapshot = soft_fill_snapshot,
    .max_bodies = soft_max_bodies,
    .param_set = soft_param_set,
    .param_get = soft_param_get,
    .save = soft_save,
    .load = soft_load,
    .hash = soft_hash,
    .check = soft_check,
};
