/* world_placeholder.c: a stand-in world until the real kernels are wired.
 *
 * It lets the scheduler, snapshots, parameters and every network path run
 * end to end before rigid/cloth/soft exist: a few points circling at a rate
 * set by the `speed` parameter, plus `friction` and `gravity` parameters with
 * ranges. It is deterministic (pure function of its tick count).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/world.h"

#define TB__PH_POINTS 4

typedef struct {
    char scene[24];
    double time;
    float speed, friction, gravity;
    float pos[TB__PH_POINTS][3];
} tb__placeholder;

typedef struct {
    const char *name;
    float lo, hi;
    size_t offset;
} tb__param;

static const tb__param tb__params[] = {
    {"speed", 0.0f, 10.0f, offsetof(tb__placeholder, speed)},
    {"friction", 0.0f, 2.0f, offsetof(tb__placeholder, friction)},
    {"gravity", -30.0f, 0.0f, offsetof(tb__placeholder, gravity)},
};
#define TB__NPARAMS (sizeof tb__params / sizeof tb__params[0])

static void tb__pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static int ph_create(const char *scene, uint64_t seed, void **out)
{
    tb__placeholder *w = calloc(1, sizeof *w);
    if (!w)
        return TB_ENOMEM;
    strncpy(w->scene, scene, sizeof w->scene - 1);
    w->speed = 1.0f;
    w->friction = 0.5f;
    w->gravity = -9.81f;
    w->time = (double)(seed % 1000) * 0.001;
    *out = w;
    return 0;
}

static void ph_destroy(void *world) { free(world); }

static int ph_apply_input(void *world, const tb_input *in)
{
    tb__placeholder *w = world;
    if (in->type == TB_INPUT_RESET) {
        w->time = 0.0;
        return 0;
    }
    return 0;
}

static void ph_step(void *world, float dt)
{
    tb__placeholder *w = world;
    w->time += dt * w->speed;
    for (int i = 0; i < TB__PH_POINTS; i++) {
        double a = w->time + i * (6.283185307 / TB__PH_POINTS);
        w->pos[i][0] = (float)cos(a);
        w->pos[i][1] = 1.0f;
        w->pos[i][2] = (float)sin(a);
    }
}

static void ph_info(const void *world, tb_world_info *out)
{
    out->bodies = TB__PH_POINTS;
    out->awake = ((const tb__placeholder *)world)->speed > 0 ? TB__PH_POINTS : 0;
}

static int ph_pack_static(const void *world, msgpack_packer *pk)
{
    msgpack_pack_map(pk, 2);
    tb__pack_str(pk, "points");
    msgpack_pack_int(pk, TB__PH_POINTS);
    tb__pack_str(pk, "params");
    msgpack_pack_array(pk, TB__NPARAMS);
    for (size_t i = 0; i < TB__NPARAMS; i++) {
        msgpack_pack_map(pk, 4);
        tb__pack_str(pk, "name");
        tb__pack_str(pk, tb__params[i].name);
        tb__pack_str(pk, "min");
        msgpack_pack_float(pk, tb__params[i].lo);
        tb__pack_str(pk, "max");
        msgpack_pack_float(pk, tb__params[i].hi);
        tb__pack_str(pk, "value");
        msgpack_pack_float(pk, *(const float *)((const char *)world + tb__params[i].offset));
    }
    return 0;
}

static int ph_pack_state(const void *world, msgpack_packer *pk)
{
    const tb__placeholder *w = world;
    msgpack_pack_map(pk, 1);
    tb__pack_str(pk, "points");
    msgpack_pack_bin(pk, sizeof w->pos);
    msgpack_pack_bin_body(pk, w->pos, sizeof w->pos);
    return 0;
}

static const tb__param *ph_find(const char *name)
{
    for (size_t i = 0; i < TB__NPARAMS; i++)
        if (strcmp(tb__params[i].name, name) == 0)
            return &tb__params[i];
    return NULL;
}

static int ph_param_get(const void *world, const char *name, float *value)
{
    const tb__param *p = ph_find(name);
    if (!p)
        return TB_EUNKNOWN;
    *value = *(const float *)((const char *)world + p->offset);
    return 0;
}

static int ph_param_set(void *world, const char *name, float value)
{
    const tb__param *p = ph_find(name);
    if (!p)
        return TB_EUNKNOWN;
    if (!isfinite(value) || value < p->lo || value > p->hi)
        return TB_ERANGE;
    *(float *)((char *)world + p->offset) = value;
    return 0;
}

const tb_world_ops tb_world_placeholder_ops = {
    .kind = "placeholder",
    .create = ph_create,
    .destroy = ph_destroy,
    .apply_input = ph_apply_input,
    .step = ph_step,
    .info = ph_info,
    .pack_static = ph_pack_static,
    .pack_state = ph_pack_state,
    .param_get = ph_param_get,
    .param_set = ph_param_set,
};
