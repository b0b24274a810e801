/* tb_proto_server.c: server -> client messages other than the snapshot bin.
 *
 * Envelope: a msgpack array [type, ...fields] (PROTOCOL.md "Server
 * messages"). The static room description is the one map in the protocol
 * (short string keys, unknown keys ignored) because it is sent once and is
 * the part most likely to grow. */
#include <math.h>
#include <string.h>

#include "tb_proto_internal.h"

#define TRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)
#define SERVER_DEPTH 8

static void pk_init(msgpack_packer *pk, msgpack_sbuffer *sb) { msgpack_packer_init(pk, sb, msgpack_sbuffer_write); }
static void pack_opt_uint(msgpack_packer *pk, bool has, uint32_t v) { if (has) msgpack_pack_uint32(pk, v); else msgpack_pack_nil(pk); }

/* ---- static description ------------------------------------------------------ */

void tb_proto__pack_static(msgpack_packer *pk, const tb_proto_static *st)
{
    msgpack_pack_map(pk, 5);
    tb_proto__pack_str(pk, "bounds");
    msgpack_pack_array(pk, 6);
    for (int a = 0; a < 3; a++) msgpack_pack_double(pk, st->bounds_min[a]);
    for (int a = 0; a < 3; a++) msgpack_pack_double(pk, st->bounds_max[a]);
    tb_proto__pack_str(pk, "planes");
    msgpack_pack_array(pk, st->plane_count);
    for (uint32_t i = 0; i < st->plane_count; i++) {
        msgpack_pack_array(pk, 4);
        for (int a = 0; a < 3; a++) msgpack_pack_double(pk, st->planes[i].normal[a]);
        msgpack_pack_double(pk, st->planes[i].offset);
    }
    tb_proto__pack_str(pk, "capsules");
    msgpack_pack_array(pk, st->capsule_count);
    for (uint32_t i = 0; i < st->capsule_count; i++) {
        const tb_proto_capsule *c = &st->capsules[i];
        msgpack_pack_array(pk, 9);
        pack_opt_uint(pk, c->has_body, c->body);
        for (int a = 0; a < 3; a++) msgpack_pack_double(pk, c->a[a]);
        for (int a = 0; a < 3; a++) msgpack_pack_double(pk, c->b[a]);
        msgpack_pack_double(pk, c->radius);
        msgpack_pack_uint32(pk, c->color);
    }
    tb_proto__pack_str(pk, "boxes");
    msgpack_pack_array(pk, st->box_count);
    for (uint32_t i = 0; i < st->box_count; i++) {
        const tb_proto_box *b = &st->boxes[i];
        msgpack_pack_array(pk, 12);
        for (int a = 0; a < 3; a++) msgpack_pack_double(pk, b->center[a]);
        for (int a = 0; a < 3; a++) msgpack_pack_double(pk, b->half[a]);
        for (int a = 0; a < 4; a++) msgpack_pack_double(pk, b->rot[a]);
        msgpack_pack_uint32(pk, b->color);
        msgpack_pack_uint32(pk, b->material);
    }
    tb_proto__pack_str(pk, "meshes");
    msgpack_pack_array(pk, st->mesh_count);
    for (uint32_t i = 0; i < st->mesh_count; i++) {
        const tb_proto_mesh *m = &st->meshes[i];
        msgpack_pack_array(pk, 7);
        tb_proto__pack_str(pk, m->kind);
        msgpack_pack_uint32(pk, m->verts);
        msgpack_pack_bin(pk, 6u * m->tri_count);
        if (m->tri_count) msgpack_pack_bin_body(pk, m->tris, 6u * m->tri_count);
        msgpack_pack_bin(pk, 2u * m->pin_count);
        if (m->pin_count) msgpack_pack_bin_body(pk, m->pins, 2u * m->pin_count);
        msgpack_pack_uint32(pk, m->color);
        msgpack_pack_uint32(pk, m->grid_w);
        msgpack_pack_uint32(pk, m->grid_h);
    }
}

static bool key_is(const msgpack_object *k, const char *s)
{
    size_t n = strlen(s);
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, s, n) == 0;
}

