/* test_rigid_collide.c: properties of the narrow and broad phases over many
 * seeded random inputs (handbook 179-180): the answer must not depend on the
 * order of the shapes or on where the pair sits in the world, and must agree
 * with brute force. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "physics/collide.h"
#include "physics/rigid_core.h"
#include "physics/rigid_scenes.h"

#define PAIRS 10000

static float uniform(tb_rigid_rng *r, float lo, float hi) { return lo + (hi - lo) * tb_rigid_rng_float(r); }

/* Uniform random rotation (Shoemake). */
static tb_quat random_rotation(tb_rigid_rng *r)
{
    float u1 = tb_rigid_rng_float(r), u2 = uniform(r, 0, 2 * TB_PI), u3 = uniform(r, 0, 2 * TB_PI);
    float a = sqrtf(1 - u1), b = sqrtf(u1);
    return tb_q_norm(tb_q(a * sinf(u2), a * cosf(u2), b * sinf(u3), b * cosf(u3)));
}

static tb_collide_box random_box(tb_rigid_rng *r)
{
    tb_vec3 c = tb_v3(uniform(r, -1, 1), uniform(r, -1, 1), uniform(r, -1, 1));
    tb_vec3 h = tb_v3(uniform(r, 0.05f, 0.8f), uniform(r, 0.05f, 0.8f), uniform(r, 0.05f, 0.8f));
    return tb_collide_box_make(c, random_rotation(r), h);
}

static void corners(const tb_collide_box *b, tb_vec3 out[8])
{
    for (int k = 0; k < 8; k++) {
        tb_vec3 p = b->center;
        for (int i = 0; i < 3; i++) p = tb_v3_mad(p, b->axis[i], ((k >> i) & 1 ? 1.0f : -1.0f) * b->half[i]);
        out[k] = p;
    }
}

/* Gap between the projections of A's and B's corners on axis n (B beyond A). */
static float brute_separation(const tb_collide_box *a, const tb_collide_box *b, tb_vec3 n)
{
    tb_vec3 ca[8], cb[8];
    corners(a, ca);
    corners(b, cb);
    float max_a = -FLT_MAX, min_b = FLT_MAX;
    for (int k = 0; k < 8; k++) {
        max_a = fmaxf(max_a, tb_v3_dot(n, ca[k]));
        min_b = fminf(min_b, tb_v3_dot(n, cb[k]));
    }
    return min_b - max_a;
}

/* Largest brute-force gap over the 15 candidate axes, either orientation. */
static float brute_best_axis(const tb_collide_box *a, const tb_collide_box *b)
{
    tb_vec3 axes[15];
    int n = 0;
    for (int i = 0; i < 3; i++) axes[n++] = a->axis[i];
    for (int i = 0; i < 3; i++) axes[n++] = b->axis[i];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            tb_vec3 l = tb_v3_cross(a->axis[i], b->axis[j]);
            if (tb_v3_len(l) > 1e-3f) axes[n++] = tb_v3_norm(l);
        }
    float best = -FLT_MAX;
    for (int k = 0; k < n; k++)
        best = fmaxf(best, fmaxf(brute_separation(a, b, axes[k]), brute_separation(a, b, tb_v3_neg(axes[k]))));
    return best;
}

static void swapping_boxes_flips_normal_and_keeps_depth(void **state)
{
    (void)state;
    tb_rigid_rng r = tb_rigid_rng_seed(179);
    int touching = 0;
    for (int k = 0; k < PAIRS; k++) {
        tb_collide_box a = random_box(&r), b = random_box(&r);
        tb_sat_result ab, ba;
        bool hit_ab = tb_box_box_sat(&a, &b, INFINITY, &ab);
        bool hit_ba = tb_box_box_sat(&b, &a, INFINITY, &ba);
        assert_true(hit_ab && hit_ba);
        if (ab.separation != ba.separation || tb_v3_dot(ab.normal, ba.normal) > -0.999999f)
            fail_msg("pair %d: A,B sep %.7f n (%.4f %.4f %.4f); B,A sep %.7f n (%.4f %.4f %.4f)", k, ab.separation,
                     ab.normal.x, ab.normal.y, ab.normal.z, ba.separation, ba.normal.x, ba.normal.y, ba.normal.z);
        tb_manifold mab, mba;
        int nab = tb_collide_box_box(&a, &b, 0.02f, &mab), nba = tb_collide_box_box(&b, &a, 0.02f, &mba);
        assert_int_equal(nab, nba);
        touching += nab > 0;
        for (int i = 0; i < nab; i++) {
            /* the same contact points, each with the same separation */
            float best = FLT_MAX;
            int at = -1;
            for (int j = 0; j < nba; j++) {
                float d = tb_v3_dist(mab.point[i], mba.point[j]);
                if (d < best) { best = d; at = j; }
            }
            assert_true(best < 1e-4f);
            assert_float_equal(mab.separation[i], mba.separation[at], 1e-5f);
        }
    }
    print_message("%d of %d pairs in contact\n", touching, PAIRS);
    assert_true(touching > PAIRS / 4);
}

