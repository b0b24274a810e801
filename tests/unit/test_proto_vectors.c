/* test_proto_vectors.c: the golden vectors in proto/vectors/ (PROTOCOL.md "Golden vectors").
 *
 * Every message type is encoded here by the C encoder, decoded back by the C
 * decoder, and its decoded form written as JSON beside the bytes:
 *   c_*   client messages            s_*   server messages
 *   seq_* snapshot sequences (welcome, then deltas and keyframes, applied in order)
 *   x_* / y_*  hostile client / server frames with the error both decoders must give
 *   js_*  the c_* messages as written by the JS encoder (proto/js/gen-vectors.mjs): C must
 *         decode them to the c_* JSON, and their bytes must equal the c_* bytes
 * This test fails when the committed files differ from what the codec writes
 * now; tests/js/proto_vectors.test.mjs checks the JS codec against the same files.
 * Regenerate after a deliberate change:  TB_REGEN_VECTORS=1 build/tests/test_proto_vectors */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tb_proto.h"

/* ---- a tiny JSON writer ---------------------------------------------------------- */
typedef struct js { char *s; size_t len, cap; int first[64]; int depth; } js;

static void js_raw(js *j, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(j->s + j->len, j->cap - j->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < j->cap - j->len) { j->len += (size_t)n; return; }
        j->cap = j->cap * 2 + (size_t)n + 64;
        j->s = realloc(j->s, j->cap);
    }
}
static void js_sep(js *j) { if (!j->first[j->depth]) js_raw(j, ","); j->first[j->depth] = 0; }
static void js_key(js *j, const char *k) { js_sep(j); js_raw(j, "\"%s\":", k); j->first[j->depth] = 2; }
static void js_val_prefix(js *j) { if (j->first[j->depth] == 2) j->first[j->depth] = 0; else js_sep(j); }
static void js_open(js *j, char c) { js_val_prefix(j); js_raw(j, "%c", c); j->first[++j->depth] = 1; }
static void js_close(js *j, char c) { j->depth--; js_raw(j, "%c", c); }
static void js_u(js *j, uint64_t v) { js_val_prefix(j); js_raw(j, "%llu", (unsigned long long)v); }
static void js_i(js *j, int64_t v) { js_val_prefix(j); js_raw(j, "%lld", (long long)v); }
static void js_d(js *j, double v) { js_val_prefix(j); js_raw(j, "%.17g", v); }
static void js_null(js *j) { js_val_prefix(j); js_raw(j, "null"); }
static void js_bool(js *j, bool v) { js_val_prefix(j); js_raw(j, v ? "true" : "false"); }
static void js_str(js *j, const char *s)
{
    js_val_prefix(j);
    js_raw(j, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') js_raw(j, "\\%c", c);
        else if (c < 0x20) js_raw(j, "\\u%04x", c);
        else js_raw(j, "%c", c);
    }
    js_raw(j, "\"");
}
static void js_dv(js *j, const double *v, int n) { js_open(j, '['); for (int i = 0; i < n; i++) js_d(j, v[i]); js_close(j, ']'); }
static void js_fv(js *j, const float *v, int n) { js_open(j, '['); for (int i = 0; i < n; i++) js_d(j, v[i]); js_close(j, ']'); }
static void js_iv(js *j, const int32_t *v, int n) { js_open(j, '['); for (int i = 0; i < n; i++) js_i(j, v[i]); js_close(j, ']'); }
#define KU(k, v) (js_key(j, k), js_u(j, v))
#define KD(k, v) (js_key(j, k), js_d(j, v))
#define KS(k, v) (js_key(j, k), js_str(j, v))

/* ---- decoded forms (the JSON the JS codec must reproduce) -------------------------------- */

static void dump_client(js *j, const tb_proto_client_msg *m)
{
    js_open(j, '{');
    KS("type", tb_proto_type_name(m->type));
    switch (m->type) {
    case TB_MSG_HELLO:
        KU("version", m->u.hello.version); KS("room", m->u.hello.room);
        js_key(j, "kind"); if (m->u.hello.has_kind) js_str(j, m->u.hello.kind); else js_null(j);
        js_key(j, "scene"); if (m->u.hello.has_scene) js_str(j, m->u.hello.scene); else js_null(j);
        KS("name", m->u.hello.name);
        if (m->u.hello.watch) js_key(j, "watch"), js_bool(j, true); /* only a watcher's hello has it */
        if (m->u.hello.kbps) KU("kbps", m->u.hello.kbps); /* only when asked for */
        break;
    case TB_MSG_PING:
        KD("client_time", m->u.ping.client_time);
        if (m->u.ping.has_ack_tick || m->u.ping.has_rtt || m->u.ping.has_recv_bytes) {
            js_key(j, "ack_tick"); if (m->u.ping.has_ack_tick) js_u(j, m->u.ping.ack_tick); else js_null(j);
            js_key(j, "rtt_ms"); if (m->u.ping.has_rtt) js_d(j, m->u.ping.rtt_ms); else js_null(j);
            js_key(j, "recv_bytes"); if (m->u.ping.has_recv_bytes) js_u(j, m->u.ping.recv_bytes); else js_null(j);
        }
        break;
    case TB_MSG_RESYNC: case TB_MSG_LOBBY_REQ: break;
    default:
        KU("seq", m->seq);
        switch (m->type) {
        case TB_MSG_THROW:
            js_key(j, "origin"); js_dv(j, m->u.throw_.origin, 3);
            js_key(j, "velocity"); js_dv(j, m->u.throw_.velocity, 3);
            KS("shape", m->u.throw_.shape);
            if (m->u.throw_.has_view_tick) KU("view_tick", m->u.throw_.view_tick); /* only when sent */
            break;
        case TB_MSG_POKE:
            js_key(j, "body"); if (m->u.poke.has_body) js_u(j, m->u.poke.body); else js_null(j);
            js_key(j, "point"); js_dv(j, m->u.poke.point, 3);
            js_key(j, "impulse"); js_dv(j, m->u.poke.impulse, 3);
            if (m->u.poke.has_view_tick) KU("view_tick", m->u.poke.view_tick); /* only when sent */
            break;
        case TB_MSG_GRAB_START: case TB_MSG_GRAB_MOVE: case TB_MSG_GRAB_END:
            KU("pointer", m->u.grab.pointer);
            if (m->type != TB_MSG_GRAB_END) { js_key(j, "point"); js_dv(j, m->u.grab.point, 3); }
            if (m->type == TB_MSG_GRAB_START) { js_key(j, "body"); if (m->u.grab.has_body) js_u(j, m->u.grab.body); else js_null(j); }
            if (m->type == TB_MSG_GRAB_START && m->u.grab.has_view_tick) KU("view_tick", m->u.grab.view_tick);
            break;
        case TB_MSG_PARAM: KS("name", m->u.param.name); KD("value", m->u.param.value); break;
        case TB_MSG_ACTION:
            KS("action", m->u.action.action);
            js_key(j, "scene"); if (m->u.action.has_scene) js_str(j, m->u.action.scene); else js_null(j);
            break;
        case TB_MSG_CONTACTS_VIEW: js_key(j, "on"); js_bool(j, m->u.contacts.on); break;
        }
    }
    js_close(j, '}');
}

static void u16s(js *j, const uint8_t *p, uint32_t n)
{
    js_open(j, '[');
    for (uint32_t i = 0; i < n; i++) js_u(j, (uint32_t)(p[2 * i] | (p[2 * i + 1] << 8)));
    js_close(j, ']');
}