static int read_u16_list(const msgpack_object *o, uint32_t unit, uint32_t max_count, uint32_t below,
                         const uint8_t **ptr, uint32_t *count, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_BIN) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected bin", what);
    uint32_t n = o->via.bin.size;
    if (n % (2 * unit)) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: %u bytes is not a whole number of records", what, n);
    if (n / (2 * unit) > max_count) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: more than %u records", what, max_count);
    const uint8_t *p = (const uint8_t *)o->via.bin.ptr;
    for (uint32_t i = 0; i < n / 2; i++)
        if ((uint32_t)(p[2 * i] | (p[2 * i + 1] << 8)) >= below)
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: index outside the mesh", what);
    *ptr = p;
    *count = n / (2 * unit);
    return TB_OK;
}

int tb_proto__read_static(const msgpack_object *o, tb_proto_static *st, tb_proto_err *err)
{
    memset(st, 0, sizeof *st);
    if (o->type != MSGPACK_OBJECT_MAP) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "static: expected a map");
    bool have_bounds = false;
    for (uint32_t k = 0; k < o->via.map.size; k++) {
        const msgpack_object *key = &o->via.map.ptr[k].key, *v = &o->via.map.ptr[k].val;
        if (key_is(key, "bounds")) {
            double b[6];
            TRY(tb_proto__vec(v, 6, TB_PROTO_MAX_COORD, b, "static.bounds", err));
            for (int a = 0; a < 3; a++) { st->bounds_min[a] = b[a]; st->bounds_max[a] = b[3 + a]; }
            have_bounds = true;
        } else if (key_is(key, "planes")) {
            TRY(tb_proto__array(v, 0, TB_PROTO_MAX_PLANES, "static.planes", err));
            st->plane_count = v->via.array.size;
            for (uint32_t i = 0; i < st->plane_count; i++) {
                double p[4];
                TRY(tb_proto__vec(&v->via.array.ptr[i], 4, TB_PROTO_MAX_COORD, p, "static.planes[]", err));
                for (int a = 0; a < 3; a++) st->planes[i].normal[a] = p[a];
                st->planes[i].offset = p[3];
            }
        } else if (key_is(key, "capsules")) {
            TRY(tb_proto__array(v, 0, TB_PROTO_MAX_CAPSULES, "static.capsules", err));
            st->capsule_count = v->via.array.size;
            for (uint32_t i = 0; i < st->capsule_count; i++) {
                const msgpack_object *c = &v->via.array.ptr[i];
                tb_proto_capsule *out = &st->capsules[i];
                TRY(tb_proto__array(c, 9, UINT32_MAX, "static.capsules[]", err));
                const msgpack_object *f = c->via.array.ptr;
                out->has_body = !tb_proto__is_nil(&f[0]);
                if (out->has_body) TRY(tb_proto__uint(&f[0], 0xffff, &out->body, "capsule.body", err));
                for (int a = 0; a < 3; a++) TRY(tb_proto__num(&f[1 + a], TB_PROTO_MAX_COORD, &out->a[a], "capsule.a", err));
                for (int a = 0; a < 3; a++) TRY(tb_proto__num(&f[4 + a], TB_PROTO_MAX_COORD, &out->b[a], "capsule.b", err));
                TRY(tb_proto__num(&f[7], TB_PROTO_MAX_COORD, &out->radius, "capsule.radius", err));
                TRY(tb_proto__uint(&f[8], 0xffffff, &out->color, "capsule.color", err));
            }
        } else if (key_is(key, "boxes")) {
            TRY(tb_proto__array(v, 0, TB_PROTO_MAX_BOXES, "static.boxes", err));
            st->box_count = v->via.array.size;
            for (uint32_t i = 0; i < st->box_count; i++) {
                const msgpack_object *b = &v->via.array.ptr[i];
                tb_proto_box *out = &st->boxes[i];
                TRY(tb_proto__array(b, 12, UINT32_MAX, "static.boxes[]", err));
                const msgpack_object *f = b->via.array.ptr;
                for (int a = 0; a < 3; a++) TRY(tb_proto__num(&f[a], TB_PROTO_MAX_COORD, &out->center[a], "box.center", err));
                for (int a = 0; a < 3; a++) TRY(tb_proto__num(&f[3 + a], TB_PROTO_MAX_COORD, &out->half[a], "box.half", err));
                for (int a = 0; a < 4; a++) TRY(tb_proto__num(&f[6 + a], 1.0 + 1e-6, &out->rot[a], "box.rot", err));
                TRY(tb_proto__uint(&f[10], 0xffffff, &out->color, "box.color", err));
                TRY(tb_proto__uint(&f[11], 0xff, &out->material, "box.material", err));
            }
        } else if (key_is(key, "meshes")) {
            TRY(tb_proto__array(v, 0, TB_PROTO_MAX_MESHES, "static.meshes", err));
            st->mesh_count = v->via.array.size;
            for (uint32_t i = 0; i < st->mesh_count; i++) {
                const msgpack_object *mo = &v->via.array.ptr[i];
                tb_proto_mesh *m = &st->meshes[i];
                TRY(tb_proto__array(mo, 7, UINT32_MAX, "static.meshes[]", err));
                const msgpack_object *f = mo->via.array.ptr;
                TRY(tb_proto__str(&f[0], TB_STR_TOKEN, m->kind, TB_PROTO_NAME_MAX, "mesh.kind", err));
                TRY(tb_proto__uint(&f[1], TB_PROTO_MAX_VERTS, &m->verts, "mesh.verts", err));
                TRY(read_u16_list(&f[2], 3, TB_PROTO_MAX_TRIS, m->verts, &m->tris, &m->tri_count, "mesh.tris", err));
                TRY(read_u16_list(&f[3], 1, TB_PROTO_MAX_PINS, m->verts, &m->pins, &m->pin_count, "mesh.pins", err));
                TRY(tb_proto__uint(&f[4], 0xffffff, &m->color, "mesh.color", err));
                TRY(tb_proto__uint(&f[5], TB_PROTO_MAX_VERTS, &m->grid_w, "mesh.grid_w", err));
                TRY(tb_proto__uint(&f[6], TB_PROTO_MAX_VERTS, &m->grid_h, "mesh.grid_h", err));
            }
        } /* unknown keys: ignored (PROTOCOL.md "Extensibility") */
    }
    if (!have_bounds) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "static: no bounds");
    tb_proto_frame f;
    tb_proto_frame_from_static(&f, st);
    return tb_proto_frame_check(&f, err);
}

