/* test_rigid_tower.c: the plank tower stands still, then the ball topples it
 * (the seed's success criteria as numbers). Each test runs the scene from
 * scratch: 24 planks, ball launched at 1.6 s, dt = 1/120. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"

#define DT (1.0f / 120.0f)

typedef struct tower {
    tb_rigid_world *world;
    int planks[TB_TOWER_PLANKS];
    tb_vec3 start[TB_TOWER_PLANKS];
    int steps;
    int ball;
} tower;

static void tower_init(tower *t)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = TB_SCENE_TOWER_BODIES;
    t->world = tb_rigid_world_create(&def);
    assert_non_null(t->world);
    assert_int_equal(tb_rigid_scene_tower(t->world, t->planks), TB_PHYS_OK);
    for (int i = 0; i < TB_TOWER_PLANKS; i++)
        assert_int_equal(tb_rigid_body_get_pose(t->world, t->planks[i], &t->start[i], NULL), TB_PHYS_OK);
    t->steps = 0;
    t->ball = -1;
}

/* One step of the scene runner: the knock-down input arrives at 1.6 s. */
static void tower_step(tower *t)
{
    if (t->ball < 0 && (float)t->steps * DT >= TB_TOWER_LAUNCH_TIME - 1e-4f) {
        t->ball = tb_rigid_scene_tower_launch_ball(t->world);
        assert_true(t->ball >= 0);
    }
    assert_int_equal(tb_rigid_world_step(t->world, DT), TB_PHYS_OK);
    t->steps++;
}

static float now(const tower *t) { return (float)t->steps * DT; }

static void tower_stands_without_jitter(void **state)
{
    (void)state;
    tower t;
    tower_init(&t);
    float max_speed = 0.0f;
    while (now(&t) < 1.5f - 1e-4f) {
        tower_step(&t);
        if (now(&t) < 0.5f - 1e-4f) continue;
        for (int i = 0; i < TB_TOWER_PLANKS; i++) {
            tb_rigid_body_info info;
            tb_rigid_body_get_info(t.world, t.planks[i], &info);
            max_speed = fmaxf(max_speed, tb_v3_len(info.linear_velocity));
        }
    }
    print_message("max plank speed 0.5-1.5 s: %.5f m/s\n", max_speed);
    assert_true(max_speed <= 0.01f);
    tb_rigid_world_destroy(t.world);
}

static void tower_is_asleep_by_1_5_s(void **state)
{
    (void)state;
    tower t;
    tower_init(&t);
    float all_asleep_at = -1.0f;
    while (now(&t) < 1.5f - 1e-4f) {
        tower_step(&t);
        int asleep = 0;
        for (int i = 0; i < TB_TOWER_PLANKS; i++) asleep += !tb_rigid_body_is_awake(t.world, t.planks[i]);
        if (asleep == TB_TOWER_PLANKS && all_asleep_at < 0.0f) all_asleep_at = now(&t);
        if (asleep != TB_TOWER_PLANKS) all_asleep_at = -1.0f; /* must stay asleep */
    }
    print_message("all planks asleep from %.3f s\n", all_asleep_at);
    assert_true(all_asleep_at > 0.0f && all_asleep_at <= 1.5f);
    tb_rigid_world_destroy(t.world);
}

static void ball_moves_at_least_12_planks_by_4_s(void **state)
{
    (void)state;
    tower t;
    tower_init(&t);
    while (now(&t) < 4.0f - 1e-4f) tower_step(&t);
    int moved = 0;
    for (int i = 0; i < TB_TOWER_PLANKS; i++) {
        tb_vec3 p;
        tb_rigid_body_get_pose(t.world, t.planks[i], &p, NULL);
        moved += tb_v3_dist(p, t.start[i]) > 0.5f;
    }
    print_message("planks moved more than 0.5 m by 4 s: %d\n", moved);
    assert_true(moved >= 12);
    tb_rigid_world_destroy(t.world);
}

