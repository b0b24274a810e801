/* tb_proto_client.c: client -> server messages (hello and inputs), both ways.
 *
 * Envelope: a msgpack array [type, ...fields] (PROTOCOL.md "Client messages").
 * The server calls tb_proto_decode_client() on every binary frame; the load
 * generator and the tests call tb_proto_encode_client(). */
#include <math.h>
#include <string.h>

#include "tb_proto_internal.h"

#define CLIENT_DEPTH 3   /* [type, seq, [x, y, z]] */

static int need(const msgpack_object *a, uint32_t n, const char *what, tb_proto_err *err)
{
    if (a->via.array.size < n)
        return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: %u fields, need %u", what, a->via.array.size, n);
    return TB_OK;
}

#define TRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

static int opt_uint(const msgpack_object *o, bool *has, uint32_t *out, uint64_t max, const char *what, tb_proto_err *err)
{
    *has = false;
    *out = 0;
    if (tb_proto__is_nil(o)) return TB_OK;
    TRY(tb_proto__uint(o, max, out, what, err));
    *has = true;
    return TB_OK;
}

static int decode_fields(const msgpack_object *root, tb_proto_client_msg *m, tb_proto_err *err)
{
    const msgpack_object *f = root->via.array.ptr;
    const char *name = tb_proto_type_name(m->type);
    switch (m->type) {
    case TB_MSG_HELLO:
        TRY(need(root, 6, name, err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.hello.version, "hello.version", err));
        TRY(tb_proto__str(&f[2], TB_STR_ID, m->u.hello.room, TB_PROTO_NAME_MAX, "hello.room", err));
        m->u.hello.has_kind = !tb_proto__is_nil(&f[3]);
        if (m->u.hello.has_kind) TRY(tb_proto__str(&f[3], TB_STR_TOKEN, m->u.hello.kind, TB_PROTO_NAME_MAX, "hello.kind", err));
        m->u.hello.has_scene = !tb_proto__is_nil(&f[4]);
        if (m->u.hello.has_scene) TRY(tb_proto__str(&f[4], TB_STR_TOKEN, m->u.hello.scene, TB_PROTO_NAME_MAX, "hello.scene", err));
        TRY(tb_proto__str(&f[5], TB_STR_TEXT, m->u.hello.name, TB_PROTO_NAME_MAX, "hello.name", err));
        /* watch? (PROTOCOL.md "Watchers"): true joins as a watcher; nil, false or left out as a player */
        if (root->via.array.size > 6 && !tb_proto__is_nil(&f[6]))
            TRY(tb_proto__bool(&f[6], &m->u.hello.watch, "hello.watch", err));
        /* kbps? (PROTOCOL.md "Bandwidth budgets"): a cap on what the server streams to this client */
        if (root->via.array.size > 7 && !tb_proto__is_nil(&f[7])) {
            TRY(tb_proto__uint(&f[7], UINT32_MAX, &m->u.hello.kbps, "hello.kbps", err));
            if (m->u.hello.kbps < TB_PROTO_KBPS_MIN || m->u.hello.kbps > TB_PROTO_KBPS_MAX)
                return tb_proto__fail(err, TB_ERR_BAD_VALUE, "hello.kbps: %u kbit/s outside %d..%d", m->u.hello.kbps,
                                      TB_PROTO_KBPS_MIN, TB_PROTO_KBPS_MAX);
        }
        if (m->u.hello.version != TB_PROTO_VERSION)
            return tb_proto__fail(err, TB_ERR_VERSION, "protocol version %u not supported; this server speaks %d (tumble.v1)",
                                  m->u.hello.version, TB_PROTO_VERSION);
        return TB_OK;
    case TB_MSG_PING:
        TRY(need(root, 2, name, err));
        TRY(tb_proto__num(&f[1], 9007199254740991.0, &m->u.ping.client_time, "ping.client_time", err));
        if (m->u.ping.client_time < 0) /* PROTOCOL.md: 0 <= t <= 2^53-1 */
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "ping.client_time: %g below 0", m->u.ping.client_time);
        /* the link report (PROTOCOL.md "Link reports"): ack_tick?, rtt_ms?, recv_bytes? */
        if (root->via.array.size > 2)
            TRY(opt_uint(&f[2], &m->u.ping.has_ack_tick, &m->u.ping.ack_tick, UINT32_MAX, "ping.ack_tick", err));
        if (root->via.array.size > 3 && !tb_proto__is_nil(&f[3])) {
            TRY(tb_proto__num(&f[3], TB_PROTO_MAX_RTT_MS, &m->u.ping.rtt_ms, "ping.rtt_ms", err));
            if (m->u.ping.rtt_ms < 0)
                return tb_proto__fail(err, TB_ERR_BAD_VALUE, "ping.rtt_ms: %g below 0", m->u.ping.rtt_ms);
            m->u.ping.has_rtt = true;
        }
        if (root->via.array.size > 4)
            TRY(opt_uint(&f[4], &m->u.ping.has_recv_bytes, &m->u.ping.recv_bytes, UINT32_MAX, "ping.recv_bytes", err));
        return TB_OK;
    case TB_MSG_RESYNC: case TB_MSG_LOBBY_REQ:
        return TB_OK;
    default: break;
    }
    /* Inputs: [type, seq, ...] */
    TRY(need(root, 2, name, err));
    TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->seq, "seq", err));
    switch (m->type) {
    case TB_MSG_THROW:
        TRY(need(root, 5, name, err));
        TRY(tb_proto__vec(&f[2], 3, TB_PROTO_MAX_COORD, m->u.throw_.origin, "throw.origin", err));
        TRY(tb_proto__vec(&f[3], 3, TB_PROTO_MAX_SPEED, m->u.throw_.velocity, "throw.velocity", err));
        TRY(tb_proto__str(&f[4], TB_STR_TOKEN, m->u.throw_.shape, TB_PROTO_NAME_MAX, "throw.shape", err));
        if (root->via.array.size > 5) /* view_tick? (PROTOCOL.md "Lag compensation") */
            TRY(opt_uint(&f[5], &m->u.throw_.has_view_tick, &m->u.throw_.view_tick, UINT32_MAX, "throw.view_tick", err));
        return TB_OK;
    case TB_MSG_POKE:
        TRY(need(root, 5, name, err));
        TRY(opt_uint(&f[2], &m->u.poke.has_body, &m->u.poke.body, 0xffff, "poke.body", err));
        TRY(tb_proto__vec(&f[3], 3, TB_PROTO_MAX_COORD, m->u.poke.point, "poke.point", err));
        TRY(tb_proto__vec(&f[4], 3, TB_PROTO_MAX_IMPULSE, m->u.poke.impulse, "poke.impulse", err));
        if (root->via.array.size > 5) /* view_tick? (PROTOCOL.md "Lag compensation") */
            TRY(opt_uint(&f[5], &m->u.poke.has_view_tick, &m->u.poke.view_tick, UINT32_MAX, "poke.view_tick", err));
        return TB_OK;
    case TB_MSG_GRAB_START: /* body: optional at the end, may be left out (PROTOCOL.md §2) */
        TRY(need(root, 4, name, err));
        TRY(tb_proto__uint(&f[2], 0xffff, &m->u.grab.pointer, "grab.pointer", err));
        TRY(tb_proto__vec(&f[3], 3, TB_PROTO_MAX_COORD, m->u.grab.point, "grab.point", err));
        if (root->via.array.size > 4)
            TRY(opt_uint(&f[4], &m->u.grab.has_body, &m->u.grab.body, 0xffff, "grab.body", err));
        if (root->via.array.size > 5) /* view_tick? (PROTOCOL.md "Lag compensation") */
            TRY(opt_uint(&f[5], &m->u.grab.has_view_tick, &m->u.grab.view_tick, UINT32_MAX, "grab.view_tick", err));
        return TB_OK;
    case TB_MSG_GRAB_MOVE:
        TRY(need(root, 4, name, err));
        TRY(tb_proto__uint(&f[2], 0xffff, &m->u.grab.pointer, "grab.pointer", err));
        TRY(tb_proto__vec(&f[3], 3, TB_PROTO_MAX_COORD, m->u.grab.point, "grab.point", err));
        return TB_OK;
    case TB_MSG_GRAB_END:
        TRY(need(root, 3, name, err));
        TRY(tb_proto__uint(&f[2], 0xffff, &m->u.grab.pointer, "grab.pointer", err));
        return TB_OK;
    case TB_MSG_PARAM:
        TRY(need(root, 4, name, err));
        TRY(tb_proto__str(&f[2], TB_STR_TOKEN, m->u.param.name, TB_PROTO_NAME_MAX, "param.name", err));
        TRY(tb_proto__num(&f[3], TB_PROTO_MAX_PARAM_ABS, &m->u.param.value, "param.value", err));
        return TB_OK;
    case TB_MSG_ACTION: /* scene: optional at the end, may be left out */
        TRY(need(root, 3, name, err));
        TRY(tb_proto__str(&f[2], TB_STR_TOKEN, m->u.action.action, TB_PROTO_NAME_MAX, "action.action", err));
        m->u.action.has_scene = root->via.array.size > 3 && !tb_proto__is_nil(&f[3]);
        if (m->u.action.has_scene) TRY(tb_proto__str(&f[3], TB_STR_TOKEN, m->u.action.scene, TB_PROTO_NAME_MAX, "action.scene", err));
        return TB_OK;
    case TB_MSG_CONTACTS_VIEW:
        TRY(need(root, 3, name, err));
        TRY(tb_proto__bool(&f[2], &m->u.contacts.on, "contacts_view.on", err));
        return TB_OK;
    default:
        return tb_proto__fail(err, TB_ERR_INTERNAL, "unhandled type %d", m->type);
    }
}

