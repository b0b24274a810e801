/* rigid_fixture.c: see rigid_fixture.h. Linked into every unit test program
 * (the Makefile's UNIT_HELP); only the rigid tests call it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "physics/rigid_scenes.h"
#include "unit/rigid_fixture.h"

tb_rigid_world *tb_test_tray_world(int capacity)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    assert_non_null(w);
    assert_int_equal(tb_rigid_scene_tray(w), TB_PHYS_OK);
    return w;
}

void tb_test_step_for(tb_rigid_world *w, float seconds)
{
    int n = (int)(seconds / TB_TEST_DT + 0.5f);
    for (int i = 0; i < n; i++) assert_int_equal(tb_rigid_world_step(w, TB_TEST_DT), TB_PHYS_OK);
}

void tb_test_assert_same_saves(const tb_rigid_world *a, const tb_rigid_world *b)
{
    size_t size = tb_rigid_world_save_size(a);
    assert_int_equal(size, tb_rigid_world_save_size(b));
    unsigned char *sa = malloc(size), *sb = malloc(size);
    assert_non_null(sa);
    assert_non_null(sb);
    assert_int_equal(tb_rigid_world_save(a, sa, size, NULL), TB_PHYS_OK);
    assert_int_equal(tb_rigid_world_save(b, sb, size, NULL), TB_PHYS_OK);
    assert_memory_equal(sa, sb, size);
    free(sa);
    free(sb);
}
