/* simd.h: the physics' one SIMD layer.
 *
 * Why it exists: the solvers do the same arithmetic on many independent
 * things at once (four contacts of one colour, eight cloth constraints that
 * share no point, the nine axis products of the box SAT), and every kernel
 * is written once, against the types below, with no scalar twin to keep in
 * step and no intrinsics of its own. Like Box2D v3's b2FloatW, a lane is a
 * float and every operation is the IEEE operation on each lane; unlike it,
 * the width is not a build switch but fixed by the data:
 *
 *   tb_f4  four lanes: the wide type. Four contacts of a solver group, the
 *          SAT's three axes (and a pad lane), four soft-body floats.
 *   tb_f8  two tb_f4 side by side in one vector: a body's [v | w] row of the
 *          contact solver, eight cloth constraints. One AVX register on the
 *          AVX path, two SSE registers on the baseline one.
 *   tb_i4, tb_i8  the masks that comparisons give (all ones where true).
 *
 * How the operations become instructions: each one is written as what it
 * does to a lane (a + b, a > b ? a : b, sqrtf), in GCC/Clang's vector
 * extension, and the compiler turns the lane loop into one instruction per
 * register (maxps, sqrtps, ...; the physics is built with -fno-math-errno so
 * that sqrtf is the plain IEEE square root it can vectorise). On a machine or
 * a build without SIMD (WebAssembly without simd128, -fno-tree-vectorize)
 * the very same lines run lane by lane: that is the portable path, and it
 * gives the same bits, because nothing here reassociates or fuses (no FMA:
 * ISO C mode keeps -ffp-contract=off in GCC; see TB_HOT_CLONES).
 *
 * One way of choosing the CPU path: TB_HOT_CLONES on a hot entry point
 * compiles it twice, for AVX and for the x86-64 baseline, and the loader
 * picks one (ifunc). Inside an AVX clone the tb_f8 operations become single
 * 256-bit instructions; in the baseline clone, pairs of SSE instructions.
 * Nothing else in the physics looks at the CPU.
 *
 * Rules for kernels: pass tb_f8 values only to these static inline helpers
 * (never across a real call: the calling convention for 32-byte vectors
 * depends on the ISA, which is what -Wpsabi warns about and why it is
 * silenced below); load and store through tb_*_load/store (unaligned,
 * may_alias); compare with the operators (a < b gives a tb_i4 mask). */
#ifndef TB_SIMD_H
#define TB_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The ABI note on 32-byte vector arguments concerns calls between separately
 * compiled functions; every tb_f8 helper is inlined. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float tb_f4 __attribute__((vector_size(16)));
typedef int32_t tb_i4 __attribute__((vector_size(16)));
typedef float tb_f8 __attribute__((vector_size(32)));
typedef int32_t tb_i8 __attribute__((vector_size(32)));

#define TB_SIMD_INLINE static inline __attribute__((always_inline))

/* TB_HOT_CLONES on a hot function compiles it twice, for AVX and for the
 * baseline, and picks one at load time (ifunc, x86-64 ELF). AVX here means
 * 256-bit registers for tb_f8 and three-operand encodings of the same IEEE
 * operations (no FMA, and ISO mode keeps -ffp-contract=off), so both clones
 * give bit-identical results and a world steps the same on machines with and
 * without AVX. GCC only: clang 14 leaves calls from other files to an
 * external cloned function unresolved, so a clang build uses the baseline
 * code throughout. -DTB_NO_CLONES builds the baseline only (tests compare). */
#if defined(__x86_64__) && defined(__ELF__) && !defined(TB_NO_CLONES) && !defined(__clang__)
#define TB_HOT_CLONES __attribute__((target_clones("avx", "default")))
#else
#define TB_HOT_CLONES
#endif

/* Lane permutations: lane k of the result is lane i_k of a (i < n) or of b
 * (i >= n), n the width; the halves of a tb_f8 and a tb_f8 from two halves. */
#define TB_SHUFFLE(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#define TB_F8_LO(v) TB_SHUFFLE((v), (v), 0, 1, 2, 3)
#define TB_F8_HI(v) TB_SHUFFLE((v), (v), 4, 5, 6, 7)
#define TB_F8_JOIN(lo, hi) TB_SHUFFLE((lo), (hi), 0, 1, 2, 3, 4, 5, 6, 7)

/* ---- four lanes ------------------------------------------------------------------ */

TB_SIMD_INLINE tb_f4 tb_f4_splat(float x) { return (tb_f4){x, x, x, x}; }
TB_SIMD_INLINE tb_f4 tb_f4_zero(void) { return (tb_f4){0.0f, 0.0f, 0.0f, 0.0f}; }

