/* collide_plane.c: contacts against static infinite planes.
 *
 * A plane is {x : n.x = offset} with the solid half-space behind it, so the
 * signed distance of a point is n.x - offset. A box touches at its corners
 * (each corner within the margin is a point; a resting box gets four), a
 * sphere at its lowest point. The normal is the plane normal (plane -> body).
 */
#include "physics/collide.h"

int tb_collide_plane_box(tb_vec3 plane_normal, float plane_offset, const tb_collide_box *box,
                         float margin, tb_manifold *m)
{
    m->normal = plane_normal;
    m->count = 0;
    float center_dist = tb_v3_dot(plane_normal, box->center) - plane_offset;
    /* distance of each corner is center_dist + sum_i +-h_i (n . axis_i) */
    float proj[3];
    for (int i = 0; i < 3; i++) proj[i] = box->half[i] * tb_v3_dot(plane_normal, box->axis[i]);
    if (center_dist - fabsf(proj[0]) - fabsf(proj[1]) - fabsf(proj[2]) > margin) return 0;
    for (int k = 0; k < 8; k++) {
        float sx = (k & 1) ? 1.0f : -1.0f, sy = (k & 2) ? 1.0f : -1.0f, sz = (k & 4) ? 1.0f : -1.0f;
        float s = center_dist + sx * proj[0] + sy * proj[1] + sz * proj[2];
        if (s >= margin) continue;
        tb_vec3 p = box->center;
        p = tb_v3_mad(p, box->axis[0], sx * box->half[0]);
        p = tb_v3_mad(p, box->axis[1], sy * box->half[1]);
        p = tb_v3_mad(p, box->axis[2], sz * box->half[2]);
        m->point[m->count] = p;
        m->separation[m->count] = s;
        m->count++;
    }
    return m->count;
}

int tb_collide_plane_sphere(tb_vec3 plane_normal, float plane_offset, tb_vec3 center, float radius,
                            float margin, tb_manifold *m)
{
    float sep = tb_v3_dot(plane_normal, center) - plane_offset - radius;
    m->normal = plane_normal;
    m->count = 0;
    if (sep >= margin) return 0;
    m->point[0] = tb_v3_mad(center, plane_normal, -radius);
    m->separation[0] = sep;
    m->count = 1;
    return 1;
}
