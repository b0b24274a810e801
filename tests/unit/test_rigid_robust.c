/* test_rigid_robust.c: things that must never happen: tunnelling, NaN,
 * energy from nowhere. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "unit/rigid_fixture.h"

#define DT TB_TEST_DT

/* Signed distance from a sphere to a box (negative: overlap depth). */
static float sphere_box_gap(tb_vec3 c, float r, tb_vec3 bp, tb_quat bq, tb_vec3 h)
{
    tb_vec3 l = tb_q_inv_rotate(bq, tb_v3_sub(c, bp));
    tb_vec3 q = tb_v3(fabsf(l.x) - h.x, fabsf(l.y) - h.y, fabsf(l.z) - h.z);
    tb_vec3 outside = tb_v3_max(q, tb_v3_zero());
    float inside = fminf(fmaxf(q.x, fmaxf(q.y, q.z)), 0.0f);
    return tb_v3_len(outside) + inside - r;
}

/* A 0.36 m ball at 30 m/s against a 0.3 m plank standing on its end: 0.25 m
 * per step. The ball must stay on its side of the plank (measured along the
 * plank's thin axis), and it must never sink into it more than 1 cm: found
 * only after the fact, a discrete overlap could be up to 25 cm deep and be
 * pushed out through the far side. */
static void fast_ball_does_not_tunnel_through_plank(void **state)
{
    (void)state;
    const float speeds[] = {30.0f, -30.0f};
    const float densities[] = {0.6f, 600.0f}; /* a light plank is knocked away, a heavy one stops the ball */
    for (int si = 0; si < 2; si++) {
        for (int di = 0; di < 2; di++) {
            tb_rigid_world *w = tb_test_tray_world(4);
            tb_rigid_body_def plank = tb_rigid_body_def_default();
            plank.half_extents = tb_v3(0.75f, 0.15f, 0.24f);
            plank.rotation = tb_q_axis_angle(tb_v3(0, 0, 1), 0.5f * TB_PI); /* long axis up, thin axis along x */
            plank.position = tb_v3(0.0f, 0.75f, 0.0f);
            plank.density = densities[di];
            int p = tb_rigid_world_add_body(w, &plank);
            tb_rigid_body_def ball = tb_rigid_body_def_default();
            ball.shape = TB_RIGID_SPHERE;
            ball.radius = 0.18f;
            ball.density = 1.0f;
            ball.position = tb_v3(speeds[si] > 0 ? -3.0f : 3.0f, 0.8f, 0.0f);
            ball.linear_velocity = tb_v3(speeds[si], 0.0f, 0.0f);
            int b = tb_rigid_world_add_body(w, &ball);
            assert_true(p >= 0 && b >= 0);
            float side0 = 0.0f;
            for (int s = 0; s < 60; s++) {
                assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
                tb_vec3 pp, bp;
                tb_quat pq;
                tb_rigid_body_get_pose(w, p, &pp, &pq);
                tb_rigid_body_get_pose(w, b, &bp, NULL);
                tb_vec3 thin = tb_q_rotate(pq, tb_v3(0, 1, 0)); /* the plank's 0.3 m axis */
                float side = tb_v3_dot(tb_v3_sub(bp, pp), thin);
                if (s == 0) side0 = side;
                if (side * side0 < 0.0f)
                    fail_msg("speed %.0f density %.1f: ball crossed the plank at step %d", speeds[si], densities[di], s);
                float gap = sphere_box_gap(bp, 0.18f, pp, pq, plank.half_extents);
                if (gap < -0.01f)
                    fail_msg("speed %.0f density %.1f: ball %.3f m deep in the plank at step %d", speeds[si],
                             densities[di], -gap, s);
            }
            tb_rigid_world_destroy(w);
        }
    }
}

