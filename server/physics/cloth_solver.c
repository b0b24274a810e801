/* cloth_solver.c: one 1/120 s step of every piece of cloth in a world.
 *
 *   1. The figure advances and is posed; pinned points jump to their anchors.
 *   2. Verlet: v = (p - o) * damping, p += v + a h^2, with gravity and wind.
 *   3. `iterations` times: every distance constraint, then capsules and ground.
 *   4. A last full collision pass, then normals (the next step's wind needs them).
 *
 * Converting the seed's 1/60 s tuning to 1/120 s
 * ----------------------------------------------
 * The seed (verlet-cloth.ko.md) was tuned at h60 = 1/60 s with 8 iterations.
 * We step at h120 = 1/120 s, also with `iterations` per step, so per second
 * the world sees two steps and twice the iterations for each one of the seed's.
 *
 *   damping   v *= d each step. Two of our steps must damp as much as one of
 *             the seed's: d120^2 = d60, so d120 = sqrt(0.988) = 0.993982.
 *   stiffness a constraint with stiffness k removes a fraction k of its error
 *             per iteration, leaving (1 - k). Applied twice as often, the
 *             error left per 1/60 s must stay the same:
 *             (1 - k120)^2 = (1 - k60), so k120 = 1 - sqrt(1 - k60):
 *             structural 1.0 -> 1.0, shear 0.6 -> 0.3675, bend 0.25 -> 0.1340.
 *   forces    gravity, wind and drag are accelerations in m/s^2 and enter as
 *             a h^2 with our h, so they need no conversion.
 *
 * Wind: the air a point feels is wind - v/h (relative air velocity). Only its
 * component along the cloth normal pushes (a sail facing the wind is pushed,
 * one edge-on is not): a = n (n . rel) WIND_K + rel DRAG. Normals come from
 * the previous step's positions. */
#include <math.h>
#include <string.h>

#include "physics/cloth_internal.h"

#define GRAVITY 9.8f
#define DAMPING_120 0.993982f     /* sqrt(0.988), see above */
#define WIND_K 2.0f               /* 1/s: normal push per m/s of relative air */
#define DRAG 0.1f                 /* 1/s: light drag along the relative air */
#define GRAB_MAX_STEP 0.1f        /* a grabbed point moves at most this per step (12 m/s) */
#define NEAR_MARGIN 0.12f         /* capsules this close are tested during the iterations */
#define COLLISION_SKIN 0.0005f    /* the final pass leaves points this far outside */

/* Wind strength varies slowly with time (deterministic gusts) so a flag in a
 * steady wind keeps moving. Computed in double from the step count. */
static float gust_factor(uint64_t step_count)
{
    double t = (double)step_count * (1.0 / 120.0);
    return (float)(1.0 + 0.25 * sin(1.3 * t) + 0.15 * sin(3.7 * t + 1.0));
}

void tb_cloth__update_shares(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    (void)ps;
    for (int c = 0; c < p->constraint_count; c++) {
        tb_cloth_constraint *k = &p->constraints[c];
        float wa = p->inv_mass[k->a], wb = p->inv_mass[k->b], ws = wa + wb;
        k->share_a = ws > 0.0f ? p->stiffness[c] * wa / ws : 0.0f;
        k->share_b = ws > 0.0f ? p->stiffness[c] * wb / ws : 0.0f;
    }
}

/* Normal at each point from central differences across the grid
 * (one-sided at the border): n = normalize(du x dv). */
void tb_cloth__compute_normals(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int w = ps->width, h = ps->height;
    const float *x = ps->pos;
    for (int j = 0; j < h; j++) {
        int j0 = j > 0 ? j - 1 : j, j1 = j < h - 1 ? j + 1 : j;
        for (int i = 0; i < w; i++) {
            int i0 = i > 0 ? i - 1 : i, i1 = i < w - 1 ? i + 1 : i;
            int a = 3 * (j * w + i0), b = 3 * (j * w + i1);
            int c = 3 * (j0 * w + i), d = 3 * (j1 * w + i);
            tb_vec3 du = tb_v3(x[b] - x[a], x[b + 1] - x[a + 1], x[b + 2] - x[a + 2]);
            tb_vec3 dv = tb_v3(x[d] - x[c], x[d + 1] - x[c + 1], x[d + 2] - x[c + 2]);
            tb_vec3 n = tb_v3_norm(tb_v3_cross(dv, du));
            float *out = &p->normals[3 * (j * w + i)];
            out[0] = n.x;
            out[1] = n.y;
            out[2] = n.z;
        }
    }
}

