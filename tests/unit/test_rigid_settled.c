/* test_rigid_settled.c: the settled tower (tb_rigid_scene_tower_settle and
 * _restore, remembered by sim/tower_memo.h: tb_tower_memo_build) and
 * the body images under it (tb_rigid_world_save_bodies / _restore_bodies).
 *
 * The reference everywhere is the plain build stepped at 1/120 s until every
 * plank sleeps, in a world made from the same def: the settled tower must be
 * that state bit for bit (bodies, sleep timers, warm-start cache), and must
 * then step exactly as it does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "sim/tower_memo.h"
#include "unit/rigid_fixture.h"

#define ROOM_CAPACITY (TB_SCENE_TOWER_BODIES + 28) /* a tower room's world: room for throws */

/* The memo a scheduler owns (sim/tower_memo.h), fresh for each test. */
static tb_tower_memo memo;

static int fresh_memo(void **state)
{
    (void)state;
    tb_tower_memo_init(&memo);
    return 0;
}

static int close_memo(void **state)
{
    (void)state;
    tb_tower_memo_close(&memo);
    return 0;
}

static tb_rigid_world *room_world(float friction)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = ROOM_CAPACITY;
    def.friction = friction;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    assert_non_null(w);
    return w;
}

typedef struct image {
    unsigned char *bytes;
    size_t len;
} image;

static image bodies_of(const tb_rigid_world *w)
{
    image im = {NULL, tb_rigid_world_bodies_size(w)};
    im.bytes = malloc(im.len);
    assert_non_null(im.bytes);
    size_t written = 0;
    assert_int_equal(tb_rigid_world_save_bodies(w, im.bytes, im.len, &written), TB_PHYS_OK);
    assert_int_equal(written, im.len);
    return im;
}

static void assert_same_bodies(const tb_rigid_world *a, const tb_rigid_world *b)
{
    image ia = bodies_of(a), ib = bodies_of(b);
    assert_int_equal(ia.len, ib.len);
    assert_memory_equal(ia.bytes, ib.bytes, ia.len);
    free(ia.bytes);
    free(ib.bytes);
}

/* The reference: plain build, then steps until nothing is awake. Returns the steps taken. */
static int build_and_settle(tb_rigid_world *w)
{
    assert_int_equal(tb_rigid_scene_tower(w, NULL), TB_PHYS_OK);
    int steps = 0;
    while (tb_rigid_world_awake_count(w) > 0) {
        assert_true(steps < TB_TOWER_SETTLE_MAX_STEPS);
        assert_int_equal(tb_rigid_world_step(w, TB_TEST_DT), TB_PHYS_OK);
        steps++;
    }
    return steps;
}

static void settled_tower_is_build_and_step_until_asleep_bit_for_bit(void **state)
{
    (void)state;
    tb_rigid_world *ref = room_world(0.5f);
    int steps = build_and_settle(ref);
    print_message("plain build asleep after %d steps (%.3f s)\n", steps, steps * TB_TEST_DT);
    assert_true(steps > 30); /* it does drop and settle: not a trivially asleep build */

    /* a room that has lived a while: its clock and parameters must stay */
    tb_rigid_world *w = room_world(0.5f);
    tb_rigid_rng rng = tb_rigid_rng_seed(3);
    assert_int_equal(tb_rigid_scene_dice(w, &rng, NULL, NULL), TB_PHYS_OK);
    tb_test_step_for(w, 0.5f);
    double time = tb_rigid_world_time(w);
    uint64_t count = tb_rigid_world_step_count(w);

    int planks[TB_TOWER_PLANKS];
    assert_int_equal(tb_tower_memo_build(&memo, w, planks), 1);
    assert_int_equal(tb_rigid_world_awake_count(w), 0);
    assert_int_equal(tb_rigid_world_body_count(w), TB_TOWER_PLANKS);
    for (int i = 0; i < TB_TOWER_PLANKS; i++) assert_int_equal(planks[i], i);
    assert_true(tb_rigid_world_time(w) == time);
    assert_int_equal(tb_rigid_world_step_count(w), count);
    assert_float_equal(tb_rigid_world_friction(w), 0.5f, 0.0f);
    assert_same_bodies(w, ref); /* poses, zero velocities, sleep timers, cache */

    /* and it steps as the reference does, through a knock-down */
    assert_int_equal(tb_rigid_scene_tower_launch_ball(w), TB_TOWER_PLANKS);
    assert_int_equal(tb_rigid_scene_tower_launch_ball(ref), TB_TOWER_PLANKS);
    for (int i = 0; i < 240; i++) {
        assert_int_equal(tb_rigid_world_step(w, TB_TEST_DT), TB_PHYS_OK);
        assert_int_equal(tb_rigid_world_step(ref, TB_TEST_DT), TB_PHYS_OK);
    }
    assert_same_bodies(w, ref);
    tb_rigid_world_destroy(w);
    tb_rigid_world_destroy(ref);
}