static void pack_params(msgpack_packer *pk, const tb_proto_param *p, uint32_t n)
{
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_array(pk, 6);
        tb_proto__pack_str(pk, p[i].name);
        msgpack_pack_double(pk, p[i].value);
        msgpack_pack_double(pk, p[i].min);
        msgpack_pack_double(pk, p[i].max);
        msgpack_pack_double(pk, p[i].def);
        msgpack_pack_double(pk, p[i].step);
    }
}

static int read_params(const msgpack_object *o, tb_proto_welcome *w, tb_proto_err *err)
{
    TRY(tb_proto__array(o, 0, TB_PROTO_MAX_PARAMS, "params", err));
    w->param_count = o->via.array.size;
    for (uint32_t i = 0; i < w->param_count; i++) {
        const msgpack_object *p = &o->via.array.ptr[i];
        tb_proto_param *out = &w->params[i];
        TRY(tb_proto__array(p, 6, UINT32_MAX, "params[]", err));
        const msgpack_object *f = p->via.array.ptr;
        TRY(tb_proto__str(&f[0], TB_STR_TOKEN, out->name, TB_PROTO_NAME_MAX, "param.name", err));
        TRY(tb_proto__num(&f[1], TB_PROTO_MAX_PARAM_ABS, &out->value, "param.value", err));
        TRY(tb_proto__num(&f[2], TB_PROTO_MAX_PARAM_ABS, &out->min, "param.min", err));
        TRY(tb_proto__num(&f[3], TB_PROTO_MAX_PARAM_ABS, &out->max, "param.max", err));
        TRY(tb_proto__num(&f[4], TB_PROTO_MAX_PARAM_ABS, &out->def, "param.default", err));
        TRY(tb_proto__num(&f[5], TB_PROTO_MAX_PARAM_ABS, &out->step, "param.step", err));
    }
    return TB_OK;
}

/* [32, version, client_id, room, kind, scene, server, tick_rate, snap_rate, peers, params, static, state]
 * [41, kind, scene, params, static, state] */