static void moving_both_boxes_rigidly_keeps_the_result(void **state)
{
    (void)state;
    tb_rigid_rng r = tb_rigid_rng_seed(180);
    for (int k = 0; k < PAIRS; k++) {
        tb_collide_box a = random_box(&r), b = random_box(&r);
        tb_quat q = random_rotation(&r);
        tb_vec3 t = tb_v3(uniform(&r, -3, 3), uniform(&r, -1, 1), uniform(&r, -2, 2));
        tb_collide_box a2 = a, b2 = b;
        a2.center = tb_v3_add(tb_q_rotate(q, a.center), t);
        b2.center = tb_v3_add(tb_q_rotate(q, b.center), t);
        for (int i = 0; i < 3; i++) {
            a2.axis[i] = tb_q_rotate(q, a.axis[i]);
            b2.axis[i] = tb_q_rotate(q, b.axis[i]);
        }
        tb_sat_result s1, s2;
        tb_box_box_sat(&a, &b, INFINITY, &s1);
        tb_box_box_sat(&a2, &b2, INFINITY, &s2);
        tb_vec3 n1 = tb_q_rotate(q, s1.normal);
        if (fabsf(s1.separation - s2.separation) > 1e-4f || tb_v3_dot(n1, s2.normal) < 0.9999f)
            fail_msg("pair %d: sep %.6f vs %.6f, normals (%.4f %.4f %.4f) vs (%.4f %.4f %.4f), kinds %d vs %d", k,
                     s1.separation, s2.separation, n1.x, n1.y, n1.z, s2.normal.x, s2.normal.y, s2.normal.z, s1.kind,
                     s2.kind);
    }
}

static void reported_separation_matches_corner_projection(void **state)
{
    (void)state;
    tb_rigid_rng r = tb_rigid_rng_seed(181);
    int separated = 0;
    for (int k = 0; k < PAIRS; k++) {
        tb_collide_box a = random_box(&r), b = random_box(&r);
        tb_sat_result s;
        tb_box_box_sat(&a, &b, INFINITY, &s);
        float along_normal = brute_separation(&a, &b, s.normal);
        if (fabsf(along_normal - s.separation) > 1e-4f)
            fail_msg("pair %d: reported %.6f, corners along the normal %.6f", k, s.separation, along_normal);
        /* SAT picks the (nearly) largest gap: edges only win by 1 cm */
        float best = brute_best_axis(&a, &b);
        assert_true(best >= s.separation - 1e-4f);
        assert_true(best <= s.separation + 0.01f + 1e-4f);
        /* "separated" must mean some axis really separates the corners */
        tb_sat_result early;
        if (!tb_box_box_sat(&a, &b, 0.0f, &early)) {
            separated++;
            assert_true(best > 0.0f);
            assert_true(s.separation > -0.01f - 1e-4f);
        }
    }
    print_message("%d of %d pairs separated\n", separated, PAIRS);
    assert_true(separated > PAIRS / 10);
}

/* A box resting on a plank, shifted and turned about the vertical: the
 * face manifold's points lie in both footprints (the faces' overlap), midway
 * between the faces; unturned, they are exactly the 4 corners of the overlap
 * rectangle. The shifts cover a box wholly inside the plank's face (no side
 * clips), over one edge, over a corner and over two opposite edges. */