/* When the knocked-down planks stop is chaotic: a change in the last bit of
 * any step (the solver's order, a rounding) moves the time the last plank
 * falls asleep by seconds either way, so the criterion is checked over 12
 * launches (the ball's horizontal velocity scaled by 1.00, 1.01, ... 1.11).
 *
 * Why launches ran late: the heavy ball had no rolling resistance (only its
 * 0.7/s angular damping), rolled on for up to 19 s, never slow enough to
 * sleep, and woke every plank it touched (the wake rule) again and again.
 * Over 96 launches scaled 0.900, 0.904, ... 1.280 the last plank slept at
 * 6.46 s on average, 7 of 96 at 10 s or later, the latest 17.01 s (a plank
 * leaning on the wall kept awake by the ball rolling against it); these 12:
 * 11 of 12 by 10 s, the latest 12.48 s (x1.07). With rolling resistance
 * (rigid_world.c, c_rr 0.02): 5.83 s on average, 0 of 96 late, the latest
 * 9.80 s; these 12: all by 7.29 s. It is not a law of nature: over 200
 * launches scaled 0.800 ... 1.397, 2 still end later (10.14 s: a plank
 * sliding off the heap long after the ball slept; 12.52 s at x1.340: the
 * ball still rolling on a plank at 12.1 s). So every one of these 12 must
 * have every plank asleep by 10 s, all planks on the floor and in the tray. */
#define LAUNCHES 12

static void toppled_planks_are_all_asleep_by_10_s(void **state)
{
    (void)state;
    int asleep_by_10 = 0;
    for (int v = 0; v < LAUNCHES; v++) {
        tower t;
        tower_init(&t);
        float last_awake = 0.0f;
        while (now(&t) < 20.0f - 1e-4f) {
            bool launching = t.ball < 0;
            tower_step(&t);
            if (launching && t.ball >= 0) {
                /* the step above launched the ball; scale its horizontal speed */
                tb_rigid_body_info info;
                assert_int_equal(tb_rigid_body_get_info(t.world, t.ball, &info), TB_PHYS_OK);
                float k = 1.0f + 0.01f * (float)v;
                tb_vec3 vel = tb_v3(info.linear_velocity.x * k, info.linear_velocity.y, info.linear_velocity.z * k);
                assert_int_equal(tb_rigid_body_set_velocity(t.world, t.ball, vel, info.angular_velocity), TB_PHYS_OK);
            }
            int awake = 0;
            for (int i = 0; i < TB_TOWER_PLANKS; i++) {
                tb_vec3 p;
                tb_rigid_body_get_pose(t.world, t.planks[i], &p, NULL);
                if (p.y < 0.14f || fabsf(p.x) > TB_TRAY_HALF_X || fabsf(p.z) > TB_TRAY_HALF_Z)
                    fail_msg("launch %d: plank %d at (%.3f, %.3f, %.3f) at t = %.3f s", v, i, p.x, p.y, p.z, now(&t));
                awake += tb_rigid_body_is_awake(t.world, t.planks[i]);
            }
            if (awake) last_awake = now(&t);
        }
        print_message("launch x%.2f: last plank asleep at %.2f s\n", 1.0 + 0.01 * v, last_awake);
        asleep_by_10 += last_awake < 10.0f - 1e-4f;
        tb_rigid_world_destroy(t.world);
        if (last_awake >= 10.0f - 1e-4f) fail_msg("launch %d (x%.2f): a plank awake until %.2f s", v, 1.0 + 0.01 * v, last_awake);
    }
    print_message("launches with every plank asleep by 10 s: %d of %d\n", asleep_by_10, LAUNCHES);
    assert_int_equal(asleep_by_10, LAUNCHES);
}

static void planks_never_sink_into_floor_or_leave_tray(void **state)
{
    (void)state;
    tower t;
    tower_init(&t);
    float min_y = 1e9f;
    while (now(&t) < 10.0f - 1e-4f) {
        tower_step(&t);
        for (int i = 0; i < TB_TOWER_PLANKS; i++) {
            tb_vec3 p;
            tb_rigid_body_get_pose(t.world, t.planks[i], &p, NULL);
            min_y = fminf(min_y, p.y);
            if (p.y < 0.14f || fabsf(p.x) > TB_TRAY_HALF_X || fabsf(p.z) > TB_TRAY_HALF_Z)
                fail_msg("plank %d at (%.3f, %.3f, %.3f) at t = %.3f s", i, p.x, p.y, p.z, now(&t));
        }
    }
    print_message("lowest plank centre: %.4f m\n", min_y);
    tb_rigid_world_destroy(t.world);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tower_stands_without_jitter),
        cmocka_unit_test(tower_is_asleep_by_1_5_s),
        cmocka_unit_test(ball_moves_at_least_12_planks_by_4_s),
        cmocka_unit_test(toppled_planks_are_all_asleep_by_10_s),
        cmocka_unit_test(planks_never_sink_into_floor_or_leave_tray),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