static void dump_params(js *j, const tb_proto_welcome *w)
{
    js_key(j, "params"); js_open(j, '[');
    for (uint32_t i = 0; i < w->param_count; i++) {
        const tb_proto_param *p = &w->params[i];
        js_open(j, '{');
        KS("name", p->name); KD("value", p->value); KD("min", p->min); KD("max", p->max); KD("default", p->def); KD("step", p->step);
        js_close(j, '}');
    }
    js_close(j, ']');
}

static void dump_static(js *j, const tb_proto_static *st)
{
    js_key(j, "static"); js_open(j, '{');
    js_key(j, "bounds"); js_open(j, '{');
    js_key(j, "min"); js_dv(j, st->bounds_min, 3); js_key(j, "max"); js_dv(j, st->bounds_max, 3);
    js_close(j, '}');
    js_key(j, "planes"); js_open(j, '[');
    for (uint32_t i = 0; i < st->plane_count; i++) {
        js_open(j, '{'); js_key(j, "normal"); js_dv(j, st->planes[i].normal, 3); KD("offset", st->planes[i].offset); js_close(j, '}');
    }
    js_close(j, ']');
    js_key(j, "capsules"); js_open(j, '[');
    for (uint32_t i = 0; i < st->capsule_count; i++) {
        const tb_proto_capsule *c = &st->capsules[i];
        js_open(j, '{');
        js_key(j, "body"); if (c->has_body) js_u(j, c->body); else js_null(j);
        js_key(j, "a"); js_dv(j, c->a, 3); js_key(j, "b"); js_dv(j, c->b, 3); KD("radius", c->radius); KU("color", c->color);
        js_close(j, '}');
    }
    js_close(j, ']');
    js_key(j, "boxes"); js_open(j, '[');
    for (uint32_t i = 0; i < st->box_count; i++) {
        const tb_proto_box *b = &st->boxes[i];
        js_open(j, '{');
        js_key(j, "center"); js_dv(j, b->center, 3); js_key(j, "half"); js_dv(j, b->half, 3); js_key(j, "rot"); js_dv(j, b->rot, 4);
        KU("color", b->color); KU("material", b->material);
        js_close(j, '}');
    }
    js_close(j, ']');
    js_key(j, "meshes"); js_open(j, '[');
    for (uint32_t i = 0; i < st->mesh_count; i++) {
        const tb_proto_mesh *m = &st->meshes[i];
        js_open(j, '{');
        KS("kind", m->kind); KU("verts", m->verts);
        js_key(j, "tris"); u16s(j, m->tris, 3 * m->tri_count);
        js_key(j, "pins"); u16s(j, m->pins, m->pin_count);
        KU("color", m->color); KU("grid_w", m->grid_w); KU("grid_h", m->grid_h);
        js_close(j, '}');
    }
    js_close(j, ']');
    js_close(j, '}');
}

static void dump_server(js *j, const tb_proto_server_msg *m)
{
    js_open(j, '{');
    KS("type", tb_proto_type_name(m->type));
    switch (m->type) {
    case TB_MSG_WELCOME: {
        const tb_proto_welcome *w = &m->u.welcome;
        KU("version", w->version); KU("client_id", w->client_id); KS("room", w->room); KS("kind", w->kind); KS("scene", w->scene);
        KS("server", w->server); KU("tick_rate", w->tick_rate); KU("snap_rate", w->snap_rate);
        js_key(j, "peers"); js_open(j, '[');
        for (uint32_t i = 0; i < w->peer_count; i++) { js_open(j, '{'); KU("id", w->peers[i].id); KS("name", w->peers[i].name); js_close(j, '}'); }
        js_close(j, ']');
        dump_params(j, w);
        dump_static(j, &w->st);
        if (w->watchers) KU("watchers", w->watchers); /* left out when the room has none */
        break;
    }
    case TB_MSG_SCENE:
        KS("kind", m->u.welcome.kind); KS("scene", m->u.welcome.scene);
        dump_params(j, &m->u.welcome);
        dump_static(j, &m->u.welcome.st);
        break;
    case TB_MSG_SNAP_KEY:
        KU("last_seq", m->u.snap.last_seq); KU("tick", m->u.snap.tick); KU("awake", m->u.snap.awake);
        break;
    case TB_MSG_SNAP_DELTA:
        KU("last_seq", m->u.snap.last_seq); KU("tick", m->u.snap.tick); KU("tick_gap", m->u.snap.tick_gap); KU("awake", m->u.snap.awake);
        break;
    case TB_MSG_CONTACTS:
        KU("tick", m->u.contacts.tick);
        js_key(j, "points"); js_open(j, '[');
        for (uint32_t i = 0; i < m->u.contacts.count; i++) {
            tb_proto_contact c;
            tb_proto_contact_get(m, i, &c);
            js_open(j, '{'); js_key(j, "point"); js_fv(j, c.point, 3); js_key(j, "normal"); js_fv(j, c.normal, 3); KD("impulse", c.impulse); js_close(j, '}');
        }
        js_close(j, ']');
        break;
    case TB_MSG_DICE:
        KU("tick", m->u.dice.tick);
        js_key(j, "faces"); js_open(j, '[');
        for (uint32_t i = 0; i < m->u.dice.count; i++) js_u(j, m->u.dice.faces[i]);
        js_close(j, ']');
        KU("sum", m->u.dice.sum);
        break;
    case TB_MSG_PARAM_CHANGED:
        KS("name", m->u.param_changed.name); KD("value", m->u.param_changed.value); KU("by", m->u.param_changed.by); KS("by_name", m->u.param_changed.by_name);
        break;
    case TB_MSG_PEER_JOINED: KU("id", m->u.peer.id); KS("name", m->u.peer.name); break;
    case TB_MSG_PEER_LEFT: KU("id", m->u.peer.id); break;
    case TB_MSG_RESET: KS("action", m->u.reset.action); KU("by", m->u.reset.by); KS("by_name", m->u.reset.by_name); break;
    case TB_MSG_PONG: KD("client_time", m->u.pong.client_time); KD("server_time", m->u.pong.server_time); break;
    case TB_MSG_ERROR:
        KU("code", m->u.error.code); KS("name", m->u.error.name); KS("message", m->u.error.text);
        js_key(j, "seq"); if (m->u.error.has_seq) js_u(j, m->u.error.seq); else js_null(j);
        break;
    case TB_MSG_WATCHERS: KU("count", m->u.watchers.count); break;
    case TB_MSG_LOBBY:
        js_key(j, "rooms"); js_open(j, '[');
        for (uint32_t i = 0; i < m->u.lobby.count; i++) {
            const tb_proto_room_info *r = &m->u.lobby.rooms[i];
            js_open(j, '{'); KS("id", r->id); KS("kind", r->kind); KS("scene", r->scene);
            KU("clients", r->clients); KU("bodies", r->bodies); KU("awake", r->awake);
            if (r->watchers) KU("watchers", r->watchers);
            js_close(j, '}');
        }
        js_close(j, ']');
        break;
    }
    js_close(j, '}');
}

