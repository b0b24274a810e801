/* tb_libm.h: the physics' own sin, cos, exp, log and pow.
 *
 * Why it exists: the C library's transcendental functions are not the same
 * bits everywhere. glibc, musl (the WebAssembly build's wasi-libc) and
 * others agree to within an ulp or so, not exactly, and one ulp in a wind
 * direction or a walking figure's pose grows into a different cloth within a
 * second. A world must step bit for bit alike on the server (x86-64, glibc)
 * and in a browser (WebAssembly), so every transcendental function on a step
 * path comes from here: range reduction and polynomials in plain IEEE
 * single-precision adds and multiplies (the physics is built with
 * -ffp-contract=off, so nothing fuses), which every platform rounds alike.
 * sqrtf, fabsf, floor and the like need no copy: IEEE defines their results
 * exactly. Box2D v3 has b2ComputeCosSin for the same reason.
 *
 * Accuracy: about 1 ulp for |x| up to 8192 rad (sin, cos), a few ulp for exp,
 * log and pow over the ranges the physics uses. Beyond 8192 rad the angle is
 * first reduced modulo 2 pi in double (still exact arithmetic, still the
 * same bits everywhere, a little less accurate). */
#ifndef TB_LIBM_H
#define TB_LIBM_H

/* sin x and cos x together. */
void tb_sin_cos(float x, float *sin_out, float *cos_out);
float tb_sinf(float x);
float tb_cosf(float x);

/* e^x; x is clamped to [-87, 88] (the normal float range of the result). */
float tb_expf(float x);
/* ln x for x > 0 (x <= 0 gives -88.7, ln of the smallest normal float, and
 * infinity gives 88.7: the physics takes logs of rates in (0, 1]). */
float tb_logf(float x);
/* x^y = e^(y ln x) for x > 0; 0 for x == 0 and y > 0. */
float tb_powf(float x, float y);

#endif /* TB_LIBM_H */
