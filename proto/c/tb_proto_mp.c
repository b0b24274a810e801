/* tb_proto_mp.c: msgpack plumbing for every decoder and encoder of the codec.
 *
 * Why a prescan: msgpack-c's unpacker allocates an array's or map's element
 * storage as soon as it reads the header, before any element arrives, so a
 * 5-byte frame [0xdd ff ff ff ff] asks for 2^32 * 24 bytes (checked: msgpack-c
 * 4.0.0 returns NOMEM for that one, and happily mallocs 24 MB for a header of
 * 2^20). tb_proto__prescan walks the bytes first without allocating: every
 * container count must be coverable by the bytes left (one byte per element
 * at least), nesting is capped, ext types and 0xc1 are refused, and the value
 * must end exactly at the end of the frame. After it, the unpack zone is
 * bounded by about 24 bytes per input byte. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tb_proto_internal.h"

int tb_proto__fail(tb_proto_err *err, int code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

static const char *const code_names[TB_ERR__COUNT] = {
    "ok", "malformed", "bad_message", "unknown_type", "bad_version", "not_joined",
    "already_joined", "bad_room", "room_full", "too_many_rooms", "bad_value",
    "unknown_param", "unknown_body", "rate_limited", "too_big", "projectile_cap",
    "not_allowed", "bad_snapshot", "shutting_down", "internal", "text_frame",
    "watch_only",
};

const char *tb_proto_code_name(int code)
{
    return code >= 0 && code < TB_ERR__COUNT ? code_names[code] : "unknown";
}

const char *tb_proto_type_name(int type)
{
    static const char *const client[] = {NULL, "hello", "throw", "poke", "grab_start", "grab_move",
        "grab_end", "param", "action", "contacts_view", "ping", "resync", "lobby_req"};
    static const char *const server[] = {"welcome", "snap_key", "snap_delta", "contacts", "dice",
        "param_changed", "peer_joined", "peer_left", "reset", "scene", "pong", "error", "lobby", "watchers"};
    if (type >= 1 && type <= 12) return client[type];
    if (type >= 32 && type <= TB_MSG_WATCHERS) return server[type - 32];
    return NULL;
}

int tb_proto_close_code(int code)
{
    switch (code) {
    case TB_ERR_VERSION: return 4004;
    case TB_ERR_TOO_BIG: return 1009;
    case TB_ERR_SHUTTING_DOWN: return 1001;
    default: return 0;
    }
}

bool tb_proto_room_id_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
        if (n >= TB_PROTO_NAME_MAX) return false;
    }
    return n >= 1;
}

/* ---- prescan ----------------------------------------------------------------- */

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF; with
 * `no_controls`, no C0/C1 controls either (text shown to people). */
