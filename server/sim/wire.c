/* wire.c: provisional msgpack messages until proto/c lands (see wire.h).
 *
 * Every message is a msgpack map with a "type" string. Client messages:
 *   join   {v, room, scene?, name?}     ping {t}     ack {tick}
 *   throw  {pos[3], vel[3], shape?}     poke {target?, pos[3], impulse[3]}
 *   grab   {phase: start|move|end, pointer, target?, pos[3]}
 *   param  {name, value}   reset {knock?}   scene {name}   contacts {on}
 *   every input may carry seq (echoed in errors)
 * Server messages: welcome, snapshot, param, event, error, pong, ack.
 */
#include "sim/wire.h"

#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "sim/room.h"

/* ---- encoding ---------------------------------------------------------- */

static void tb__str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void tb__key(msgpack_packer *pk, const char *k) { tb__str(pk, k); }

static tb_msg *tb__finish(msgpack_sbuffer *sb)
{
    tb_msg *msg = tb_msg_from(sb->data, sb->size);
    msgpack_sbuffer_destroy(sb);
    return msg;
}

#define TB__BEGIN(n, type)                                                                                   \
    msgpack_sbuffer sb;                                                                                      \
    msgpack_packer pk;                                                                                       \
    msgpack_sbuffer_init(&sb);                                                                               \
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);                                                    \
    msgpack_pack_map(&pk, (n));                                                                              \
    tb__key(&pk, "type");                                                                                    \
    tb__str(&pk, (type))

tb_msg *tb_wire_welcome(const tb_room *room, uint32_t client, const char *instance)
{
    const tb_scene *scene = tb_scene_find(room->scene);
    TB__BEGIN(11, "welcome");
    tb__key(&pk, "v");
    msgpack_pack_int(&pk, TB_WIRE_VERSION);
    tb__key(&pk, "client");
    msgpack_pack_uint32(&pk, client);
    tb__key(&pk, "room");
    tb__str(&pk, room->id);
    tb__key(&pk, "kind");
    tb__str(&pk, scene ? scene->kind : "");
    tb__key(&pk, "scene");
    tb__str(&pk, room->scene);
    tb__key(&pk, "instance");
    tb__str(&pk, instance ? instance : "");
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, room->tick);
    tb__key(&pk, "rate");
    msgpack_pack_int(&pk, 120 / room->snapshot_every);
    tb__key(&pk, "static");
    room->ops->pack_static(room->world, &pk);
    tb__key(&pk, "state");
    room->ops->pack_state(room->world, &pk);
    tb_msg *msg = tb__finish(&sb);
    if (msg)
        msg->tick = room->tick;
    return msg;
}

tb_msg *tb_wire_snapshot(const tb_room *room)
{
    TB__BEGIN(4, "snapshot");
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, room->tick);
    tb__key(&pk, "state");
    room->ops->pack_state(room->world, &pk);
    tb__key(&pk, "awake");
    msgpack_pack_int(&pk, atomic_load_explicit(&((tb_room *)room)->awake, memory_order_relaxed));
    return tb__finish(&sb);
}

tb_msg *tb_wire_param(const char *name, float value, uint32_t author, uint64_t tick)
{
    TB__BEGIN(5, "param");
    tb__key(&pk, "name");
    tb__str(&pk, name);
    tb__key(&pk, "value");
    msgpack_pack_float(&pk, value);
    tb__key(&pk, "by");
    msgpack_pack_uint32(&pk, author);
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, tick);
    return tb__finish(&sb);
}

tb_msg *tb_wire_event(const void *packed, size_t len, uint64_t tick)
{
    TB__BEGIN(3, "event");
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, tick);
    tb__key(&pk, "event");
    msgpack_sbuffer_write(&sb, packed, len);
    return tb__finish(&sb);
}

tb_msg *tb_wire_error(const char *code, const char *message, uint32_t seq)
{
    TB__BEGIN(4, "error");
    tb__key(&pk, "code");
    tb__str(&pk, code);
    tb__key(&pk, "message");
    tb__str(&pk, message);
    tb__key(&pk, "seq");
    msgpack_pack_uint32(&pk, seq);
    return tb__finish(&sb);
}

