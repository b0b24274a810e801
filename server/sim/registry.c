/* registry.c: the table of open rooms (see registry.h). */
#include "sim/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"

static const char *const tb__default_rooms[] = {"tower", "dice", "flag", "cape", "dough"};

int tb_registry_init(tb_registry *reg, tb_sched *sched, tb_metrics *metrics, int max_rooms,
                     int64_t idle_timeout_ns, uint64_t seed)
{
    memset(reg, 0, sizeof *reg);
    pthread_mutex_init(&reg->lock, NULL);
    reg->sched = sched;
    reg->metrics = metrics;
    reg->max_rooms = max_rooms;
    reg->idle_timeout_ns = idle_timeout_ns;
    reg->next_seed = seed;
    return 0;
}

/* ---- the id index: linear probing, tombstones, grown at 3/4 full ---- */

static tb_room tb__tombstone_room;
#define TB__TOMBSTONE (&tb__tombstone_room)

static uint32_t tb__hash(const char *id)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h;
}

/* The slot holding id, or -1. */
static int tb__slot(const tb_registry *reg, const char *id)
{
    if (!reg->index_cap)
        return -1;
    uint32_t mask = (uint32_t)reg->index_cap - 1;
    for (uint32_t i = tb__hash(id) & mask;; i = (i + 1) & mask) {
        tb_room *r = reg->index[i];
        if (!r)
            return -1;
        if (r != TB__TOMBSTONE && strcmp(r->id, id) == 0)
            return (int)i;
    }
}

static tb_room *tb__lookup(const tb_registry *reg, const char *id)
{
    int i = tb__slot(reg, id);
    return i >= 0 ? reg->index[i] : NULL;
}

static void tb__index_put(tb_room **index, int cap, tb_room *room)
{
    uint32_t mask = (uint32_t)cap - 1;
    uint32_t i = tb__hash(room->id) & mask;
    while (index[i] && index[i] != TB__TOMBSTONE)
        i = (i + 1) & mask;
    index[i] = room;
}

/* Room for one more entry (rebuilt without tombstones when 3/4 used). */
static int tb__index_reserve(tb_registry *reg)
{
    if ((reg->index_used + 1) * 4 <= reg->index_cap * 3)
        return 0;
    int cap = 64;
    while ((reg->count + 1) * 2 > cap)
        cap *= 2;
    tb_room **index = calloc((size_t)cap, sizeof *index);
    if (!index)
        return TB_ENOMEM;
    for (int i = 0; i < reg->count; i++)
        tb__index_put(index, cap, reg->rooms[i]);
    free(reg->index);
    reg->index = index;
    reg->index_cap = cap;
    reg->index_used = reg->count;
    return 0;
}

/* Adds room to the array and the index; the caller made room in both. */
tb_room *tb_registry_find(tb_registry *reg, const char *id)
{
    pthread_mutex_lock(&reg->lock);
    tb_room *room = tb__lookup(reg, id);
    if (room)
        tb_room_ref(room);
    pthread_mutex_unlock(&reg->lock);
    return room;
}

/* Space for one more room (lock held): 0, TB_EMAXROOMS or TB_ENOMEM. */
static int tb__make_space(tb_registry *reg)
{
    if (reg->count >= reg->max_rooms)
        return TB_EMAXROOMS;
    if (reg->count == reg->cap) {
        int cap = reg->cap ? reg->cap * 2 : 16;
        tb_room **rooms = realloc(reg->rooms, (size_t)cap * sizeof *rooms);
        if (!rooms)
            return TB_ENOMEM;
        reg->rooms = rooms;
        reg->cap = cap;
    }
    return tb__index_reserve(reg);
}

/* Publishes the world's counts, hands the room to a worker and lists it,
 * taking over the caller's reference (lock held, space made). */
static int tb__adopt(tb_registry *reg, tb_room *room)
{
    tb_world_info info = {0, 0};
    room->ops->info(room->world, &info);
    atomic_store(&room->bodies, info.bodies);
    atomic_store(&room->awake, info.awake);
    int rc = tb_sched_adopt(reg->sched, room);
    if (rc < 0)
        return rc;
    reg->rooms[reg->count++] = room;
    tb__index_put(reg->index, reg->index_cap, room);
    reg->index_used++;
    atomic_fetch_add(&reg->metrics->rooms, 1);
    return 0;
}

int tb_registry_get_or_create(tb_registry *reg, const char *id, const char *scene_name, bool keep,
                              tb_room **out, bool *created)
{
    *out = NULL;
    if (created)
        *created = false;
    if (!tb_room_id_valid(id))
        return TB_EBADID;
    pthread_mutex_lock(&reg->lock);
    tb_room *found = tb__lookup(reg, id);
    if (found) {
        *out = tb_room_ref(found);
        pthread_mutex_unlock(&reg->lock);
        return 0;
    }
    tb_room *room = NULL;
    int rc = tb__make_space(reg);
    if (rc < 0)
        goto done;
    rc = tb_room_new(id, scene_name, reg->next_seed++, keep, &room);
    if (rc < 0)
        goto done;
    room->env = reg->sched ? &reg->sched->env : NULL;
    rc = room->ops->create(room->scene, room->seed, room->env, &room->world);
    if (rc == 0)
        rc = tb__adopt(reg, room); /* the registry keeps tb_room_new's reference */
    if (rc < 0) {
        tb_room_unref(room);
        goto done;
    }
    *out = tb_room_ref(room);
    if (created)
        *created = true;
done:
    pthread_mutex_unlock(&reg->lock);
    return rc;
}

