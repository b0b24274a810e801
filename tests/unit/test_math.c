/* test_math.c: the value types the kernels stand on (server/physics/tb_math.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quat_rotation_matches_matrix),
        cmocka_unit_test(quarter_turn_about_y_maps_x_to_minus_z),
        cmocka_unit_test(basis_is_orthonormal),
        cmocka_unit_test(normalising_zero_gives_zero_not_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
