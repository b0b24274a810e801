/* wire.c: adapter between the server's records and proto/c (see wire.h).
 *
 * Client messages map onto tb_input as follows:
 *   throw  -> THROW (flags: 0 ball, 1 die)      poke -> POKE (target: body or -1)
 *   grab_* -> GRAB_START/MOVE/END               param -> PARAM
 *   action "reset", "rebuild" (tower), "throw_dice" (dice; alias "roll") -> RESET,
 *          "knock" -> RESET with flags 1 (tower knock-down),
 *          "select" -> SCENE (name = scene)
 *   contacts_view -> CONTACTS (flags: on)
 * Coordinates are checked by the decoder against the protocol's limits.
 */
#include "sim/wire.h"

#include <stdio.h>
#include <string.h>

#include "sim/error.h"
#include "sim/registry.h"
#include "sim/room.h"

static void tb__f3(float out[3], const double in[3])
{
    for (int a = 0; a < 3; a++)
        out[a] = (float)in[a];
}

/* The messages about the session itself (hello, ping, resync, lobby):
 * 1 when m is one of them, 0 when it is a room input. */
static int tb__decode_session(const tb_proto_client_msg *m, tb_client_msg *out)
{
    switch (m->type) {
    case TB_MSG_HELLO:
        out->kind = TB_CLIENT_JOIN;
        snprintf(out->room, sizeof out->room, "%s", m->u.hello.room);
        if (m->u.hello.has_scene)
            snprintf(out->scene, sizeof out->scene, "%s", m->u.hello.scene);
        if (m->u.hello.has_kind)
            snprintf(out->wanted_kind, sizeof out->wanted_kind, "%s", m->u.hello.kind);
        snprintf(out->name, sizeof out->name, "%s", m->u.hello.name);
        out->watch = m->u.hello.watch;
        out->kbps = m->u.hello.kbps;
        return 1;
    case TB_MSG_PING:
        out->kind = TB_CLIENT_PING;
        out->ping_time = m->u.ping.client_time;
        out->link.has_ack_tick = m->u.ping.has_ack_tick;
        out->link.ack_tick = m->u.ping.ack_tick;
        out->link.has_rtt = m->u.ping.has_rtt;
        out->link.rtt_ms = m->u.ping.rtt_ms;
        out->link.has_recv_bytes = m->u.ping.has_recv_bytes;
        out->link.recv_bytes = m->u.ping.recv_bytes;
        return 1;
    case TB_MSG_RESYNC:
        out->kind = TB_CLIENT_RESYNC;
        return 1;
    case TB_MSG_LOBBY_REQ:
        out->kind = TB_CLIENT_LOBBY;
        return 1;
    default:
        return 0;
    }
}

/* The messages that become a room input (throw ... contacts_view). */
static int tb__decode_input(const tb_proto_client_msg *m, tb_input *in, tb_proto_err *err)
{
    switch (m->type) {
    case TB_MSG_THROW:
        in->type = TB_INPUT_THROW;
        tb__f3(in->pos, m->u.throw_.origin);
        tb__f3(in->vec, m->u.throw_.velocity);
        in->view_tick = m->u.throw_.has_view_tick ? m->u.throw_.view_tick : 0;
        if (strcmp(m->u.throw_.shape, "ball") == 0)
            in->flags = 0;
        else if (strcmp(m->u.throw_.shape, "die") == 0)
            in->flags = 1;
        else {
            err->code = TB_ERR_BAD_VALUE;
            snprintf(err->msg, sizeof err->msg, "throw.shape: '%s' is not ball or die", m->u.throw_.shape);
            return TB_ERR_BAD_VALUE;
        }
        return TB_OK;
    case TB_MSG_POKE:
        in->type = TB_INPUT_POKE;
        in->target = m->u.poke.has_body ? (int32_t)(m->u.poke.body & 0x7fffffff) : -1;
        tb__f3(in->pos, m->u.poke.point);
        tb__f3(in->vec, m->u.poke.impulse);
        in->view_tick = m->u.poke.has_view_tick ? m->u.poke.view_tick : 0;
        return TB_OK;
    case TB_MSG_GRAB_START:
    case TB_MSG_GRAB_MOVE:
    case TB_MSG_GRAB_END:
        in->type = m->type == TB_MSG_GRAB_START  ? TB_INPUT_GRAB_START
                   : m->type == TB_MSG_GRAB_MOVE ? TB_INPUT_GRAB_MOVE
                                                : TB_INPUT_GRAB_END;
        in->pointer = m->u.grab.pointer;
        in->target = m->u.grab.has_body ? (int32_t)(m->u.grab.body & 0x7fffffff) : -1;
        tb__f3(in->pos, m->u.grab.point);
        in->view_tick = m->type == TB_MSG_GRAB_START && m->u.grab.has_view_tick ? m->u.grab.view_tick : 0;
        return TB_OK;
    case TB_MSG_PARAM:
        in->type = TB_INPUT_PARAM;
        snprintf(in->name, sizeof in->name, "%s", m->u.param.name);
        in->value_d = m->u.param.value;
        return TB_OK;
    case TB_MSG_ACTION: {
        const char *a = m->u.action.action;
        snprintf(in->name, sizeof in->name, "%s", a);
        if (strcmp(a, "reset") == 0 || strcmp(a, "rebuild") == 0 || strcmp(a, "throw_dice") == 0 ||
            strcmp(a, "roll") == 0) {
            in->type = TB_INPUT_RESET;
        } else if (strcmp(a, "knock") == 0) {
            in->type = TB_INPUT_RESET;
            in->flags = 1;
        } else if (strcmp(a, "select") == 0 && m->u.action.has_scene) {
            in->type = TB_INPUT_SCENE;
            snprintf(in->name, sizeof in->name, "%s", m->u.action.scene);
        } else {
            err->code = TB_ERR_BAD_VALUE;
            snprintf(err->msg, sizeof err->msg,
                     "action: '%s' is not reset, knock, rebuild, throw_dice or select (with scene)", a);
            return TB_ERR_BAD_VALUE;
        }
        return TB_OK;
    }
    case TB_MSG_CONTACTS_VIEW:
        in->type = TB_INPUT_CONTACTS;
        in->flags = m->u.contacts.on;
        return TB_OK;
    default:
        err->code = TB_ERR_UNKNOWN_TYPE;
        snprintf(err->msg, sizeof err->msg, "message type %d is not for the server", m->type);
        return TB_ERR_UNKNOWN_TYPE;
    }
}

