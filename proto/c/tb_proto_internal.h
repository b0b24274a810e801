/* tb_proto_internal.h: helpers shared by the codec's .c files (not public).
 *
 * Decoding always goes: tb_proto__parse() = structural prescan (bounds every
 * count by the bytes that remain, caps nesting) then msgpack_unpack_next()
 * into a zone whose size is therefore O(len). Field readers below check type,
 * range and finiteness and fill a tb_proto_err on failure. */
#ifndef TB_PROTO_INTERNAL_H
#define TB_PROTO_INTERNAL_H

#include <math.h>
#include <string.h>

#include "tb_proto.h"

int tb_proto__fail(tb_proto_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Structural check of one msgpack value filling exactly [buf, buf+len). */
int tb_proto__prescan(const uint8_t *buf, size_t len, int max_depth, tb_proto_err *err);
/* Prescan + unpack. On TB_OK *root is valid until msgpack_unpacked_destroy(up). */
int tb_proto__parse(const uint8_t *buf, size_t len, int max_depth, msgpack_unpacked *up,
                    const msgpack_object **root, tb_proto_err *err);
/* The same into *root, allocating from zone (the caller clears it afterwards). */
int tb_proto__parse_in(const uint8_t *buf, size_t len, int max_depth, msgpack_zone *zone, msgpack_object *root,
                       tb_proto_err *err);

/* Field readers. `what` names the field in the error message. */
int tb_proto__uint(const msgpack_object *o, uint64_t max, uint32_t *out, const char *what, tb_proto_err *err);
int tb_proto__num(const msgpack_object *o, double absmax, double *out, const char *what, tb_proto_err *err);
int tb_proto__vec(const msgpack_object *o, size_t n, double absmax, double *out, const char *what, tb_proto_err *err);
int tb_proto__bool(const msgpack_object *o, bool *out, const char *what, tb_proto_err *err);
enum { TB_STR_TEXT = 0, TB_STR_ID = 1, TB_STR_TOKEN = 2 };
int tb_proto__str(const msgpack_object *o, int charset, char *out, size_t max_len, const char *what, tb_proto_err *err);
int tb_proto__array(const msgpack_object *o, uint32_t min, uint32_t max, const char *what, tb_proto_err *err);
static inline bool tb_proto__is_nil(const msgpack_object *o) { return o->type == MSGPACK_OBJECT_NIL; }

/* Packing helpers. */
void tb_proto__pack_str(msgpack_packer *pk, const char *s);
/* JS-compatible number: integral (and safe) -> smallest int, else float64. */
void tb_proto__pack_jsnum(msgpack_packer *pk, double v);

/* Bit stream, MSB first within each byte (PROTOCOL.md "Bit packing"). */
typedef struct tb_bitr { const uint8_t *buf; size_t len, bit; int error; } tb_bitr;
uint32_t tb_bitr_get(tb_bitr *r, int n);
uint32_t tb_bitr_eg(tb_bitr *r, int k);
int tb_eg_bits(uint32_t v, int k);

/* The next 64 bits from r->bit, MSB first, zeros past the end: at least 57 of
 * them are the stream's (r->bit & 7 <= 7), which covers any read below (an
 * exp-Golomb code is at most 27 zeros and 28 bits). One load instead of a
 * loop per byte or per bit: the decoders read every snapshot this way. */
static inline uint64_t tb_bitr__peek(const tb_bitr *r)
{
    size_t at = r->bit >> 3;
    uint64_t w = 0;
    size_t rem = r->len - at;
    if (rem >= 8) {
        memcpy(&w, r->buf + at, 8);
        w = __builtin_bswap64(w);
    } else if (rem > 0 && r->len >= 8) {
        /* the last 8 bytes, shifted so buf[at] is on top and zeros come in
         * below (a delta's bin is some 35 bytes: many reads end up here) */
        memcpy(&w, r->buf + r->len - 8, 8);
        w = __builtin_bswap64(w) << (8 * (8 - rem));
    } else {
        for (size_t i = 0; at + i < r->len; i++) w |= (uint64_t)r->buf[at + i] << (56 - 8 * i);
    }
    return w << (r->bit & 7);
}
/* tb_bitr_get and tb_bitr_eg inlined, for the snapshot decoder's loops (GCC
 * called them: one call per field and residual read); the same values, bit
 * positions and errors (the exported ones are these, or call them). A read
 * outside 1..32 bits goes to tb_bitr_get, which defines it. */
static inline __attribute__((always_inline)) uint32_t tb_bitr__get(tb_bitr *r, int n)
{
    if (n <= 0 || n > 32) return tb_bitr_get(r, n);
    if (r->error) return 0;
    if ((r->len * 8 - r->bit) < (size_t)n) { r->error = 1; return 0; }
    uint32_t v = (uint32_t)(tb_bitr__peek(r) >> (64 - n));
    r->bit += (size_t)n;
    return v;
}
/* Codes longer than 28 bits (m >= 2^28) are refused: no legal value needs them.
 * The zeros are counted in the peeked window; a run that reaches past the end
 * of the stream (the window's padding) is refused like one that is too long.
 * The code's n = zeros + k + 1 <= 28 bits after the zeros are read from the
 * same window (zeros <= 27, so they are among its first 57 bits): the value a
 * second peek at r->bit + zeros would give. */
static inline __attribute__((always_inline)) uint32_t tb_bitr__eg(tb_bitr *r, int k)
{
    if (r->error) return 0;
    uint64_t w = tb_bitr__peek(r);
    int zeros = w ? __builtin_clzll(w) : 64;
    size_t left = r->len * 8 - r->bit;
    if ((size_t)zeros >= left || zeros + k + 1 > 28) { r->error = 1; return 0; }
    r->bit += (size_t)zeros;
    int n = zeros + k + 1;
    uint32_t m;
    if (n <= 0) m = tb_bitr_get(r, n);
    else if (left - (size_t)zeros < (size_t)n) { r->error = 1; m = 0; }
    else { m = (uint32_t)((w << zeros) >> (64 - n)); r->bit += (size_t)n; }
    return m - (1u << k);
}

/* The bit writer: bits gather in a 64-bit window and leave 32 at a time,
 * instead of a loop per byte. The bytes and the overflow (set when the stream
 * outgrows cap bytes) are those of the writer as first written, a byte at a
 * time, which tests/unit/test_proto_snap.c keeps as its reference.
 * tb_bitf_end() pads the last byte with zeros and returns the bit count. */
typedef struct tb_bitf { uint8_t *buf; size_t cap, at; uint64_t acc; int nacc; int overflow; } tb_bitf;
static inline tb_bitf tb_bitf_init(uint8_t *buf, size_t cap) { return (tb_bitf){buf, cap, 0, 0, 0, 0}; }
/* The top `bytes` bytes of the 32-bit word `out`, at w->at (bytes past cap: overflow). */
static inline void tb_bitf__store(tb_bitf *w, uint32_t out, int bytes)
{
    if (w->at + 4 <= w->cap && bytes == 4) {
        w->buf[w->at] = (uint8_t)(out >> 24); w->buf[w->at + 1] = (uint8_t)(out >> 16);
        w->buf[w->at + 2] = (uint8_t)(out >> 8); w->buf[w->at + 3] = (uint8_t)out;
    } else {
        for (int i = 0; i < bytes; i++) {
            if (w->at + (size_t)i >= w->cap) { w->overflow = 1; break; }
            w->buf[w->at + (size_t)i] = (uint8_t)(out >> (24 - 8 * i));
        }
    }
    w->at += (size_t)bytes;
}
static inline void tb_bitf_put(tb_bitf *w, uint32_t v, int n)   /* 0 <= n <= 32 */
{
    w->acc = (w->acc << n) | ((uint64_t)v & ((1ull << n) - 1u));
    w->nacc += n;   /* at most 31 + 32: the window holds them */
    if (w->nacc >= 32) {
        w->nacc -= 32;
        tb_bitf__store(w, (uint32_t)(w->acc >> w->nacc), 4);
    }
}
/* Exp-Golomb order k (0..31): m = v + 2^k of n bits after n - 1 - k zeros.
 * Always inlined: GCC otherwise calls it, and a delta writes one per residual. */
static inline __attribute__((always_inline)) void tb_bitf_eg(tb_bitf *w, uint32_t v, int k)
{
    uint64_t m = (uint64_t)v + (1ull << k);
    int n = 64 - __builtin_clzll(m), len = 2 * n - 1 - k;
    if (len <= 32) { tb_bitf_put(w, (uint32_t)m, len); return; }   /* the zeros come with m */
    tb_bitf_put(w, 0, n - 1 - k);
    if (n > 32) { tb_bitf_put(w, (uint32_t)(m >> 32), n - 32); tb_bitf_put(w, (uint32_t)m, 32); }
    else tb_bitf_put(w, (uint32_t)m, n);
}
static inline size_t tb_bitf_end(tb_bitf *w)
{
    size_t bits = 8 * w->at + (size_t)w->nacc;
    if (w->nacc > 0) {
        int bytes = (w->nacc + 7) / 8;
        tb_bitf__store(w, (uint32_t)(w->acc << (32 - w->nacc)), bytes);
        w->nacc = 0;
    }
    return bits;
}
static inline uint32_t tb_zz(int32_t v) { return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31); }
static inline int32_t tb_unzz(uint32_t u) { return (int32_t)(u >> 1) ^ -(int32_t)(u & 1); }
int tb_bits_for(uint32_t max_value);   /* bits to hold 0..max_value, at least 1 */

