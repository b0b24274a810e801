/* world.h: what a room needs from a world kind (rigid, cloth, soft).
 *
 * A room does not know what it simulates. It holds a `void *world` and a
 * table of functions for its kind; the scheduler calls step(), the room
 * applies inputs and asks for state to encode. Adding a world kind is one
 * adapter file (sim/world_<kind>.c) that fills a tb_world_ops and one line
 * in sim/scenes.c. Every function runs on the room's worker thread only.
 *
 * State, static description and events are written with a msgpack_packer,
 * the currency of the protocol codec (proto/c is built on msgpack-c), so an
 * adapter can call the codec's packing helpers directly.
 */
#ifndef TB_WORLD_H
#define TB_WORLD_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/input.h"

typedef struct tb_world_info {
    int bodies; /* bodies, or points for cloth/soft */
    int awake;  /* bodies not asleep */
} tb_world_info;

typedef struct tb_world_ops {
    const char *kind;
    /* Build the scene; *world set on success. TB_EBADSCENE, TB_ENOMEM. */
    int (*create)(const char *scene, uint64_t seed, void **world);
    void (*destroy)(void *world);
    /* Every input except JOIN/LEAVE(*)/PARAM. 0 or a TB_E* code the client is
     * told. TB_ENOTSUP for RESET makes the room rebuild the world instead.
     * (*) LEAVE is passed too, so grabs of a leaving client are released. */
    int (*apply_input)(void *world, const tb_input *in);
    void (*step)(void *world, float dt);
    void (*info)(const void *world, tb_world_info *out);
    /* The description sent once on join: shapes, sizes, topology, params
     * with ranges. Packs exactly one msgpack object. */
    int (*pack_static)(const void *world, msgpack_packer *pk);
    /* The full dynamic state. Packs exactly one msgpack object. */
    int (*pack_state)(const void *world, msgpack_packer *pk);
    int (*param_get)(const void *world, const char *name, float *value);
    /* TB_EUNKNOWN for a name it does not have, TB_ERANGE out of range/NaN. */
    int (*param_set)(void *world, const char *name, float value);
    /* 1 and one msgpack object packed when the world has an event to
     * broadcast (dice result), else 0. May be NULL. */
    int (*poll_event)(void *world, msgpack_packer *pk);
    /* Persistence (issue 9); may be NULL. */
    int (*save)(const void *world, msgpack_packer *pk);
    int (*load)(void *world, const void *data, size_t len);
} tb_world_ops;

/* The scenes the server knows and the kind each belongs to. */
typedef struct tb_scene {
    const char *name;
    const char *kind;
    const tb_world_ops *ops;
} tb_scene;

/* NULL when unknown. */
const tb_scene *tb_scene_find(const char *name);
/* The table, terminated by a zeroed entry. */
const tb_scene *tb_scene_table(void);

#endif