static void dump_state(js *j, const tb_snap_decoder *d)
{
    js_open(j, '{');
    KU("tick", tb_snap_decoder_tick(d)); KU("last_seq", tb_snap_decoder_last_seq(d)); KU("awake", tb_snap_decoder_awake(d));
    js_key(j, "bodies"); js_open(j, '[');
    for (uint32_t i = 0; i < tb_snap_decoder_body_count(d); i++) {
        tb_proto_body b;
        int32_t qp[3], rc[3], vp[3], vr[3];
        int ri;
        tb_snap_decoder_body(d, i, &b);
        tb_snap_decoder_body_q(d, i, qp, &ri, rc, vp, vr);
        js_open(j, '{');
        KU("id", b.id); KU("shape", b.shape.kind); js_key(j, "size"); js_fv(j, b.shape.size, 3);
        KU("color", b.shape.color); KU("material", b.shape.material);
        js_key(j, "qp"); js_iv(j, qp, 3); KU("ri", (uint32_t)ri); js_key(j, "rc"); js_iv(j, rc, 3);
        js_key(j, "vp"); js_iv(j, vp, 3); js_key(j, "vr"); js_iv(j, vr, 3);
        js_key(j, "pos"); js_fv(j, b.pos, 3); js_key(j, "rot"); js_fv(j, b.rot, 4);
        js_close(j, '}');
    }
    js_close(j, ']');
    js_key(j, "meshes"); js_open(j, '[');
    for (uint32_t m = 0; m < tb_snap_decoder_frame(d)->mesh_count; m++) {
        const int32_t *v, *q = tb_snap_decoder_verts_q(d, m, &v);
        int n = 3 * (int)tb_snap_decoder_frame(d)->mesh_verts[m];
        js_open(j, '{'); js_key(j, "q"); js_iv(j, q, n); js_key(j, "v"); js_iv(j, v, n); js_close(j, '}');
    }
    js_close(j, ']');
    js_close(j, '}');
}

/* ---- vector files ------------------------------------------------------------------------ */

static const char *vec_dir(void)
{
    const char *d = getenv("TB_VECTORS_DIR");
    return d ? d : "proto/vectors";
}
static bool regen(void) { const char *r = getenv("TB_REGEN_VECTORS"); return r && *r == '1'; }

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    *len = got;
    return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int mismatches;

/* Writes (regen) or compares one vector: the bytes and the expected JSON. */
static void vector(const char *name, const uint8_t *bytes, size_t len, const char *json)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.mpk", vec_dir(), name);
    if (regen()) {
        write_file(path, bytes, len);
        snprintf(path, sizeof path, "%s/%s.json", vec_dir(), name);
        write_file(path, json, strlen(json));
        return;
    }
    size_t n;
    char *have = read_file(path, &n);
    if (!have || n != len || memcmp(have, bytes, len) != 0) {
        print_error("vector %s: bytes differ from what the C encoder writes now (regenerate deliberately with TB_REGEN_VECTORS=1)\n", name);
        mismatches++;
    }
    free(have);
    snprintf(path, sizeof path, "%s/%s.json", vec_dir(), name);
    have = read_file(path, &n);
    if (!have || strcmp(have, json) != 0) {
        print_error("vector %s: decoded form differs\n  committed: %.300s\n  now:       %.300s\n", name, have ? have : "(missing)", json);
        mismatches++;
    }
    free(have);
}

static tb_proto_server_msg smsg;   /* large: static storage */

/* JSON for a server frame: {"message": ..., "state": ...} or {"error": ...}; dec applies snapshots. */
static char *server_json(const uint8_t *b, size_t n, tb_snap_decoder *dec)
{
    js j = {0};
    j.cap = 256; j.s = malloc(j.cap); j.s[0] = '\0';
    j.first[0] = 1;
    tb_proto_err err;
    int rc = tb_proto_decode_server(b, n, &smsg, &err);
    bool snap = rc == TB_OK && (smsg.type == TB_MSG_WELCOME || smsg.type == TB_MSG_SCENE ||
                                smsg.type == TB_MSG_SNAP_KEY || smsg.type == TB_MSG_SNAP_DELTA);
    if (snap) rc = tb_snap_decoder_apply(dec, b, n, &err);
    js_open(&j, '{');
    if (rc) {
        js_key(&j, "error"); js_open(&j, '{'); js_key(&j, "code"); js_u(&j, (uint32_t)rc);
        js_key(&j, "name"); js_str(&j, tb_proto_code_name(rc)); js_close(&j, '}');
    } else {
        js_key(&j, "message"); dump_server(&j, &smsg);
        if (snap) { js_key(&j, "state"); dump_state(&j, dec); }
    }
    js_close(&j, '}');
    js_raw(&j, "\n");
    return j.s;
}

static char *client_json(const uint8_t *b, size_t n)
{
    js j = {0};
    j.cap = 256; j.s = malloc(j.cap); j.s[0] = '\0';
    j.first[0] = 1;
    tb_proto_client_msg m;
    tb_proto_err err;
    int rc = tb_proto_decode_client(b, n, &m, &err);
    js_open(&j, '{');
    if (rc) {
        js_key(&j, "error"); js_open(&j, '{'); js_key(&j, "code"); js_u(&j, (uint32_t)rc);
        js_key(&j, "name"); js_str(&j, tb_proto_code_name(rc)); js_close(&j, '}');
    } else {
        js_key(&j, "message"); dump_client(&j, &m);
    }
    js_close(&j, '}');
    js_raw(&j, "\n");
    return j.s;
}

static void client_vector(const char *name, const tb_proto_client_msg *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    assert_int_equal(tb_proto_encode_client(&sb, m), TB_OK);
    char *json = client_json((const uint8_t *)sb.data, sb.size);
    assert_null(strstr(json, "\"error\""));
    vector(name, (const uint8_t *)sb.data, sb.size, json);
    free(json);
    msgpack_sbuffer_destroy(&sb);
}

static void raw_client_vector(const char *name, const uint8_t *b, size_t n, int expect)
{
    char *json = client_json(b, n);
    tb_proto_client_msg m;
    tb_proto_err err;
    assert_int_equal(tb_proto_decode_client(b, n, &m, &err), expect);
    vector(name, b, n, json);
    free(json);
}

static void server_vector(const char *name, msgpack_sbuffer *sb, tb_snap_decoder *dec)
{
    tb_snap_decoder *own = dec ? NULL : tb_snap_decoder_create(64);
    char *json = server_json((const uint8_t *)sb->data, sb->size, dec ? dec : own);
    vector(name, (const uint8_t *)sb->data, sb->size, json);
    free(json);
    tb_snap_decoder_destroy(own);
    msgpack_sbuffer_clear(sb);
}

static void raw_server_vector(const char *name, const uint8_t *b, size_t n, int expect)
{
    tb_snap_decoder *dec = tb_snap_decoder_create(64);
    char *json = server_json(b, n, dec);
    char want[64];
    snprintf(want, sizeof want, "{\"error\":{\"code\":%d,", expect);
    if (strncmp(json, want, strlen(want)) != 0) print_error("%s: %s", name, json);
    assert_true(strncmp(json, want, strlen(want)) == 0);
    vector(name, b, n, json);
    free(json);
    tb_snap_decoder_destroy(dec);
}

/* ---- the vectors ------------------------------------------------------------------------- */