/* Shared static-description codec (welcome and scene). */
void tb_proto__pack_static(msgpack_packer *pk, const tb_proto_static *st);
int tb_proto__read_static(const msgpack_object *o, tb_proto_static *st, tb_proto_err *err);
int tb_proto__read_welcome_like(const msgpack_object *root, int type, tb_proto_welcome *w,
                                const msgpack_object **state, tb_proto_err *err);

/* Snapshot internals shared by encoder and decoder. */
typedef struct tb_snap_grid { int32_t pmax[3], vmax[3]; int pbits[3], vbits[3]; } tb_snap_grid;
int tb_snap__grid(const tb_proto_frame *f, tb_snap_grid *g, tb_proto_err *err);
typedef struct tb_snap_body {
    uint16_t id;
    tb_proto_shape shape;
    int32_t pos_cell[3], pos_vel[3];   /* position in grid cells, and its last change (cells per snapshot) */
    int32_t rot_largest;               /* index of the dropped (largest) quaternion component */
    int32_t rot_cell[3], rot_vel[3];   /* the three smaller components quantized, and their last change */
} tb_snap_body;
/* Same shape (exact): inline, it runs per body per snapshot. */
static inline bool tb_snap__shape_eq(const tb_proto_shape *a, const tb_proto_shape *b)
{
    return a->kind == b->kind && a->material == b->material && a->color == b->color &&
           a->size[0] == b->size[0] && a->size[1] == b->size[1] && a->size[2] == b->size[2];
}
/* The quantizers (tb_snap_quant.c derives them; tb_proto_quant_pos() and
 * the others are these under their exported names), inline because the
 * encoder runs them for every moving body and every orientation cell it
 * tries. Written without floor(): each form below is exactly the floor()
 * form's result for every input, and the decoder's dequantizer is the same
 * function, so both codecs still agree to the bit. */
