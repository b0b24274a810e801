/* collide_plane.c: contacts against static infinite planes.
 *
 * A plane is {x : n.x = offset} with the solid half-space behind it, so the
 * signed distance of a point is n.x - offset. A box touches at its corners
 * (each corner within the margin is a point; a resting box gets four), a
 * sphere at its lowest point. The normal is the plane normal (plane -> body).
 */
#include "physics/collide.h"
#include "physics/simd.h"

/* The eight corners at once, corner k in lane k (signs sx, sy, sz from bits
 * 0, 1, 2 of k), each lane with the scalar formulas' operations in their
 * order: s = ((d + sx p0) + sy p1) + sz p2 and the corner as three
 * tb_v3_mad's from the centre; the corners with s < margin (or NaN) are
 * points, in corner order. */
TB_HOT_CLONES int tb_collide_plane_box(tb_vec3 plane_normal, float plane_offset, const tb_collide_box *box,
                                       float margin, tb_manifold *m)
{
    m->normal = plane_normal;
    m->count = 0;
    float center_dist = tb_v3_dot(plane_normal, box->center) - plane_offset;
    /* distance of each corner is center_dist + sum_i +-h_i (n . axis_i) */
    float proj[3];
    for (int i = 0; i < 3; i++) proj[i] = box->half[i] * tb_v3_dot(plane_normal, box->axis[i]);
    if (center_dist - fabsf(proj[0]) - fabsf(proj[1]) - fabsf(proj[2]) > margin) return 0;
    const tb_f8 sx = {-1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f};
    const tb_f8 sy = {-1.0f, -1.0f, 1.0f, 1.0f, -1.0f, -1.0f, 1.0f, 1.0f};
    const tb_f8 sz = {-1.0f, -1.0f, -1.0f, -1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    const tb_f8 s = ((tb_f8_splat(center_dist) + sx * tb_f8_splat(proj[0])) + sy * tb_f8_splat(proj[1])) +
                    sz * tb_f8_splat(proj[2]);
    unsigned points = ~tb_f8_bits_ge(s, tb_f8_splat(margin)) & 0xFFu;
    if (!points) return 0;
    const tb_f8 hx = sx * tb_f8_splat(box->half[0]), hy = sy * tb_f8_splat(box->half[1]),
                hz = sz * tb_f8_splat(box->half[2]);
    const tb_vec3 c = box->center, *ax = box->axis;
    const tb_f8 px = ((tb_f8_splat(c.x) + tb_f8_splat(ax[0].x) * hx) + tb_f8_splat(ax[1].x) * hy) + tb_f8_splat(ax[2].x) * hz;
    const tb_f8 py = ((tb_f8_splat(c.y) + tb_f8_splat(ax[0].y) * hx) + tb_f8_splat(ax[1].y) * hy) + tb_f8_splat(ax[2].y) * hz;
    const tb_f8 pz = ((tb_f8_splat(c.z) + tb_f8_splat(ax[0].z) * hx) + tb_f8_splat(ax[1].z) * hy) + tb_f8_splat(ax[2].z) * hz;
    int count = 0;
    for (; points; points &= points - 1u, count++) {
        const int k = __builtin_ctz(points);
        m->point[count] = tb_v3(px[k], py[k], pz[k]);
        m->separation[count] = s[k];
    }
    m->count = count;
    return count;
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
