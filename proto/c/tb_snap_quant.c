/* tb_snap_quant.c: the quantizers both codecs must agree on exactly.
 *
 * Positions: q = floor((p - min) * scale + 0.5) clamped to [0, grid_max],
 * grid_max = floor((max - min) * scale) per axis; p = min + q / scale.
 * Rigid bodies use scale 2048 (error <= 1/4096 m = 0.24 mm, bound 0.5 mm),
 * cloth and soft vertices 1024 (error <= 0.49 mm, bound 1 mm).
 *
 * Orientations: smallest three. Drop the largest |component| (first one on a
 * tie), flip the sign so it is positive, and quantize the other three, which
 * lie in [-1/sqrt2, 1/sqrt2], to 12 bits with zero exactly on a cell (so
 * identity and axis-aligned orientations are exact):
 *     c = 2047 + floor(v * 2047/(1/sqrt2) + 0.5) clamped to [0, 4094],
 *     v = (c - 2047) * ((1/sqrt2) / 2047).
 * Error bound: the step is s = (1/sqrt2)/2047 = 3.45e-4, so each component is off
 * by at most s/2 and the three by |d| <= sqrt3 s/2. Rebuilding the largest as
 * w = sqrt(1 - a^2 - b^2 - c^2) moves it by dw = -(a,b,c).d / w; with w >= 1/2
 * and |(a,b,c)| = sqrt(1 - w^2) that is at most sqrt3 |d|, so |dq| <= 2|d| =
 * sqrt3 s, and the rotation angle between q and q' is 2 asin|dq| ~ 2 sqrt3 s
 * = 1.2e-3 rad = 0.069 degrees < 0.1 degrees. (11 bits would give 0.137
 * degrees in the worst case, which is why this is 12.) */
#include <math.h>

#include "tb_proto_internal.h"

int32_t tb_proto_grid_max(double min, double max, int scale)
{
    if (!isfinite(min) || !isfinite(max) || !(max > min)) return -1;
    double cells = floor((max - min) * (double)scale);
    if (!(cells >= 1.0) || cells > (double)TB_PROTO_GRID_MAX) return -1;
    return (int32_t)cells;
}

/* The quantizers are inline in tb_proto_internal.h (the encoder runs them
 * for every moving body); these are their exported names. */
int32_t tb_proto_quant_pos(double p, double min, int32_t grid_max, int scale)
{
    return tb_snap__quant_pos(p, min, grid_max, scale);
}

double tb_proto_dequant_pos(int32_t q, double min, int scale)
{
    return min + (double)q / (double)scale;
}

void tb_proto_quant_rot(const float qf[4], int *index, int32_t c[3])
{
    tb_snap__quant_rot(qf, index, c);
}

void tb_proto_dequant_rot(int index, const int32_t c[3], double q[4])
{
    tb_snap__dequant_rot(index, c, q);
}

int tb_snap__grid(const tb_proto_frame *f, tb_snap_grid *g, tb_proto_err *err)
{
    for (int a = 0; a < 3; a++) {
        g->pmax[a] = tb_proto_grid_max(f->bounds_min[a], f->bounds_max[a], TB_PROTO_POS_SCALE);
        g->vmax[a] = tb_proto_grid_max(f->bounds_min[a], f->bounds_max[a], TB_PROTO_VERT_SCALE);
        if (g->pmax[a] < 0 || g->vmax[a] < 0)
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "bounds axis %d: need finite min < max and at most %d cells of 1/%d m",
                                  a, TB_PROTO_GRID_MAX, TB_PROTO_POS_SCALE);
        g->pbits[a] = tb_bits_for((uint32_t)g->pmax[a]);
        g->vbits[a] = tb_bits_for((uint32_t)g->vmax[a]);
    }
    return TB_OK;
}

int tb_proto_frame_check(const tb_proto_frame *f, tb_proto_err *err)
{
    tb_snap_grid g;
    int rc = tb_snap__grid(f, &g, err);
    if (rc) return rc;
    if (f->mesh_count > TB_PROTO_MAX_MESHES) return tb_proto__fail(err, TB_ERR_BAD_VALUE, "%u meshes, limit %d", f->mesh_count, TB_PROTO_MAX_MESHES);
    for (uint32_t m = 0; m < f->mesh_count; m++)
        if (f->mesh_verts[m] > TB_PROTO_MAX_VERTS)
            return tb_proto__fail(err, TB_ERR_BAD_VALUE, "mesh %u: %u vertices, limit %d", m, f->mesh_verts[m], TB_PROTO_MAX_VERTS);
    return TB_OK;
}

void tb_proto_frame_from_static(tb_proto_frame *f, const tb_proto_static *st)
{
    for (int a = 0; a < 3; a++) { f->bounds_min[a] = st->bounds_min[a]; f->bounds_max[a] = st->bounds_max[a]; }
    f->mesh_count = st->mesh_count;
    for (uint32_t m = 0; m < TB_PROTO_MAX_MESHES; m++) f->mesh_verts[m] = m < st->mesh_count ? st->meshes[m].verts : 0;
}

void tb_snap__pack_shape(msgpack_packer *pk, uint16_t id, const tb_proto_shape *s)
{
    msgpack_pack_array(pk, 7);
    msgpack_pack_uint16(pk, id);
    msgpack_pack_uint8(pk, s->kind);
    for (int i = 0; i < 3; i++) msgpack_pack_float(pk, s->size[i]);
    msgpack_pack_uint32(pk, s->color);
    msgpack_pack_uint8(pk, s->material);
}

void tb_proto_body_from_segment(tb_proto_body *out, uint16_t id, const float a[3], const float b[3],
                                float radius, uint32_t color, uint8_t material)
{
    double d[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
    double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    out->id = id;
    /* A body's shape is compared exactly from snapshot to snapshot (a change is a
     * remove + spawn), so float noise in |b - a| must not change it: sizes are
     * snapped to 1/1024 m. */
    float r = (float)(floor((double)radius * 1024.0 + 0.5) / 1024.0);
    float half = (float)(floor(0.5 * len * 1024.0 + 0.5) / 1024.0);
    out->shape = (tb_proto_shape){TB_SHAPE_CAPSULE, material, color, {r, half, 0.0f}};
    for (int k = 0; k < 3; k++) out->pos[k] = (float)(0.5 * ((double)a[k] + (double)b[k]));
    if (len < 1e-9) { out->rot[0] = out->rot[1] = out->rot[2] = 0; out->rot[3] = 1; return; }
    for (int k = 0; k < 3; k++) d[k] /= len;
    /* shortest arc from +y to d: q = (y x d, 1 + y.d) normalised; antiparallel: half turn about x */
    double q[4] = {d[2], 0.0, -d[0], 1.0 + d[1]};
    if (q[3] < 1e-9) { q[0] = 1; q[1] = q[2] = q[3] = 0; }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) out->rot[k] = (float)(q[k] / n);
}