tb_msg *tb_wire_pong(double client_time, int64_t server_ns, uint64_t tick)
{
    TB__BEGIN(4, "pong");
    tb__key(&pk, "t");
    msgpack_pack_double(&pk, client_time);
    tb__key(&pk, "server_ms");
    msgpack_pack_double(&pk, (double)server_ns / 1e6);
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, tick);
    return tb__finish(&sb);
}

tb_msg *tb_wire_ack(uint32_t seq, uint64_t tick)
{
    TB__BEGIN(3, "ack");
    tb__key(&pk, "seq");
    msgpack_pack_uint32(&pk, seq);
    tb__key(&pk, "tick");
    msgpack_pack_uint64(&pk, tick);
    return tb__finish(&sb);
}

/* ---- decoding ---------------------------------------------------------- */

#define TB__FAIL(reason, ...)                                                                                \
    do {                                                                                                     \
        snprintf(why, why_cap, __VA_ARGS__);                                                                 \
        rc = -((reason) + 1);                                                                                \
        goto out;                                                                                            \
    } while (0)

static const msgpack_object *tb__get(const msgpack_object *map, const char *key)
{
    size_t klen = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == klen &&
            memcmp(kv->key.via.str.ptr, key, klen) == 0)
            return &kv->val;
    }
    return NULL;
}

static int tb__num(const msgpack_object *o, double *out)
{
    if (!o)
        return -1;
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *out = (double)o->via.u64; return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *out = (double)o->via.i64; return 0;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *out = o->via.f64; return isfinite(o->via.f64) ? 0 : -2;
    default: return -1;
    }
}

static int tb__vec3(const msgpack_object *o, float out[3])
{
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
        return -1;
    for (int i = 0; i < 3; i++) {
        double v;
        if (tb__num(&o->via.array.ptr[i], &v) != 0 || fabs(v) > 1e4)
            return -1;
        out[i] = (float)v;
    }
    return 0;
}

static int tb__strcpy(const msgpack_object *o, char *dst, size_t cap)
{
    if (!o || o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap)
        return -1;
    memcpy(dst, o->via.str.ptr, o->via.str.size);
    dst[o->via.str.size] = 0;
    return memchr(dst, 0, o->via.str.size) ? -1 : 0;
}

static int tb__is(const msgpack_object *type, const char *s)
{
    size_t n = strlen(s);
    return type->via.str.size == n && memcmp(type->via.str.ptr, s, n) == 0;
}