int tb_proto__read_welcome_like(const msgpack_object *root, int type, tb_proto_welcome *w,
                                const msgpack_object **state, tb_proto_err *err)
{
    memset(w, 0, sizeof *w);
    const msgpack_object *f = root->via.array.ptr;
    if (type == TB_MSG_SCENE) {
        TRY(tb_proto__array(root, 6, UINT32_MAX, "scene", err));
        TRY(tb_proto__str(&f[1], TB_STR_TOKEN, w->kind, TB_PROTO_NAME_MAX, "scene.kind", err));
        TRY(tb_proto__str(&f[2], TB_STR_TOKEN, w->scene, TB_PROTO_NAME_MAX, "scene.scene", err));
        TRY(read_params(&f[3], w, err));
        TRY(tb_proto__read_static(&f[4], &w->st, err));
        *state = &f[5];
        return TB_OK;
    }
    TRY(tb_proto__array(root, 13, UINT32_MAX, "welcome", err));
    TRY(tb_proto__uint(&f[1], UINT32_MAX, &w->version, "welcome.version", err));
    TRY(tb_proto__uint(&f[2], UINT32_MAX, &w->client_id, "welcome.client_id", err));
    TRY(tb_proto__str(&f[3], TB_STR_ID, w->room, TB_PROTO_NAME_MAX, "welcome.room", err));
    TRY(tb_proto__str(&f[4], TB_STR_TOKEN, w->kind, TB_PROTO_NAME_MAX, "welcome.kind", err));
    TRY(tb_proto__str(&f[5], TB_STR_TOKEN, w->scene, TB_PROTO_NAME_MAX, "welcome.scene", err));
    TRY(tb_proto__str(&f[6], TB_STR_TEXT, w->server, TB_PROTO_NAME_MAX, "welcome.server", err));
    TRY(tb_proto__uint(&f[7], 10000, &w->tick_rate, "welcome.tick_rate", err));
    TRY(tb_proto__uint(&f[8], 10000, &w->snap_rate, "welcome.snap_rate", err));
    TRY(tb_proto__array(&f[9], 0, TB_PROTO_MAX_PEERS, "welcome.peers", err));
    w->peer_count = f[9].via.array.size;
    for (uint32_t i = 0; i < w->peer_count; i++) {
        const msgpack_object *p = &f[9].via.array.ptr[i];
        TRY(tb_proto__array(p, 2, UINT32_MAX, "welcome.peers[]", err));
        TRY(tb_proto__uint(&p->via.array.ptr[0], UINT32_MAX, &w->peers[i].id, "peer.id", err));
        TRY(tb_proto__str(&p->via.array.ptr[1], TB_STR_TEXT, w->peers[i].name, TB_PROTO_NAME_MAX, "peer.name", err));
    }
    TRY(read_params(&f[10], w, err));
    TRY(tb_proto__read_static(&f[11], &w->st, err));
    *state = &f[12];
    /* watchers? (PROTOCOL.md "Watchers"): left out when the room has none */
    if (root->via.array.size > 13 && !tb_proto__is_nil(&f[13]))
        TRY(tb_proto__uint(&f[13], UINT32_MAX, &w->watchers, "welcome.watchers", err));
    return TB_OK;
}

/* ---- encoders ----------------------------------------------------------------- */

static int pack_state(msgpack_sbuffer *sb, const tb_snap_blob *key)
{
    if (!key || key->type != TB_MSG_SNAP_KEY) return TB_ERR_INTERNAL;
    return tb_snap_write_sbuf(sb, key, 0);
}

int tb_proto_encode_welcome(msgpack_sbuffer *sb, const tb_proto_welcome *w, const tb_snap_blob *key)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, w->watchers ? 14 : 13);
    msgpack_pack_int(&pk, TB_MSG_WELCOME);
    msgpack_pack_uint32(&pk, TB_PROTO_VERSION);
    msgpack_pack_uint32(&pk, w->client_id);
    tb_proto__pack_str(&pk, w->room);
    tb_proto__pack_str(&pk, w->kind);
    tb_proto__pack_str(&pk, w->scene);
    tb_proto__pack_str(&pk, w->server);
    msgpack_pack_uint32(&pk, w->tick_rate);
    msgpack_pack_uint32(&pk, w->snap_rate);
    msgpack_pack_array(&pk, w->peer_count);
    for (uint32_t i = 0; i < w->peer_count; i++) {
        msgpack_pack_array(&pk, 2);
        msgpack_pack_uint32(&pk, w->peers[i].id);
        tb_proto__pack_str(&pk, w->peers[i].name);
    }
    pack_params(&pk, w->params, w->param_count);
    tb_proto__pack_static(&pk, &w->st);
    TRY(pack_state(sb, key));
    if (w->watchers) /* a trailing field, left out when 0: a room without watchers sends what it always did */
        msgpack_pack_uint32(&pk, w->watchers);
    return TB_OK;
}