TB_SIMD_INLINE tb_f4 tb_f4_load(const float *p)
{
    tb_f4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

TB_SIMD_INLINE void tb_f4_store(float *p, tb_f4 v) { memcpy(p, &v, sizeof v); }

/* a < b ? a : b and a > b ? a : b per lane: b on ties of zeros and where
 * either is NaN (minps/maxps are defined exactly so). */
TB_SIMD_INLINE tb_f4 tb_f4_min(tb_f4 a, tb_f4 b)
{
    tb_f4 r;
    for (int k = 0; k < 4; k++) r[k] = a[k] < b[k] ? a[k] : b[k];
    return r;
}

TB_SIMD_INLINE tb_f4 tb_f4_max(tb_f4 a, tb_f4 b)
{
    tb_f4 r;
    for (int k = 0; k < 4; k++) r[k] = a[k] > b[k] ? a[k] : b[k];
    return r;
}

TB_SIMD_INLINE tb_f4 tb_f4_sqrt(tb_f4 v)
{
    tb_f4 r;
    for (int k = 0; k < 4; k++) r[k] = sqrtf(v[k]);
    return r;
}

TB_SIMD_INLINE tb_f4 tb_f4_abs(tb_f4 v) { return (tb_f4)((tb_i4)v & (tb_i4){0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF}); }

/* a where the mask is set, else b (bitwise: no rounding, NaNs pass). */
TB_SIMD_INLINE tb_f4 tb_f4_select(tb_i4 mask, tb_f4 a, tb_f4 b) { return (tb_f4)((mask & (tb_i4)a) | (~mask & (tb_i4)b)); }
/* v where the mask is set, else +0. */
TB_SIMD_INLINE tb_f4 tb_f4_keep(tb_f4 v, tb_i4 mask) { return (tb_f4)((tb_i4)v & mask); }
TB_SIMD_INLINE int tb_i4_any(tb_i4 mask) { return (mask[0] | mask[1] | mask[2] | mask[3]) != 0; }

/* ---- eight lanes ----------------------------------------------------------------- */

/* Written as a shuffle of lane 0: GCC builds {x, x, x, x, x, x, x, x} on
 * the AVX path (no vbroadcastss from a register before AVX2) with four
 * vinsertps and a vperm2f128, the shuffle with a vshufps and a vinsertf128. */
TB_SIMD_INLINE tb_f8 tb_f8_splat(float x)
{
    const tb_f8 v = {x};
    return TB_SHUFFLE(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}

TB_SIMD_INLINE tb_f8 tb_f8_load(const float *p)
{
    tb_f8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

TB_SIMD_INLINE void tb_f8_store(float *p, tb_f8 v) { memcpy(p, &v, sizeof v); }

/* The hi four lanes to memory: one vextractf128 to memory on the AVX path,
 * where TB_F8_HI and a store take two. */
TB_SIMD_INLINE void tb_f8_store_hi(float *p, tb_f8 v) { memcpy(p, (const char *)&v + sizeof(tb_f4), sizeof(tb_f4)); }

TB_SIMD_INLINE tb_f8 tb_f8_min(tb_f8 a, tb_f8 b)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = a[k] < b[k] ? a[k] : b[k];
    return r;
}

TB_SIMD_INLINE tb_f8 tb_f8_max(tb_f8 a, tb_f8 b)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = a[k] > b[k] ? a[k] : b[k];
    return r;
}

TB_SIMD_INLINE tb_f8 tb_f8_sqrt(tb_f8 v)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = sqrtf(v[k]);
    return r;
}

TB_SIMD_INLINE tb_f8 tb_f8_abs(tb_f8 v)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = fabsf(v[k]);
    return r;
}

/* Masks of tb_f8 comparisons, written as selects of float lanes: AVX (without
 * AVX2) has 256-bit float compares and ands but no 256-bit integer ones, so
 * a mask kept as float lanes stays in one register. */
/* v where a >= b, else +0 (and where either is NaN). */
TB_SIMD_INLINE tb_f8 tb_f8_keep_ge(tb_f8 v, tb_f8 a, tb_f8 b)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = a[k] >= b[k] ? v[k] : 0.0f;
    return r;
}

/* v where a < b, else +0. */
TB_SIMD_INLINE tb_f8 tb_f8_keep_lt(tb_f8 v, tb_f8 a, tb_f8 b)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = a[k] < b[k] ? v[k] : 0.0f;
    return r;
}

/* v where a <= b, else +0 (and where either is NaN). */
TB_SIMD_INLINE tb_f8 tb_f8_keep_le(tb_f8 v, tb_f8 a, tb_f8 b)
{
    tb_f8 r;
    for (int k = 0; k < 8; k++) r[k] = a[k] <= b[k] ? v[k] : 0.0f;
    return r;
}

/* Bit k set where lane k of a < b (tb_f8_bits_le: a <= b, tb_f8_bits_ge:
 * a >= b). The lanes' weights 2^k kept where true and summed across the
 * vector: small integers, so the float sums are exact, and every step is a
 * vector operation (a lane-by-lane bit loop is not). Several conditions at
 * once: the weights through a chain of tb_f8_keep_*, then tb_f8_weight_bits. */
TB_SIMD_INLINE tb_f8 tb_f8_lane_weights(void) { return (tb_f8){1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 32.0f, 64.0f, 128.0f}; }

TB_SIMD_INLINE unsigned tb_f8_weight_bits(tb_f8 kept)
{
    tb_f4 s = TB_F8_LO(kept) + TB_F8_HI(kept);
    s = s + TB_SHUFFLE(s, s, 2, 3, 0, 1);
    return (unsigned)(s[0] + s[1]);
}

TB_SIMD_INLINE unsigned tb_f8_bits_lt(tb_f8 a, tb_f8 b) { return tb_f8_weight_bits(tb_f8_keep_lt(tb_f8_lane_weights(), a, b)); }
TB_SIMD_INLINE unsigned tb_f8_bits_le(tb_f8 a, tb_f8 b) { return tb_f8_weight_bits(tb_f8_keep_le(tb_f8_lane_weights(), a, b)); }
TB_SIMD_INLINE unsigned tb_f8_bits_ge(tb_f8 a, tb_f8 b) { return tb_f8_weight_bits(tb_f8_keep_ge(tb_f8_lane_weights(), a, b)); }

#endif /* TB_SIMD_H */