#define TB_SNAP_SQRT1_2 0.7071067811865476

/* q = floor(x) for x = (p - min) scale + 0.5, clamped to [0, grid_max]:
 * floor(x) > 0 exactly when x >= 1, and floor(x) >= grid_max (an integer)
 * exactly when x >= grid_max; in between the conversion truncates a positive
 * x, which is its floor. NaN fails the first test, as it failed q > 0. */
static inline int32_t tb_snap__quant_pos(double p, double min, int32_t grid_max, int scale)
{
    double x = (p - min) * (double)scale + 0.5;
    if (!(x >= 1.0)) return 0;
    if (x >= (double)grid_max) return grid_max;
    return (int32_t)x;
}

/* floor(y) but for the sign of a zero (+0 for -0: the callers add it to an
 * integer): for |y| < 2^31 the conversion truncates toward zero, one less
 * below zero unless y is whole; floor() itself beyond. */
static inline double tb_snap__floor(double y)
{
    if (!(fabs(y) < 2147483648.0)) return floor(y);
    double t = (double)(int32_t)y;
    return t > y ? t - 1.0 : t;
}

/* n2: the sum of the squares of qf (as doubles, in index order), which the
 * encoder has at hand; tb_snap__quant_rot() computes it. */
static inline void tb_snap__quant_rot_n2(const float qf[4], double n2, int *index, int32_t c[3])
{
    double q[4] = {qf[0], qf[1], qf[2], qf[3]}, n = sqrt(n2);
    if (!isfinite(n) || n < 1e-12) { q[0] = q[1] = q[2] = 0.0; q[3] = 1.0; n = 1.0; }
    int big = 0;   /* the largest |component|, the first on a tie */
    double most = fabs(q[0]);
    for (int i = 1; i < 4; i++)
        if (fabs(q[i]) > most) { big = i; most = fabs(q[i]); }
    double sign = q[big] < 0.0 ? -1.0 : 1.0;
    for (int i = 0, j = 0; i < 4; i++) {
        if (i == big) continue;
        double v = q[i] * sign / n;
        double cq = (double)TB_PROTO_ROT_HALF + tb_snap__floor(v * ((double)TB_PROTO_ROT_HALF / TB_SNAP_SQRT1_2) + 0.5);
        if (!(cq > 0.0)) cq = 0.0;
        if (cq > (double)TB_PROTO_ROT_MAXQ) cq = (double)TB_PROTO_ROT_MAXQ;
        c[j++] = (int32_t)cq;
    }
    *index = big;
}

