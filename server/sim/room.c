/* room.c: room allocation, reference counting, id validation. */
#include "sim/room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/record.h"

bool tb_room_id_valid(const char *id)
{
    if (!id)
        return false;
    size_t n = 0;
    for (; id[n]; n++) {
        char c = id[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-';
        if (!ok || n >= TB_ROOM_ID_MAX)
            return false;
    }
    return n >= 1;
}

int tb_room_new(const char *id, const char *scene_name, uint64_t seed, bool keep, tb_room **out)
{
    *out = NULL;
    if (!tb_room_id_valid(id))
        return TB_EBADID;
    const tb_scene *scene = tb_scene_find(scene_name);
    if (!scene)
        return TB_EBADSCENE;
    tb_room *room = calloc(1, sizeof *room);
    if (!room)
        return TB_ENOMEM;
    if (tb_ring_init(&room->inputs, TB_ROOM_INPUT_CAPACITY, sizeof(tb_input)) != 0) {
        free(room);
        return TB_ENOMEM;
    }
    strcpy(room->id, id);
    strncpy(room->scene, scene->name, sizeof room->scene - 1);
    room->ops = scene->ops;
    atomic_init(&room->scene_def, scene);
    room->keep = keep;
    room->seed = seed;
    room->worker = -1;
    room->snapshot_every = 2;
    atomic_init(&room->refs, 1);
    *out = room;
    return 0;
}

tb_room *tb_room_ref(tb_room *room)
{
    atomic_fetch_add_explicit(&room->refs, 1, memory_order_relaxed);
    return room;
}

void tb_room_unref(tb_room *room)
{
    if (!room || atomic_fetch_sub_explicit(&room->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* The worker destroys the world when it retires the room; a room that
     * never reached a worker (start failure) may still hold one. */
    if (room->world && room->ops)
        room->ops->destroy(room->world);
    if (room->encoder)
        tb_snap_encoder_destroy(room->encoder);
    for (int l = 0; l < TB_ROOM_LANES; l++)
        for (int t = 0; t < TB_ROOM_TIERS; t++)
            if (room->tier_encoder[l][t])
                tb_snap_encoder_destroy(room->tier_encoder[l][t]);
    tb_record_close(room->record);
    tb_ring_close(&room->inputs);
    free(room);
}

const int tb_room_strides[TB_ROOM_TIERS] = {1, 2, 3, 4, 6, 12};

int tb_room_push_input(tb_room *room, const tb_input *in)
{
    return tb_ring_push(&room->inputs, in) == 0 ? 0 : TB_EFULL;
}

double tb_room_mean_step_us(const tb_room *room)
{
    uint64_t n = atomic_load_explicit(&((tb_room *)room)->step_count, memory_order_relaxed);
    uint64_t s = atomic_load_explicit(&((tb_room *)room)->step_ns_sum, memory_order_relaxed);
    return n ? (double)s / (double)n / 1000.0 : 0.0;
}

int tb_room_swap_scene(tb_room *room, const char *scene_name)
{
    const tb_scene *scene = tb_scene_find(scene_name);
    if (!scene)
        return TB_EBADSCENE;
    if (scene->ops != room->ops)
        return TB_ENOTSUP;
    void *world = NULL;
    int rc = room->ops->create(scene->name, room->seed + room->tick, room->env, &world);
    if (rc < 0)
        return rc;
    room->ops->destroy(room->world);
    room->world = world;
    snprintf(room->scene, sizeof room->scene, "%s", scene->name);
    atomic_store(&room->scene_def, scene);
    return 0;
}
