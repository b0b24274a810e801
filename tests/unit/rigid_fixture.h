/* rigid_fixture.h: worlds the rigid unit tests start from (test_rigid_*.c).
 * Each helper asserts its own setup with cmocka, so a test reads as the
 * behaviour it checks. */
#ifndef TB_RIGID_FIXTURE_H
#define TB_RIGID_FIXTURE_H

#include "physics/rigid.h"

#define TB_TEST_DT (1.0f / 120.0f)

/* An empty world with room for `capacity` bodies and the tray scene's floor and rims. */
tb_rigid_world *tb_test_tray_world(int capacity);
/* Steps `seconds` of fixed 1/120 s steps, each asserted to succeed. */
void tb_test_step_for(tb_rigid_world *w, float seconds);
/* Asserts both worlds save to the same bytes (bodies, caches, timers). */
void tb_test_assert_same_saves(const tb_rigid_world *a, const tb_rigid_world *b);

#endif
