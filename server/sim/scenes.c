/* scenes.c: which scenes exist and which world kind runs each.
 *
 * A scene name is what a join asks for; its kind decides the adapter. A
 * room may switch scene (action "select") only within its kind.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Parameters live in the worlds as float32, and people set them in decimal:
 * a value goes out as the shortest decimal that names its float32, so 0.2
 * is sent as 0.2 and not as 0.20000000298023224 (PROTOCOL.md §5). */
double tb_world_param_decimal(double value)
{
    if (!isfinite(value) || fabs(value) > 3.0e38)
        return value;
    float f = (float)value;
    char text[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)f);
        if (strtof(text, NULL) == f)
            return strtod(text, NULL);
    }
    return (double)f;
}

void tb_world_param_describe(const tb_world_param *p, double value, tb_proto_param *out)
{
    snprintf(out->name, sizeof out->name, "%s", p->name);
    out->value = tb_world_param_decimal(value);
    out->min = tb_world_param_decimal(p->min);
    out->max = tb_world_param_decimal(p->max);
    out->def = tb_world_param_decimal(p->def);
    out->step = tb_world_param_decimal(p->step);
}

/* At float32 precision, the precision the worlds keep (PROTOCOL.md §5): a
 * slider at its end that sends 0.9000000000000001 for 0.9 is in range. */
int tb_world_param_check(const tb_world_param *p, double value)
{
    if (!isfinite(value))
        return TB_ERANGE;
    float f = (float)value;
    return f >= (float)p->min && f <= (float)p->max ? 0 : TB_ERANGE;
}

int tb_world_param_find(const tb_world_param *params, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(params[i].name, name) == 0)
            return i;
    return -1;
}