int tb_proto_encode_scene(msgpack_sbuffer *sb, const tb_proto_welcome *w, const tb_snap_blob *key)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 6);
    msgpack_pack_int(&pk, TB_MSG_SCENE);
    tb_proto__pack_str(&pk, w->kind);
    tb_proto__pack_str(&pk, w->scene);
    pack_params(&pk, w->params, w->param_count);
    tb_proto__pack_static(&pk, &w->st);
    return pack_state(sb, key);
}

int tb_proto_encode_contacts(msgpack_sbuffer *sb, uint32_t tick, const tb_proto_contact *c, uint32_t n)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    if (n > TB_PROTO_MAX_CONTACTS) n = TB_PROTO_MAX_CONTACTS;
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, TB_MSG_CONTACTS);
    msgpack_pack_uint32(&pk, tick);
    msgpack_pack_bin(&pk, 28u * n);
    for (uint32_t i = 0; i < n; i++) {
        float v[7] = {c[i].point[0], c[i].point[1], c[i].point[2], c[i].normal[0], c[i].normal[1], c[i].normal[2], c[i].impulse};
        uint8_t b[28];
        for (int k = 0; k < 7; k++) {
            if (!isfinite(v[k])) v[k] = 0.0f;
            uint32_t u;
            memcpy(&u, &v[k], 4);
            for (int s = 0; s < 4; s++) b[4 * k + s] = (uint8_t)(u >> (8 * s));   /* little-endian */
        }
        msgpack_pack_bin_body(&pk, b, 28);
    }
    return TB_OK;
}

void tb_proto_contact_get(const tb_proto_server_msg *m, uint32_t i, tb_proto_contact *out)
{
    const uint8_t *b = m->u.contacts.raw + 28u * i;
    float v[7];
    for (int k = 0; k < 7; k++) {
        uint32_t u = (uint32_t)b[4 * k] | (uint32_t)b[4 * k + 1] << 8 | (uint32_t)b[4 * k + 2] << 16 | (uint32_t)b[4 * k + 3] << 24;
        memcpy(&v[k], &u, 4);
    }
    for (int a = 0; a < 3; a++) { out->point[a] = v[a]; out->normal[a] = v[3 + a]; }
    out->impulse = v[6];
}

int tb_proto_encode_dice(msgpack_sbuffer *sb, uint32_t tick, const uint32_t *faces, uint32_t n)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    if (n > TB_PROTO_MAX_DICE) return TB_ERR_BAD_VALUE;
    uint32_t sum = 0;
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, TB_MSG_DICE);
    msgpack_pack_uint32(&pk, tick);
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++) { msgpack_pack_uint32(&pk, faces[i]); sum += faces[i]; }
    msgpack_pack_uint32(&pk, sum);
    return TB_OK;
}

int tb_proto_encode_param_changed(msgpack_sbuffer *sb, const char *name, double value, uint32_t by, const char *by_name)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 5);
    msgpack_pack_int(&pk, TB_MSG_PARAM_CHANGED);
    tb_proto__pack_str(&pk, name);
    msgpack_pack_double(&pk, value);
    msgpack_pack_uint32(&pk, by);
    tb_proto__pack_str(&pk, by_name);
    return TB_OK;
}

int tb_proto_encode_peer_joined(msgpack_sbuffer *sb, uint32_t id, const char *name)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, TB_MSG_PEER_JOINED);
    msgpack_pack_uint32(&pk, id);
    tb_proto__pack_str(&pk, name);
    return TB_OK;
}

int tb_proto_encode_peer_left(msgpack_sbuffer *sb, uint32_t id)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, TB_MSG_PEER_LEFT);
    msgpack_pack_uint32(&pk, id);
    return TB_OK;
}

int tb_proto_encode_reset(msgpack_sbuffer *sb, const char *action, uint32_t by, const char *by_name)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, TB_MSG_RESET);
    tb_proto__pack_str(&pk, action);
    msgpack_pack_uint32(&pk, by);
    tb_proto__pack_str(&pk, by_name);
    return TB_OK;
}

int tb_proto_encode_pong(msgpack_sbuffer *sb, double client_time, double server_time)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, TB_MSG_PONG);
    msgpack_pack_double(&pk, client_time);
    msgpack_pack_double(&pk, server_time);
    return TB_OK;
}

