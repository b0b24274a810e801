/* tb_math.h: small value types for the physics kernels.
 *
 * Vectors, quaternions and 3x3 matrices in float, passed by value, all
 * static inline so the compiler sees through them in the solver loops.
 * Nothing here allocates or touches global state. Quaternions are (x, y, z, w)
 * with w the scalar part, unit length for rotations, and rotate a vector as
 * q v q*. Matrices are row-major: m.r[row] is a row vector.
 */
#ifndef TB_MATH_H
#define TB_MATH_H

#include <math.h>
#include <stdbool.h>

#include "physics/tb_libm.h" /* sin, cos: the physics' own (same bits on every platform) */

typedef struct tb_vec3 { float x, y, z; } tb_vec3;
typedef struct tb_quat { float x, y, z, w; } tb_quat;
typedef struct tb_mat3 { tb_vec3 r[3]; } tb_mat3;

#define TB_PI 3.14159265358979323846f

/* ---- scalars -------------------------------------------------------------- */

static inline float tb_minf(float a, float b) { return a < b ? a : b; }
static inline float tb_maxf(float a, float b) { return a > b ? a : b; }
static inline float tb_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }
static inline bool tb_finitef(float v) { return isfinite(v); }

/* ---- vectors -------------------------------------------------------------- */

static inline tb_vec3 tb_v3(float x, float y, float z) { tb_vec3 v = {x, y, z}; return v; }
static inline tb_vec3 tb_v3_zero(void) { return tb_v3(0.0f, 0.0f, 0.0f); }
static inline tb_vec3 tb_v3_add(tb_vec3 a, tb_vec3 b) { return tb_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline tb_vec3 tb_v3_sub(tb_vec3 a, tb_vec3 b) { return tb_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline tb_vec3 tb_v3_neg(tb_vec3 a) { return tb_v3(-a.x, -a.y, -a.z); }
static inline tb_vec3 tb_v3_scale(tb_vec3 a, float s) { return tb_v3(a.x * s, a.y * s, a.z * s); }
static inline tb_vec3 tb_v3_mul(tb_vec3 a, tb_vec3 b) { return tb_v3(a.x * b.x, a.y * b.y, a.z * b.z); }
/* a + b * s */
static inline tb_vec3 tb_v3_mad(tb_vec3 a, tb_vec3 b, float s) { return tb_v3(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s); }
static inline float tb_v3_dot(tb_vec3 a, tb_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline tb_vec3 tb_v3_cross(tb_vec3 a, tb_vec3 b)
{
    return tb_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline float tb_v3_len_sq(tb_vec3 a) { return tb_v3_dot(a, a); }
static inline float tb_v3_len(tb_vec3 a) { return sqrtf(tb_v3_dot(a, a)); }
static inline float tb_v3_dist(tb_vec3 a, tb_vec3 b) { return tb_v3_len(tb_v3_sub(a, b)); }
static inline tb_vec3 tb_v3_min(tb_vec3 a, tb_vec3 b) { return tb_v3(tb_minf(a.x, b.x), tb_minf(a.y, b.y), tb_minf(a.z, b.z)); }
static inline tb_vec3 tb_v3_max(tb_vec3 a, tb_vec3 b) { return tb_v3(tb_maxf(a.x, b.x), tb_maxf(a.y, b.y), tb_maxf(a.z, b.z)); }
static inline tb_vec3 tb_v3_abs(tb_vec3 a) { return tb_v3(fabsf(a.x), fabsf(a.y), fabsf(a.z)); }
static inline tb_vec3 tb_v3_lerp(tb_vec3 a, tb_vec3 b, float t) { return tb_v3_mad(a, tb_v3_sub(b, a), t); }
static inline bool tb_v3_finite(tb_vec3 a) { return isfinite(a.x) && isfinite(a.y) && isfinite(a.z); }
static inline float tb_v3_comp(tb_vec3 a, int i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }

/* Unit vector along a; zero when a is (nearly) zero, never NaN. */
static inline tb_vec3 tb_v3_norm(tb_vec3 a)
{
    float len = tb_v3_len(a);
    return len > 1e-12f ? tb_v3_scale(a, 1.0f / len) : tb_v3_zero();
}

/* Two unit tangents t1, t2 with (n, t1, t2) orthonormal, for a unit n. */
static inline void tb_v3_basis(tb_vec3 n, tb_vec3 *t1, tb_vec3 *t2)
{
    /* Pick the world axis least aligned with n to avoid a degenerate cross. */
    tb_vec3 a = fabsf(n.x) < 0.57735f ? tb_v3(1.0f, 0.0f, 0.0f) : tb_v3(0.0f, 1.0f, 0.0f);
    *t1 = tb_v3_norm(tb_v3_cross(n, a));
    *t2 = tb_v3_cross(n, *t1);
}

/* ---- quaternions ---------------------------------------------------------- */

static inline tb_quat tb_q(float x, float y, float z, float w) { tb_quat q = {x, y, z, w}; return q; }
static inline tb_quat tb_q_identity(void) { return tb_q(0.0f, 0.0f, 0.0f, 1.0f); }
static inline tb_quat tb_q_conj(tb_quat q) { return tb_q(-q.x, -q.y, -q.z, q.w); }
static inline float tb_q_dot(tb_quat a, tb_quat b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
static inline bool tb_q_finite(tb_quat q) { return isfinite(q.x) && isfinite(q.y) && isfinite(q.z) && isfinite(q.w); }

static inline tb_quat tb_q_mul(tb_quat a, tb_quat b)
{
    return tb_q(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
                a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}

static inline tb_quat tb_q_norm(tb_quat q)
{
    float len = sqrtf(tb_q_dot(q, q));
    if (len < 1e-12f) return tb_q_identity();
    float inv = 1.0f / len;
    return tb_q(q.x * inv, q.y * inv, q.z * inv, q.w * inv);
}

/* Rotation of angle radians about a unit axis. */
static inline tb_quat tb_q_axis_angle(tb_vec3 axis, float angle)
{
    float s, c;
    tb_sin_cos(0.5f * angle, &s, &c);
    return tb_q(axis.x * s, axis.y * s, axis.z * s, c);
}

/* v' = q v q*, expanded: v + 2w (u x v) + 2 u x (u x v) with u = q.xyz. */
static inline tb_vec3 tb_q_rotate(tb_quat q, tb_vec3 v)
{
    tb_vec3 u = tb_v3(q.x, q.y, q.z);
    tb_vec3 t = tb_v3_scale(tb_v3_cross(u, v), 2.0f);
    return tb_v3_add(tb_v3_add(v, tb_v3_scale(t, q.w)), tb_v3_cross(u, t));
}

static inline tb_vec3 tb_q_inv_rotate(tb_quat q, tb_vec3 v) { return tb_q_rotate(tb_q_conj(q), v); }

/* q advanced by angular velocity w over dt: q + 0.5 dt (w,0) q, renormalised. */
static inline tb_quat tb_q_integrate(tb_quat q, tb_vec3 w, float dt)
{
    tb_quat spin = tb_q_mul(tb_q(w.x, w.y, w.z, 0.0f), q);
    float h = 0.5f * dt;
    return tb_q_norm(tb_q(q.x + spin.x * h, q.y + spin.y * h, q.z + spin.z * h, q.w + spin.w * h));
}

/* Angle in radians between two unit rotations (0..pi). */
static inline float tb_q_angle_between(tb_quat a, tb_quat b)
{
    float d = fabsf(tb_q_dot(a, b));
    return 2.0f * acosf(tb_minf(d, 1.0f));
}

/* ---- 3x3 matrices --------------------------------------------------------- */

static inline tb_mat3 tb_m3_diag(tb_vec3 d)
{
    tb_mat3 m = {{tb_v3(d.x, 0, 0), tb_v3(0, d.y, 0), tb_v3(0, 0, d.z)}};
    return m;
}

static inline tb_vec3 tb_m3_mul_v3(tb_mat3 m, tb_vec3 v)
{
    return tb_v3(tb_v3_dot(m.r[0], v), tb_v3_dot(m.r[1], v), tb_v3_dot(m.r[2], v));
}

static inline tb_mat3 tb_m3_transpose(tb_mat3 m)
{
    tb_mat3 t = {{tb_v3(m.r[0].x, m.r[1].x, m.r[2].x),
                  tb_v3(m.r[0].y, m.r[1].y, m.r[2].y),
                  tb_v3(m.r[0].z, m.r[1].z, m.r[2].z)}};
    return t;
}

static inline tb_mat3 tb_m3_mul(tb_mat3 a, tb_mat3 b)
{
    tb_mat3 bt = tb_m3_transpose(b), m;
    for (int i = 0; i < 3; i++)
        m.r[i] = tb_v3(tb_v3_dot(a.r[i], bt.r[0]), tb_v3_dot(a.r[i], bt.r[1]), tb_v3_dot(a.r[i], bt.r[2]));
    return m;
}

/* Rotation matrix of a unit quaternion; its columns are the body axes in world. */
static inline tb_mat3 tb_m3_from_q(tb_quat q)
{
    float xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    float xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
    float wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
    tb_mat3 m = {{tb_v3(1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
                  tb_v3(2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
                  tb_v3(2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy))}};
    return m;
}

/* Column i of m: for a rotation matrix, body axis i expressed in world. */
static inline tb_vec3 tb_m3_col(tb_mat3 m, int i)
{
    return tb_v3(tb_v3_comp(m.r[0], i), tb_v3_comp(m.r[1], i), tb_v3_comp(m.r[2], i));
}

/* World inverse inertia R diag(inv_i) R^T from a body-space diagonal. */
static inline tb_mat3 tb_m3_world_inv_inertia(tb_quat q, tb_vec3 inv_inertia_local)
{
    tb_mat3 r = tb_m3_from_q(q);
    return tb_m3_mul(tb_m3_mul(r, tb_m3_diag(inv_inertia_local)), tb_m3_transpose(r));
}

#endif /* TB_MATH_H */
