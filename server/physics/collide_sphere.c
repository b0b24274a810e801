/* collide_sphere.c: sphere-sphere and box-sphere contacts (one point each).
 *
 * Sphere-sphere: along the centre line, separation = |cB - cA| - rA - rB.
 * Box-sphere: the point of the box closest to the sphere centre (clamp the
 * centre, in box coordinates, to the half extents). Outside the box the
 * normal runs from that point to the centre; a centre inside the box is
 * pushed out through the nearest face.
 */
#include "physics/collide.h"

static inline float sign_of(float x) { return x < 0.0f ? -1.0f : 1.0f; }

int tb_collide_sphere_sphere(tb_vec3 center_a, float radius_a, tb_vec3 center_b, float radius_b,
                             float margin, tb_manifold *m)
{
    tb_vec3 d = tb_v3_sub(center_b, center_a);
    float dist = tb_v3_len(d);
    float sep = dist - radius_a - radius_b;
    m->count = 0;
    if (sep > margin) return 0;
    m->normal = dist < 1e-6f ? tb_v3(0.0f, 1.0f, 0.0f) : tb_v3_scale(d, 1.0f / dist);
    m->point[0] = tb_v3_mad(center_a, m->normal, radius_a + 0.5f * sep);
    m->separation[0] = sep;
    m->count = 1;
    return 1;
}

int tb_collide_box_sphere(const tb_collide_box *a, tb_vec3 center_b, float radius_b, float margin,
                          tb_manifold *m)
{
    tb_vec3 d = tb_v3_sub(center_b, a->center);
    float local[3], clamped[3];
    bool inside = true;
    for (int i = 0; i < 3; i++) {
        local[i] = tb_v3_dot(d, a->axis[i]);
        clamped[i] = tb_clampf(local[i], -a->half[i], a->half[i]);
        if (clamped[i] != local[i]) inside = false;
    }
    m->count = 0;
    if (!inside) {
        tb_vec3 closest = a->center;
        for (int i = 0; i < 3; i++) closest = tb_v3_mad(closest, a->axis[i], clamped[i]);
        tb_vec3 n = tb_v3_sub(center_b, closest);
        float dist = tb_v3_len(n);
        float sep = dist - radius_b;
        if (sep > margin) return 0;
        if (dist < 1e-9f) return 0; /* cannot happen when outside; keeps n finite */
        m->normal = tb_v3_scale(n, 1.0f / dist);
        m->point[0] = closest;
        m->separation[0] = sep;
        m->count = 1;
        return 1;
    }
    /* centre inside: leave through the face with the least depth */
    int k = 0;
    float depth = a->half[0] - fabsf(local[0]);
    for (int i = 1; i < 3; i++) {
        float di = a->half[i] - fabsf(local[i]);
        if (di < depth) { depth = di; k = i; }
    }
    m->normal = tb_v3_scale(a->axis[k], sign_of(local[k]));
    m->point[0] = tb_v3_mad(center_b, m->normal, -radius_b);
    m->separation[0] = -depth - radius_b;
    m->count = 1;
    return 1;
}