/* A sleeping tower stands still by construction (a sleeping body is not
 * integrated), so the settled tower is woken first (as a slider change does):
 * all 24 planks then run through the solver for 1 s and must stay where they
 * are and fall asleep again. Waking starts the contacts without warm-start
 * impulses (sleeping pairs keep none), so the top planks sag once: measured
 * 0.069 m/s in the 2nd step, under 0.015 m/s after 0.1 s, 2.0 mm in all. The
 * bounds: at most 0.1 m/s in the first 0.1 s, 0.02 m/s after it, 3 mm, 0.5
 * degrees, asleep again from 0.5 s (0.45 s slow) to the end. */
static void settled_tower_woken_stands_still_for_1_s(void **state)
{
    (void)state;
    tb_rigid_world *w = room_world(0.5f);
    assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 1);
    tb_vec3 start[TB_TOWER_PLANKS];
    tb_quat start_q[TB_TOWER_PLANKS];
    for (int i = 0; i < TB_TOWER_PLANKS; i++) assert_int_equal(tb_rigid_body_get_pose(w, i, &start[i], &start_q[i]), 0);
    tb_rigid_world_wake_all(w);
    assert_int_equal(tb_rigid_world_awake_count(w), TB_TOWER_PLANKS);
    float max_jolt = 0.0f, max_speed = 0.0f, max_move = 0.0f, max_angle = 0.0f;
    int awake_steps = 0;
    for (int s = 0; s < 120; s++) {
        assert_int_equal(tb_rigid_world_step(w, TB_TEST_DT), TB_PHYS_OK);
        awake_steps += tb_rigid_world_awake_count(w) > 0;
        if (s >= 60) assert_int_equal(tb_rigid_world_awake_count(w), 0);
        for (int i = 0; i < TB_TOWER_PLANKS; i++) {
            tb_rigid_body_info info;
            assert_int_equal(tb_rigid_body_get_info(w, i, &info), 0);
            if (s < 12) max_jolt = fmaxf(max_jolt, tb_v3_len(info.linear_velocity));
            else max_speed = fmaxf(max_speed, tb_v3_len(info.linear_velocity));
            tb_vec3 p;
            tb_quat q;
            assert_int_equal(tb_rigid_body_get_pose(w, i, &p, &q), 0);
            max_move = fmaxf(max_move, tb_v3_dist(p, start[i]));
            float d = fabsf(q.x * start_q[i].x + q.y * start_q[i].y + q.z * start_q[i].z + q.w * start_q[i].w);
            max_angle = fmaxf(max_angle, 2.0f * acosf(fminf(1.0f, d)) * 57.29578f);
        }
    }
    print_message("woken settled tower, 1 s: max speed %.5f m/s in the first 0.1 s, %.5f m/s after, max move %.5f m, "
                  "max turn %.4f deg, awake for %d steps\n", max_jolt, max_speed, max_move, max_angle, awake_steps);
    assert_true(awake_steps > 12);           /* it really ran through the solver */
    assert_true(max_jolt <= 0.1f);
    assert_true(max_speed <= 0.02f);
    assert_true(max_move <= 0.003f);
    assert_true(max_angle <= 0.5f);
    assert_int_equal(tb_rigid_world_awake_count(w), 0); /* asleep again after 0.45 s slow */
    tb_vec3 top;
    assert_int_equal(tb_rigid_body_get_pose(w, TB_TOWER_PLANKS - 1, &top, NULL), 0);
    assert_true(top.y > 2.2f); /* 8 layers of 0.3 m: the top plank is still up there */
    tb_rigid_world_destroy(w);
}

/* test_rigid_tower's criterion: at least 12 planks moved more than 0.5 m
 * 2.4 s after the ball is launched. */