int tb_proto_decode_client(const uint8_t *buf, size_t len, tb_proto_client_msg *out, tb_proto_err *err)
{
    memset(out, 0, sizeof *out);
    if (err) { err->code = TB_OK; err->msg[0] = '\0'; }
    if (len > TB_PROTO_MAX_CLIENT_MSG)
        return tb_proto__fail(err, TB_ERR_TOO_BIG, "frame of %zu bytes, limit %d", len, TB_PROTO_MAX_CLIENT_MSG);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    const msgpack_object *root = NULL;
    int rc = tb_proto__parse(buf, len, CLIENT_DEPTH, &up, &root, err);
    if (!rc && (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 1))
        rc = tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "message must be an array [type, ...]");
    uint32_t type = 0;
    if (!rc) rc = tb_proto__uint(&root->via.array.ptr[0], UINT32_MAX, &type, "type", err);
    if (rc == TB_ERR_BAD_VALUE) rc = tb_proto__fail(err, TB_ERR_UNKNOWN_TYPE, "unknown message type");
    if (!rc && !(type >= 1 && type <= 12))
        rc = tb_proto__fail(err, TB_ERR_UNKNOWN_TYPE, "unknown message type %u", type);
    if (!rc) {
        out->type = (int)type;
        rc = decode_fields(root, out, err);
    }
    msgpack_unpacked_destroy(&up);
    return rc;
}

