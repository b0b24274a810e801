/* test_rigid_material.c: restitution and friction visibly change the motion
 * (the seed's sliders: restitution 0..0.9, friction 0..1.2). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"

#define DT (1.0f / 120.0f)
#define BALL_RADIUS 0.18f

static tb_rigid_world *floor_world(void)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = 8;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    assert_non_null(w);
    assert_int_equal(tb_rigid_scene_tray(w), TB_PHYS_OK);
    return w;
}

/* Drops a ball whose bottom starts 2 m above the floor; returns the highest
 * its bottom gets after the first bounce. */
static float rebound_height(float restitution)
{
    tb_rigid_world *w = floor_world();
    assert_int_equal(tb_rigid_world_set_restitution(w, restitution), TB_PHYS_OK);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.shape = TB_RIGID_SPHERE;
    d.radius = BALL_RADIUS;
    d.density = 0.8f;
    d.position = tb_v3(0.0f, 2.0f + BALL_RADIUS, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    assert_true(id >= 0);
    int bounced = 0;
    float best = 0.0f;
    for (int s = 0; s < 4 * 120; s++) {
        assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, id, &info);
        if (!bounced && info.linear_velocity.y > 0.0f) bounced = 1;
        if (bounced && info.linear_velocity.y <= 0.0f && info.position.y - BALL_RADIUS > 0.3f) break; /* apex */
        if (bounced) best = fmaxf(best, info.position.y - BALL_RADIUS);
        if (!bounced && s > 2 * 120) break; /* never bounced: stays 0 */
    }
    tb_rigid_world_destroy(w);
    return best;
}

static void ball_does_not_rebound_at_restitution_0(void **state)
{
    (void)state;
    float h = rebound_height(0.0f);
    print_message("rebound at e = 0: %.4f m\n", h);
    assert_true(h < 0.05f);
}

static void ball_rebounds_above_1_2_m_at_restitution_0_9(void **state)
{
    (void)state;
    float h = rebound_height(0.9f);
    print_message("rebound at e = 0.9: %.4f m\n", h);
    assert_true(h > 1.2f);
}

/* A flat box (0.6 x 0.2 x 0.6, too low to tip at friction 1.2) launched along
 * +x at 3 m/s on the floor; returns the distance travelled after `seconds`
 * and its speed then. */
static void slide(float friction, float seconds, float *distance, float *speed)
{
    tb_rigid_world *w = floor_world();
    assert_int_equal(tb_rigid_world_set_friction(w, friction), TB_PHYS_OK);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.half_extents = tb_v3(0.3f, 0.1f, 0.3f);
    d.position = tb_v3(-3.0f, 0.1f, 0.0f);
    d.linear_velocity = tb_v3(3.0f, 0.0f, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    assert_true(id >= 0);
    for (int s = 0; s < (int)(seconds / DT + 0.5f); s++) assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, id, &info);
    *distance = info.position.x + 3.0f;
    *speed = tb_v3_len(info.linear_velocity);
    tb_rigid_world_destroy(w);
}

static void box_stops_within_half_a_metre_at_friction_1_2(void **state)
{
    (void)state;
    float distance, speed;
    slide(1.2f, 2.0f, &distance, &speed);
    print_message("friction 1.2: slid %.3f m, speed %.4f m/s\n", distance, speed);
    assert_true(distance < 0.5f);
    assert_true(speed < 0.01f);
}

static void box_still_moves_after_2_m_at_friction_0(void **state)
{
    (void)state;
    float distance, speed;
    slide(0.0f, 0.75f, &distance, &speed); /* 3 m/s for 0.75 s: past 2 m */
    print_message("friction 0: slid %.3f m, speed %.4f m/s\n", distance, speed);
    assert_true(distance > 2.0f);
    assert_true(speed > 2.5f);
}

static void changing_restitution_or_friction_wakes_the_world(void **state)
{
    (void)state;
    tb_rigid_world *w = floor_world();
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 0.25f, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    for (int s = 0; s < 120; s++) tb_rigid_world_step(w, DT);
    assert_false(tb_rigid_body_is_awake(w, id));
    assert_int_equal(tb_rigid_world_set_restitution(w, 0.5f), TB_PHYS_OK);
    assert_true(tb_rigid_body_is_awake(w, id));
    for (int s = 0; s < 120; s++) tb_rigid_world_step(w, DT);
    assert_false(tb_rigid_body_is_awake(w, id));
    assert_int_equal(tb_rigid_world_set_friction(w, 0.9f), TB_PHYS_OK);
    assert_true(tb_rigid_body_is_awake(w, id));
    tb_rigid_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ball_does_not_rebound_at_restitution_0),
        cmocka_unit_test(ball_rebounds_above_1_2_m_at_restitution_0_9),
        cmocka_unit_test(box_stops_within_half_a_metre_at_friction_1_2),
        cmocka_unit_test(box_still_moves_after_2_m_at_friction_0),
        cmocka_unit_test(changing_restitution_or_friction_wakes_the_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
