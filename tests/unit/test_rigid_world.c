/* test_rigid_world.c: the API the server calls: ids, bad input, parameters,
 * contacts, ray casts, sleeping and waking, determinism, save and load. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid.h"
#include "physics/rigid_core.h"
#include "physics/rigid_scenes.h"
#include "unit/rigid_fixture.h"

#define DT TB_TEST_DT

/* Two boxes stacked at the origin, stepped until both sleep. */
static tb_rigid_world *sleeping_stack(int *bottom, int *top)
{
    tb_rigid_world *w = tb_test_tray_world(4);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 0.25f, 0.0f);
    *bottom = tb_rigid_world_add_body(w, &d);
    d.position = tb_v3(0.0f, 0.751f, 0.0f);
    *top = tb_rigid_world_add_body(w, &d);
    tb_test_step_for(w, 1.0f);
    assert_false(tb_rigid_body_is_awake(w, *bottom));
    assert_false(tb_rigid_body_is_awake(w, *top));
    return w;
}

/* ---- ids ----------------------------------------------------------------------------- */

static void removed_id_is_reused_and_capacity_is_enforced(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(3);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    int a = tb_rigid_world_add_body(w, &d), b = tb_rigid_world_add_body(w, &d), c = tb_rigid_world_add_body(w, &d);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(c, 2);
    assert_int_equal(tb_rigid_world_add_body(w, &d), TB_PHYS_ERR_FULL);
    assert_int_equal(tb_rigid_world_remove_body(w, b), TB_PHYS_OK);
    assert_false(tb_rigid_world_body_valid(w, b));
    assert_int_equal(tb_rigid_world_body_count(w), 2);
    assert_int_equal(tb_rigid_world_next_body(w, -1), 0);
    assert_int_equal(tb_rigid_world_next_body(w, 0), 2);
    assert_int_equal(tb_rigid_world_next_body(w, 2), -1);
    d.shape = TB_RIGID_SPHERE;
    assert_int_equal(tb_rigid_world_add_body(w, &d), b);
    tb_rigid_body_info info;
    assert_int_equal(tb_rigid_body_get_info(w, b, &info), TB_PHYS_OK);
    assert_int_equal(info.shape, TB_RIGID_SPHERE);
    tb_rigid_world_destroy(w);
}

static void mass_comes_from_density(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(2);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.half_extents = tb_v3(0.75f, 0.15f, 0.24f);
    d.density = 0.6f;
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, tb_rigid_world_add_body(w, &d), &info);
    assert_float_equal(info.mass, 1.5f * 0.3f * 0.48f * 0.6f, 1e-5f);
    d.shape = TB_RIGID_SPHERE;
    d.radius = 0.38f;
    d.density = 7.0f;
    tb_rigid_body_get_info(w, tb_rigid_world_add_body(w, &d), &info);
    assert_float_equal(info.mass, 4.0f / 3.0f * 3.14159265f * 0.38f * 0.38f * 0.38f * 7.0f, 1e-4f);
    tb_rigid_world_destroy(w);
}

/* ---- bad input ------------------------------------------------------------------------------ */

