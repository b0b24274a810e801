/* test_pose_history.c: the ring of recent body poses behind lag compensation
 * (server/sim/pose_history.c): what it gives back between and at its slots,
 * that it forgets what it should, and how far back it reaches. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <math.h>
#include <cmocka.h>

#include "sim/pose_history.h"

static tb_quat yaw(float a) { return tb_q(0.0f, sinf(a / 2), 0.0f, cosf(a / 2)); }

/* A body moving along x at 1 m/s and turning at 1 rad/s, recorded every
 * TB_POSE_HISTORY_EVERY steps of 1/120 s from step 2 to `last`. */
static tb_pose_history *moving(uint64_t last)
{
    tb_pose_history *h = tb_pose_history_create(8);
    assert_non_null(h);
    for (uint64_t s = 2; s <= last; s += TB_POSE_HISTORY_EVERY) {
        tb_pose_history_begin(h, s);
        tb_pose_history_put(h, 3, tb_v3((float)s / 120.0f, 1.0f, -2.0f), yaw((float)s / 120.0f));
    }
    return h;
}

static void poses_between_slots_are_interpolated(void **state)
{
    (void)state;
    tb_pose_history *h = moving(100);
    tb_vec3 p;
    tb_quat q;
    tb_vec3 now_p = tb_v3(101.0f / 120.0f, 1.0f, -2.0f);
    assert_true(tb_pose_history_at(h, 3, 61, 101, now_p, yaw(101.0f / 120.0f), &p, &q));
    assert_float_equal(p.x, 61.0f / 120.0f, 0.0006f); /* 0.25 mm cells, and a straight line */
    assert_float_equal(p.y, 1.0f, 0.0006f);
    assert_float_equal(p.z, -2.0f, 0.0006f);
    assert_float_equal(fabsf(tb_q_dot(q, yaw(61.0f / 120.0f))), 1.0f, 1e-6f);
    /* after the newest slot: between it and the pose now */
    assert_true(tb_pose_history_at(h, 3, 101, 101, now_p, yaw(101.0f / 120.0f), &p, &q));
    assert_float_equal(p.x, now_p.x, 1e-6f);
    tb_pose_history_destroy(h);
}

static void it_reaches_back_half_a_second_and_no_further(void **state)
{
    (void)state;
    tb_pose_history *h = moving(400);
    tb_vec3 p;
    tb_quat q;
    uint64_t oldest = 400 - (TB_POSE_HISTORY_SLOTS - 1) * TB_POSE_HISTORY_EVERY;
    assert_true(TB_POSE_HISTORY_STEPS >= 60); /* >= 0.5 s at 120 Hz */
    assert_true(tb_pose_history_at(h, 3, oldest, 401, tb_v3(0, 0, 0), yaw(0), &p, &q));
    assert_float_equal(p.x, (float)oldest / 120.0f, 0.0006f);
    assert_false(tb_pose_history_at(h, 3, oldest - 1, 401, tb_v3(0, 0, 0), yaw(0), &p, &q));
    tb_pose_history_destroy(h);
}

static void a_rebuilt_scene_or_a_reused_id_has_no_past(void **state)
{
    (void)state;
    tb_pose_history *h = moving(100);
    tb_vec3 p;
    tb_quat q;
    assert_false(tb_pose_history_at(h, 2, 60, 101, tb_v3(0, 0, 0), yaw(0), &p, &q)); /* never recorded */
    tb_pose_history_forget(h, 3);
    assert_false(tb_pose_history_at(h, 3, 60, 101, tb_v3(0, 0, 0), yaw(0), &p, &q));
    tb_pose_history_destroy(h);
    h = moving(100);
    tb_pose_history_clear(h);
    assert_false(tb_pose_history_at(h, 3, 60, 101, tb_v3(0, 0, 0), yaw(0), &p, &q));
    assert_false(tb_pose_history_at(h, 99, 60, 101, tb_v3(0, 0, 0), yaw(0), &p, &q)); /* out of range */
    tb_pose_history_destroy(h);
}

/* Positions are kept to the nearest 1/2048 m cell, halves away from zero
 * (roundf), clamped at +-32767 cells: on cell edges and an ulp either side,
 * at random, and beyond the range, read back at the step they were put. */
static void positions_keep_the_nearest_cell_halves_away_from_zero(void **state)
{
    (void)state;
    tb_pose_history *h = tb_pose_history_create(1);
    assert_non_null(h);
    uint64_t rng = 0x2545F4914F6CDD1Dull;
    int edges = 0;
    for (int trial = 0; trial < 20000; trial++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        float x;
        if (trial % 2) {   /* a cell edge (k + 1/2 cells), or one ulp beside it */
            int k = (int)(rng % 70000) - 35000;
            x = ((float)k + 0.5f) / 2048.0f;
            edges += x * 2048.0f == (float)k + 0.5f;
            if (trial % 3 == 1) x = nextafterf(x, 100.0f);
            if (trial % 3 == 2) x = nextafterf(x, -100.0f);
        } else {
            x = (float)((double)(rng >> 11) / 9007199254740992.0 * 40.0 - 20.0);
        }
        tb_pose_history_begin(h, (uint64_t)trial + 1);
        tb_pose_history_put(h, 0, tb_v3(x, -x, 0.0f), tb_q(0.0f, 0.0f, 0.0f, 1.0f));
        tb_vec3 p;
        tb_quat q;
        assert_true(tb_pose_history_at(h, 0, (uint64_t)trial + 1, (uint64_t)trial + 1, tb_v3(0, 0, 0), tb_q(0, 0, 0, 1), &p, &q));
        for (int sign = 1; sign >= -1; sign -= 2) {
            float c = roundf((float)sign * x * 2048.0f);
            c = c > 32767.0f ? 32767.0f : c < -32767.0f ? -32767.0f : c;
            assert_true((sign > 0 ? p.x : p.y) == c / 2048.0f);
        }
    }
    assert_true(edges > 5000);
    tb_pose_history_destroy(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(poses_between_slots_are_interpolated),
        cmocka_unit_test(it_reaches_back_half_a_second_and_no_further),
        cmocka_unit_test(a_rebuilt_scene_or_a_reused_id_has_no_past),
        cmocka_unit_test(positions_keep_the_nearest_cell_halves_away_from_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
