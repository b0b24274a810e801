/* test_rigid_scenes.c: the scenes are the seed's data (positions, sizes,
 * densities), and the user inputs (throw, launch) do what they say. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"

static tb_rigid_world *world(int capacity)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    assert_non_null(w);
    return w;
}

static void tower_planks_follow_the_seed_layout(void **state)
{
    (void)state;
    tb_rigid_world *w = world(TB_SCENE_TOWER_BODIES);
    int planks[TB_TOWER_PLANKS];
    assert_int_equal(tb_rigid_scene_tower(w, planks), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_body_count(w), 24);
    for (int layer = 0; layer < 8; layer++) {
        for (int k = 0; k < 3; k++) {
            tb_rigid_body_info info;
            assert_int_equal(tb_rigid_body_get_info(w, planks[layer * 3 + k], &info), TB_PHYS_OK);
            float o = (float)(k - 1) * 0.5f, y = 0.15f + (float)layer * 0.3015f + 0.0015f;
            tb_vec3 expect = layer % 2 == 0 ? tb_v3(1.7f, y, o) : tb_v3(1.7f + o, y, 0.0f);
            assert_float_equal(info.position.x, expect.x, 1e-6f);
            assert_float_equal(info.position.y, expect.y, 1e-6f);
            assert_float_equal(info.position.z, expect.z, 1e-6f);
            assert_float_equal(info.half_extents.x, 0.75f, 0.0f);
            assert_float_equal(info.half_extents.y, 0.15f, 0.0f);
            assert_float_equal(info.half_extents.z, 0.24f, 0.0f);
            assert_float_equal(info.mass, 1.5f * 0.3f * 0.48f * 0.6f, 1e-5f);
            assert_int_equal(info.look.kind, TB_LOOK_WOOD_PLANK);
            /* odd layers are turned 90 degrees about y: the long axis runs along z */
            tb_vec3 long_axis = tb_q_rotate(info.rotation, tb_v3(1, 0, 0));
            assert_float_equal(fabsf(long_axis.x), (layer % 2 == 0 ? 1.0f : 0.0f), 1e-6f);
        }
    }
    int ball = tb_rigid_scene_tower_launch_ball(w);
    tb_rigid_body_info info;
    assert_int_equal(tb_rigid_body_get_info(w, ball, &info), TB_PHYS_OK);
    assert_int_equal(info.shape, TB_RIGID_SPHERE);
    assert_float_equal(info.radius, 0.38f, 0.0f);
    assert_float_equal(info.position.x, -3.3f, 0.0f);
    assert_float_equal(info.position.y, 0.95f, 0.0f);
    assert_float_equal(info.linear_velocity.x, 12.0f, 0.0f);
    assert_float_equal(info.linear_velocity.y, 1.6f, 0.0f);
    assert_float_equal(info.mass, 4.0f / 3.0f * 3.14159265f * 0.38f * 0.38f * 0.38f * 7.0f, 1e-4f);
    /* the world is full: launching again is refused, not a crash */
    assert_int_equal(tb_rigid_scene_tower_launch_ball(w), TB_PHYS_ERR_FULL);
    tb_rigid_world_destroy(w);
}

static void pile_fills_a_13_by_8_grid_layer_by_layer(void **state)
{
    (void)state;
    tb_rigid_world *w = world(1000);
    assert_int_equal(tb_rigid_scene_pile(w, 1000), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_body_count(w), 1000);
    tb_vec3 p;
    tb_rigid_body_get_pose(w, 0, &p, NULL);
    assert_float_equal(p.x, -3.6f, 1e-6f);
    assert_float_equal(p.y, 0.5f, 1e-6f);
    assert_float_equal(p.z, -2.1f, 1e-6f);
    tb_rigid_body_get_pose(w, 12, &p, NULL);
    assert_float_equal(p.x, 3.6f, 1e-5f);
    tb_rigid_body_get_pose(w, 103, &p, NULL);
    assert_float_equal(p.z, 2.1f, 1e-5f);
    tb_rigid_body_get_pose(w, 104, &p, NULL);
    assert_float_equal(p.y, 1.1f, 1e-5f);
    assert_float_equal(p.x, -3.6f, 1e-6f);
    tb_rigid_body_get_pose(w, 999, &p, NULL);
    assert_float_equal(p.y, 0.5f + 0.6f * 9.0f, 1e-5f);
    assert_int_equal(tb_rigid_scene_pile(w, 1001), TB_PHYS_ERR_RANGE);
    tb_rigid_world_destroy(w);
}