static void bad_input_returns_errors_and_changes_nothing(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(4);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0, 1, 0);
    int id = tb_rigid_world_add_body(w, &d);
    tb_test_step_for(w, 0.1f);
    size_t size = tb_rigid_world_save_size(w);
    unsigned char *before = malloc(size), *after = malloc(size);
    assert_int_equal(tb_rigid_world_save(w, before, size, NULL), TB_PHYS_OK);

    float nan = nanf("");
    assert_int_equal(tb_rigid_body_apply_impulse(w, id, tb_v3(nan, 0, 0), tb_v3(0, 1, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_body_apply_impulse(w, id, tb_v3(1, 0, 0), tb_v3(0, INFINITY, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_body_apply_impulse(w, 99, tb_v3(1, 0, 0), tb_v3(0, 1, 0)), TB_PHYS_ERR_NO_BODY);
    assert_int_equal(tb_rigid_body_apply_impulse(w, -1, tb_v3(1, 0, 0), tb_v3(0, 1, 0)), TB_PHYS_ERR_NO_BODY);
    assert_int_equal(tb_rigid_body_apply_impulse(w, 3, tb_v3(1, 0, 0), tb_v3(0, 1, 0)), TB_PHYS_ERR_NO_BODY);
    assert_int_equal(tb_rigid_body_set_velocity(w, id, tb_v3(0, 0, 0), tb_v3(nan, 0, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_body_set_velocity(w, id, tb_v3(1e4f, 0, 0), tb_v3(0, 0, 0)), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_body_apply_impulse(w, id, tb_v3(0, 1e9f, 0), tb_v3(0, 1, 0)), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_body_set_pose(w, id, tb_v3(0, 1, 0), tb_q(0, 0, 0, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_world_remove_body(w, 42), TB_PHYS_ERR_NO_BODY);
    assert_int_equal(tb_rigid_world_set_restitution(w, 0.95f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_restitution(w, -0.1f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_restitution(w, nan), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_friction(w, 1.3f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_friction(w, nan), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_iterations(w, 0), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_set_iterations(w, 51), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_step(w, 0.0f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_step(w, nan), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_step(w, 1.0f), TB_PHYS_ERR_RANGE);
    tb_rigid_body_def bad = d;
    bad.radius = nan;
    bad.shape = TB_RIGID_SPHERE;
    assert_int_equal(tb_rigid_world_add_body(w, &bad), TB_PHYS_ERR_RANGE);
    bad = d;
    bad.density = -1.0f;
    assert_int_equal(tb_rigid_world_add_body(w, &bad), TB_PHYS_ERR_RANGE);
    bad = d;
    bad.position.x = nan;
    assert_int_equal(tb_rigid_world_add_body(w, &bad), TB_PHYS_ERR_INVALID);
    bad = d;
    bad.shape = (tb_rigid_shape)7;
    assert_int_equal(tb_rigid_world_add_body(w, &bad), TB_PHYS_ERR_INVALID);
    tb_rigid_ray_hit hit;
    assert_int_equal(tb_rigid_world_ray_cast(w, tb_v3(0, 5, 0), tb_v3(0, 0, 0), 10.0f, &hit), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_world_add_plane(w, tb_v3(0, 0, 0), 1.0f), TB_PHYS_ERR_INVALID);

    assert_int_equal(tb_rigid_world_save(w, after, size, NULL), TB_PHYS_OK);
    assert_memory_equal(before, after, size);
    assert_float_equal(tb_rigid_world_restitution(w), 0.3f, 0.0f);
    assert_float_equal(tb_rigid_world_friction(w), 0.5f, 0.0f);
    assert_int_equal(tb_rigid_world_iterations(w), 10);
    assert_string_equal(tb_phys_strerror(TB_PHYS_ERR_NO_BODY), "unknown body");
    free(before);
    free(after);
    tb_rigid_world_destroy(w);
}

static void world_def_out_of_range_is_refused(void **state)
{
    (void)state;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = 0;
    assert_null(tb_rigid_world_create(&def));
    def = tb_rigid_world_def_default();
    def.iterations = 51;
    assert_null(tb_rigid_world_create(&def));
    def = tb_rigid_world_def_default();
    def.restitution = 2.0f;
    assert_null(tb_rigid_world_create(&def));
}

/* ---- contacts, rays, sleep ---------------------------------------------------------------- */

static void resting_box_reports_four_floor_contacts_carrying_its_weight(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(2);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 0.25f, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    tb_test_step_for(w, 0.2f);
    assert_true(tb_rigid_body_is_awake(w, id));
    tb_rigid_contact_info c[16];
    int n = tb_rigid_world_get_contacts(w, c, 16);
    assert_int_equal(n, 4);
    float total = 0.0f;
    for (int i = 0; i < n; i++) {
        assert_int_equal(c[i].body_a, -1);
        assert_int_equal(c[i].body_b, id);
        assert_float_equal(c[i].normal.y, 1.0f, 1e-6f);
        assert_float_equal(c[i].point.y, 0.0f, 0.005f);
        total += c[i].normal_impulse;
    }
    tb_rigid_world_stats stats;
    tb_rigid_world_get_stats(w, &stats);
    assert_int_equal(stats.contacts, 4);
    assert_int_equal(stats.bodies, 1);
    assert_int_equal(stats.awake, 1);
    assert_int_equal(stats.contacts_dropped, 0);
    /* the four points share the box, so each takes its own colour: 4 groups */
    assert_int_equal(stats.solver_groups, 4);
    assert_int_equal(stats.overflow_contacts, 0);
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, id, &info);
    /* the floor carries the weight: sum of impulses = m g dt */
    assert_float_equal(total, info.mass * 9.81f * DT, 0.02f * info.mass * 9.81f * DT);
    tb_rigid_world_destroy(w);
}

static void ray_cast_finds_the_closest_body(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(4);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(2.0f, 0.25f, 0.0f);
    int box = tb_rigid_world_add_body(w, &d);
    d.shape = TB_RIGID_SPHERE;
    d.radius = 0.3f;
    d.position = tb_v3(0.0f, 0.3f, 0.0f);
    int ball = tb_rigid_world_add_body(w, &d);
    tb_rigid_ray_hit hit;
    assert_int_equal(tb_rigid_world_ray_cast(w, tb_v3(-3.0f, 0.25f, 0.0f), tb_v3(2.0f, 0.0f, 0.0f), 10.0f, &hit), 1);
    assert_int_equal(hit.body, ball);
    assert_float_equal(hit.normal.x, -1.0f, 0.05f);
    assert_float_equal(hit.point.x, -sqrtf(0.3f * 0.3f - 0.05f * 0.05f), 1e-4f);
    assert_int_equal(tb_rigid_world_ray_cast(w, tb_v3(2.0f, 3.0f, 0.1f), tb_v3(0.0f, -1.0f, 0.0f), 10.0f, &hit), 1);
    assert_int_equal(hit.body, box);
    assert_float_equal(hit.distance, 2.5f, 1e-4f);
    assert_float_equal(hit.normal.y, 1.0f, 1e-5f);
    assert_int_equal(tb_rigid_world_ray_cast(w, tb_v3(2.0f, 3.0f, 0.1f), tb_v3(0.0f, -1.0f, 0.0f), 2.0f, &hit), 0);
    assert_int_equal(tb_rigid_world_ray_cast(w, tb_v3(0.0f, 3.0f, 1.0f), tb_v3(0.0f, -1.0f, 0.0f), 10.0f, &hit), 0);
    tb_rigid_world_destroy(w);
}

static void body_slow_for_0_45_s_falls_asleep(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(2);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 0.25f, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    tb_test_step_for(w, 0.40f);
    assert_true(tb_rigid_body_is_awake(w, id));
    tb_test_step_for(w, 0.1f);
    assert_false(tb_rigid_body_is_awake(w, id));
    assert_int_equal(tb_rigid_world_awake_count(w), 0);
    /* an impulse wakes it */
    assert_int_equal(tb_rigid_body_apply_impulse(w, id, tb_v3(0, 0.5f, 0), tb_v3(0, 0.25f, 0)), TB_PHYS_OK);
    assert_true(tb_rigid_body_is_awake(w, id));
    tb_rigid_world_destroy(w);
}

/* tb_rigid_body_sleep (the browser's prediction world loads bodies at rest as
 * asleep): at once, velocities zero, no step needed; an impulse wakes it. */
static void sleep_puts_a_moving_body_to_sleep_at_once(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(2);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 1.0f, 0.0f);
    d.linear_velocity = tb_v3(1.0f, 0.0f, 0.0f);
    int id = tb_rigid_world_add_body(w, &d);
    assert_true(tb_rigid_body_is_awake(w, id));
    assert_int_equal(tb_rigid_body_sleep(w, id), TB_PHYS_OK);
    assert_false(tb_rigid_body_is_awake(w, id));
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, id, &info);
    assert_true(info.linear_velocity.x == 0.0f && info.angular_velocity.y == 0.0f);
    tb_test_step_for(w, 0.5f); /* asleep in mid-air: it stays put */
    tb_rigid_body_get_info(w, id, &info);
    assert_true(info.position.y == 1.0f);
    assert_int_equal(tb_rigid_body_sleep(w, id + 1), TB_PHYS_ERR_NO_BODY);
    assert_int_equal(tb_rigid_body_apply_impulse(w, id, tb_v3(0, 0.5f, 0), info.position), TB_PHYS_OK);
    assert_true(tb_rigid_body_is_awake(w, id));
    tb_rigid_world_destroy(w);
}

/* A sleeping stack, a moving box knocks the bottom: the bottom wakes, and as
 * it moves, the box above wakes too (waking spreads through contacts). */
static void wake_spreads_through_contacts(void **state)
{
    (void)state;
    int bottom, top;
    tb_rigid_world *w = sleeping_stack(&bottom, &top);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(-2.0f, 0.25f, 0.0f);
    d.linear_velocity = tb_v3(6.0f, 0.0f, 0.0f);
    int hammer = tb_rigid_world_add_body(w, &d);
    assert_true(hammer >= 0);
    int bottom_woke = 0, top_woke = 0;
    for (int s = 0; s < 120; s++) {
        tb_rigid_world_step(w, DT);
        bottom_woke |= tb_rigid_body_is_awake(w, bottom);
        top_woke |= tb_rigid_body_is_awake(w, top);
    }
    assert_true(bottom_woke);
    assert_true(top_woke);
    tb_vec3 p;
    tb_rigid_body_get_pose(w, bottom, &p, NULL);
    assert_true(p.x > 0.1f);
    tb_rigid_world_destroy(w);
}

static void removing_a_support_wakes_what_rested_on_it(void **state)
{
    (void)state;
    int bottom, top;
    tb_rigid_world *w = sleeping_stack(&bottom, &top);
    assert_int_equal(tb_rigid_world_remove_body(w, bottom), TB_PHYS_OK);
    assert_true(tb_rigid_body_is_awake(w, top));
    tb_test_step_for(w, 1.0f);
    tb_vec3 p;
    tb_rigid_body_get_pose(w, top, &p, NULL);
    assert_float_equal(p.y, 0.25f, 0.01f);
    tb_rigid_world_destroy(w);
}

/* ---- determinism, save and load -------------------------------------------------------- */

static void run_dice_with_inputs(tb_rigid_world *w, int steps)
{
    for (int s = 0; s < steps; s++) {
        if (s == 200) tb_rigid_body_apply_impulse(w, 0, tb_v3(0.3f, 1.0f, 0.0f), tb_v3(0.0f, 0.5f, 0.0f));
        if (s == 400) tb_rigid_throw(w, TB_THROW_DIE, tb_v3(-2, 2, 0), tb_v3(4, 1, 0.5f), tb_v3(3, -7, 2), 1);
        if (s == 600) tb_rigid_world_set_friction(w, 0.8f);
        assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
    }
}

static void same_scene_and_inputs_give_bit_identical_poses_after_10_s(void **state)
{
    (void)state;
    tb_rigid_world *w[2];
    for (int k = 0; k < 2; k++) {
        w[k] = tb_test_tray_world(16);
        tb_rigid_rng rng = tb_rigid_rng_seed(42);
        assert_int_equal(tb_rigid_scene_dice(w[k], &rng, NULL, NULL), TB_PHYS_OK);
        run_dice_with_inputs(w[k], 1200);
    }
    int n = 0;
    for (int id = tb_rigid_world_next_body(w[0], -1); id >= 0; id = tb_rigid_world_next_body(w[0], id), n++) {
        tb_vec3 p[2];
        tb_quat q[2];
        for (int k = 0; k < 2; k++) assert_int_equal(tb_rigid_body_get_pose(w[k], id, &p[k], &q[k]), TB_PHYS_OK);
        assert_memory_equal(&p[0], &p[1], sizeof p[0]);
        assert_memory_equal(&q[0], &q[1], sizeof q[0]);
    }
    assert_int_equal(n, 6);
    /* and the whole state, caches and timers included */
    tb_test_assert_same_saves(w[0], w[1]);
    tb_rigid_world_destroy(w[0]);
    tb_rigid_world_destroy(w[1]);
}

static void loaded_world_steps_bit_identically_to_the_original(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(32);
    int planks[TB_TOWER_PLANKS];
    tb_rigid_scene_tower(w, planks);
    tb_test_step_for(w, 1.6f);
    tb_rigid_scene_tower_launch_ball(w);
    tb_test_step_for(w, 0.3f); /* mid-collapse: many contacts in the cache, sleep timers running */
    size_t size = tb_rigid_world_save_size(w);
    unsigned char *image = malloc(size);
    size_t written = 0;
    assert_int_equal(tb_rigid_world_save(w, image, size - 1, &written), TB_PHYS_ERR_NO_SPACE);
    assert_int_equal(tb_rigid_world_save(w, image, size, &written), TB_PHYS_OK);
    assert_int_equal(written, size);
    int err = 1;
    tb_rigid_world *copy = tb_rigid_world_load(image, size, &err);
    assert_int_equal(err, TB_PHYS_OK);
    assert_non_null(copy);
    assert_int_equal(tb_rigid_world_body_count(copy), 25);
    tb_test_step_for(w, 3.0f);
    tb_test_step_for(copy, 3.0f);
    tb_test_assert_same_saves(w, copy);
    free(image);
    tb_rigid_world_destroy(copy);
    tb_rigid_world_destroy(w);
}

static void load_rejects_truncated_or_corrupt_images(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(8);
    tb_rigid_rng rng = tb_rigid_rng_seed(3);
    tb_rigid_scene_dice(w, &rng, NULL, NULL);
    tb_test_step_for(w, 0.5f);
    size_t size = tb_rigid_world_save_size(w);
    unsigned char *image = malloc(size), *bad = malloc(size);
    tb_rigid_world_save(w, image, size, NULL);
    int err = 0;
    assert_null(tb_rigid_world_load(image, size - 1, &err));
    assert_int_equal(err, TB_PHYS_ERR_FORMAT);
    assert_null(tb_rigid_world_load(image, 10, &err));
    assert_null(tb_rigid_world_load(NULL, size, &err));
    /* flip bytes one at a time across the header and the first body: either
     * rejected, or a world that steps without producing NaN */
    tb_rigid_rng r = tb_rigid_rng_seed(9);
    for (int k = 0; k < 400; k++) {
        memcpy(bad, image, size);
        size_t at = (size_t)(tb_rigid_rng_next(&r) % (uint64_t)(size < 600 ? size : 600));
        bad[at] ^= (unsigned char)(1u + tb_rigid_rng_next(&r) % 255u);
        tb_rigid_world *x = tb_rigid_world_load(bad, size, &err);
        if (!x) { assert_true(err < 0); continue; }
        for (int s = 0; s < 10; s++) tb_rigid_world_step(x, DT);
        for (int id = tb_rigid_world_next_body(x, -1); id >= 0; id = tb_rigid_world_next_body(x, id)) {
            tb_vec3 p;
            tb_quat q;
            tb_rigid_body_get_pose(x, id, &p, &q);
            assert_true(tb_q_finite(q));
        }
        tb_rigid_world_destroy(x);
    }
    free(bad);
    free(image);
    tb_rigid_world_destroy(w);
}

/* Every step of a collapse, throws and removals included, leaves the
 * internal state consistent (the validation switch of STYLE.md). */
static void internal_state_stays_consistent_through_a_collapse(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(40);
    int planks[TB_TOWER_PLANKS];
    tb_rigid_scene_tower(w, planks);
    tb_rigid_rng rng = tb_rigid_rng_seed(11);
    for (int s = 0; s < 900; s++) {
        if (s == 192) tb_rigid_scene_tower_launch_ball(w);
        if (s % 97 == 0)
            tb_rigid_throw(w, (tb_rigid_throw_kind)(s % 2), tb_v3(-2.0f, 2.5f, tb_rigid_rng_float(&rng) - 0.5f),
                           tb_v3(6.0f, 0.0f, 0.0f), tb_v3(0.0f, 3.0f, 0.0f), 0);
        if (s % 131 == 0 && s > 0) tb_rigid_world_remove_body(w, planks[(s / 131) % TB_TOWER_PLANKS]);
        assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
        const char *broken = tb_rigid_world_validate(w);
        if (broken) fail_msg("step %d: %s", s, broken);
    }
    tb_rigid_world_destroy(w);
}


/* ---- the idle fast path ------------------------------------------------------------------ */

static uint64_t idle_steps(const tb_rigid_world *w)
{
    tb_rigid_world_stats st;
    tb_rigid_world_get_stats(w, &st);
    return st.idle_steps;
}

static tb_rigid_world *resting_tower(bool idle_path_off)
{
    tb_rigid_world *w = tb_test_tray_world(32);
    w->idle_path_off = idle_path_off;
    assert_int_equal(tb_rigid_scene_tower(w, NULL), TB_PHYS_OK);
    tb_test_step_for(w, 1.0f); /* planks asleep at ~0.51 s */
    return w;
}

static void asleep_world_takes_the_idle_path_and_counts_time(void **state)
{
    (void)state;
    tb_rigid_world *w = resting_tower(false);
    assert_int_equal(tb_rigid_world_awake_count(w), 0);
    uint64_t idle0 = idle_steps(w), steps0 = tb_rigid_world_step_count(w);
    double t0 = tb_rigid_world_time(w);
    assert_true(idle0 > 0);
    tb_test_step_for(w, 1.0f);
    assert_int_equal(idle_steps(w) - idle0, 120);
    assert_int_equal(tb_rigid_world_step_count(w) - steps0, 120);
    assert_true(tb_rigid_world_time(w) > t0 + 0.99 && tb_rigid_world_time(w) < t0 + 1.01);
    assert_int_equal(tb_rigid_world_contact_count(w), 0);
    assert_null(tb_rigid_world_validate(w));
    /* with the fast path off, every step runs the pipeline: the counter stays at 0 */
    tb_rigid_world *full = resting_tower(true);
    tb_test_step_for(full, 1.0f);
    assert_int_equal(idle_steps(full), 0);
    tb_rigid_world_destroy(full);
    tb_rigid_world_destroy(w);
}

/* Sleep, idle steps, then each waking input: the world with the fast path
 * must stay bit-identical to one that always runs the full step, and to a
 * copy saved and reloaded while asleep. */
static void idle_path_is_bit_identical_to_the_full_step_through_every_wake(void **state)
{
    (void)state;
    tb_rigid_world *w[3];
    w[0] = resting_tower(false);
    w[1] = resting_tower(true);
    size_t size = tb_rigid_world_save_size(w[0]);
    unsigned char *image = malloc(size);
    assert_int_equal(tb_rigid_world_save(w[0], image, size, NULL), TB_PHYS_OK);
    int err = 1;
    w[2] = tb_rigid_world_load(image, size, &err);
    assert_non_null(w[2]);
    free(image);
    for (int phase = 0; phase < 4; phase++) {
        for (int k = 0; k < 3; k++) {
            uint64_t idle0 = idle_steps(w[k]);
            if (phase == 0) assert_int_equal(tb_rigid_body_apply_impulse(w[k], 23, tb_v3(0.0f, 0.0f, 0.4f), tb_v3(0.0f, 2.0f, 0.0f)), TB_PHYS_OK);
            if (phase == 1) assert_true(tb_rigid_world_set_friction(w[k], 0.7f) == TB_PHYS_OK);
            if (phase == 2) assert_true(tb_rigid_throw(w[k], TB_THROW_BALL, tb_v3(-2, 3, 0), tb_v3(3, 0, 0), tb_v3(0, 0, 0), 1) >= 0);
            if (phase == 3) assert_true(tb_rigid_scene_tower_launch_ball(w[k]) >= 0);
            assert_true(tb_rigid_world_awake_count(w[k]) > 0);
            assert_int_equal(tb_rigid_world_step(w[k], DT), TB_PHYS_OK);
            assert_int_equal(idle_steps(w[k]), idle0); /* woken: a full step */
            /* back to sleep (the same step in all three worlds), then idle */
            int steps = 0;
            while (tb_rigid_world_awake_count(w[k]) > 0 && steps < 2400) {
                assert_int_equal(tb_rigid_world_step(w[k], DT), TB_PHYS_OK);
                steps++;
            }
            assert_int_equal(tb_rigid_world_awake_count(w[k]), 0);
            tb_test_step_for(w[k], 0.5f);
        }
        assert_true(idle_steps(w[0]) > 0 && idle_steps(w[2]) > 0);
        tb_test_assert_same_saves(w[0], w[1]);
        tb_test_assert_same_saves(w[0], w[2]);
    }
    for (int k = 0; k < 3; k++) tb_rigid_world_destroy(w[k]);
}

/* The colouring is kept while the contacts' solver bodies repeat
 * (constraint_graph.c): a world that keeps it must step bit-identically to
 * one whose colouring is thrown away before every step, through the tower's
 * rest (colouring kept) and its collapse (rebuilt). */
static void kept_colouring_steps_bit_identically_to_a_fresh_one(void **state)
{
    (void)state;
    tb_rigid_world *w[2];
    for (int k = 0; k < 2; k++) {
        w[k] = tb_test_tray_world(TB_SCENE_TOWER_BODIES);
        assert_int_equal(tb_rigid_scene_tower(w[k], NULL), TB_PHYS_OK);
    }
    int kept = 0;
    for (int s = 0; s < 600; s++) {
        if (s == 60)
            for (int k = 0; k < 2; k++) assert_true(tb_rigid_scene_tower_launch_ball(w[k]) >= 0);
        tb_constraint_graph_reset(&w[1]->graph);
        /* the solver bodies the last colouring was built from: equal to this
         * step's contacts' means this step kept it */
        const tb_constraint_graph *g = &w[0]->graph;
        int last_count = g->last_count;
        uint64_t *last = malloc(sizeof *last * (size_t)(last_count > 0 ? last_count : 1));
        if (last_count > 0) memcpy(last, g->last_bodies, sizeof *last * (size_t)last_count);
        for (int k = 0; k < 2; k++) assert_int_equal(tb_rigid_world_step(w[k], DT), TB_PHYS_OK);
        assert_null(tb_rigid_world_validate(w[0]));
        bool same = last_count > 0 && last_count == w[0]->contact_count;
        for (int i = 0; same && i < last_count; i++) {
            const tb_contact *c = &w[0]->contacts[i];
            same = last[i] == ((uint64_t)(uint32_t)c->sa << 32 | (uint32_t)c->sb);
        }
        kept += same;
        free(last);
        tb_test_assert_same_saves(w[0], w[1]);
        assert_int_equal(w[0]->graph.group_count, w[1]->graph.group_count);
        assert_int_equal(w[0]->graph.overflow_count, w[1]->graph.overflow_count);
    }
    print_message("steps that kept the last colouring: %d of 600\n", kept);
    assert_true(kept > 0);
    for (int k = 0; k < 2; k++) tb_rigid_world_destroy(w[k]);
}

/* Worlds stepped in turn on one shared scratch (rigid.h) step bit-identically
 * to twins with scratches of their own: three towers knocked at different
 * times, then a pile of 200 that grows the scratch while the towers are on
 * it, then one tower given its own scratch back. Each world's contacts are
 * its own right after its step and none once another world has stepped. */
static void worlds_on_a_shared_scratch_step_like_worlds_with_their_own(void **state)
{
    (void)state;
    enum { N = 4 };
    tb_rigid_world *shared[N], *own[N];
    tb_rigid_world_def def = tb_rigid_world_def_default();
    for (int k = 0; k < N; k++) {
        /* the towers' contact capacity (400: 357 at most) well under the pile's
         * count, so the pile writes where a tower's own last contact would be */
        def.body_capacity = k < 3 ? TB_SCENE_TOWER_BODIES + 4 : 200;
        def.contact_capacity = k < 3 ? 400 : 0;
        shared[k] = tb_rigid_world_create(&def);
        own[k] = tb_rigid_world_create(&def);
        assert_non_null(shared[k]);
        assert_non_null(own[k]);
        assert_int_equal(tb_rigid_scene_tray(shared[k]), TB_PHYS_OK);
        assert_int_equal(tb_rigid_scene_tray(own[k]), TB_PHYS_OK);
        for (tb_rigid_world **w = (tb_rigid_world *[]){shared[k], own[k], NULL}; *w; w++)
            assert_int_equal(k < 3 ? tb_rigid_scene_tower(*w, NULL) : tb_rigid_scene_pile(*w, 200), TB_PHYS_OK);
    }
    tb_rigid_scratch *scratch = tb_rigid_scratch_create();
    assert_non_null(scratch);
    for (int k = 0; k < 3; k++) assert_int_equal(tb_rigid_world_use_scratch(shared[k], scratch), TB_PHYS_OK);
    static tb_rigid_contact_info mine[4096], twin[4096];
    int compared = 0, superseded = 0, pile_most = 0;
    for (int s = 0; s < 480; s++) {
        if (s == 120) assert_int_equal(tb_rigid_world_use_scratch(shared[3], scratch), TB_PHYS_OK);
        if (s == 360) assert_int_equal(tb_rigid_world_use_scratch(shared[1], NULL), TB_PHYS_OK);
        for (int k = 0; k < N; k++) {
            if (k < 3 && s == 30 + 40 * k) {
                assert_true(tb_rigid_scene_tower_launch_ball(shared[k]) >= 0);
                assert_true(tb_rigid_scene_tower_launch_ball(own[k]) >= 0);
            }
            assert_int_equal(tb_rigid_world_step(shared[k], DT), TB_PHYS_OK);
            assert_int_equal(tb_rigid_world_step(own[k], DT), TB_PHYS_OK);
            assert_null(tb_rigid_world_validate(shared[k]));
            int n = tb_rigid_world_get_contacts(shared[k], mine, 4096);
            assert_int_equal(n, tb_rigid_world_get_contacts(own[k], twin, 4096));
            assert_memory_equal(mine, twin, sizeof *mine * (size_t)n);
            compared += n;
            if (k == 3 && n > pile_most) pile_most = n;
        }
        /* a world whose step is no longer the last one on the scratch reports none */
        for (int k = 0; k < N; k++)
            if (shared[k]->scratch == scratch && !tb_rigid__attached(shared[k])) {
                assert_int_equal(tb_rigid_world_get_contacts(shared[k], mine, 4096), 0);
                superseded++;
            }
        if (s % 60 == 59)
            for (int k = 0; k < N; k++) tb_test_assert_same_saves(shared[k], own[k]);
    }
    assert_true(compared > 0);
    assert_true(superseded > 480);
    assert_true(pile_most > 400);
    for (int k = 0; k < N; k++) {
        tb_test_assert_same_saves(shared[k], own[k]);
        tb_rigid_world_destroy(shared[k]);
        tb_rigid_world_destroy(own[k]);
    }
    tb_rigid_scratch_destroy(scratch);
}

/* One set of codes for rigid, cloth and soft (physics/result.h), one
 * strerror: every code from OK to the last is named, and no two alike. */
static void every_physics_error_has_one_name_of_its_own(void **state)
{
    (void)state;
    const char *unknown = tb_phys_strerror(1);
    assert_string_equal(unknown, "unknown error");
    assert_string_equal(tb_phys_strerror(TB_PHYS_ERR_INTERNAL - 1), unknown);
    for (int a = TB_PHYS_ERR_INTERNAL; a <= TB_PHYS_OK; a++) {
        assert_non_null(tb_phys_strerror(a));
        assert_string_not_equal(tb_phys_strerror(a), unknown);
        for (int b = TB_PHYS_ERR_INTERNAL; b < a; b++) assert_string_not_equal(tb_phys_strerror(a), tb_phys_strerror(b));
    }
}

/* Grabs are the kernel's (a velocity servo named by an opaque handle): the
 * held point follows its target, a removed body ends its grab, handles are
 * given back, and bad input changes nothing. */
static void a_grab_drags_its_point_and_ends_with_its_body(void **state)
{
    (void)state;
    tb_rigid_world *w = tb_test_tray_world(8);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(0.0f, 0.25f, 0.0f);
    int box = tb_rigid_world_add_body(w, &d);
    assert_true(box >= 0);
    tb_test_step_for(w, 1.0f);
    tb_vec3 at = tb_v3(0.25f, 0.25f, 0.0f); /* the middle of its +x face */
    assert_int_equal(tb_rigid_world_grab_start(w, box, tb_v3(NAN, 0, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_world_grab_start(w, box + 1, at), TB_PHYS_ERR_NO_BODY);
    int grab = tb_rigid_world_grab_start(w, box, at);
    assert_true(grab >= 0);
    assert_int_equal(tb_rigid_world_grab_body(w, grab), box);
    tb_vec3 target = tb_v3(1.0f, 2.0f, -0.5f);
    assert_int_equal(tb_rigid_world_grab_move(w, grab, tb_v3(0, INFINITY, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_rigid_world_grab_move(w, grab, target), TB_PHYS_OK);
    tb_test_step_for(w, 2.0f);
    tb_vec3 pos;
    tb_quat rot;
    assert_int_equal(tb_rigid_body_get_pose(w, box, &pos, &rot), TB_PHYS_OK);
    tb_vec3 held = tb_v3_add(pos, tb_q_rotate(rot, tb_v3(0.25f, 0.0f, 0.0f)));
    print_message("held point %.3f m from its target\n", tb_v3_dist(held, target));
    assert_true(tb_v3_dist(held, target) < 0.1f);
    /* every slot: the handles are distinct, one more is refused */
    int handles[TB_RIGID_MAX_GRABS];
    handles[0] = grab;
    for (int i = 1; i < TB_RIGID_MAX_GRABS; i++) {
        handles[i] = tb_rigid_world_grab_start(w, box, at);
        assert_true(handles[i] >= 0);
        for (int j = 0; j < i; j++) assert_int_not_equal(handles[i], handles[j]);
    }
    assert_int_equal(tb_rigid_world_grab_start(w, box, at), TB_PHYS_ERR_TOO_MANY_GRABS);
    assert_int_equal(tb_rigid_world_grab_end(w, handles[3]), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_grab_end(w, handles[3]), TB_PHYS_ERR_UNKNOWN_GRAB);
    assert_int_equal(tb_rigid_world_grab_start(w, box, at), handles[3]); /* given back, taken again */
    /* the body goes: so do its grabs */
    assert_int_equal(tb_rigid_world_remove_body(w, box), TB_PHYS_OK);
    for (int i = 0; i < TB_RIGID_MAX_GRABS; i++) {
        assert_int_equal(tb_rigid_world_grab_body(w, handles[i]), TB_PHYS_ERR_UNKNOWN_GRAB);
        assert_int_equal(tb_rigid_world_grab_move(w, handles[i], target), TB_PHYS_ERR_UNKNOWN_GRAB);
    }
    tb_test_step_for(w, 0.1f);
    tb_rigid_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(removed_id_is_reused_and_capacity_is_enforced),
        cmocka_unit_test(mass_comes_from_density),
        cmocka_unit_test(bad_input_returns_errors_and_changes_nothing),
        cmocka_unit_test(world_def_out_of_range_is_refused),
        cmocka_unit_test(resting_box_reports_four_floor_contacts_carrying_its_weight),
        cmocka_unit_test(ray_cast_finds_the_closest_body),
        cmocka_unit_test(body_slow_for_0_45_s_falls_asleep),
        cmocka_unit_test(sleep_puts_a_moving_body_to_sleep_at_once),
        cmocka_unit_test(wake_spreads_through_contacts),
        cmocka_unit_test(removing_a_support_wakes_what_rested_on_it),
        cmocka_unit_test(same_scene_and_inputs_give_bit_identical_poses_after_10_s),
        cmocka_unit_test(kept_colouring_steps_bit_identically_to_a_fresh_one),
        cmocka_unit_test(worlds_on_a_shared_scratch_step_like_worlds_with_their_own),
        cmocka_unit_test(loaded_world_steps_bit_identically_to_the_original),
        cmocka_unit_test(load_rejects_truncated_or_corrupt_images),
        cmocka_unit_test(internal_state_stays_consistent_through_a_collapse),
        cmocka_unit_test(asleep_world_takes_the_idle_path_and_counts_time),
        cmocka_unit_test(idle_path_is_bit_identical_to_the_full_step_through_every_wake),
        cmocka_unit_test(every_physics_error_has_one_name_of_its_own),
        cmocka_unit_test(a_grab_drags_its_point_and_ends_with_its_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