static void knock_down_still_topples_the_settled_tower(void **state)
{
    (void)state;
    tb_rigid_world *w = room_world(0.5f);
    int planks[TB_TOWER_PLANKS];
    assert_int_equal(tb_tower_memo_build(&memo, w, planks), 1);
    tb_vec3 start[TB_TOWER_PLANKS];
    for (int i = 0; i < TB_TOWER_PLANKS; i++) assert_int_equal(tb_rigid_body_get_pose(w, planks[i], &start[i], NULL), 0);
    assert_true(tb_rigid_scene_tower_launch_ball(w) >= 0);
    tb_test_step_for(w, 2.4f);
    int moved = 0;
    for (int i = 0; i < TB_TOWER_PLANKS; i++) {
        tb_vec3 p;
        tb_rigid_body_get_pose(w, planks[i], &p, NULL);
        moved += tb_v3_dist(p, start[i]) > 0.5f;
    }
    print_message("planks moved more than 0.5 m 2.4 s after the launch: %d\n", moved);
    assert_true(moved >= 12);
    tb_rigid_world_destroy(w);
}

static void each_friction_gets_its_own_memo_entry(void **state)
{
    (void)state;
    tb_tower_memo_stats st;
    tb_rigid_world *a = room_world(0.5f), *b = room_world(0.5f), *c = room_world(0.7f), *ref = room_world(0.7f);
    assert_int_equal(tb_tower_memo_build(&memo, a, NULL), 1);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.hits, 0);
    assert_int_equal(tb_tower_memo_build(&memo, b, NULL), 1); /* same def: served from the memo */
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.hits, 1);
    assert_same_bodies(a, b);
    assert_int_equal(tb_tower_memo_build(&memo, c, NULL), 1);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.settles, 2);
    build_and_settle(ref);
    assert_same_bodies(c, ref); /* the 0.7 entry is the 0.7 settle, not the 0.5 one */
    /* a world whose friction was changed after creation keys on the friction it has now */
    assert_int_equal(tb_rigid_world_set_friction(a, 0.7f), TB_PHYS_OK);
    assert_int_equal(tb_tower_memo_build(&memo, a, NULL), 1);
    assert_same_bodies(a, ref);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, 2);
    assert_int_equal(st.hits, 2);
    tb_rigid_world_destroy(a);
    tb_rigid_world_destroy(b);
    tb_rigid_world_destroy(c);
    tb_rigid_world_destroy(ref);
}

/* Gravity pointing up: the planks rise for ever and never sleep. */
static void a_tower_that_never_sleeps_gets_the_plain_build(void **state)
{
    (void)state;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = ROOM_CAPACITY;
    def.gravity = tb_v3(0.0f, 9.81f, 0.0f);
    tb_rigid_world *w = tb_rigid_world_create(&def), *plain = tb_rigid_world_create(&def);
    assert_non_null(w);
    assert_non_null(plain);
    int planks[TB_TOWER_PLANKS];
    assert_int_equal(tb_tower_memo_build(&memo, w, planks), 0);
    assert_int_equal(tb_rigid_scene_tower(plain, NULL), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_awake_count(w), TB_TOWER_PLANKS);
    tb_test_assert_same_saves(w, plain);
    for (int i = 0; i < TB_TOWER_PLANKS; i++) assert_int_equal(planks[i], i);
    tb_tower_memo_stats st;
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.unsettled, 1);
    /* remembered: the next build does not simulate 3 s again */
    assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 0);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.hits, 1);
    assert_int_equal(tb_rigid_world_awake_count(w), TB_TOWER_PLANKS);
    tb_rigid_world_destroy(w);
    tb_rigid_world_destroy(plain);

    /* a world too small for the tower gets the plain build's error, and no entry */
    tb_rigid_world *small = tb_test_tray_world(10);
    assert_int_equal(tb_tower_memo_build(&memo, small, NULL), TB_PHYS_ERR_FULL);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.settles, 1);
    tb_rigid_world_destroy(small);
}