/* Closest point on segment ab to q, as the vector q - closest. */
static tb_vec3 capsule_offset(const tb_cloth_capsule *cap, tb_vec3 q)
{
    tb_vec3 ab = tb_v3_sub(cap->b, cap->a);
    float len2 = tb_v3_len_sq(ab);
    float t = len2 > 1e-12f ? tb_clampf(tb_v3_dot(tb_v3_sub(q, cap->a), ab) / len2, 0.0f, 1.0f) : 0.0f;
    return tb_v3_sub(q, tb_v3_mad(cap->a, ab, t));
}

/* Push q out of the capsule to radius + skin; returns 1 if it was inside. */
static int push_out(const tb_cloth_capsule *cap, float *q, float skin)
{
    tb_vec3 p = tb_v3(q[0], q[1], q[2]);
    tb_vec3 d = capsule_offset(cap, p);
    float d2 = tb_v3_len_sq(d);
    float r = cap->radius;
    if (d2 >= r * r) return 0;
    float len = sqrtf(d2);
    if (len < 1e-6f) return 0; /* on the axis: no direction to push in */
    float s = (r + skin - len) / len;
    q[0] += d.x * s;
    q[1] += d.y * s;
    q[2] += d.z * s;
    return 1;
}

static void integrate(tb_cloth_world *world, tb_cloth_piece_state *ps, tb_cloth_piece *p, int piece_index,
                      tb_vec3 wind)
{
    const float h = TB_CLOTH_DT, inv_h = 1.0f / TB_CLOTH_DT, h2 = h * h;
    int n = ps->width * ps->height;
    float *x = ps->pos, *o = ps->prev;
    const float *nrm = p->normals;

    for (int k = 0; k < n; k++) {
        int j = 3 * k;
        if (p->pinned[k]) continue; /* placed below */
        if (p->inv_mass[k] == 0.0f) continue; /* grabbed: placed below */
        float vx = (x[j] - o[j]) * DAMPING_120;
        float vy = (x[j + 1] - o[j + 1]) * DAMPING_120;
        float vz = (x[j + 2] - o[j + 2]) * DAMPING_120;
        float rx = wind.x - vx * inv_h, ry = wind.y - vy * inv_h, rz = wind.z - vz * inv_h;
        float dn = (nrm[j] * rx + nrm[j + 1] * ry + nrm[j + 2] * rz) * WIND_K;
        float ax = nrm[j] * dn + rx * DRAG;
        float ay = nrm[j + 1] * dn + ry * DRAG - GRAVITY;
        float az = nrm[j + 2] * dn + rz * DRAG;
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] += vx + ax * h2;
        x[j + 1] += vy + ay * h2;
        x[j + 2] += vz + az * h2;
    }

    /* Pinned points jump to their anchor and take their old position along
     * (o = p first), so the anchor's motion is their velocity: no whip. */
    for (int q = 0; q < p->pin_count; q++) {
        int j = 3 * p->pins[q];
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] = p->anchors[3 * q];
        x[j + 1] = p->anchors[3 * q + 1];
        x[j + 2] = p->anchors[3 * q + 2];
    }

    /* Grabbed points walk toward their target, at most GRAB_MAX_STEP per step. */
    for (int g = 0; g < TB_CLOTH_MAX_GRABS; g++) {
        const tb_cloth_grab *gr = &world->state.grabs[g];
        if (!gr->active || gr->piece != piece_index) continue;
        int j = 3 * gr->point;
        tb_vec3 cur = tb_v3(x[j], x[j + 1], x[j + 2]);
        tb_vec3 d = tb_v3_sub(gr->target, cur);
        float len = tb_v3_len(d);
        if (len > GRAB_MAX_STEP) d = tb_v3_scale(d, GRAB_MAX_STEP / len);
        o[j] = x[j];
        o[j + 1] = x[j + 1];
        o[j + 2] = x[j + 2];
        x[j] += d.x;
        x[j + 1] += d.y;
        x[j + 2] += d.z;
    }
}

/* Which capsules each free point might touch this step: one full distance
 * test per point and capsule, so the iterations only test the near ones. */