static void dice_scene_is_three_dice_and_two_balls_from_the_seed(void **state)
{
    (void)state;
    tb_rigid_world *w = world(TB_SCENE_DICE_BODIES);
    tb_rigid_rng rng = tb_rigid_rng_seed(5);
    int dice[3], balls[2];
    assert_int_equal(tb_rigid_scene_dice(w, &rng, dice, balls), TB_PHYS_OK);
    for (int i = 0; i < 3; i++) {
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, dice[i], &info);
        assert_int_equal(info.look.kind, TB_LOOK_DIE);
        assert_float_equal(info.half_extents.x, 0.25f, 0.0f);
        assert_float_equal(info.mass, 0.125f, 1e-6f);
        assert_true(info.position.x >= -3.1f && info.position.x <= -2.8f); /* thrown from the left */
        assert_float_equal(info.position.y, 1.2f + 0.6f * (float)i, 1e-6f);
        assert_true(info.linear_velocity.x >= 5.0f && info.linear_velocity.x <= 7.5f);
        assert_true(fabsf(info.angular_velocity.x) <= 12.0f);
    }
    for (int i = 0; i < 2; i++) {
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, balls[i], &info);
        assert_int_equal(info.shape, TB_RIGID_SPHERE);
        assert_float_equal(info.radius, 0.18f, 0.0f);
    }
    /* the same seed gives the same throw, another seed another */
    tb_rigid_body_info a, b;
    tb_rigid_body_get_info(w, dice[0], &a);
    rng = tb_rigid_rng_seed(5);
    tb_rigid_scene_dice(w, &rng, dice, balls);
    tb_rigid_body_get_info(w, dice[0], &b);
    assert_memory_equal(&a.position, &b.position, sizeof a.position);
    rng = tb_rigid_rng_seed(6);
    tb_rigid_scene_dice(w, &rng, dice, balls);
    tb_rigid_body_get_info(w, dice[0], &b);
    assert_true(a.position.x != b.position.x);
    tb_rigid_world_destroy(w);
}

static void throw_spawns_a_moving_ball_or_die(void **state)
{
    (void)state;
    tb_rigid_world *w = world(4);
    assert_int_equal(tb_rigid_scene_tray(w), TB_PHYS_OK);
    int ball = tb_rigid_throw(w, TB_THROW_BALL, tb_v3(0, 2, 0), tb_v3(3, 1, 0), tb_v3_zero(), 4);
    int die = tb_rigid_throw(w, TB_THROW_DIE, tb_v3(1, 2, 0), tb_v3(-3, 1, 0), tb_v3(0, 8, 0), 1);
    assert_true(ball >= 0 && die >= 0);
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, ball, &info);
    assert_int_equal(info.shape, TB_RIGID_SPHERE);
    assert_int_equal(info.look.color, 4);
    assert_float_equal(info.linear_velocity.x, 3.0f, 0.0f);
    assert_true(info.awake);
    tb_rigid_body_get_info(w, die, &info);
    assert_int_equal(info.look.kind, TB_LOOK_DIE);
    assert_float_equal(info.angular_velocity.y, 8.0f, 0.0f);
    float nan = nanf("");
    assert_int_equal(tb_rigid_throw(w, TB_THROW_BALL, tb_v3(nan, 2, 0), tb_v3_zero(), tb_v3_zero(), 0),
                     TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_throw(w, (tb_rigid_throw_kind)9, tb_v3(0, 2, 0), tb_v3_zero(), tb_v3_zero(), 0),
                     TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_world_body_count(w), 2);
    tb_rigid_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tower_planks_follow_the_seed_layout),
        cmocka_unit_test(pile_fills_a_13_by_8_grid_layer_by_layer),
        cmocka_unit_test(dice_scene_is_three_dice_and_two_balls_from_the_seed),
        cmocka_unit_test(throw_spawns_a_moving_ball_or_die),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