static void memo_is_bounded_and_evicts_the_least_recently_used(void **state)
{
    (void)state;
    tb_tower_memo_stats st;
    tb_rigid_world *w = room_world(0.5f);
    const int n = TB_TOWER_MEMO_ENTRIES + 1;
    for (int i = 0; i < n; i++) {
        assert_int_equal(tb_rigid_world_set_friction(w, 0.1f * (float)(i + 1)), TB_PHYS_OK);
        assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 1);
        if (i == 1) { /* use the first key again: the second becomes the least recent */
            assert_int_equal(tb_rigid_world_set_friction(w, 0.1f), TB_PHYS_OK);
            assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 1);
        }
    }
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.entries, TB_TOWER_MEMO_ENTRIES);
    assert_int_equal(st.settles, n);
    assert_int_equal(st.hits, 1);
    assert_int_equal(tb_rigid_world_set_friction(w, 0.1f), TB_PHYS_OK); /* kept */
    assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 1);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, n);
    assert_int_equal(st.hits, 2);
    assert_int_equal(tb_rigid_world_set_friction(w, 0.2f), TB_PHYS_OK); /* evicted: simulated again */
    assert_int_equal(tb_tower_memo_build(&memo, w, NULL), 1);
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.settles, n + 1);
    assert_int_equal(st.entries, TB_TOWER_MEMO_ENTRIES);
    tb_rigid_world_destroy(w);
}

/* Two threads (a server's two workers) build towers with overlapping keys at
 * once; every result equals the serial one. */
#define THREAD_BUILDS 12
static const float thread_frictions[3] = {0.3f, 0.5f, 0.9f};

typedef struct builder {
    int offset;
    int failures;
} builder;

static image serial_ref[3];

static void *build_many(void *arg)
{
    builder *b = arg;
    for (int i = 0; i < THREAD_BUILDS; i++) {
        int k = (i + b->offset) % 3;
        tb_rigid_world_def def = tb_rigid_world_def_default();
        def.body_capacity = ROOM_CAPACITY;
        def.friction = thread_frictions[k];
        tb_rigid_world *w = tb_rigid_world_create(&def);
        if (!w || tb_tower_memo_build(&memo, w, NULL) != 1) {
            b->failures++;
            tb_rigid_world_destroy(w);
            continue;
        }
        size_t len = tb_rigid_world_bodies_size(w);
        unsigned char *bytes = malloc(len);
        if (!bytes || tb_rigid_world_save_bodies(w, bytes, len, NULL) != TB_PHYS_OK || len != serial_ref[k].len ||
            memcmp(bytes, serial_ref[k].bytes, len) != 0)
            b->failures++;
        free(bytes);
        tb_rigid_world_destroy(w);
    }
    return NULL;
}

static void two_threads_building_at_once_get_the_serial_result(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        tb_rigid_world *ref = room_world(thread_frictions[k]);
        build_and_settle(ref);
        serial_ref[k] = bodies_of(ref);
        tb_rigid_world_destroy(ref);
    }
    builder b[2] = {{0, 0}, {1, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, build_many, &b[i]), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(b[0].failures, 0);
    assert_int_equal(b[1].failures, 0);
    tb_tower_memo_stats st;
    tb_tower_memo_get_stats(&memo, &st);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.hits + st.settles, 2 * THREAD_BUILDS);
    assert_true(st.settles >= 3 && st.settles <= 6); /* at most one race per key */
    for (int k = 0; k < 3; k++) free(serial_ref[k].bytes);
}

/* physics alone (no memo, nothing kept between calls) gives the same tower */
static void settled_without_a_memo_is_the_memos_tower(void **state)
{
    (void)state;
    tb_rigid_world *a = room_world(0.5f), *b = room_world(0.5f);
    int pa[TB_TOWER_PLANKS], pb[TB_TOWER_PLANKS];
    assert_int_equal(tb_tower_memo_build(&memo, a, pa), 1);
    assert_int_equal(tb_rigid_scene_tower_settled(b, pb), 1);
    assert_same_bodies(a, b);
    tb_test_assert_same_saves(a, b);
    assert_memory_equal(pa, pb, sizeof pa);
    tb_rigid_world_destroy(a);
    tb_rigid_world_destroy(b);
}