static void random_impulses_never_produce_nan(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(TB_SCENE_TOWER_BODIES + 8);
    int planks[TB_TOWER_PLANKS];
    assert_int_equal(tb_rigid_scene_tower(w, planks), TB_PHYS_OK);
    tb_rigid_scene_tower_launch_ball(w);
    tb_rigid_rng rng = tb_rigid_rng_seed(77);
    tb_rigid_throw(w, TB_THROW_DIE, tb_v3(0, 2, 0), tb_v3(1, 0, 0), tb_v3(0, 5, 0), 0);
    tb_rigid_throw(w, TB_THROW_BALL, tb_v3(-1, 2, 1), tb_v3(-1, 0, 0), tb_v3_zero(), 1);
    int refused = 0;
    for (int k = 0; k < 10000; k++) {
        int id = (int)(tb_rigid_rng_next(&rng) % (uint64_t)tb_rigid_world_body_capacity(w));
        if (tb_rigid_world_body_valid(w, id)) {
            tb_vec3 p;
            tb_rigid_body_get_pose(w, id, &p, NULL);
            float m = 20.0f * tb_rigid_rng_float(&rng);
            tb_vec3 j = tb_v3((tb_rigid_rng_float(&rng) - 0.5f) * m, (tb_rigid_rng_float(&rng) - 0.3f) * m,
                              (tb_rigid_rng_float(&rng) - 0.5f) * m);
            tb_vec3 at = tb_v3_add(p, tb_v3(tb_rigid_rng_float(&rng) - 0.5f, tb_rigid_rng_float(&rng) - 0.5f,
                                            tb_rigid_rng_float(&rng) - 0.5f));
            /* a body already flying fast may refuse more (over TB_RIGID_MAX_SPEED) */
            int rc = tb_rigid_body_apply_impulse(w, id, j, at);
            assert_true(rc == TB_PHYS_OK || rc == TB_PHYS_ERR_RANGE);
            refused += rc == TB_PHYS_ERR_RANGE;
        }
        assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
        for (int b = tb_rigid_world_next_body(w, -1); b >= 0; b = tb_rigid_world_next_body(w, b)) {
            tb_rigid_body_info info;
            tb_rigid_body_get_info(w, b, &info);
            if (!tb_v3_finite(info.position) || !tb_q_finite(info.rotation) || !tb_v3_finite(info.linear_velocity) ||
                !tb_v3_finite(info.angular_velocity))
                fail_msg("body %d not finite after impulse %d", b, k);
            if (fabsf(info.position.x) > TB_TRAY_HALF_X + 0.5f || fabsf(info.position.z) > TB_TRAY_HALF_Z + 0.5f ||
                info.position.y < -0.5f)
                fail_msg("body %d escaped the tray after impulse %d: (%.2f %.2f %.2f)", b, k, info.position.x,
                         info.position.y, info.position.z);
        }
    }
    print_message("impulses refused as too fast: %d\n", refused);
    tb_rigid_world_destroy(w);
}

static float energy(const tb_rigid_body_info *b, const tb_vec3 *inertia_local)
{
    /* kinetic (linear + rotational, in body axes) + potential */
    tb_vec3 wl = tb_q_inv_rotate(b->rotation, b->angular_velocity);
    float rot = 0.5f * (inertia_local->x * wl.x * wl.x + inertia_local->y * wl.y * wl.y + inertia_local->z * wl.z * wl.z);
    return 0.5f * b->mass * tb_v3_len_sq(b->linear_velocity) + rot + b->mass * 9.81f * b->position.y;
}

/* Boxes placed resting on the floor (some turned about y, one slightly
 * above): total energy may only go down, step after step, for 10 s. */
static void resting_box_never_gains_energy(void **state)
{
    (void)state;
    const float yaw[] = {0.0f, 0.3f, 1.1f};
    const float lift[] = {0.0f, 0.0f, 0.001f};
    for (int k = 0; k < 3; k++) {
        tb_rigid_world *w = tb_test_tray_world(2);
        tb_rigid_body_def d = tb_rigid_body_def_default();
        d.half_extents = tb_v3(0.4f, 0.25f, 0.3f);
        d.position = tb_v3(0.5f, 0.25f + lift[k], -0.2f);
        d.rotation = tb_q_axis_angle(tb_v3(0, 1, 0), yaw[k]);
        int id = tb_rigid_world_add_body(w, &d);
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, id, &info);
        tb_vec3 h = d.half_extents;
        tb_vec3 inertia = tb_v3(info.mass * (h.y * h.y + h.z * h.z) / 3.0f, info.mass * (h.x * h.x + h.z * h.z) / 3.0f,
                                info.mass * (h.x * h.x + h.y * h.y) / 3.0f);
        float e0 = energy(&info, &inertia), prev = e0;
        for (int s = 0; s < 1200; s++) {
            tb_rigid_world_step(w, DT);
            tb_rigid_body_get_info(w, id, &info);
            float e = energy(&info, &inertia);
            /* float rounding of m g y at y = 0.25 is ~1e-7 relative */
            if (e > prev + 1e-6f * e0) fail_msg("case %d step %d: energy rose %.9g -> %.9g", k, s, prev, e);
            prev = fminf(prev, e);
        }
        tb_rigid_world_destroy(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_ball_does_not_tunnel_through_plank),
        cmocka_unit_test(random_impulses_never_produce_nan),
        cmocka_unit_test(resting_box_never_gains_energy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
