/* raycast.c: the closest body along a ray (validating a user's poke).
 *
 * Brute force over live bodies: a poke is one ray per input, far cheaper
 * than a step. Sphere: solve |o + t d - c|^2 = r^2. Box: the slab method in
 * the box's frame, t_enter = max over axes of the near-plane t, t_exit = min
 * of the far-plane t; the axis that set t_enter gives the normal.
 */
#include "physics/rigid_core.h"

static bool ray_sphere(tb_vec3 o, tb_vec3 d, tb_vec3 c, float r, float *t_out, tb_vec3 *n_out)
{
    tb_vec3 m = tb_v3_sub(o, c);
    float b = tb_v3_dot(m, d);
    float cc = tb_v3_dot(m, m) - r * r;
    if (cc > 0.0f && b > 0.0f) return false;
    float disc = b * b - cc;
    if (disc < 0.0f) return false;
    float t = -b - sqrtf(disc);
    if (t < 0.0f) t = 0.0f; /* origin inside */
    *t_out = t;
    *n_out = tb_v3_norm(tb_v3_sub(tb_v3_mad(o, d, t), c));
    if (tb_v3_len_sq(*n_out) == 0.0f) *n_out = tb_v3_neg(d);
    return true;
}

static bool ray_box(tb_vec3 o, tb_vec3 d, const tb_body *b, float *t_out, tb_vec3 *n_out)
{
    tb_vec3 lo = tb_q_inv_rotate(b->rotation, tb_v3_sub(o, b->position));
    tb_vec3 ld = tb_q_inv_rotate(b->rotation, d);
    float t0 = 0.0f, t1 = 1e30f;
    int axis = -1;
    float axis_sign = 0.0f;
    for (int i = 0; i < 3; i++) {
        float p = tb_v3_comp(lo, i), v = tb_v3_comp(ld, i), h = tb_v3_comp(b->half_extents, i);
        if (fabsf(v) < 1e-12f) {
            if (p < -h || p > h) return false;
            continue;
        }
        float inv = 1.0f / v;
        float ta = (-h - p) * inv, tb = (h - p) * inv;
        float s = -1.0f; /* entering through the -h face */
        if (ta > tb) { float t = ta; ta = tb; tb = t; s = 1.0f; }
        if (ta > t0) { t0 = ta; axis = i; axis_sign = s; }
        if (tb < t1) t1 = tb;
        if (t0 > t1) return false;
    }
    *t_out = t0;
    if (axis < 0) {
        *n_out = tb_v3_neg(d); /* origin inside the box */
    } else {
        tb_vec3 ln = tb_v3_zero();
        if (axis == 0) ln.x = axis_sign;
        else if (axis == 1) ln.y = axis_sign;
        else ln.z = axis_sign;
        *n_out = tb_q_rotate(b->rotation, ln);
    }
    return true;
}

int tb_rigid_world_ray_cast(const tb_rigid_world *w, tb_vec3 origin, tb_vec3 dir, float max_distance,
                            tb_rigid_ray_hit *hit)
{
    assert(w);
    if (!hit || !tb_v3_finite(origin) || !tb_v3_finite(dir) || !(max_distance >= 0.0f) || isnan(max_distance))
        return TB_PHYS_ERR_INVALID;
    float len = tb_v3_len(dir);
    if (!(len > 1e-12f)) return TB_PHYS_ERR_INVALID;
    tb_vec3 d = tb_v3_scale(dir, 1.0f / len);
    float best = max_distance;
    int found = 0;
    for (int i = 0; i < w->body_end; i++) {
        const tb_body *b = &w->bodies[i];
        if (!b->alive) continue;
        float t;
        tb_vec3 n;
        bool ok = b->shape == TB_RIGID_SPHERE ? ray_sphere(origin, d, b->position, b->radius, &t, &n)
                                               : ray_box(origin, d, b, &t, &n);
        if (!ok || t > best) continue;
        best = t;
        found = 1;
        hit->body = i;
        hit->distance = t;
        hit->point = tb_v3_mad(origin, d, t);
        hit->normal = n;
    }
    return found;
}

float tb_rigid_world_fly(const tb_rigid_world *w, float radius, float t, tb_vec3 *pos, tb_vec3 *vel)
{
    assert(w && pos && vel);
    tb_vec3 to = tb_v3_mad(tb_v3_mad(*pos, *vel, t), w->gravity, 0.5f * t * t);
    tb_vec3 path = tb_v3_sub(to, *pos);
    float len = tb_v3_len(path);
    tb_rigid_ray_hit hit;
    if (len > 1e-4f && tb_rigid_world_ray_cast(w, *pos, path, len + radius, &hit) == 1) {
        float f = (hit.distance - radius) / len;
        t *= f > 0 ? (f < 1 ? f : 1) : 0;
        to = tb_v3_mad(tb_v3_mad(*pos, *vel, t), w->gravity, 0.5f * t * t);
    }
    *pos = to;
    *vel = tb_v3_mad(*vel, w->gravity, t);
    return t;
}