static bool utf8_scan(const uint8_t *s, size_t n, bool no_controls)
{
    size_t i = 0;
    while (i < n) {
        uint32_t c = s[i], need, min;
        if (c < 0x80) {
            if (no_controls && (c < 0x20 || c == 0x7f)) return false;
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) { need = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { need = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { need = 3; min = 0x10000; c &= 0x07; }
        else return false;
        if (n - i <= need) return false;
        for (uint32_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            c = (c << 6) | (s[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
        if (no_controls && c >= 0x80 && c < 0xa0) return false;
        i += need + 1;
    }
    return true;
}

static bool utf8_ok(const uint8_t *s, size_t n) { return utf8_scan(s, n, false); }

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

int tb_proto__prescan(const uint8_t *buf, size_t len, int max_depth, tb_proto_err *err)
{
    /* remaining[d]: values still to read in the container open at depth d. */
    uint64_t remaining[TB_PROTO_MAX_DEPTH + 2];
    int depth = 0;
    size_t pos = 0;
    if (max_depth > TB_PROTO_MAX_DEPTH) max_depth = TB_PROTO_MAX_DEPTH;
    remaining[0] = 1;
    if (len == 0) return tb_proto__fail(err, TB_ERR_MALFORMED, "empty frame");
    while (depth >= 0) {
        if (remaining[depth] == 0) { depth--; continue; }
        remaining[depth]--;
        if (pos >= len) return tb_proto__fail(err, TB_ERR_MALFORMED, "truncated msgpack at byte %zu", pos);
        uint8_t b = buf[pos++];
        uint64_t skip = 0, count = 0; /* payload bytes to skip; child values to open */
        int hdr = 0, container = 0, is_str = (b >= 0xa0 && b <= 0xbf) || b == 0xd9 || b == 0xda || b == 0xdb;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool */
        } else if (b >= 0x80 && b <= 0x8f) { count = 2u * (b & 0x0f); container = 1;
        } else if (b >= 0x90 && b <= 0x9f) { count = b & 0x0f; container = 1;
        } else if (b >= 0xa0 && b <= 0xbf) { skip = b & 0x1f;
        } else {
            switch (b) {
            case 0xc4: case 0xd9: hdr = 1; break;                 /* bin8 str8 */
            case 0xc5: case 0xda: hdr = 2; break;                 /* bin16 str16 */
            case 0xc6: case 0xdb: hdr = 4; break;                 /* bin32 str32 */
            case 0xca: skip = 4; break; case 0xcb: skip = 8; break;
            case 0xcc: case 0xd0: skip = 1; break;
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xdc: case 0xde: hdr = 2; container = 1; break;  /* array16 map16 */
            case 0xdd: case 0xdf: hdr = 4; container = 1; break;  /* array32 map32 */
            default:
                return tb_proto__fail(err, TB_ERR_MALFORMED, "msgpack type byte 0x%02x not allowed at byte %zu", b, pos - 1);
            }
            if (hdr) {
                if (len - pos < (size_t)hdr) return tb_proto__fail(err, TB_ERR_MALFORMED, "truncated msgpack header at byte %zu", pos);
                uint64_t n = be(buf + pos, hdr);
                pos += (size_t)hdr;
                if (container) count = (b == 0xde || b == 0xdf) ? 2 * n : n;
                else skip = n;
            }
        }
        if (skip) {
            if (len - pos < skip) return tb_proto__fail(err, TB_ERR_MALFORMED, "truncated msgpack payload at byte %zu", pos);
            if (is_str && !utf8_ok(buf + pos, (size_t)skip))
                return tb_proto__fail(err, TB_ERR_MALFORMED, "string at byte %zu is not valid UTF-8", pos);
            pos += (size_t)skip;
        }
        if (container) {
            if (count > len - pos)
                return tb_proto__fail(err, TB_ERR_MALFORMED, "container at byte %zu promises %llu values, %zu bytes remain",
                                      pos, (unsigned long long)count, len - pos);
            if (count) {
                if (depth + 1 > max_depth) return tb_proto__fail(err, TB_ERR_MALFORMED, "msgpack nested deeper than %d", max_depth);
                remaining[++depth] = count;
            } else if (depth + 1 > max_depth) {
                return tb_proto__fail(err, TB_ERR_MALFORMED, "msgpack nested deeper than %d", max_depth);
            }
        }
    }
    if (pos != len) return tb_proto__fail(err, TB_ERR_MALFORMED, "%zu trailing bytes after the message", len - pos);
    return TB_OK;
}

/* The zone is the caller's and is cleared by it from one message to the next
 * (the snapshot decoder keeps one: msgpack_unpack_next allocates and frees a
 * zone per message). msgpack_unpack reports a value followed by more bytes as
 * EXTRA_BYTES where msgpack_unpack_next says SUCCESS, so that is what the
 * message names (the prescan refuses both). */
int tb_proto__parse_in(const uint8_t *buf, size_t len, int max_depth, msgpack_zone *zone, msgpack_object *root,
                       tb_proto_err *err)
{
    int rc = tb_proto__prescan(buf, len, max_depth, err);
    if (rc) return rc;
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack((const char *)buf, len, &off, zone, root);
    if (r == MSGPACK_UNPACK_EXTRA_BYTES) r = MSGPACK_UNPACK_SUCCESS;
    if (r != MSGPACK_UNPACK_SUCCESS || off != len)
        return tb_proto__fail(err, TB_ERR_MALFORMED, "msgpack unpack failed (%d)", (int)r);
    return TB_OK;
}

/* The same into up's own zone, made here as msgpack_unpack_next makes it and
 * freed by msgpack_unpacked_destroy. */
int tb_proto__parse(const uint8_t *buf, size_t len, int max_depth, msgpack_unpacked *up,
                    const msgpack_object **root, tb_proto_err *err)
{
    if (!up->zone && !(up->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE)))
        return tb_proto__fail(err, TB_ERR_MALFORMED, "msgpack unpack failed (%d)", (int)MSGPACK_UNPACK_NOMEM_ERROR);
    int rc = tb_proto__parse_in(buf, len, max_depth, up->zone, &up->data, err);
    if (rc) return rc;
    *root = &up->data;
    return TB_OK;
}

/* ---- field readers ----------------------------------------------------------- */

int tb_proto__uint(const msgpack_object *o, uint64_t max, uint32_t *out, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected unsigned integer", what);
    if (o->via.u64 > max || o->via.u64 > UINT32_MAX)
        return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: %llu above %llu", what,
                              (unsigned long long)o->via.u64, (unsigned long long)max);
    *out = (uint32_t)o->via.u64;
    return TB_OK;
}

int tb_proto__num(const msgpack_object *o, double absmax, double *out, const char *what, tb_proto_err *err)
{
    double v;
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: v = (double)o->via.u64; break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: v = (double)o->via.i64; break;
    case MSGPACK_OBJECT_FLOAT32: case MSGPACK_OBJECT_FLOAT64: v = o->via.f64; break;
    default: return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected a number", what);
    }
    if (!isfinite(v)) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: not finite", what);
    if (fabs(v) > absmax) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: |%g| above %g", what, v, absmax);
    *out = v;
    return TB_OK;
}

int tb_proto__vec(const msgpack_object *o, size_t n, double absmax, double *out, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != n)
        return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected an array of %zu numbers", what, n);
    for (size_t i = 0; i < n; i++) {
        int rc = tb_proto__num(&o->via.array.ptr[i], absmax, &out[i], what, err);
        if (rc) return rc;
    }
    return TB_OK;
}