static inline void tb_snap__quant_rot(const float qf[4], int *index, int32_t c[3])
{
    double n2 = 0.0;
    for (int i = 0; i < 4; i++) n2 += (double)qf[i] * qf[i];
    tb_snap__quant_rot_n2(qf, n2, index, c);
}

/* Written out, no loops (the encoder calls it for every cell it tries);
 * the sums run in index order, each component divided by the norm. */
static inline void tb_snap__dequant_rot(int index, const int32_t c[3], double q[4])
{
    const double f = TB_SNAP_SQRT1_2 / (double)TB_PROTO_ROT_HALF;
    const double v0 = (double)(c[0] - TB_PROTO_ROT_HALF) * f, v1 = (double)(c[1] - TB_PROTO_ROT_HALF) * f,
                 v2 = (double)(c[2] - TB_PROTO_ROT_HALF) * f;
    const double s = v0 * v0 + v1 * v1 + v2 * v2; /* 0 + v0 v0 is v0 v0 */
    const double w = s < 1.0 ? sqrt(1.0 - s) : 0.0;
    /* w at `index`, v0 v1 v2 in the other slots in order */
    const double q0 = index == 0 ? w : v0;
    const double q1 = index == 0 ? v0 : index == 1 ? w : v1;
    const double q2 = index <= 1 ? v1 : index == 2 ? w : v2;
    const double q3 = index <= 2 ? v2 : w;
    const double n = sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3);
    q[0] = q0 / n;
    q[1] = q1 / n;
    q[2] = q2 / n;
    q[3] = q3 / n;
}

/* Tests: turn the encoder's at-rest shortcut off (on by default) to compare. */
void tb_snap__encoder_idle_path(tb_snap_encoder *e, bool on);
/* Tests: turn the encoder's exact shortcuts (the orientation test's guard band,
 * the sure-within position test) off (on by default) to compare. */
void tb_snap__encoder_shortcuts(tb_snap_encoder *e, bool on);
/* Tests: turn the decoder's in-place delta (on by default) off to compare. */
void tb_snap__decoder_in_place(tb_snap_decoder *d, bool on);
void tb_snap__pack_shape(msgpack_packer *pk, uint16_t id, const tb_proto_shape *s);
#define TB_SNAP_DEPTH 8

#endif
