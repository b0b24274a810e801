/* replay.c: re-simulating a record from memory (see replay.h).
 *
 * Record layout (sim/record.c writes it; native endian, every field of a
 * fixed size, so an x86-64 record reads alike in wasm32):
 *   "TBREC001", u64 image length, the room's image (sim/room_image.h)
 *   records: u8 kind, then
 *     'I': u64 tick, tb_input (recv_ns zeroed)
 *     'H': u64 tick, u64 hash
 * Mirrors the worker (sim/sched.c tb__apply_input and tb__step_room): the
 * same world calls in the same order. Protocol replies are not produced.
 */
#include "sim/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/room_image.h"

_Static_assert(sizeof(tb_input) == 152, "a recorded input has one layout on every platform (x86-64, wasm32)");

#define TB__MAX_TICKS_BETWEEN (120ull * 3600 * 24) /* a day of silence: the file is not what it says */

struct tb_replay {
    unsigned char *buf;
    size_t len, pos, end; /* records from pos; end: just past the last whole record */
    size_t first;         /* offset of the first record */
    tb_room *room;
    uint64_t start_tick, end_tick;
    uint64_t records, hashes, static_changes;
    char error[200];
};

static size_t tb__record_size(int kind)
{
    return kind == 'I' ? 1 + 8 + sizeof(tb_input) : kind == 'H' ? 1 + 8 + 8 : 0;
}

int tb_replay_open(const unsigned char *buf, size_t len, tb_replay **out, char *why, size_t cap)
{
    *out = NULL;
    uint64_t image_len = 0;
    if (len < 16 || memcmp(buf, TB_RECORD_MAGIC, 8) != 0) {
        snprintf(why, cap, "not a tumble record");
        return TB_EINVAL;
    }
    memcpy(&image_len, buf + 8, 8);
    if (image_len > TB_RECORD_MAX_IMAGE) {
        snprintf(why, cap, "not a tumble record");
        return TB_EINVAL;
    }
    if (image_len > len - 16) {
        snprintf(why, cap, "truncated state image");
        return TB_EINVAL;
    }
    tb_replay *rp = calloc(1, sizeof *rp);
    if (!rp || !(rp->buf = malloc(len))) {
        free(rp);
        snprintf(why, cap, "out of memory");
        return TB_ENOMEM;
    }
    memcpy(rp->buf, buf, len);
    rp->len = len;
    int rc = tb_persist_decode(rp->buf + 16, (size_t)image_len, NULL, &rp->room, why, cap);
    if (rc < 0) {
        char inner[160];
        snprintf(inner, sizeof inner, "%s", why);
        snprintf(why, cap, "state image: %s", inner);
        free(rp->buf);
        free(rp);
        return rc == TB_ENOMEM ? TB_ENOMEM : TB_EINVAL;
    }
    rp->first = rp->pos = 16 + (size_t)image_len;
    rp->start_tick = rp->end_tick = rp->room->tick;
    /* the whole records, counted; an unknown kind ends the scan (and is
     * reported when the replay reaches it) */
    size_t at = rp->pos;
    for (;;) {
        if (at >= len) break;
        size_t n = tb__record_size(buf[at]);
        if (n == 0) { /* keep it in range: next() reports it */
            rp->end = len;
            break;
        }
        if (len - at < n) break;
        uint64_t tick;
        memcpy(&tick, buf + at + 1, 8);
        if (tick > rp->end_tick) rp->end_tick = tick;
        rp->records++;
        if (buf[at] == 'H') rp->hashes++;
        at += n;
        rp->end = at;
    }
    if (rp->end < rp->pos) rp->end = rp->pos;
    *out = rp;
    return 0;
}

void tb_replay_close(tb_replay *rp)
{
    if (!rp) return;
    tb_room_unref(rp->room);
    free(rp->buf);
    free(rp);
}

void tb_replay_step(tb_replay *rp)
{
    tb_room *room = rp->room;
    room->ops->step(room->world, 1.0f / (float)TB_REPLAY_STEP_HZ);
    room->tick++;
    if (room->ops->check)
        room->ops->check(room->world);
    tb_world_event ev; /* told to nobody, but taken as the server does (a dice result is told once) */
    for (int k = 0; room->ops->poll_event && k < TB_WORLD_EVENTS_PER_STEP &&
                    room->ops->poll_event(room->world, &ev) > 0; k++) {
    }
}

static int tb__apply(tb_replay *rp, const tb_input *in)
{
    tb_room *room = rp->room;
    switch (in->type) {
    case TB_INPUT_JOIN:
    case TB_INPUT_CONTACTS:
        return 0;
    case TB_INPUT_PARAM: {
        int rc = room->ops->param_set(room->world, in->name, in->value_d);
        if (rc == TB_WORLD_STATIC_CHANGED) {
            room->tick++; /* a static change takes a tick of its own (sched.c tb__static_changed) */
            rp->static_changes++;
        }
        return rc;
    }
    case TB_INPUT_SCENE: {
        int rc = tb_room_swap_scene(room, in->name);
        if (rc == 0) {
            room->tick++;
            rp->static_changes++;
        }
        return rc;
    }
    default: /* LEAVE, RESET and the world inputs */
        return room->ops->apply_input(room->world, in);
    }
}

uint64_t tb_replay_peek_tick(const tb_replay *rp)
{
    if (rp->error[0] || rp->pos >= rp->end || rp->end - rp->pos < 9)
        return UINT64_MAX;
    uint64_t tick;
    memcpy(&tick, rp->buf + rp->pos + 1, 8);
    return tick;
}

int tb_replay_next(tb_replay *rp, tb_replay_event *ev)
{
    tb_room *room = rp->room;
    if (rp->error[0])
        return -1;
    if (rp->pos >= rp->end)
        return 0;
    int kind = rp->buf[rp->pos];
    size_t n = tb__record_size(kind);
    if (n == 0) {
        snprintf(rp->error, sizeof rp->error, "unknown record kind 0x%02x", kind & 0xff);
        return -1;
    }
    if (rp->end - rp->pos < n)
        return 0;
    const unsigned char *p = rp->buf + rp->pos + 1;
    uint64_t tick;
    memcpy(&tick, p, 8);
    if (tick < room->tick || tick - room->tick > TB__MAX_TICKS_BETWEEN) {
        snprintf(rp->error, sizeof rp->error, "record out of order at tick %llu", (unsigned long long)tick);
        return -1;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->tick = tick;
    while (room->tick < tick)
        tb_replay_step(rp);
    if (kind == 'I') {
        memcpy(&ev->input, p + 8, sizeof ev->input);
        ev->input.name[sizeof ev->input.name - 1] = 0;
        ev->input.by_name[sizeof ev->input.by_name - 1] = 0;
        ev->result = tb__apply(rp, &ev->input);
    } else {
        memcpy(&ev->want, p + 8, 8);
        ev->got = room->ops->hash(room->world);
    }
    rp->pos += n;
    return 1;
}

tb_room *tb_replay_room(tb_replay *rp) { return rp->room; }
uint64_t tb_replay_start_tick(const tb_replay *rp) { return rp->start_tick; }
uint64_t tb_replay_end_tick(const tb_replay *rp) { return rp->end_tick; }
uint64_t tb_replay_record_count(const tb_replay *rp) { return rp->records; }
uint64_t tb_replay_hash_count(const tb_replay *rp) { return rp->hashes; }
uint64_t tb_replay_static_changes(const tb_replay *rp) { return rp->static_changes; }
const char *tb_replay_error(const tb_replay *rp) { return rp->error; }
