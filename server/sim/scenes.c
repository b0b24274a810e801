/* scenes.c: which scenes exist and which world kind runs each.
 *
 * A scene name is what a join asks for; its kind decides the world adapter.
 * Until a kind's kernel is wired, its scenes run on the placeholder world so
 * that every other part of the server is exercised.
 */
#include <string.h>

#include "sim/world.h"

extern const tb_world_ops tb_world_placeholder_ops;

static const tb_scene tb__scenes[] = {
    {"tower", "rigid", &tb_world_placeholder_ops},
    {"dice", "rigid", &tb_world_placeholder_ops},
    {"pile", "rigid", &tb_world_placeholder_ops},
    {"flag", "cloth", &tb_world_placeholder_ops},
    {"cape", "cloth", &tb_world_placeholder_ops},
    {"dough", "soft", &tb_world_placeholder_ops},
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