int tb_registry_insert(tb_registry *reg, tb_room *room)
{
    pthread_mutex_lock(&reg->lock);
    int rc = tb__lookup(reg, room->id) ? TB_EBUSY : tb__make_space(reg);
    if (rc == 0)
        rc = tb__adopt(reg, room);
    pthread_mutex_unlock(&reg->lock);
    if (rc < 0)
        tb_room_unref(room);
    return rc;
}

int tb_registry_open_defaults(tb_registry *reg)
{
    for (size_t i = 0; i < sizeof tb__default_rooms / sizeof tb__default_rooms[0]; i++) {
        tb_room *room = NULL;
        int rc = tb_registry_get_or_create(reg, tb__default_rooms[i], tb__default_rooms[i], true, &room, NULL);
        if (rc < 0)
            return rc;
        tb_room_unref(room);
    }
    return 0;
}

int tb_registry_sweep(tb_registry *reg, int64_t now_ns)
{
    int retired = 0;
    pthread_mutex_lock(&reg->lock);
    for (int i = 0; i < reg->count;) {
        tb_room *room = reg->rooms[i];
        if (room->keep || atomic_load(&room->clients) > 0) {
            room->idle_since_ns = 0;
            i++;
            continue;
        }
        if (room->idle_since_ns == 0)
            room->idle_since_ns = now_ns;
        if (now_ns - room->idle_since_ns < reg->idle_timeout_ns) {
            i++;
            continue;
        }
        atomic_store_explicit(&room->retire, true, memory_order_release);
        reg->index[tb__slot(reg, room->id)] = TB__TOMBSTONE; /* still counted in index_used */
        reg->rooms[i] = reg->rooms[--reg->count];
        atomic_fetch_sub(&reg->metrics->rooms, 1);
        tb_room_unref(room);
        retired++;
    }
    pthread_mutex_unlock(&reg->lock);
    return retired;
}

int tb_registry_remove(tb_registry *reg, const char *id)
{
    pthread_mutex_lock(&reg->lock);
    tb_room *room = tb__lookup(reg, id);
    int removed = 0;
    for (int i = 0; room && i < reg->count; i++) {
        if (reg->rooms[i] != room)
            continue;
        atomic_store_explicit(&room->retire, true, memory_order_release);
        reg->index[tb__slot(reg, room->id)] = TB__TOMBSTONE; /* still counted in index_used */
        reg->rooms[i] = reg->rooms[--reg->count];
        atomic_fetch_sub(&reg->metrics->rooms, 1);
        tb_room_unref(room);
        removed = 1;
        break;
    }
    pthread_mutex_unlock(&reg->lock);
    return removed;
}

int tb_registry_rows(tb_registry *reg, tb_room_row *rows, int cap)
{
    pthread_mutex_lock(&reg->lock);
    int n = reg->count;
    for (int i = 0; i < n && i < cap; i++) {
        tb_room *room = reg->rooms[i];
        tb_room_row *row = &rows[i];
        const tb_scene *scene = atomic_load(&room->scene_def);
        snprintf(row->id, sizeof row->id, "%s", room->id);
        snprintf(row->kind, sizeof row->kind, "%s", scene->kind);
        snprintf(row->scene, sizeof row->scene, "%s", scene->name);
        row->clients = atomic_load(&room->clients);
        row->bodies = atomic_load(&room->bodies);
        row->awake = atomic_load(&room->awake);
        row->worker = room->worker;
        row->step_us = tb_room_mean_step_us(room);
        row->steps = atomic_load(&room->step_count);
        row->keep = room->keep;
    }
    pthread_mutex_unlock(&reg->lock);
    return n;
}

int tb_registry_count(tb_registry *reg)
{
    pthread_mutex_lock(&reg->lock);
    int n = reg->count;
    pthread_mutex_unlock(&reg->lock);
    return n;
}

void tb_registry_close(tb_registry *reg)
{
    pthread_mutex_lock(&reg->lock);
    for (int i = 0; i < reg->count; i++) {
        atomic_store(&reg->rooms[i]->retire, true);
        tb_room_unref(reg->rooms[i]);
    }
    reg->count = 0;
    free(reg->rooms);
    reg->rooms = NULL;
    free(reg->index);
    reg->index = NULL;
    reg->index_cap = reg->index_used = 0;
    pthread_mutex_unlock(&reg->lock);
    pthread_mutex_destroy(&reg->lock);
}
