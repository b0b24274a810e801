/* test_math.c: the value types the kernels stand on (server/physics/tb_math.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "physics/tb_libm.h"
#include "physics/tb_math.h"

static void quat_rotation_matches_matrix(void **state)
{
    (void)state;
    tb_quat q = tb_q_norm(tb_q(0.3f, -0.5f, 0.2f, 0.8f));
    tb_vec3 v = tb_v3(1.0f, 2.0f, -3.0f);
    tb_vec3 a = tb_q_rotate(q, v);
    tb_vec3 b = tb_m3_mul_v3(tb_m3_from_q(q), v);
    assert_float_equal(a.x, b.x, 1e-5f);
    assert_float_equal(a.y, b.y, 1e-5f);
    assert_float_equal(a.z, b.z, 1e-5f);
    tb_vec3 back = tb_q_inv_rotate(q, a);
    assert_float_equal(back.x, v.x, 1e-5f);
    assert_float_equal(back.y, v.y, 1e-5f);
    assert_float_equal(back.z, v.z, 1e-5f);
}

static void quarter_turn_about_y_maps_x_to_minus_z(void **state)
{
    (void)state;
    tb_quat q = tb_q_axis_angle(tb_v3(0, 1, 0), 0.5f * TB_PI);
    tb_vec3 v = tb_q_rotate(q, tb_v3(1, 0, 0));
    assert_float_equal(v.x, 0.0f, 1e-6f);
    assert_float_equal(v.y, 0.0f, 1e-6f);
    assert_float_equal(v.z, -1.0f, 1e-6f);
}

static void basis_is_orthonormal(void **state)
{
    (void)state;
    tb_vec3 ns[] = {{1, 0, 0}, {0, 1, 0}, {0, 0, -1}, {0.577f, 0.577f, 0.577f}};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        tb_vec3 n = tb_v3_norm(ns[i]), t1, t2;
        tb_v3_basis(n, &t1, &t2);
        assert_float_equal(tb_v3_dot(n, t1), 0.0f, 1e-6f);
        assert_float_equal(tb_v3_dot(n, t2), 0.0f, 1e-6f);
        assert_float_equal(tb_v3_dot(t1, t2), 0.0f, 1e-6f);
        assert_float_equal(tb_v3_len(t1), 1.0f, 1e-6f);
        assert_float_equal(tb_v3_len(t2), 1.0f, 1e-6f);
    }
}

static void normalising_zero_gives_zero_not_nan(void **state)
{
    (void)state;
    tb_vec3 v = tb_v3_norm(tb_v3_zero());
    assert_true(tb_v3_finite(v));
    assert_true(tb_q_finite(tb_q_norm(tb_q(0, 0, 0, 0))));
}

/* Distance in representable floats between a and b (same sign assumed near). */
static int32_t ulps_apart(float a, float b)
{
    int32_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    if (x < 0) x = INT32_MIN - x;
    if (y < 0) y = INT32_MIN - y;
    return x > y ? x - y : y - x;
}

/* The physics' own trig (tb_libm.h) is the double-precision value rounded
 * once to float: within one ulp of libm's double sin/cos over every angle
 * the physics meets (wind directions up to 1000 rad). */
static void own_sin_cos_are_within_an_ulp_of_double_libm(void **state)
{
    (void)state;
    int32_t worst = 0;
    for (float x = -1000.0f; x < 1000.0f; x += 0.0173f) {
        float s, c;
        tb_sin_cos(x, &s, &c);
        int32_t us = ulps_apart(s, (float)sin((double)x)), uc = ulps_apart(c, (float)cos((double)x));
        if (us > worst) worst = us;
        if (uc > worst) worst = uc;
        assert_true(s == tb_sinf(x) && c == tb_cosf(x));
    }
    assert_true(worst <= 1);
}

static void own_exp_log_pow_are_within_an_ulp_of_double_libm(void **state)
{
    (void)state;
    for (float x = -87.0f; x < 88.0f; x += 0.0371f) assert_true(ulps_apart(tb_expf(x), (float)exp((double)x)) <= 1);
    for (float x = 1e-30f; x < 1e30f; x *= 1.0173f) assert_true(ulps_apart(tb_logf(x), (float)log((double)x)) <= 1);
    for (float b = 0.001f; b < 1.0f; b += 0.0137f)
        for (float e = 0.1f; e < 5.0f; e += 0.37f) assert_true(ulps_apart(tb_powf(b, e), (float)pow(b, e)) <= 1);
    assert_true(tb_expf(0.0f) == 1.0f && tb_logf(1.0f) == 0.0f && tb_powf(0.0f, 2.0f) == 0.0f);
}

/* Fixed bits for fixed inputs: what every platform (and the WebAssembly
 * build) must give, since the worlds' hashes depend on them. */
static void own_trig_gives_the_same_bits_everywhere(void **state)
{
    (void)state;
    float s, c;
    tb_sin_cos(0.25f * TB_PI, &s, &c);
    assert_true(s == 0x1.6a09e6p-1f && c == 0x1.6a09e6p-1f);
    tb_sin_cos(1.0f, &s, &c);
    assert_true(s == 0x1.aed548p-1f && c == 0x1.14a280p-1f);
    tb_sin_cos(-987.654f, &s, &c);
    assert_true(s == (float)sin(-987.654f) && c == (float)cos(-987.654f));
    assert_true(tb_expf(-0.5f / 120.0f) == (float)exp(-0.5 / 120.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quat_rotation_matches_matrix),
        cmocka_unit_test(quarter_turn_about_y_maps_x_to_minus_z),
        cmocka_unit_test(basis_is_orthonormal),
        cmocka_unit_test(normalising_zero_gives_zero_not_nan),
        cmocka_unit_test(own_sin_cos_are_within_an_ulp_of_double_libm),
        cmocka_unit_test(own_exp_log_pow_are_within_an_ulp_of_double_libm),
        cmocka_unit_test(own_trig_gives_the_same_bits_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