static void find_near(tb_cloth_world *world, tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    memset(p->near_mask, 0, (size_t)n);
    for (int c = 0; c < p->capsule_count; c++) {
        const tb_cloth_capsule *cap = &world->capsules[p->capsule_first + c];
        float reach = cap->radius + NEAR_MARGIN;
        for (int k = 0; k < n; k++) {
            if (p->inv_mass[k] == 0.0f) continue;
            tb_vec3 q = tb_v3(ps->pos[3 * k], ps->pos[3 * k + 1], ps->pos[3 * k + 2]);
            if (tb_v3_len_sq(capsule_offset(cap, q)) < reach * reach) p->near_mask[k] |= (uint8_t)(1u << c);
        }
    }
}

static void solve_constraints(tb_cloth_piece_state *ps, const tb_cloth_piece *p)
{
    float *x = ps->pos;
    const tb_cloth_constraint *con = p->constraints;
    int count = p->constraint_count;
    for (int c = 0; c < count; c++) {
        int a = 3 * con[c].a, b = 3 * con[c].b;
        float dx = x[b] - x[a], dy = x[b + 1] - x[a + 1], dz = x[b + 2] - x[a + 2];
        float d2 = dx * dx + dy * dy + dz * dz;
        if (d2 < 1e-12f) continue;
        float d = sqrtf(d2);
        /* Move each end along the pair by its share of (d - rest). */
        float f = (d - con[c].rest) / d;
        float fa = f * con[c].share_a, fb = f * con[c].share_b;
        x[a] += dx * fa;
        x[a + 1] += dy * fa;
        x[a + 2] += dz * fa;
        x[b] -= dx * fb;
        x[b + 1] -= dy * fb;
        x[b + 2] -= dz * fb;
    }
}

static void collide_ground(tb_cloth_piece_state *ps, const tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    float *x = ps->pos, *o = ps->prev;
    for (int k = 0; k < n; k++) {
        int j = 3 * k;
        if (x[j + 1] < TB_CLOTH_GROUND_Y && p->inv_mass[k] != 0.0f) {
            x[j + 1] = TB_CLOTH_GROUND_Y;
            /* Ground friction (the seed's): halve the sliding velocity. */
            o[j] += (x[j] - o[j]) * 0.5f;
            o[j + 2] += (x[j + 2] - o[j + 2]) * 0.5f;
        }
    }
}

static void collide_near(const tb_cloth_world *world, tb_cloth_piece_state *ps, const tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    for (int k = 0; k < n; k++) {
        unsigned mask = p->near_mask[k];
        while (mask) {
            int c = __builtin_ctz(mask);
            mask &= mask - 1;
            push_out(&world->capsules[p->capsule_first + c], &ps->pos[3 * k], 0.0f);
        }
    }
}

/* After the iterations: every free point against every capsule of its piece,
 * repeated while something moved (a push out of one capsule can land in the
 * next where two meet), at most three rounds. */
static void collide_final(const tb_cloth_world *world, tb_cloth_piece_state *ps, const tb_cloth_piece *p)
{
    int n = ps->width * ps->height;
    for (int k = 0; k < n; k++) {
        if (p->inv_mass[k] == 0.0f) continue;
        for (int round = 0; round < 3; round++) {
            int moved = 0;
            for (int c = 0; c < p->capsule_count; c++)
                moved |= push_out(&world->capsules[p->capsule_first + c], &ps->pos[3 * k], COLLISION_SKIN);
            if (!moved) break;
        }
    }
}

void tb_cloth__solve_step(tb_cloth_world *world)
{
    tb_cloth_state *st = &world->state;

    /* The figure and the anchors at the end of this step. */
    tb_cloth__figure_advance(&st->figure, st->walking != 0, TB_CLOTH_DT);
    for (int i = 0; i < st->piece_count; i++) {
        if (st->pieces[i].kind != TB_CLOTH_KIND_CAPE) continue;
        tb_cloth__figure_pose(&st->figure, &world->capsules[world->pieces[i].capsule_first],
                              world->pieces[i].anchors, world->pieces[i].pin_count, &world->figure_forward,
                              &world->figure_torso_centre);
    }

    float strength = st->wind_strength * gust_factor(st->step_count);
    tb_vec3 wind = tb_v3(cosf(st->wind_direction) * strength, 0.0f, -sinf(st->wind_direction) * strength);

    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth_piece_state *ps = &st->pieces[i];
        tb_cloth_piece *p = &world->pieces[i];
        integrate(world, ps, p, i, wind);
        find_near(world, ps, p);
        for (int it = 0; it < st->iterations; it++) {
            solve_constraints(ps, p);
            collide_near(world, ps, p);
            collide_ground(ps, p);
        }
        collide_final(world, ps, p);
        tb_cloth__compute_normals(ps, p);
    }
    st->step_count++;
}