int tb_proto_encode_error(msgpack_sbuffer *sb, int code, const char *message, int64_t seq)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    char text[TB_PROTO_TEXT_MAX + 1];
    const char *m = message ? message : tb_proto_code_name(code);
    /* Keep the text inside the limit, cutting only at a UTF-8 boundary, controls replaced. */
    size_t n = strlen(m);
    if (n > TB_PROTO_TEXT_MAX) { n = TB_PROTO_TEXT_MAX; while (n > 0 && ((uint8_t)m[n] & 0xc0) == 0x80) n--; }
    for (size_t i = 0; i < n; i++) text[i] = ((uint8_t)m[i] < 0x20 || m[i] == 0x7f) ? ' ' : m[i];
    text[n] = '\0';
    msgpack_pack_array(&pk, 5);
    msgpack_pack_int(&pk, TB_MSG_ERROR);
    msgpack_pack_uint32(&pk, (uint32_t)code);
    tb_proto__pack_str(&pk, tb_proto_code_name(code));
    tb_proto__pack_str(&pk, text);
    if (seq >= 0 && seq <= UINT32_MAX) msgpack_pack_uint32(&pk, (uint32_t)seq); else msgpack_pack_nil(&pk);
    return TB_OK;
}

int tb_proto_encode_lobby(msgpack_sbuffer *sb, const tb_proto_room_info *rooms, uint32_t n)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    if (n > TB_PROTO_MAX_ROOMS) n = TB_PROTO_MAX_ROOMS;
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, TB_MSG_LOBBY);
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_array(&pk, rooms[i].watchers ? 7 : 6);
        tb_proto__pack_str(&pk, rooms[i].id);
        tb_proto__pack_str(&pk, rooms[i].kind);
        tb_proto__pack_str(&pk, rooms[i].scene);
        msgpack_pack_uint32(&pk, rooms[i].clients);
        msgpack_pack_uint32(&pk, rooms[i].bodies);
        msgpack_pack_uint32(&pk, rooms[i].awake);
        if (rooms[i].watchers)
            msgpack_pack_uint32(&pk, rooms[i].watchers);
    }
    return TB_OK;
}

int tb_proto_encode_watchers(msgpack_sbuffer *sb, uint32_t count)
{
    msgpack_packer pk;
    pk_init(&pk, sb);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, TB_MSG_WATCHERS);
    msgpack_pack_uint32(&pk, count);
    return TB_OK;
}

/* ---- decoding ----------------------------------------------------------------- */

static int need(const msgpack_object *a, uint32_t n, const char *what, tb_proto_err *err)
{
    return tb_proto__array(a, n, UINT32_MAX, what, err);
}