static void stacked_box_contacts_lie_in_both_footprints(void **state)
{
    (void)state;
    tb_rigid_rng r = tb_rigid_rng_seed(182);
    int unturned = 0, clipped = 0, inside = 0;
    for (int k = 0; k < PAIRS; k++) {
        tb_vec3 hb = tb_v3(uniform(&r, 0.2f, 1.0f), 0.1f, uniform(&r, 0.2f, 1.0f));
        tb_vec3 ha = tb_v3(uniform(&r, 0.05f, 0.6f), uniform(&r, 0.05f, 0.3f), uniform(&r, 0.05f, 0.6f));
        bool turned = k % 2 == 1;
        float yaw = turned ? uniform(&r, 0.05f, 1.5f) : 0.0f;
        float pen = uniform(&r, 0.0f, 0.01f);
        tb_vec3 c = tb_v3(uniform(&r, -hb.x, hb.x) * 1.2f, hb.y + ha.y - pen, uniform(&r, -hb.z, hb.z) * 1.2f);
        tb_collide_box b = tb_collide_box_make(tb_v3(0, 0, 0), tb_q_identity(), hb);
        tb_collide_box a = tb_collide_box_make(c, tb_q_axis_angle(tb_v3(0, 1, 0), yaw), ha);
        /* the footprints must overlap in an area */
        bool a_inside = true, overlap = true;
        tb_vec3 ca[8];
        corners(&a, ca);
        for (int i = 0; i < 8; i++) a_inside = a_inside && fabsf(ca[i].x) < hb.x && fabsf(ca[i].z) < hb.z;
        if (!turned) overlap = fabsf(c.x) < hb.x + ha.x - 0.01f && fabsf(c.z) < hb.z + ha.z - 0.01f;
        else overlap = fabsf(c.x) < hb.x && fabsf(c.z) < hb.z; /* A's centre above the plank */
        if (!overlap) continue;
        tb_manifold m;
        int n = tb_collide_box_box(&b, &a, 0.02f, &m);
        if (n < 3) fail_msg("case %d: %d points", k, n);
        assert_true(m.normal.y > 0.999f);
        inside += a_inside;
        clipped += !a_inside;
        for (int i = 0; i < n; i++) {
            tb_vec3 p = m.point[i];
            tb_vec3 d = tb_v3_sub(p, a.center);
            float u = tb_v3_dot(d, a.axis[0]), w = tb_v3_dot(d, a.axis[2]);
            if (fabsf(p.x) > hb.x + 1e-4f || fabsf(p.z) > hb.z + 1e-4f || fabsf(u) > ha.x + 1e-4f ||
                fabsf(w) > ha.z + 1e-4f)
                fail_msg("case %d: point %d (%.5f %.5f %.5f) outside a footprint", k, i, p.x, p.y, p.z);
            assert_float_equal(p.y, hb.y - 0.5f * pen, 1e-5f);
            assert_float_equal(m.separation[i], -pen, 1e-5f);
        }
        if (turned) continue;
        unturned++;
        assert_int_equal(n, 4);
        float x0 = fmaxf(-hb.x, c.x - ha.x), x1 = fminf(hb.x, c.x + ha.x);
        float z0 = fmaxf(-hb.z, c.z - ha.z), z1 = fminf(hb.z, c.z + ha.z);
        for (int q = 0; q < 4; q++) {
            tb_vec3 want = tb_v3(q & 1 ? x1 : x0, 0.0f, q & 2 ? z1 : z0);
            bool found = false;
            for (int i = 0; i < n && !found; i++)
                found = fabsf(m.point[i].x - want.x) < 1e-5f && fabsf(m.point[i].z - want.z) < 1e-5f;
            if (!found) fail_msg("case %d: no point at corner (%.5f, %.5f) of the overlap", k, want.x, want.z);
        }
    }
    print_message("%d unturned, %d wholly inside, %d clipped\n", unturned, inside, clipped);
    assert_true(unturned > PAIRS / 4 && inside > PAIRS / 20 && clipped > PAIRS / 4);
}

