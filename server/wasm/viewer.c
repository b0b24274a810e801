/* viewer.c: what the browser's replay viewer calls in the WebAssembly build
 * (`make wasm`; client-web/src/replay/). Not part of the server.
 *
 * A viewer holds one record being replayed by sim's own engine
 * (sim/replay.c: the room's world adapters, the kernels, the same calls
 * in the same order as `tumble-server --replay`), remembers every hash
 * comparison, and speaks to the page in the wire format the page already
 * reads: a `welcome` built as the server builds it (the adapter's
 * describe(), a keyframe of the room's snapshot encoder) and a `snap_key`
 * of the current state, so the room views draw a replay exactly as they
 * draw a live room. Ticks cross to JavaScript as doubles (exact below 2^53).
 *
 *   tb_view_open(buf, len, &view, why, cap)   0, or a TB_E* code and why
 *   tb_view_advance(view, tick)   apply every record up to tick, step to it
 *   tb_view_welcome / tb_view_snapshot   message bytes (tb_view_bytes, _len)
 *   tb_view_checks(view)   (tick, want, got) u64 triples, tb_view_check_count
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/replay.h"
#include "sim/room.h"
#include "sim/world.h"
#include "tb_proto.h"

#define TB__EXPORT __attribute__((visibility("default")))

typedef struct tb_view {
    tb_replay *replay;
    tb_snap_encoder *encoder;
    tb_proto_welcome *welcome; /* scratch: large */
    uint64_t *checks;          /* (tick, want, got) per hash record met */
    size_t check_count, check_cap;
    uint64_t inputs, refused;  /* inputs applied, and of those answered with an error */
    uint64_t encoder_static;   /* tb_replay_static_changes when the encoder was made */
    msgpack_sbuffer out;       /* the last message */
} tb_view;

TB__EXPORT void tb_view_close(tb_view *v)
{
    if (!v)
        return;
    tb_replay_close(v->replay);
    if (v->encoder)
        tb_snap_encoder_destroy(v->encoder);
    free(v->welcome);
    free(v->checks);
    msgpack_sbuffer_destroy(&v->out);
    free(v);
}

TB__EXPORT int tb_view_open(const unsigned char *buf, size_t len, tb_view **out, char *why, size_t cap)
{
    *out = NULL;
    tb_view *v = calloc(1, sizeof *v);
    if (!v || !(v->welcome = malloc(sizeof *v->welcome))) {
        free(v);
        snprintf(why, cap, "out of memory");
        return TB_ENOMEM;
    }
    msgpack_sbuffer_init(&v->out);
    int rc = tb_replay_open(buf, len, &v->replay, why, cap);
    if (rc < 0) {
        tb_view_close(v);
        return rc;
    }
    *out = v;
    return 0;
}

static int tb__add_check(tb_view *v, uint64_t tick, uint64_t want, uint64_t got)
{
    if (v->check_count == v->check_cap) {
        size_t ncap = v->check_cap ? v->check_cap * 2 : 64;
        uint64_t *n = realloc(v->checks, ncap * 3 * sizeof *n);
        if (!n)
            return TB_ENOMEM;
        v->checks = n;
        v->check_cap = ncap;
    }
    uint64_t *c = v->checks + 3 * v->check_count++;
    c[0] = tick;
    c[1] = want;
    c[2] = got;
    return 0;
}

/* Every record whose tick is at most `tick`, then steps up to it (a scene
 * select may leave the room one tick past it: a tick of its own). 0, 1 at
 * the end of the record, or -1 when the record is broken (tb_view_error). */
TB__EXPORT int tb_view_advance(tb_view *v, double tick)
{
    uint64_t target = tick < 0 ? 0 : (uint64_t)tick;
    tb_replay_event ev;
    while (tb_replay_peek_tick(v->replay) <= target) {
        int rc = tb_replay_next(v->replay, &ev);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        if (ev.kind == 'I') {
            v->inputs++;
            if (ev.result < 0)
                v->refused++;
        } else if (tb__add_check(v, ev.tick, ev.want, ev.got) < 0) {
            return -1;
        }
    }
    tb_room *room = tb_replay_room(v->replay);
    while (room->tick < target)
        tb_replay_step(v->replay);
    return tb_replay_peek_tick(v->replay) == UINT64_MAX ? 1 : 0;
}

/* The welcome's header and the room's static description, as the server
 * fills them (sim/wire.c tb_wire_welcome) for a client with no id and no
 * peers. */
