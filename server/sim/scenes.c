/* scenes.c: which scenes exist and which world kind runs each.
 *
 * A scene name is what a join asks for; its kind decides the adapter. A
 * room may switch scene (action "select") only within its kind.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/error.h"
#include "sim/world.h"

extern const tb_world_ops tb_world_rigid_ops;
extern const tb_world_ops tb_world_cloth_ops;
extern const tb_world_ops tb_world_soft_ops;

static const tb_scene tb__scenes[] = {
    {"tower", "rigid", &tb_world_rigid_ops},
    {"dice", "rigid", &tb_world_rigid_ops},
    {"pile", "rigid", &tb_world_rigid_ops},
    {"flag", "cloth", &tb_world_cloth_ops},
    {"cape", "cloth", &tb_world_cloth_ops},
    {"dough", "soft", &tb_world_soft_ops},
    {NULL, NULL, NULL},
};

const tb_scene *tb_scene_find(const char *name)
{
    if (!name)
        return NULL;
    for (const tb_scene *s = tb__scenes; s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

const tb_scene *tb_scene_table(void) { return tb__scenes; }

void tb_world_param_describe(const tb_world_param *p, double value, tb_proto_param *out)
{
    snprintf(out->name, sizeof out->name, "%s", p->name);
    out->value = value;
    out->min = p->min;
    out->max = p->max;
    out->def = p->def;
    out->step = p->step;
}

int tb_world_param_check(const tb_world_param *p, double value)
{
    return isfinite(value) && value >= p->min && value <= p->max ? 0 : TB_ERANGE;
}

int tb_world_param_find(const tb_world_param *params, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(params[i].name, name) == 0)
            return i;
    return -1;
}