static void sphere_inside_box_leaves_through_nearest_face(void **state)
{
    (void)state;
    tb_collide_box box = tb_collide_box_make(tb_v3(0, 0, 0), tb_q_identity(), tb_v3(1.0f, 0.5f, 2.0f));
    tb_manifold m;
    assert_int_equal(tb_collide_box_sphere(&box, tb_v3(0.2f, 0.4f, 0.0f), 0.1f, 0.02f, &m), 1);
    assert_float_equal(m.normal.y, 1.0f, 1e-6f);
    assert_float_equal(m.separation[0], -0.1f - 0.1f, 1e-6f);
    assert_int_equal(tb_collide_box_sphere(&box, tb_v3(0.0f, 0.75f, 0.0f), 0.2f, 0.02f, &m), 0);
    assert_int_equal(tb_collide_box_sphere(&box, tb_v3(0.0f, 0.69f, 0.0f), 0.2f, 0.02f, &m), 1);
    assert_float_equal(m.separation[0], -0.01f, 1e-6f);
}

/* The grid must report exactly the pairs an all-pairs AABB test finds
 * (with at least one body awake), for mixed sizes, fast bodies and bodies
 * far apart. */
static void grid_pairs_match_all_pairs_aabb_test(void **state)
{
    (void)state;
    tb_rigid_rng r = tb_rigid_rng_seed(7);
    for (int round = 0; round < 20; round++) {
        tb_rigid_world_def def = tb_rigid_world_def_default();
        def.body_capacity = 300;
        tb_rigid_world *w = tb_rigid_world_create(&def);
        int n = 50 + (int)(tb_rigid_rng_next(&r) % 250); /* above the all-pairs shortcut (32) */
        for (int i = 0; i < n; i++) {
            tb_rigid_body_def d = tb_rigid_body_def_default();
            d.shape = tb_rigid_rng_float(&r) < 0.3f ? TB_RIGID_SPHERE : TB_RIGID_BOX;
            float big = tb_rigid_rng_float(&r) < 0.05f ? 3.0f : 0.4f;
            d.half_extents = tb_v3(uniform(&r, 0.05f, big), uniform(&r, 0.05f, big), uniform(&r, 0.05f, big));
            d.radius = uniform(&r, 0.05f, big);
            d.position = tb_v3(uniform(&r, -5, 5), uniform(&r, 0, 4), uniform(&r, -3, 3));
            if (tb_rigid_rng_float(&r) < 0.02f) d.position.y = 900.0f;
            d.rotation = random_rotation(&r);
            if (tb_rigid_rng_float(&r) < 0.1f) d.linear_velocity = tb_v3(uniform(&r, -40, 40), 0, 0);
            assert_true(tb_rigid_world_add_body(w, &d) >= 0);
        }
        for (int i = 0; i < n; i++) w->bodies[i].sleeping = tb_rigid_rng_float(&r) < 0.3f;
        for (int i = 0; i < n; i++) tb_body_compute_frame(&w->bodies[i], &w->frames[i], 1.0f / 120.0f, 0.02f);
        tb_broad_phase_update_pairs(w);
        int expected = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                const tb_body_frame *a = &w->frames[i], *b = &w->frames[j];
                if (w->bodies[i].sleeping && w->bodies[j].sleeping) continue;
                if (a->aabb_min.x > b->aabb_max.x || b->aabb_min.x > a->aabb_max.x || a->aabb_min.y > b->aabb_max.y ||
                    b->aabb_min.y > a->aabb_max.y || a->aabb_min.z > b->aabb_max.z || b->aabb_min.z > a->aabb_max.z)
                    continue;
                uint32_t key = ((uint32_t)i << 16) | (uint32_t)j;
                /* must be present exactly once, in sorted order */
                int found = 0;
                for (int p = 0; p < w->pair_count; p++) found += w->pairs[p].key == key;
                if (found != 1) fail_msg("round %d: pair (%d, %d) reported %d times", round, i, j, found);
                expected++;
            }
        assert_int_equal(w->pair_count, expected);
        for (int p = 1; p < w->pair_count; p++) assert_true(w->pairs[p - 1].key < w->pairs[p].key);
        tb_rigid_world_destroy(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swapping_boxes_flips_normal_and_keeps_depth),
        cmocka_unit_test(moving_both_boxes_rigidly_keeps_the_result),
        cmocka_unit_test(reported_separation_matches_corner_projection),
        cmocka_unit_test(stacked_box_contacts_lie_in_both_footprints),
        cmocka_unit_test(sphere_inside_box_leaves_through_nearest_face),
        cmocka_unit_test(grid_pairs_match_all_pairs_aabb_test),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