static void client_messages(void)
{
    tb_proto_client_msg m;
    memset(&m, 0, sizeof m); m.type = TB_MSG_HELLO; m.u.hello.version = 1;
    strcpy(m.u.hello.room, "tower"); strcpy(m.u.hello.name, "Ada");
    client_vector("c_hello", &m);
    m.u.hello.has_kind = m.u.hello.has_scene = true;
    strcpy(m.u.hello.room, "my-room_2"); strcpy(m.u.hello.kind, "cloth"); strcpy(m.u.hello.scene, "cape");
    strcpy(m.u.hello.name, "Jürgen 한");
    client_vector("c_hello_create", &m);
    /* a watcher's hello (PROTOCOL.md "Watchers") */
    memset(&m, 0, sizeof m); m.type = TB_MSG_HELLO; m.u.hello.version = 1; m.u.hello.watch = true;
    strcpy(m.u.hello.room, "tower"); strcpy(m.u.hello.name, "Eve");
    client_vector("c_hello_watch", &m);
    /* a bandwidth cap (PROTOCOL.md "Bandwidth budgets"): watch nil for a player, then kbps */
    memset(&m, 0, sizeof m); m.type = TB_MSG_HELLO; m.u.hello.version = 1; m.u.hello.kbps = 256;
    strcpy(m.u.hello.room, "pile"); strcpy(m.u.hello.name, "Far");
    client_vector("c_hello_kbps", &m);
    m.u.hello.watch = true; m.u.hello.kbps = 64;
    client_vector("c_hello_watch_kbps", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_THROW; m.seq = 1;
    m.u.throw_.origin[0] = 0; m.u.throw_.origin[1] = 1.5; m.u.throw_.origin[2] = 6;
    m.u.throw_.velocity[0] = -0.25; m.u.throw_.velocity[1] = 2; m.u.throw_.velocity[2] = -12.125;
    strcpy(m.u.throw_.shape, "ball");
    client_vector("c_throw", &m);
    m.seq = 70000; strcpy(m.u.throw_.shape, "die"); m.u.throw_.velocity[2] = -3.3;
    client_vector("c_throw_die", &m);
    /* an aimed throw with the tick the player was looking at (PROTOCOL.md "Lag compensation") */
    m.seq = 9; strcpy(m.u.throw_.shape, "ball"); m.u.throw_.has_view_tick = true; m.u.throw_.view_tick = 123456;
    client_vector("c_throw_view_tick", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_POKE; m.seq = 2; m.u.poke.has_body = true; m.u.poke.body = 17;
    m.u.poke.point[0] = 0.1; m.u.poke.point[1] = 0.75; m.u.poke.point[2] = -0.2;
    m.u.poke.impulse[2] = -4;
    client_vector("c_poke", &m);
    m.u.poke.has_body = false; m.u.poke.body = 0;
    client_vector("c_poke_vertex", &m);
    /* lag compensation: the tick the player was looking at */
    m.u.poke.has_body = true; m.u.poke.body = 17; m.u.poke.has_view_tick = true; m.u.poke.view_tick = 70001;
    client_vector("c_poke_view_tick", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_GRAB_START; m.seq = 3; m.u.grab.pointer = 1;
    m.u.grab.point[0] = 0.3; m.u.grab.point[1] = 1.2; m.u.grab.point[2] = 0.05;
    client_vector("c_grab_start", &m);
    m.u.grab.has_body = true; m.u.grab.body = 4; m.seq = 4;
    client_vector("c_grab_start_body", &m);
    m.u.grab.has_view_tick = true; m.u.grab.view_tick = 4242;
    client_vector("c_grab_start_view_tick", &m);
    m.u.grab.has_view_tick = false; m.u.grab.view_tick = 0;
    m.type = TB_MSG_GRAB_MOVE; m.seq = 5; m.u.grab.point[0] = 0.45;
    client_vector("c_grab_move", &m);
    m.type = TB_MSG_GRAB_END; m.seq = 6;
    client_vector("c_grab_end", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_PARAM; m.seq = 7; strcpy(m.u.param.name, "friction"); m.u.param.value = 0.35;
    client_vector("c_param", &m);
    m.seq = 8; strcpy(m.u.param.name, "iterations"); m.u.param.value = 12;
    client_vector("c_param_int", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_ACTION; m.seq = 9; strcpy(m.u.action.action, "knock");
    client_vector("c_action_knock", &m);
    m.seq = 10; strcpy(m.u.action.action, "select"); m.u.action.has_scene = true; strcpy(m.u.action.scene, "dice");
    client_vector("c_action_select", &m);

    memset(&m, 0, sizeof m); m.type = TB_MSG_CONTACTS_VIEW; m.seq = 11; m.u.contacts.on = true;
    client_vector("c_contacts_view", &m);
    memset(&m, 0, sizeof m); m.type = TB_MSG_PING; m.u.ping.client_time = 123456.75;
    client_vector("c_ping", &m);
    /* a ping with its link report: newest applied tick, RTT, bytes received */
    m.u.ping.has_ack_tick = true; m.u.ping.ack_tick = 72060;
    m.u.ping.has_rtt = true; m.u.ping.rtt_ms = 84.5;
    m.u.ping.has_recv_bytes = true; m.u.ping.recv_bytes = 3000000000u;
    client_vector("c_ping_report", &m);
    m.u.ping.has_rtt = false; m.u.ping.rtt_ms = 0; m.u.ping.has_recv_bytes = false; m.u.ping.recv_bytes = 0;
    m.u.ping.client_time = 5000; m.u.ping.ack_tick = 120;
    client_vector("c_ping_report_tick_only", &m);
    memset(&m, 0, sizeof m); m.type = TB_MSG_RESYNC;
    client_vector("c_resync", &m);
    memset(&m, 0, sizeof m); m.type = TB_MSG_LOBBY_REQ;
    client_vector("c_lobby_req", &m);
}

static void hostile_client(void)
{
    static const uint8_t truncated[] = {0x95, 0x02, 0x01, 0x93, 0x00, 0xcb, 0x3f};
    raw_client_vector("x_truncated", truncated, sizeof truncated, TB_ERR_MALFORMED);
    static const uint8_t huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
    raw_client_vector("x_huge_array", huge, sizeof huge, TB_ERR_MALFORMED);
    static const uint8_t huge_map[] = {0xdf, 0x7f, 0xff, 0xff, 0xff};
    raw_client_vector("x_huge_map", huge_map, sizeof huge_map, TB_ERR_MALFORMED);
    static const uint8_t deep[] = {0x92, 0x02, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x00};
    raw_client_vector("x_deep", deep, sizeof deep, TB_ERR_MALFORMED);
    /* [2, 1, [0, 0, NaN], [0, 0, 0], "ball"] */
    static const uint8_t nan[] = {0x95, 0x02, 0x01, 0x93, 0x00, 0x00, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0,
                                  0x93, 0x00, 0x00, 0x00, 0xa4, 'b', 'a', 'l', 'l'};
    raw_client_vector("x_nan", nan, sizeof nan, TB_ERR_BAD_VALUE);
    /* [2, 1, [0, 0, 0], [0, 0, 1e300], "ball"] */
    static const uint8_t big[] = {0x95, 0x02, 0x01, 0x93, 0x00, 0x00, 0x00,
                                  0x93, 0x00, 0x00, 0xcb, 0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c, 0xa4, 'b', 'a', 'l', 'l'};
    raw_client_vector("x_huge_number", big, sizeof big, TB_ERR_BAD_VALUE);
    /* [2, 1, "here", [0, 0, 0], "ball"] */
    static const uint8_t wrong[] = {0x95, 0x02, 0x01, 0xa4, 'h', 'e', 'r', 'e', 0x93, 0x00, 0x00, 0x00, 0xa4, 'b', 'a', 'l', 'l'};
    raw_client_vector("x_wrong_type", wrong, sizeof wrong, TB_ERR_BAD_MESSAGE);
    static const uint8_t unknown[] = {0x92, 0x63, 0x01};
    raw_client_vector("x_unknown_type", unknown, sizeof unknown, TB_ERR_UNKNOWN_TYPE);
    static const uint8_t server_type[] = {0x92, 0x2a, 0x01};
    raw_client_vector("x_server_type", server_type, sizeof server_type, TB_ERR_UNKNOWN_TYPE);
    /* [1, 2, "tower", nil, nil, "Ada"] */
    static const uint8_t version[] = {0x96, 0x01, 0x02, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa3, 'A', 'd', 'a'};
    raw_client_vector("x_wrong_version", version, sizeof version, TB_ERR_VERSION);
    static const uint8_t trailing[] = {0x91, 0x0b, 0x00};
    raw_client_vector("x_trailing", trailing, sizeof trailing, TB_ERR_MALFORMED);
    static const uint8_t not_array[] = {0x81, 0xa1, 't', 0x01};
    raw_client_vector("x_not_array", not_array, sizeof not_array, TB_ERR_BAD_MESSAGE);
    static const uint8_t short_throw[] = {0x93, 0x02, 0x01, 0x93, 0x00, 0x00, 0x00};
    raw_client_vector("x_missing_fields", short_throw, sizeof short_throw, TB_ERR_BAD_MESSAGE);
    /* [1, 1, "../etc", nil, nil, "x"] */
    static const uint8_t room[] = {0x96, 0x01, 0x01, 0xa6, '.', '.', '/', 'e', 't', 'c', 0xc0, 0xc0, 0xa1, 'x'};
    raw_client_vector("x_bad_room_id", room, sizeof room, TB_ERR_BAD_VALUE);
    /* [1, 1, "tower", nil, nil, <invalid utf-8>] */
    static const uint8_t utf[] = {0x96, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa2, 0xc3, 0x28};
    raw_client_vector("x_bad_utf8", utf, sizeof utf, TB_ERR_MALFORMED);
    static const uint8_t ext[] = {0x92, 0x0a, 0xd4, 0x01, 0x00};
    raw_client_vector("x_ext_type", ext, sizeof ext, TB_ERR_MALFORMED);
    static const uint8_t empty[] = {0x90};
    raw_client_vector("x_empty_array", empty, sizeof empty, TB_ERR_BAD_MESSAGE);
    /* [9, 1, 1] contacts_view.on not a boolean */
    static const uint8_t notbool[] = {0x93, 0x09, 0x01, 0x01};
    raw_client_vector("x_not_bool", notbool, sizeof notbool, TB_ERR_BAD_MESSAGE);
    /* [10, -1.5]: a ping's client_time is 0 <= t <= 2^53-1 */
    static const uint8_t ping_negative[] = {0x92, 0x0a, 0xcb, 0xbf, 0xf8, 0, 0, 0, 0, 0, 0};
    raw_client_vector("x_ping_negative", ping_negative, sizeof ping_negative, TB_ERR_BAD_VALUE);
    /* [10, 1, 5, -3, nil]: a link report's rtt_ms is 0..60000 */
    static const uint8_t ping_rtt[] = {0x95, 0x0a, 0x01, 0x05, 0xfd, 0xc0};
    raw_client_vector("x_ping_report_negative_rtt", ping_rtt, sizeof ping_rtt, TB_ERR_BAD_VALUE);
    /* [10, 1, 2.5]: ack_tick must be an unsigned integer */
    static const uint8_t ping_tick[] = {0x93, 0x0a, 0x01, 0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0};
    raw_client_vector("x_ping_report_float_tick", ping_tick, sizeof ping_tick, TB_ERR_BAD_MESSAGE);
    /* [10, 1, 5, nil, "x"]: recv_bytes must be an unsigned integer */
    static const uint8_t ping_bytes[] = {0x95, 0x0a, 0x01, 0x05, 0xc0, 0xa1, 'x'};
    raw_client_vector("x_ping_report_str_bytes", ping_bytes, sizeof ping_bytes, TB_ERR_BAD_MESSAGE);
    /* [1, 1, "tower", nil, nil, "Eve", 1]: hello.watch must be a bool */
    static const uint8_t watch_int[] = {0x97, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa3, 'E', 'v', 'e', 0x01};
    raw_client_vector("x_hello_watch_not_bool", watch_int, sizeof watch_int, TB_ERR_BAD_MESSAGE);
    /* [3, 2, 17, [0, 1, 0], [0, 0, -4], 1.5]: poke.view_tick must be an unsigned integer */
    static const uint8_t view_float[] = {0x96, 0x03, 0x02, 0x11, 0x93, 0x00, 0x01, 0x00, 0x93, 0x00, 0x00, 0xfc,
                                         0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
    raw_client_vector("x_poke_view_tick_float", view_float, sizeof view_float, TB_ERR_BAD_MESSAGE);
    /* [1, 1, "tower", nil, nil, "Ada", nil]: a nil watch is a player's hello */
    static const uint8_t watch_nil[] = {0x97, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa3, 'A', 'd', 'a', 0xc0};
    raw_client_vector("x_hello_watch_nil", watch_nil, sizeof watch_nil, TB_OK);
    /* [1, 1, "tower", nil, nil, "Ada", nil, 8]: hello.kbps below 16 */
    static const uint8_t kbps_low[] = {0x98, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa3, 'A', 'd', 'a', 0xc0, 0x08};
    raw_client_vector("x_hello_kbps_too_low", kbps_low, sizeof kbps_low, TB_ERR_BAD_VALUE);
    /* [1, 1, "tower", nil, nil, "Ada", nil, 256.0]: hello.kbps must be an unsigned integer */
    static const uint8_t kbps_float[] = {0x98, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xc0, 0xc0, 0xa3, 'A', 'd', 'a', 0xc0,
                                         0xcb, 0x40, 0x70, 0, 0, 0, 0, 0, 0};
    raw_client_vector("x_hello_kbps_float", kbps_float, sizeof kbps_float, TB_ERR_BAD_MESSAGE);
    /* [6, 1.0, 1]: grab_end whose seq is the float 1.0, not an integer */
    static const uint8_t float_seq[] = {0x93, 0x06, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x01};
    raw_client_vector("x_float_for_uint", float_seq, sizeof float_seq, TB_ERR_BAD_MESSAGE);
    /* [4, 1, 2.0, [0, 0, 0], nil]: grab_start whose pointer is the float 2.0 */
    static const uint8_t float_pointer[] = {0x95, 0x04, 0x01, 0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x93, 0x00, 0x00, 0x00, 0xc0};
    raw_client_vector("x_float_pointer", float_pointer, sizeof float_pointer, TB_ERR_BAD_MESSAGE);
    /* extra trailing fields are ignored: [11, "later"] */
    static const uint8_t extra[] = {0x92, 0x0b, 0xa5, 'l', 'a', 't', 'e', 'r'};
    raw_client_vector("x_extra_fields_ignored", extra, sizeof extra, TB_OK);
    /* [8, 3, "reset"]: an optional field at the end left out is nil (PROTOCOL.md §2) */
    static const uint8_t action_short[] = {0x93, 0x08, 0x03, 0xa5, 'r', 'e', 's', 'e', 't'};
    raw_client_vector("x_optional_left_out_action", action_short, sizeof action_short, TB_OK);
    /* [4, 5, 1, [0, 0, 0]]: grab_start without its trailing body */
    static const uint8_t grab_short[] = {0x94, 0x04, 0x05, 0x01, 0x93, 0x00, 0x00, 0x00};
    raw_client_vector("x_optional_left_out_grab", grab_short, sizeof grab_short, TB_OK);
    /* [1, 1, "tower", "rigid"]: hello's kind/scene are optional but not at the end: present (nil) */
    static const uint8_t hello_short[] = {0x94, 0x01, 0x01, 0xa5, 't', 'o', 'w', 'e', 'r', 0xa5, 'r', 'i', 'g', 'i', 'd'};
    raw_client_vector("x_optional_inner_left_out", hello_short, sizeof hello_short, TB_ERR_BAD_MESSAGE);
    /* [6, -1, 1]: a negative integer where a uint goes is the wrong msgpack type */
    static const uint8_t negative_seq[] = {0x93, 0x06, 0xff, 0x01};
    raw_client_vector("x_negative_uint", negative_seq, sizeof negative_seq, TB_ERR_BAD_MESSAGE);
    /* [6, 4294967296, 1]: a uint above its maximum (a seq of 2^32) is a bad value; the
     * error cannot name that seq, so its seq is nil */
    static const uint8_t big_uint[] = {0x93, 0x06, 0xcf, 0, 0, 0, 0x01, 0, 0, 0, 0, 0x01};
    raw_client_vector("x_uint_over_max", big_uint, sizeof big_uint, TB_ERR_BAD_VALUE);
    /* [5, 1, 0, [[[0]], 0, 0]]: client messages nest at most 3 containers */
    static const uint8_t deep3[] = {0x94, 0x05, 0x01, 0x00, 0x93, 0x91, 0x91, 0x00, 0x00, 0x00};
    raw_client_vector("x_deep_client", deep3, sizeof deep3, TB_ERR_MALFORMED);
}

static void server_messages(void)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    tb_proto_contact c[2] = {{{0.5f, 0.0f, -0.25f}, {0, 1, 0}, 1.5f}, {{1.0f, 0.125f, 2.0f}, {0.6f, 0.8f, 0}, 0.03125f}};
    tb_proto_encode_contacts(&sb, 1234, c, 2);
    server_vector("s_contacts", &sb, NULL);
    uint32_t faces[3] = {6, 2, 5};
    tb_proto_encode_dice(&sb, 5000, faces, 3);
    server_vector("s_dice", &sb, NULL);
    tb_proto_encode_param_changed(&sb, "friction", 0.35, 3, "Ada");
    server_vector("s_param_changed", &sb, NULL);
    tb_proto_encode_peer_joined(&sb, 4, "Grace");
    server_vector("s_peer_joined", &sb, NULL);
    tb_proto_encode_peer_left(&sb, 4);
    server_vector("s_peer_left", &sb, NULL);
    tb_proto_encode_reset(&sb, "knock", 3, "Ada");
    server_vector("s_reset", &sb, NULL);
    tb_proto_encode_pong(&sb, 123456.75, 98765.5);
    server_vector("s_pong", &sb, NULL);
    tb_proto_encode_error(&sb, TB_ERR_BAD_VALUE, "param.value: friction 5 outside 0..1.2", 7);
    server_vector("s_error", &sb, NULL);
    tb_proto_encode_error(&sb, TB_ERR_VERSION, "protocol version 2 not supported; this server speaks 1 (tumble.v1)", -1);
    server_vector("s_error_version", &sb, NULL);
    tb_proto_room_info rooms[2] = {{"tower", "rigid", "tower", 3, 25, 0, 0}, {"r-42", "soft", "dough", 1, 0, 0, 0}};
    tb_proto_encode_lobby(&sb, rooms, 2);
    server_vector("s_lobby", &sb, NULL);
    rooms[0].watchers = 3; /* a room being watched: a seventh field */
    tb_proto_encode_lobby(&sb, rooms, 2);
    server_vector("s_lobby_watchers", &sb, NULL);
    tb_proto_encode_watchers(&sb, 3);
    server_vector("s_watchers", &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
}

static void hostile_server(void)
{
    /* [43, 13, "rate_limited", "slow down"]: error's seq, optional at the end, left out */
    static const uint8_t error_short[] = {0x94, 0x2b, 0x0d, 0xac, 'r', 'a', 't', 'e', '_', 'l', 'i', 'm', 'i', 't', 'e', 'd',
                                          0xa9, 's', 'l', 'o', 'w', ' ', 'd', 'o', 'w', 'n'};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_sbuffer_write(&sb, (const char *)error_short, sizeof error_short);
    server_vector("y_optional_left_out_error", &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
    static const uint8_t unknown[] = {0x91, 0x3f};
    raw_server_vector("y_unknown_type", unknown, sizeof unknown, TB_ERR_UNKNOWN_TYPE);
    /* [35, 1, bin(28) with a NaN] */
    uint8_t nanc[3 + 2 + 28] = {0x93, 0x23, 0x01, 0xc4, 28};
    nanc[5 + 3] = 0x7f; nanc[5 + 2] = 0xc0;   /* first float = NaN (LE 0x7fc00000) */
    raw_server_vector("y_contacts_nan", nanc, sizeof nanc, TB_ERR_BAD_VALUE);
    /* [36, 1, [6, 6], 3] sum does not match */
    static const uint8_t dice[] = {0x94, 0x24, 0x01, 0x92, 0x06, 0x06, 0x03};
    raw_server_vector("y_dice_bad_sum", dice, sizeof dice, TB_ERR_BAD_VALUE);
    /* [34, 0, 10, 2, 0, nil]: a delta with no baseline */
    static const uint8_t delta[] = {0x96, 0x22, 0x00, 0x0a, 0x02, 0x00, 0xc0};
    raw_server_vector("y_delta_without_baseline", delta, sizeof delta, TB_ERR_BAD_SNAPSHOT);
    static const uint8_t huge[] = {0x92, 0x21, 0xdd, 0x10, 0x00, 0x00, 0x00};
    raw_server_vector("y_huge_array", huge, sizeof huge, TB_ERR_MALFORMED);
    /* [39, 4.0]: peer_left whose id is the float 4.0, not an integer */
    static const uint8_t float_id[] = {0x92, 0x27, 0xcb, 0x40, 0x10, 0, 0, 0, 0, 0, 0};
    raw_server_vector("y_float_for_uint", float_id, sizeof float_id, TB_ERR_BAD_MESSAGE);
}

/* ---- snapshot sequences ------------------------------------------------------------------- */

static tb_proto_welcome wel;

static void set_bounds(tb_proto_static *st, double x0, double y0, double z0, double x1, double y1, double z1)
{
    st->bounds_min[0] = x0; st->bounds_min[1] = y0; st->bounds_min[2] = z0;
    st->bounds_max[0] = x1; st->bounds_max[1] = y1; st->bounds_max[2] = z1;
}

static void add_param(tb_proto_welcome *w, const char *name, double value, double min, double max, double def, double step)
{
    tb_proto_param *p = &w->params[w->param_count++];
    strcpy(p->name, name); p->value = value; p->min = min; p->max = max; p->def = def; p->step = step;
}

static void welcome_common(const char *room, const char *kind, const char *scene)
{
    memset(&wel, 0, sizeof wel);
    wel.version = 1; wel.client_id = 3; wel.tick_rate = 120; wel.snap_rate = 60;
    strcpy(wel.room, room); strcpy(wel.kind, kind); strcpy(wel.scene, scene); strcpy(wel.server, "tumble-a");
    wel.peer_count = 2;
    wel.peers[0].id = 1; strcpy(wel.peers[0].name, "Ada");
    wel.peers[1].id = 3; strcpy(wel.peers[1].name, "Grace");
}

/* One snapshot sequence: an encoder and a decoder for the welcome's frame,
 * and the buffer each message is written into before it is checked. */
typedef struct {
    tb_snap_encoder *enc;
    tb_snap_decoder *dec;
    msgpack_sbuffer sb;
} seq;

static void seq_begin(seq *q, uint32_t max_bodies)
{
    tb_proto_frame fr;
    tb_proto_frame_from_static(&fr, &wel.st);
    q->enc = tb_snap_encoder_create(&fr, max_bodies);
    q->dec = tb_snap_decoder_create(max_bodies);
    assert_non_null(q->enc);
    assert_non_null(q->dec);
    msgpack_sbuffer_init(&q->sb);
}

/* Encodes the state in as the welcome's keyframe: vector `name`. */
static void seq_welcome(seq *q, const tb_snap_input *in, const char *name)
{
    tb_proto_err err;
    assert_int_equal(tb_snap_encoder_step(q->enc, in, &err), TB_OK);
    tb_proto_encode_welcome(&q->sb, &wel, tb_snap_encoder_key(q->enc));
    server_vector(name, &q->sb, q->dec);
}

/* Steps the encoder to the state in and writes its delta: vector `name`. */
static void seq_delta(seq *q, const tb_snap_input *in, uint32_t last_seq, const char *name)
{
    tb_proto_err err;
    tb_snap_encoder_step(q->enc, in, &err);
    tb_snap_write_sbuf(&q->sb, tb_snap_encoder_delta(q->enc), last_seq);
    server_vector(name, &q->sb, q->dec);
}

static void seq_end(seq *q)
{
    msgpack_sbuffer_destroy(&q->sb);
    tb_snap_encoder_destroy(q->enc);
    tb_snap_decoder_destroy(q->dec);
}

static void rot_y(float q[4], float angle) { q[0] = 0; q[1] = sinf(angle / 2); q[2] = 0; q[3] = cosf(angle / 2); }

static void tower_sequence(void)
{
    welcome_common("tower", "rigid", "tower");
    set_bounds(&wel.st, -4, -0.5, -4, 4, 7.5, 4);
    wel.st.plane_count = 1;
    wel.st.planes[0].normal[1] = 1; wel.st.planes[0].offset = 0;
    wel.st.box_count = 1;
    tb_proto_box *rim = &wel.st.boxes[0];
    rim->center[0] = 0; rim->center[1] = 0.05; rim->center[2] = -3; rim->half[0] = 3; rim->half[1] = 0.05; rim->half[2] = 0.1;
    rim->rot[3] = 1; rim->color = 0x6b4423; rim->material = 1;
    add_param(&wel, "restitution", 0.2, 0, 0.9, 0.2, 0.05);
    add_param(&wel, "friction", 0.6, 0, 1.2, 0.6, 0.05);

    tb_proto_body b[8];
    memset(b, 0, sizeof b);
    uint32_t n = 6;
    for (uint32_t i = 0; i < n; i++) {
        b[i].id = (uint16_t)(i + 1);
        b[i].shape = (tb_proto_shape){TB_SHAPE_BOX, 1, 0xc19a6b, {0.75f, 0.075f, 0.25f}};
        b[i].pos[0] = (float)((int)(i % 3) - 1) * 0.5f; b[i].pos[1] = 0.075f + 0.15f * (float)(i / 3); b[i].pos[2] = 0;
        rot_y(b[i].rot, (i / 3) % 2 ? 1.5707964f : 0.0f);
    }
    seq q;
    seq_begin(&q, 16);
    tb_snap_input in = {.tick = 1000, .awake = 0, .bodies = b, .body_count = n};
    seq_welcome(&q, &in, "seq_tower_00_welcome");

    /* the ball is thrown in: spawn */
    b[n] = (tb_proto_body){.id = 100, .shape = {TB_SHAPE_SPHERE, 5, 0x2050ff, {0.3f, 0, 0}}, .pos = {0, 0.4f, 3}, .rot = {0, 0, 0, 1}};
    in.body_count = ++n; in.tick = 1002; in.awake = 1;
    seq_delta(&q, &in, 9, "seq_tower_01_spawn");

    /* the ball flies and hits; planks move */
    for (int t = 2; t <= 4; t++) {
        b[6].pos[2] -= 0.2f; b[6].pos[1] += 0.01f;
        if (t >= 3) for (int i = 0; i < 3; i++) { b[i].pos[2] -= 0.02f * (float)(t - 2); rot_y(b[i].rot, 0.03f * (float)(t - 2)); }
        in.tick = 1000 + 2 * (uint32_t)t; in.awake = t >= 3 ? 4 : 1;
        char name[64];
        snprintf(name, sizeof name, "seq_tower_%02d_move", t);
        seq_delta(&q, &in, 9, name);
    }
    /* a keyframe, as a late or slow client would get it */
    tb_snap_write_sbuf(&q.sb, tb_snap_encoder_key(q.enc), 9);
    server_vector("seq_tower_05_key", &q.sb, q.dec);
    /* everything at rest: the smallest message */
    in.tick = 1010; in.awake = 0;
    seq_delta(&q, &in, 10, "seq_tower_06_rest");
    /* the ball is removed (rebuild) and a plank turns over its largest component */
    n--; in.body_count = n; in.tick = 1012; in.awake = 1;
    b[5].rot[0] = 0.7071068f; b[5].rot[1] = 0; b[5].rot[2] = 0; b[5].rot[3] = 0.7071068f - 0.01f;
    seq_delta(&q, &in, 300, "seq_tower_07_remove");
    /* a die appears with the smallest id, and body 3 is replaced by a ball under the same id
     * (remove + spawn in one delta; spawns land between kept bodies) */
    memmove(&b[1], &b[0], n * sizeof b[0]);
    b[0] = (tb_proto_body){.id = 0, .shape = {TB_SHAPE_BOX, 2, 0xffffff, {0.25f, 0.25f, 0.25f}}, .pos = {-2, 3, 0.5f}, .rot = {0, 0, 0, 1}};
    n++;
    b[3].shape = (tb_proto_shape){TB_SHAPE_SPHERE, 5, 0xff0000, {0.22f, 0, 0}};
    b[4].pos[1] += 0.1f;
    in.body_count = n; in.tick = 1014; in.awake = 2;
    seq_delta(&q, &in, 301, "seq_tower_08_replace");
    seq_end(&q);

    /* the same room's welcome to a watcher while two watch: a trailing `watchers` */
    seq w;
    seq_begin(&w, 16);
    wel.watchers = 2;
    in.tick = 1100;
    seq_welcome(&w, &in, "s_welcome_watchers");
    wel.watchers = 0;
    seq_end(&w);
}

static void cloth_sequence(void)
{
    welcome_common("flag", "cloth", "flag");
    set_bounds(&wel.st, -3, -0.5, -3, 3, 5.5, 3);
    wel.st.plane_count = 1; wel.st.planes[0].normal[1] = 1;
    wel.st.capsule_count = 2;
    tb_proto_capsule *pole = &wel.st.capsules[0];
    pole->a[0] = -1.05; pole->b[0] = -1.05; pole->b[1] = 3.2; pole->radius = 0.04; pole->color = 0x888888;
    tb_proto_capsule *fig = &wel.st.capsules[1];
    fig->has_body = true; fig->body = 1; fig->a[1] = -0.5; fig->b[1] = 0.5; fig->radius = 0.25; fig->color = 0x303040;
    add_param(&wel, "wind", 4, 0, 20, 4, 0.5);
    add_param(&wel, "iterations", 8, 1, 32, 8, 1);
    enum { W = 5, H = 4, NV = W * H };
    static uint8_t tris[6 * 2 * (W - 1) * (H - 1)], pins[4];
    int t = 0;
    for (int y = 0; y < H - 1; y++)
        for (int x = 0; x < W - 1; x++) {
            int v0 = y * W + x, idx[6] = {v0, v0 + 1, v0 + W, v0 + 1, v0 + W + 1, v0 + W};
            for (int k = 0; k < 6; k++) { tris[2 * t] = (uint8_t)idx[k]; tris[2 * t + 1] = 0; t++; }
        }
    pins[0] = 0; pins[1] = 0; pins[2] = (uint8_t)(W * (H - 1)); pins[3] = 0;
    tb_proto_mesh *m = &wel.st.meshes[0];
    wel.st.mesh_count = 1;
    strcpy(m->kind, "cloth"); m->verts = NV; m->tri_count = (uint32_t)t / 3; m->tris = tris; m->pin_count = 2; m->pins = pins;
    m->color = 0xc0392b; m->grid_w = W; m->grid_h = H;

    float v[NV * 3];
    for (int i = 0; i < NV; i++) { v[3 * i] = -1.0f + 0.4f * (float)(i % W); v[3 * i + 1] = 3.0f - 0.3f * (float)(i / W); v[3 * i + 2] = 0; }
    tb_proto_body fig_body = {.id = 1, .shape = {TB_SHAPE_CAPSULE, 0, 0x303040, {0.25f, 0.5f, 0}}, .pos = {1.5f, 1.0f, 0}, .rot = {0, 0, 0, 1}};
    seq q;
    seq_begin(&q, 4);
    tb_snap_input in = {.tick = 50, .awake = 1, .bodies = &fig_body, .body_count = 1};
    in.verts[0] = v;
    seq_welcome(&q, &in, "seq_flag_00_welcome");
    for (int s = 1; s <= 3; s++) {
        for (int i = 0; i < NV; i++) {
            if (i % W == 0) continue;   /* pinned column */
            v[3 * i + 2] += 0.01f * (float)(i % W) * (float)s;
            v[3 * i + 1] -= 0.002f * (float)s;
        }
        fig_body.pos[0] -= 0.02f;
        in.tick = 50 + 2 * (uint32_t)s;
        char name[64];
        snprintf(name, sizeof name, "seq_flag_%02d_wind", s);
        seq_delta(&q, &in, (uint32_t)s, name);
    }
    seq_end(&q);
}

static void dough_sequence(void)
{
    welcome_common("dough", "soft", "dough");
    set_bounds(&wel.st, -2, -0.25, -2, 2, 3.75, 2);
    wel.st.plane_count = 1; wel.st.planes[0].normal[1] = 1;
    add_param(&wel, "stiffness", 0.5, 0, 1, 0.5, 0.01);
    add_param(&wel, "plasticity", 0.3, 0, 1, 0.3, 0.01);
    /* an icosahedron: 12 vertices, 20 triangles */
    static const int faces[20][3] = {{0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4}, {11, 10, 2},
                                     {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8}, {3, 8, 9}, {4, 9, 5},
                                     {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
    static uint8_t tris[20 * 6];
    for (int f = 0; f < 20; f++) for (int k = 0; k < 3; k++) { tris[6 * f + 2 * k] = (uint8_t)faces[f][k]; tris[6 * f + 2 * k + 1] = 0; }
    tb_proto_mesh *m = &wel.st.meshes[0];
    wel.st.mesh_count = 1;
    strcpy(m->kind, "soft"); m->verts = 12; m->tri_count = 20; m->tris = tris; m->color = 0xf3e5c0;
    const float p = 1.618034f;
    float v[36] = {-1, p, 0, 1, p, 0, -1, -p, 0, 1, -p, 0, 0, -1, p, 0, 1, p, 0, -1, -p, 0, 1, -p, p, 0, -1, p, 0, 1, -p, 0, -1, -p, 0, 1};
    for (int i = 0; i < 36; i++) v[i] = v[i] * 0.3f + (i % 3 == 1 ? 0.6f : 0.0f);
    seq q;
    seq_begin(&q, 4);
    tb_snap_input in = {.tick = 7, .awake = 0};
    in.verts[0] = v;
    seq_welcome(&q, &in, "seq_dough_00_welcome");
    /* two pulls: vertex 1 and vertex 8 dragged outward */
    for (int s = 1; s <= 2; s++) {
        v[3 * 1 + 0] += 0.05f; v[3 * 1 + 1] += 0.04f;
        v[3 * 8 + 0] += 0.03f * (float)s;
        for (int i = 0; i < 12; i++) v[3 * i + 1] -= 0.001f;
        in.tick = 7 + 2 * (uint32_t)s;
        char name[64];
        snprintf(name, sizeof name, "seq_dough_%02d_pull", s);
        seq_delta(&q, &in, 20 + (uint32_t)s, name);
    }
    /* a new scene (same room): new static description and a keyframe */
    strcpy(wel.scene, "dough");
    wel.params[0].value = 0.8;
    tb_proto_encode_scene(&q.sb, &wel, tb_snap_encoder_key(q.enc));
    server_vector("seq_dough_03_scene", &q.sb, q.dec);
    seq_end(&q);
}

/* js_*.mpk: written by proto/js/gen-vectors.mjs; the C decoder must agree with their JSON. */
static void js_written_vectors(void)
{
    DIR *d = opendir(vec_dir());
    assert_non_null(d);
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "js_", 3) != 0 || n < 5 || strcmp(e->d_name + n - 4, ".mpk") != 0) continue;
        char path[512], name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->d_name);
        snprintf(path, sizeof path, "%s/%s", vec_dir(), e->d_name);
        size_t len, jl;
        char *bytes = read_file(path, &len);
        snprintf(path, sizeof path, "%s/c_%s.json", vec_dir(), name + 3);
        char *want = read_file(path, &jl);
        assert_non_null(bytes);
        char *json = client_json((const uint8_t *)bytes, len);
        if (!want || strcmp(want, json) != 0) {
            print_error("%s: C decodes the JS-written bytes as %s but c_%s.json says %s\n", name, json, name + 3, want ? want : "(missing)");
            mismatches++;
        }
        snprintf(path, sizeof path, "%s/c_%s.mpk", vec_dir(), name + 3);
        size_t cl;
        char *cbytes = read_file(path, &cl);
        if (!cbytes || cl != len || memcmp(cbytes, bytes, len) != 0) {
            print_error("%s: the JS encoder's bytes differ from the C encoder's c_%s.mpk\n", name, name + 3);
            mismatches++;
        }
        free(json); free(bytes); free(want); free(cbytes);
        seen++;
    }
    closedir(d);
    print_message("%d JS-written client vectors decoded\n", seen);
    assert_true(seen >= 10);
}

static void committed_vectors_match_the_c_codec(void **s)
{
    (void)s;
    mismatches = 0;
    client_messages();
    hostile_client();
    server_messages();
    hostile_server();
    tower_sequence();
    cloth_sequence();
    dough_sequence();
    assert_int_equal(mismatches, 0);
}

static void js_written_client_messages_decode_the_same_in_c(void **s)
{
    (void)s;
    mismatches = 0;
    js_written_vectors();
    assert_int_equal(mismatches, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(committed_vectors_match_the_c_codec),
        cmocka_unit_test(js_written_client_messages_decode_the_same_in_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