int tb_wire_decode(const void *data, size_t len, tb_client_msg *out, tb_proto_err *err)
{
    static _Thread_local tb_proto_client_msg m; /* large-ish; network thread only */
    memset(out, 0, sizeof *out);
    out->input.target = -1;
    int rc = tb_proto_decode_client(data, len, &m, err);
    out->input.seq = m.seq;
    if (rc != TB_OK)
        return rc;
    if (tb__decode_session(&m, out))
        return TB_OK;
    out->kind = TB_CLIENT_INPUT;
    return tb__decode_input(&m, &out->input, err);
}

/* ---- encoders ------------------------------------------------------------ */

typedef int (*tb__enc_fn)(msgpack_sbuffer *sb, void *arg);

static tb_msg *tb__finish(msgpack_sbuffer *sb, int rc)
{
    tb_msg *msg = rc == 0 ? tb_msg_from(sb->data, sb->size) : NULL;
    msgpack_sbuffer_destroy(sb);
    return msg;
}

/* The message with its supersede class set (sim/msg.h), or NULL. */
static tb_msg *tb__superseding(tb_msg *msg, int supersede, uint32_t key)
{
    if (msg) {
        msg->supersede = supersede;
        msg->supersede_key = key;
    }
    return msg;
}

/* FNV-1a: a parameter's name as a supersede key (at most 32 names a room). */
static uint32_t tb__name_key(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

#define TB__ENCODE_AS(supersede, key, call)                                                                 \
    do {                                                                                                     \
        msgpack_sbuffer sb;                                                                                  \
        msgpack_sbuffer_init(&sb);                                                                           \
        int rc_ = (call);                                                                                    \
        return tb__superseding(tb__finish(&sb, rc_), (supersede), (key));                                    \
    } while (0)

#define TB__ENCODE(call)                                                                                     \
    do {                                                                                                     \
        msgpack_sbuffer sb;                                                                                  \
        msgpack_sbuffer_init(&sb);                                                                           \
        int rc_ = (call);                                                                                    \
        return tb__finish(&sb, rc_);                                                                         \
    } while (0)

tb_proto_welcome *tb_wire_scratch(void)
{
    static _Thread_local tb_proto_welcome scratch;
    return &scratch;
}

tb_msg *tb_wire_welcome(tb_room *room, uint32_t client, const char *instance, int type)
{
    tb_proto_welcome *w = tb_wire_scratch();
    if (!room->encoder)
        return NULL;
    memset(w, 0, sizeof *w);
    const tb_scene *scene = tb_scene_find(room->scene);
    w->version = TB_PROTO_VERSION;
    w->client_id = client;
    w->tick_rate = 120;
    w->snap_rate = (uint32_t)(120 / room->snapshot_every);
    snprintf(w->room, sizeof w->room, "%s", room->id);
    snprintf(w->kind, sizeof w->kind, "%s", scene ? scene->kind : "");
    snprintf(w->scene, sizeof w->scene, "%s", room->scene);
    snprintf(w->server, sizeof w->server, "%s", instance ? instance : "");
    w->peer_count = (uint32_t)room->peer_count;
    for (int i = 0; i < room->peer_count; i++) {
        w->peers[i].id = room->peers[i].id;
        snprintf(w->peers[i].name, sizeof w->peers[i].name, "%s", room->peers[i].name);
    }
    w->watchers = (uint32_t)room->watcher_count;
    room->ops->describe(room->world, w);
    const tb_snap_blob *key = tb_snap_encoder_key(room->encoder);
    if (!key)
        return NULL;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int rc = type == TB_MSG_SCENE ? tb_proto_encode_scene(&sb, w, key) : tb_proto_encode_welcome(&sb, w, key);
    tb_msg *msg = tb__finish(&sb, rc);
    if (msg) {
        msg->type = type;
        msg->tick = key->tick;
        if (type == TB_MSG_SCENE)
            msg->supersede = TB_SUPERSEDE_SCENE;
    }
    return msg;
}

tb_msg *tb_wire_snap_blob(const tb_snap_blob *blob, uint64_t serial)
{
    tb_msg *msg = tb_msg_from(blob->tail, blob->tail_len);
    if (!msg)
        return NULL;
    msg->type = blob->type;
    msg->tick = blob->tick;
    msg->base_tick = blob->base_tick;
    msg->fields = blob->fields;
    msg->serial = serial;
    return msg;
}

size_t tb_wire_snap_frame(const tb_msg *m, uint32_t last_seq, uint8_t *out, size_t cap)
{
    tb_snap_blob blob = {m->type, (uint32_t)m->tick, m->base_tick, m->fields,
                         ((tb_msg *)m)->storage + TB_MSG_HEADROOM, m->len};
    return tb_snap_write(out, cap, &blob, last_seq);
}

tb_msg *tb_wire_error(int code, const char *message, int64_t seq) { TB__ENCODE(tb_proto_encode_error(&sb, code, message, seq)); }

tb_msg *tb_wire_pong(double client_time, double server_time)
{
    TB__ENCODE(tb_proto_encode_pong(&sb, client_time, server_time));
}

tb_msg *tb_wire_param_changed(const char *name, double value, uint32_t by, const char *by_name)
{
    TB__ENCODE_AS(TB_SUPERSEDE_PARAM, tb__name_key(name), tb_proto_encode_param_changed(&sb, name, value, by, by_name));
}

tb_msg *tb_wire_reset(const char *action, uint32_t by, const char *by_name)
{
    TB__ENCODE_AS(TB_SUPERSEDE_RESET, 0, tb_proto_encode_reset(&sb, action, by, by_name));
}

tb_msg *tb_wire_dice(uint32_t tick, const uint32_t *faces, uint32_t n)
{
    TB__ENCODE_AS(TB_SUPERSEDE_DICE, 0, tb_proto_encode_dice(&sb, tick, faces, n));
}

tb_msg *tb_wire_peer_joined(uint32_t id, const char *name)
{
    TB__ENCODE_AS(TB_SUPERSEDE_PEER_JOINED, id, tb_proto_encode_peer_joined(&sb, id, name));
}

tb_msg *tb_wire_peer_left(uint32_t id) { TB__ENCODE_AS(TB_SUPERSEDE_PEER_LEFT, id, tb_proto_encode_peer_left(&sb, id)); }

tb_msg *tb_wire_watchers(uint32_t count) { TB__ENCODE_AS(TB_SUPERSEDE_WATCHERS, 0, tb_proto_encode_watchers(&sb, count)); }

tb_msg *tb_wire_contacts(uint32_t tick, const tb_proto_contact *contacts, uint32_t n)
{
    TB__ENCODE_AS(TB_SUPERSEDE_CONTACTS, 0, tb_proto_encode_contacts(&sb, tick, contacts, n));
}

tb_msg *tb_wire_lobby(const tb_room_row *rows, int n)
{
    static _Thread_local tb_proto_room_info infos[TB_PROTO_MAX_ROOMS];
    if (n > TB_PROTO_MAX_ROOMS)
        n = TB_PROTO_MAX_ROOMS;
    for (int i = 0; i < n; i++) {
        snprintf(infos[i].id, sizeof infos[i].id, "%s", rows[i].id);
        snprintf(infos[i].kind, sizeof infos[i].kind, "%s", rows[i].kind);
        snprintf(infos[i].scene, sizeof infos[i].scene, "%s", rows[i].scene);
        infos[i].clients = (uint32_t)rows[i].clients;
        infos[i].bodies = (uint32_t)rows[i].bodies;
        infos[i].awake = (uint32_t)rows[i].awake;
        infos[i].watchers = (uint32_t)rows[i].watchers;
    }
    TB__ENCODE(tb_proto_encode_lobby(&sb, infos, (uint32_t)n));
}

int tb_wire_code(int tb_error)
{
    switch (tb_error) {
    case TB_ERANGE:
    case TB_EINVAL: return TB_ERR_BAD_VALUE;
    case TB_EUNKNOWN: return TB_ERR_UNKNOWN_PARAM;
    case TB_ENOBODY: return TB_ERR_UNKNOWN_BODY;
    case TB_ECAP: return TB_ERR_PROJECTILE_CAP;
    case TB_ENOTSUP:
    case TB_EBUSY:
    case TB_ELIMIT: return TB_ERR_NOT_ALLOWED;
    case TB_EBADID:
    case TB_EBADSCENE: return TB_ERR_BAD_ROOM;
    case TB_EMAXROOMS: return TB_ERR_TOO_MANY_ROOMS;
    case TB_EROOMFULL: return TB_ERR_ROOM_FULL;
    case TB_EFULL: return TB_ERR_RATE_LIMITED;
    case TB_ESHUTDOWN: return TB_ERR_SHUTTING_DOWN;
    default: return TB_ERR_INTERNAL;
    }
}