static void restore_bodies_rejects_bad_images_and_changes_nothing(void **state)
{
    (void)state;
    tb_rigid_world *src = room_world(0.5f);
    build_and_settle(src);
    image good = bodies_of(src);
    unsigned char *bad = malloc(good.len + 64);
    assert_non_null(bad);

    tb_rigid_world *w = room_world(0.5f);
    tb_rigid_rng rng = tb_rigid_rng_seed(9);
    assert_int_equal(tb_rigid_scene_dice(w, &rng, NULL, NULL), TB_PHYS_OK);
    tb_test_step_for(w, 0.25f);
    tb_rigid_world *before = room_world(0.5f); /* the same history, never given a bad image */
    rng = tb_rigid_rng_seed(9);
    assert_int_equal(tb_rigid_scene_dice(before, &rng, NULL, NULL), TB_PHYS_OK);
    tb_test_step_for(before, 0.25f);

    assert_int_equal(tb_rigid_world_restore_bodies(w, NULL, 0), TB_PHYS_ERR_FORMAT);
    for (size_t cut = 0; cut < good.len; cut += 37)
        assert_int_equal(tb_rigid_world_restore_bodies(w, good.bytes, cut), TB_PHYS_ERR_FORMAT);
    memcpy(bad, good.bytes, good.len);
    memset(bad + good.len, 0, 64);
    assert_int_equal(tb_rigid_world_restore_bodies(w, bad, good.len + 1), TB_PHYS_ERR_FORMAT);
    bad[0] ^= 1; /* magic */
    assert_int_equal(tb_rigid_world_restore_bodies(w, bad, good.len), TB_PHYS_ERR_FORMAT);
    /* a NaN in the third body's position (slots follow a 24-byte header) */
    memcpy(bad, good.bytes, good.len);
    const float nan = NAN;
    memcpy(bad + 24 + 2 * 100, &nan, sizeof nan);
    assert_int_equal(tb_rigid_world_restore_bodies(w, bad, good.len), TB_PHYS_ERR_FORMAT);
    /* an unknown shape in the last slot */
    memcpy(bad, good.bytes, good.len);
    bad[24 + 23 * 100 + 4 * 22 + 4] = 9;
    assert_int_equal(tb_rigid_world_restore_bodies(w, bad, good.len), TB_PHYS_ERR_FORMAT);
    /* cache entries out of key order */
    tb_rigid_world *knocked = room_world(0.5f);
    assert_int_equal(tb_rigid_scene_tower(knocked, NULL), TB_PHYS_OK);
    tb_test_step_for(knocked, 0.1f);
    image busy = bodies_of(knocked);
    size_t cache_at = 24 + 24 * 100;
    assert_true(busy.len >= cache_at + 2 * 32);
    /* the first and last entries (entries of one pair share a key) */
    unsigned char *first = busy.bytes + cache_at, *last = busy.bytes + busy.len - 32, tmp[32];
    assert_memory_not_equal(first, last, 4);
    memcpy(tmp, first, 32);
    memcpy(first, last, 32);
    memcpy(last, tmp, 32);
    assert_int_equal(tb_rigid_world_restore_bodies(w, busy.bytes, busy.len), TB_PHYS_ERR_FORMAT);
    /* a world too small for the image */
    tb_rigid_world *small = tb_test_tray_world(10);
    assert_int_equal(tb_rigid_world_restore_bodies(small, good.bytes, good.len), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_rigid_world_body_count(small), 0);

    tb_test_assert_same_saves(w, before); /* nothing above changed it */
    tb_test_step_for(w, 0.25f);
    tb_test_step_for(before, 0.25f);
    tb_test_assert_same_saves(w, before);

    /* the good image goes in, and the dice's extra slots are freed */
    assert_int_equal(tb_rigid_world_restore_bodies(w, good.bytes, good.len), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_body_count(w), TB_TOWER_PLANKS);
    assert_int_equal(tb_rigid_world_next_body(w, TB_TOWER_PLANKS - 1), -1);
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.position = tb_v3(-2.0f, 0.5f, 0.0f);
    assert_int_equal(tb_rigid_world_add_body(w, &d), TB_TOWER_PLANKS); /* free list starts right after */

    free(busy.bytes);
    free(good.bytes);
    free(bad);
    tb_rigid_world_destroy(knocked);
    tb_rigid_world_destroy(small);
    tb_rigid_world_destroy(before);
    tb_rigid_world_destroy(w);
    tb_rigid_world_destroy(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(settled_tower_is_build_and_step_until_asleep_bit_for_bit, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(settled_tower_woken_stands_still_for_1_s, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(knock_down_still_topples_the_settled_tower, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(each_friction_gets_its_own_memo_entry, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(a_tower_that_never_sleeps_gets_the_plain_build, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(memo_is_bounded_and_evicts_the_least_recently_used, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(two_threads_building_at_once_get_the_serial_result, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(restore_bodies_rejects_bad_images_and_changes_nothing, fresh_memo, close_memo),
        cmocka_unit_test_setup_teardown(settled_without_a_memo_is_the_memos_tower, fresh_memo, close_memo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