static int decode_server_fields(const msgpack_object *root, tb_proto_server_msg *m, tb_proto_err *err)
{
    const msgpack_object *f = root->via.array.ptr;
    const msgpack_object *state = NULL;
    switch (m->type) {
    case TB_MSG_WELCOME: case TB_MSG_SCENE:
        TRY(tb_proto__read_welcome_like(root, m->type, &m->u.welcome, &state, err));
        if (state->type != MSGPACK_OBJECT_ARRAY || state->via.array.size < 1 ||
            state->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || state->via.array.ptr[0].via.u64 != TB_MSG_SNAP_KEY)
            return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "state: expected a snap_key message");
        if (m->type == TB_MSG_WELCOME && m->u.welcome.version != TB_PROTO_VERSION)
            return tb_proto__fail(err, TB_ERR_VERSION, "server speaks protocol version %u", m->u.welcome.version);
        return TB_OK;
    case TB_MSG_SNAP_KEY:
        TRY(need(root, 6, "snap_key", err));
        m->u.snap.key = true;
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.snap.last_seq, "snap_key.last_seq", err));
        TRY(tb_proto__uint(&f[2], UINT32_MAX, &m->u.snap.tick, "snap_key.tick", err));
        TRY(tb_proto__uint(&f[3], TB_PROTO_MAX_BODIES, &m->u.snap.awake, "snap_key.awake", err));
        return TB_OK;
    case TB_MSG_SNAP_DELTA:
        TRY(need(root, 6, "snap_delta", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.snap.last_seq, "snap_delta.last_seq", err));
        TRY(tb_proto__uint(&f[2], UINT32_MAX, &m->u.snap.tick, "snap_delta.tick", err));
        TRY(tb_proto__uint(&f[3], UINT32_MAX, &m->u.snap.tick_gap, "snap_delta.tick_gap", err));
        TRY(tb_proto__uint(&f[4], TB_PROTO_MAX_BODIES, &m->u.snap.awake, "snap_delta.awake", err));
        return TB_OK;
    case TB_MSG_CONTACTS: {
        TRY(need(root, 3, "contacts", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.contacts.tick, "contacts.tick", err));
        if (f[2].type != MSGPACK_OBJECT_BIN || f[2].via.bin.size % 28 || f[2].via.bin.size / 28 > TB_PROTO_MAX_CONTACTS)
            return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "contacts.points: expected bin of up to %d 28-byte records", TB_PROTO_MAX_CONTACTS);
        m->u.contacts.count = f[2].via.bin.size / 28;
        m->u.contacts.raw = (const uint8_t *)f[2].via.bin.ptr;
        for (uint32_t i = 0; i < m->u.contacts.count; i++) {
            tb_proto_contact c;
            tb_proto_contact_get(m, i, &c);
            float v[7] = {c.point[0], c.point[1], c.point[2], c.normal[0], c.normal[1], c.normal[2], c.impulse};
            for (int k = 0; k < 7; k++)
                if (!isfinite(v[k]) || fabsf(v[k]) > (float)TB_PROTO_MAX_IMPULSE)
                    return tb_proto__fail(err, TB_ERR_BAD_VALUE, "contacts: non-finite or huge value");
        }
        return TB_OK;
    }
    case TB_MSG_DICE: {
        TRY(need(root, 4, "dice", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.dice.tick, "dice.tick", err));
        TRY(tb_proto__array(&f[2], 0, TB_PROTO_MAX_DICE, "dice.faces", err));
        m->u.dice.count = f[2].via.array.size;
        uint32_t sum = 0;
        for (uint32_t i = 0; i < m->u.dice.count; i++) {
            TRY(tb_proto__uint(&f[2].via.array.ptr[i], 6, &m->u.dice.faces[i], "dice.faces[]", err));
            if (m->u.dice.faces[i] < 1) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "dice.faces[]: 0");
            sum += m->u.dice.faces[i];
        }
        TRY(tb_proto__uint(&f[3], 6 * TB_PROTO_MAX_DICE, &m->u.dice.sum, "dice.sum", err));
        if (sum != m->u.dice.sum) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "dice.sum does not match the faces");
        return TB_OK;
    }
    case TB_MSG_PARAM_CHANGED:
        TRY(need(root, 5, "param_changed", err));
        TRY(tb_proto__str(&f[1], TB_STR_TOKEN, m->u.param_changed.name, TB_PROTO_NAME_MAX, "param_changed.name", err));
        TRY(tb_proto__num(&f[2], TB_PROTO_MAX_PARAM_ABS, &m->u.param_changed.value, "param_changed.value", err));
        TRY(tb_proto__uint(&f[3], UINT32_MAX, &m->u.param_changed.by, "param_changed.by", err));
        TRY(tb_proto__str(&f[4], TB_STR_TEXT, m->u.param_changed.by_name, TB_PROTO_NAME_MAX, "param_changed.by_name", err));
        return TB_OK;
    case TB_MSG_PEER_JOINED:
        TRY(need(root, 3, "peer_joined", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.peer.id, "peer_joined.id", err));
        TRY(tb_proto__str(&f[2], TB_STR_TEXT, m->u.peer.name, TB_PROTO_NAME_MAX, "peer_joined.name", err));
        return TB_OK;
    case TB_MSG_PEER_LEFT:
        TRY(need(root, 2, "peer_left", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.peer.id, "peer_left.id", err));
        return TB_OK;
    case TB_MSG_RESET:
        TRY(need(root, 4, "reset", err));
        TRY(tb_proto__str(&f[1], TB_STR_TOKEN, m->u.reset.action, TB_PROTO_NAME_MAX, "reset.action", err));
        TRY(tb_proto__uint(&f[2], UINT32_MAX, &m->u.reset.by, "reset.by", err));
        TRY(tb_proto__str(&f[3], TB_STR_TEXT, m->u.reset.by_name, TB_PROTO_NAME_MAX, "reset.by_name", err));
        return TB_OK;
    case TB_MSG_PONG:
        TRY(need(root, 3, "pong", err));
        TRY(tb_proto__num(&f[1], 9007199254740991.0, &m->u.pong.client_time, "pong.client_time", err));
        TRY(tb_proto__num(&f[2], 9007199254740991.0, &m->u.pong.server_time, "pong.server_time", err));
        return TB_OK;
    case TB_MSG_ERROR:
        TRY(need(root, 4, "error", err)); /* seq: an optional field at the end may be left out (§2) */
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.error.code, "error.code", err));
        TRY(tb_proto__str(&f[2], TB_STR_TOKEN, m->u.error.name, TB_PROTO_NAME_MAX, "error.name", err));
        TRY(tb_proto__str(&f[3], TB_STR_TEXT, m->u.error.text, TB_PROTO_TEXT_MAX, "error.message", err));
        m->u.error.has_seq = root->via.array.size > 4 && !tb_proto__is_nil(&f[4]);
        if (m->u.error.has_seq) TRY(tb_proto__uint(&f[4], UINT32_MAX, &m->u.error.seq, "error.seq", err));
        return TB_OK;
    case TB_MSG_LOBBY:
        TRY(need(root, 2, "lobby", err));
        TRY(tb_proto__array(&f[1], 0, TB_PROTO_MAX_ROOMS, "lobby.rooms", err));
        m->u.lobby.count = f[1].via.array.size;
        for (uint32_t i = 0; i < m->u.lobby.count; i++) {
            const msgpack_object *r = &f[1].via.array.ptr[i];
            tb_proto_room_info *o = &m->u.lobby.rooms[i];
            TRY(tb_proto__array(r, 6, UINT32_MAX, "lobby.rooms[]", err));
            const msgpack_object *g = r->via.array.ptr;
            TRY(tb_proto__str(&g[0], TB_STR_ID, o->id, TB_PROTO_NAME_MAX, "room.id", err));
            TRY(tb_proto__str(&g[1], TB_STR_TOKEN, o->kind, TB_PROTO_NAME_MAX, "room.kind", err));
            TRY(tb_proto__str(&g[2], TB_STR_TOKEN, o->scene, TB_PROTO_NAME_MAX, "room.scene", err));
            TRY(tb_proto__uint(&g[3], UINT32_MAX, &o->clients, "room.clients", err));
            TRY(tb_proto__uint(&g[4], UINT32_MAX, &o->bodies, "room.bodies", err));
            TRY(tb_proto__uint(&g[5], UINT32_MAX, &o->awake, "room.awake", err));
            o->watchers = 0;
            if (r->via.array.size > 6 && !tb_proto__is_nil(&g[6]))
                TRY(tb_proto__uint(&g[6], UINT32_MAX, &o->watchers, "room.watchers", err));
        }
        return TB_OK;
    case TB_MSG_WATCHERS:
        TRY(need(root, 2, "watchers", err));
        TRY(tb_proto__uint(&f[1], UINT32_MAX, &m->u.watchers.count, "watchers.count", err));
        return TB_OK;
    default:
        return tb_proto__fail(err, TB_ERR_UNKNOWN_TYPE, "unknown message type %d", m->type);
    }
}

int tb_proto_decode_server(const uint8_t *buf, size_t len, tb_proto_server_msg *out, tb_proto_err *err)
{
    out->type = 0;
    if (err) { err->code = TB_OK; err->msg[0] = '\0'; }
    if (len > TB_PROTO_MAX_SERVER_MSG) return tb_proto__fail(err, TB_ERR_TOO_BIG, "frame of %zu bytes", len);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    const msgpack_object *root = NULL;
    int rc = tb_proto__parse(buf, len, SERVER_DEPTH, &up, &root, err);
    if (!rc && (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 1))
        rc = tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "message must be an array [type, ...]");
    uint32_t type = 0;
    if (!rc) rc = tb_proto__uint(&root->via.array.ptr[0], UINT32_MAX, &type, "type", err);
    if (rc == TB_ERR_BAD_VALUE || (!rc && !(type >= 32 && type <= TB_MSG_WATCHERS)))
        rc = tb_proto__fail(err, TB_ERR_UNKNOWN_TYPE, "unknown message type");
    if (!rc) {
        out->type = (int)type;
        rc = decode_server_fields(root, out, err);
    }
    msgpack_unpacked_destroy(&up);
    return rc;
}