/* ---- encoding ----------------------------------------------------------------- */

static void pack_vec(msgpack_packer *pk, const double *v)
{
    msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++) tb_proto__pack_jsnum(pk, v[i]);
}

static void pack_opt_uint(msgpack_packer *pk, bool has, uint32_t v)
{
    if (has) msgpack_pack_uint32(pk, v);
    else msgpack_pack_nil(pk);
}

int tb_proto_encode_client(msgpack_sbuffer *sb, const tb_proto_client_msg *m)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    switch (m->type) {
    case TB_MSG_HELLO:
        /* watch is written only for a watcher, kbps only when asked for (watch then nil for a player):
         * a player's hello stays 6 fields, as the JS codec writes it */
        msgpack_pack_array(&pk, m->u.hello.kbps ? 8 : m->u.hello.watch ? 7 : 6);
        msgpack_pack_int(&pk, m->type);
        msgpack_pack_uint32(&pk, m->u.hello.version);
        tb_proto__pack_str(&pk, m->u.hello.room);
        if (m->u.hello.has_kind) tb_proto__pack_str(&pk, m->u.hello.kind); else msgpack_pack_nil(&pk);
        if (m->u.hello.has_scene) tb_proto__pack_str(&pk, m->u.hello.scene); else msgpack_pack_nil(&pk);
        tb_proto__pack_str(&pk, m->u.hello.name);
        if (m->u.hello.watch) msgpack_pack_true(&pk);
        else if (m->u.hello.kbps) msgpack_pack_nil(&pk);
        if (m->u.hello.kbps) msgpack_pack_uint32(&pk, m->u.hello.kbps);
        return TB_OK;
    case TB_MSG_PING: {
        /* with any link report field, all three are written (nil where absent), as the JS codec does */
        bool report = m->u.ping.has_ack_tick || m->u.ping.has_rtt || m->u.ping.has_recv_bytes;
        msgpack_pack_array(&pk, report ? 5 : 2);
        msgpack_pack_int(&pk, m->type);
        tb_proto__pack_jsnum(&pk, m->u.ping.client_time);
        if (report) {
            pack_opt_uint(&pk, m->u.ping.has_ack_tick, m->u.ping.ack_tick);
            if (m->u.ping.has_rtt) tb_proto__pack_jsnum(&pk, m->u.ping.rtt_ms); else msgpack_pack_nil(&pk);
            pack_opt_uint(&pk, m->u.ping.has_recv_bytes, m->u.ping.recv_bytes);
        }
        return TB_OK;
    }
    case TB_MSG_RESYNC: case TB_MSG_LOBBY_REQ:
        msgpack_pack_array(&pk, 1);
        msgpack_pack_int(&pk, m->type);
        return TB_OK;
    default: break;
    }
    static const uint8_t nfields[13] = {0, 0, 5, 5, 5, 4, 3, 4, 4, 3, 0, 0, 0};
    if (m->type < 2 || m->type > 9) return TB_ERR_UNKNOWN_TYPE;
    /* view_tick is written only when given: an input without it is the one it always was */
    bool view = (m->type == TB_MSG_THROW && m->u.throw_.has_view_tick) || (m->type == TB_MSG_POKE && m->u.poke.has_view_tick) ||
                (m->type == TB_MSG_GRAB_START && m->u.grab.has_view_tick);
    msgpack_pack_array(&pk, nfields[m->type] + (view ? 1 : 0));
    msgpack_pack_int(&pk, m->type);
    msgpack_pack_uint32(&pk, m->seq);
    switch (m->type) {
    case TB_MSG_THROW:
        pack_vec(&pk, m->u.throw_.origin);
        pack_vec(&pk, m->u.throw_.velocity);
        tb_proto__pack_str(&pk, m->u.throw_.shape);
        if (view) msgpack_pack_uint32(&pk, m->u.throw_.view_tick);
        break;
    case TB_MSG_POKE:
        pack_opt_uint(&pk, m->u.poke.has_body, m->u.poke.body);
        pack_vec(&pk, m->u.poke.point);
        pack_vec(&pk, m->u.poke.impulse);
        if (view) msgpack_pack_uint32(&pk, m->u.poke.view_tick);
        break;
    case TB_MSG_GRAB_START:
        msgpack_pack_uint32(&pk, m->u.grab.pointer);
        pack_vec(&pk, m->u.grab.point);
        pack_opt_uint(&pk, m->u.grab.has_body, m->u.grab.body);
        if (view) msgpack_pack_uint32(&pk, m->u.grab.view_tick);
        break;
    case TB_MSG_GRAB_MOVE:
        msgpack_pack_uint32(&pk, m->u.grab.pointer);
        pack_vec(&pk, m->u.grab.point);
        break;
    case TB_MSG_GRAB_END:
        msgpack_pack_uint32(&pk, m->u.grab.pointer);
        break;
    case TB_MSG_PARAM:
        tb_proto__pack_str(&pk, m->u.param.name);
        tb_proto__pack_jsnum(&pk, m->u.param.value);
        break;
    case TB_MSG_ACTION:
        tb_proto__pack_str(&pk, m->u.action.action);
        if (m->u.action.has_scene) tb_proto__pack_str(&pk, m->u.action.scene); else msgpack_pack_nil(&pk);
        break;
    case TB_MSG_CONTACTS_VIEW:
        if (m->u.contacts.on) msgpack_pack_true(&pk); else msgpack_pack_false(&pk);
        break;
    }
    return TB_OK;
}