static void tb__describe(tb_view *v, tb_room *room)
{
    tb_proto_welcome *w = v->welcome;
    memset(w, 0, sizeof *w);
    const tb_scene *scene = tb_scene_find(room->scene);
    w->version = TB_PROTO_VERSION;
    w->tick_rate = TB_REPLAY_STEP_HZ;
    w->snap_rate = (uint32_t)(TB_REPLAY_STEP_HZ / room->snapshot_every);
    snprintf(w->room, sizeof w->room, "%s", room->id);
    snprintf(w->kind, sizeof w->kind, "%s", scene ? scene->kind : "");
    snprintf(w->scene, sizeof w->scene, "%s", room->scene);
    room->ops->describe(room->world, w);
}

/* A welcome with a keyframe of the current state. A new encoder each time
 * (sim/sched.c tb__start_encoder): it follows the world's frame (bounds,
 * meshes), which a scene select or a cloth grid change replaces. */
TB__EXPORT int tb_view_welcome(tb_view *v)
{
    tb_room *room = tb_replay_room(v->replay);
    tb__describe(v, room);
    tb_proto_frame frame;
    tb_proto_frame_from_static(&frame, &v->welcome->st);
    if (v->encoder)
        tb_snap_encoder_destroy(v->encoder);
    v->encoder = tb_snap_encoder_create(&frame, room->ops->max_bodies(room->world));
    if (!v->encoder)
        return TB_ENOMEM;
    v->encoder_static = tb_replay_static_changes(v->replay);
    tb_snap_input in;
    room->ops->fill_snapshot(room->world, &in);
    in.tick = (uint32_t)room->tick;
    tb_proto_err err;
    if (tb_snap_encoder_step(v->encoder, &in, &err) != TB_OK)
        return TB_EINVAL;
    tb__describe(v, room); /* as the server: described again for the message itself */
    msgpack_sbuffer_clear(&v->out);
    return tb_proto_encode_welcome(&v->out, v->welcome, tb_snap_encoder_key(v->encoder)) == TB_OK ? 0 : TB_EINVAL;
}

/* A keyframe of the current state (snap_key). TB_ENOTSUP when the world's
 * static description changed since the last welcome: ask for a welcome. */
TB__EXPORT int tb_view_snapshot(tb_view *v)
{
    if (!v->encoder || v->encoder_static != tb_replay_static_changes(v->replay))
        return TB_ENOTSUP;
    tb_room *room = tb_replay_room(v->replay);
    tb_snap_input in;
    room->ops->fill_snapshot(room->world, &in);
    in.tick = (uint32_t)room->tick;
    tb_proto_err err;
    if (tb_snap_encoder_step(v->encoder, &in, &err) != TB_OK)
        return TB_EINVAL;
    msgpack_sbuffer_clear(&v->out);
    return tb_snap_write_sbuf(&v->out, tb_snap_encoder_key(v->encoder), 0) == TB_OK ? 0 : TB_EINVAL;
}

TB__EXPORT const char *tb_view_bytes(const tb_view *v) { return v->out.data; }
TB__EXPORT size_t tb_view_bytes_len(const tb_view *v) { return v->out.size; }
TB__EXPORT const uint64_t *tb_view_checks(const tb_view *v) { return v->checks; }
TB__EXPORT size_t tb_view_check_count(const tb_view *v) { return v->check_count; }
TB__EXPORT double tb_view_tick(tb_view *v) { return (double)tb_replay_room(v->replay)->tick; }
TB__EXPORT double tb_view_start_tick(const tb_view *v) { return (double)tb_replay_start_tick(v->replay); }
TB__EXPORT double tb_view_end_tick(const tb_view *v) { return (double)tb_replay_end_tick(v->replay); }
TB__EXPORT double tb_view_hash_count(const tb_view *v) { return (double)tb_replay_hash_count(v->replay); }
TB__EXPORT double tb_view_inputs(const tb_view *v) { return (double)v->inputs; }
TB__EXPORT double tb_view_refused(const tb_view *v) { return (double)v->refused; }
TB__EXPORT double tb_view_static_changes(const tb_view *v) { return (double)tb_replay_static_changes(v->replay); }
TB__EXPORT const char *tb_view_scene(tb_view *v) { return tb_replay_room(v->replay)->scene; }
TB__EXPORT const char *tb_view_room(tb_view *v) { return tb_replay_room(v->replay)->id; }
TB__EXPORT const char *tb_view_error(const tb_view *v) { return tb_replay_error(v->replay); }