int tb_proto__bool(const msgpack_object *o, bool *out, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_BOOLEAN) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected a boolean", what);
    *out = o->via.boolean;
    return TB_OK;
}

static bool text_ok(const uint8_t *s, size_t n) { return utf8_scan(s, n, true); }

int tb_proto__str(const msgpack_object *o, int charset, char *out, size_t max_len, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_STR) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected a string", what);
    size_t n = o->via.str.size;
    const uint8_t *s = (const uint8_t *)o->via.str.ptr;
    if (n > max_len) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: longer than %zu bytes", what, max_len);
    bool ok = true;
    if (charset == TB_STR_TEXT) ok = text_ok(s, n);
    for (size_t i = 0; ok && charset != TB_STR_TEXT && i < n; i++) {
        uint8_t c = s[i];
        bool lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        ok = charset == TB_STR_TOKEN ? lower : (lower || (c >= 'A' && c <= 'Z') || c == '-');
    }
    if (charset != TB_STR_TEXT && n == 0) ok = false;
    if (!ok) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%s: characters not allowed", what);
    if (n) memcpy(out, s, n);   /* msgpack-c gives NULL for an empty str (found by fuzz_server_msg) */
    out[n] = '\0';
    return TB_OK;
}

int tb_proto__array(const msgpack_object *o, uint32_t min, uint32_t max, const char *what, tb_proto_err *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: expected an array", what);
    if (o->via.array.size < min) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: %u elements, need %u", what, o->via.array.size, min);
    if (o->via.array.size > max) return tb_proto__fail(err, TB_ERR_BAD_MESSAGE, "%s: %u elements, limit %u", what, o->via.array.size, max);
    return TB_OK;
}

/* ---- packing ---------------------------------------------------------------- */

void tb_proto__pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    msgpack_pack_str(pk, n);
    if (n) msgpack_pack_str_body(pk, s, n);
}

void tb_proto__pack_jsnum(msgpack_packer *pk, double v)
{
    /* @msgpack/msgpack: Number.isSafeInteger(v) -> int (smallest form), else float64. */
    if (isfinite(v) && v == floor(v) && fabs(v) <= 9007199254740991.0) msgpack_pack_int64(pk, (int64_t)v);
    else msgpack_pack_double(pk, v);
}

/* ---- bit stream ------------------------------------------------------------- */

int tb_bits_for(uint32_t max_value)
{
    int n = 1;
    while (n < 32 && (max_value >> n)) n++;
    return n;
}

int tb_eg_bits(uint32_t v, int k)
{
    uint64_t m = (uint64_t)v + (1ull << k);
    return 2 * (64 - __builtin_clzll(m)) - 1 - k;
}

/* The readers are tb_bitr__get / tb_bitr__eg (tb_proto_internal.h, inlined in
 * the snapshot decoder); a read outside 1..32 bits is defined here. */
uint32_t tb_bitr_get(tb_bitr *r, int n)
{
    if (n >= 1 && n <= 32) return tb_bitr__get(r, n);
    if (r->error) return 0;
    if ((r->len * 8 - r->bit) < (size_t)n) { r->error = 1; return 0; }
    if (n <= 0) return 0;
    /* n > 32: not a read any field makes: the low 32 bits, as a bit-by-bit read would keep */
    uint32_t hi = tb_bitr_get(r, n - 32);
    (void)hi;
    return tb_bitr_get(r, 32);
}

uint32_t tb_bitr_eg(tb_bitr *r, int k) { return tb_bitr__eg(r, k); }