int tb_wire_decode(const void *data, size_t len, tb_client_msg *out, char *why, size_t why_cap)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->input.target = -1;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    if (msgpack_unpack_next(&up, data, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
        TB__FAIL(TB_REJECT_MALFORMED, "not one msgpack object");
    const msgpack_object *root = &up.data;
    if (root->type != MSGPACK_OBJECT_MAP)
        TB__FAIL(TB_REJECT_MALFORMED, "message must be a map");
    const msgpack_object *type = tb__get(root, "type");
    if (!type || type->type != MSGPACK_OBJECT_STR)
        TB__FAIL(TB_REJECT_MALFORMED, "missing type");
    double num;
    tb_input *in = &out->input;
    if (tb__num(tb__get(root, "seq"), &num) == 0 && num >= 0 && num <= 4294967295.0)
        in->seq = (uint32_t)num;

    if (tb__is(type, "join")) {
        if (tb__num(tb__get(root, "v"), &num) != 0)
            TB__FAIL(TB_REJECT_MALFORMED, "join needs v (protocol version)");
        if (num != TB_WIRE_VERSION)
            TB__FAIL(TB_REJECT_VERSION, "protocol version %g not supported (server speaks %d)", num,
                     TB_WIRE_VERSION);
        if (tb__strcpy(tb__get(root, "room"), out->room, sizeof out->room) != 0)
            TB__FAIL(TB_REJECT_INVALID, "join needs a room id string");
        const msgpack_object *scene = tb__get(root, "scene");
        if (scene && tb__strcpy(scene, out->scene, sizeof out->scene) != 0)
            TB__FAIL(TB_REJECT_INVALID, "scene must be a short string");
        const msgpack_object *name = tb__get(root, "name");
        if (name && tb__strcpy(name, out->name, sizeof out->name) != 0)
            TB__FAIL(TB_REJECT_INVALID, "name must be a short string");
        out->kind = TB_CLIENT_JOIN;
    } else if (tb__is(type, "ping")) {
        if (tb__num(tb__get(root, "t"), &out->ping_time) != 0)
            out->ping_time = 0;
        out->kind = TB_CLIENT_PING;
    } else if (tb__is(type, "ack")) {
        if (tb__num(tb__get(root, "tick"), &num) != 0 || num < 0)
            TB__FAIL(TB_REJECT_INVALID, "ack needs tick");
        out->ack_tick = (uint64_t)num;
        out->kind = TB_CLIENT_ACK;
    } else {
        out->kind = TB_CLIENT_INPUT;
        if (tb__is(type, "throw")) {
            in->type = TB_INPUT_THROW;
            if (tb__vec3(tb__get(root, "pos"), in->pos) || tb__vec3(tb__get(root, "vel"), in->vec))
                TB__FAIL(TB_REJECT_INVALID, "throw needs finite pos[3] and vel[3]");
            if (tb__num(tb__get(root, "shape"), &num) == 0 && num >= 0 && num < 8)
                in->flags = (uint8_t)num;
        } else if (tb__is(type, "poke")) {
            in->type = TB_INPUT_POKE;
            if (tb__vec3(tb__get(root, "pos"), in->pos) || tb__vec3(tb__get(root, "impulse"), in->vec))
                TB__FAIL(TB_REJECT_INVALID, "poke needs finite pos[3] and impulse[3]");
            if (tb__num(tb__get(root, "target"), &num) == 0 && num >= -1 && num < 1e6)
                in->target = (int32_t)num;
        } else if (tb__is(type, "grab")) {
            char phase[8];
            if (tb__strcpy(tb__get(root, "phase"), phase, sizeof phase) != 0)
                TB__FAIL(TB_REJECT_INVALID, "grab needs phase");
            in->type = !strcmp(phase, "start") ? TB_INPUT_GRAB_START
                       : !strcmp(phase, "move") ? TB_INPUT_GRAB_MOVE
                       : !strcmp(phase, "end")  ? TB_INPUT_GRAB_END
                                                : 0;
            if (!in->type)
                TB__FAIL(TB_REJECT_INVALID, "grab phase must be start, move or end");
            if (tb__num(tb__get(root, "pointer"), &num) != 0 || num < 0 || num > 65535)
                TB__FAIL(TB_REJECT_INVALID, "grab needs pointer 0..65535");
            in->pointer = (uint32_t)num;
            if (in->type != TB_INPUT_GRAB_END && tb__vec3(tb__get(root, "pos"), in->pos))
                TB__FAIL(TB_REJECT_INVALID, "grab needs finite pos[3]");
            if (tb__num(tb__get(root, "target"), &num) == 0 && num >= -1 && num < 1e6)
                in->target = (int32_t)num;
        } else if (tb__is(type, "param")) {
            in->type = TB_INPUT_PARAM;
            if (tb__strcpy(tb__get(root, "name"), in->name, sizeof in->name) != 0)
                TB__FAIL(TB_REJECT_INVALID, "param needs a name");
            const msgpack_object *v = tb__get(root, "value");
            if (!v)
                TB__FAIL(TB_REJECT_INVALID, "param needs a value");
            int r = tb__num(v, &num);
            if (r != 0)
                TB__FAIL(TB_REJECT_INVALID, "param value must be a finite number");
            in->value = (float)num;
        } else if (tb__is(type, "reset")) {
            in->type = TB_INPUT_RESET;
            const msgpack_object *k = tb__get(root, "knock");
            in->flags = k && k->type == MSGPACK_OBJECT_BOOLEAN && k->via.boolean;
        } else if (tb__is(type, "scene")) {
            in->type = TB_INPUT_SCENE;
            if (tb__strcpy(tb__get(root, "name"), in->name, sizeof in->name) != 0)
                TB__FAIL(TB_REJECT_INVALID, "scene needs a name");
        } else if (tb__is(type, "contacts")) {
            in->type = TB_INPUT_CONTACTS;
            const msgpack_object *on = tb__get(root, "on");
            in->flags = on && on->type == MSGPACK_OBJECT_BOOLEAN && on->via.boolean;
        } else {
            TB__FAIL(TB_REJECT_UNKNOWN, "unknown message type");
        }
    }
out:
    msgpack_unpacked_destroy(&up);
    return rc;
}
