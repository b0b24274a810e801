/* test_world_rigid.c: the rigid rooms' adapter (sim/world_rigid.c) for the
 * tower: a built or rebuilt tower starts settled (asleep, the poses of the
 * plain build stepped until it sleeps), stays up, still falls to the
 * knock-down, and a room saved after a rebuild loads and steps the same. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "sim/world.h"

extern const tb_world_ops tb_world_rigid_ops;
static const tb_world_ops *ops = &tb_world_rigid_ops;

#define DT (1.0f / 120.0f)

static void *tower_room(void)
{
    void *w = NULL;
    assert_int_equal(ops->create("tower", 1, NULL, &w), 0);
    return w;
}

static void input(void *w, uint8_t type, uint8_t flags)
{
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = type;
    in.flags = flags;
    in.target = -1;
    assert_int_equal(ops->apply_input(w, &in), 0);
}

static void step(void *w, int n)
{
    for (int i = 0; i < n; i++) {
        ops->step(w, DT);
        assert_int_equal(ops->check(w), 0);
    }
}

static int awake(const void *w)
{
    tb_world_info info;
    ops->info(w, &info);
    return info.awake;
}

/* The load test's cycle: knock the tower down, rebuild it 2.5 s later. */
static void knock_and_rebuild(void *w)
{
    input(w, TB_INPUT_RESET, 1);
    step(w, 300);
    assert_true(awake(w) > 0);
    input(w, TB_INPUT_RESET, 0);
}

/* The room's planks as the snapshot reports them (ids 0..23). */
static void plank_poses(void *w, float pos[TB_TOWER_PLANKS][3], float rot[TB_TOWER_PLANKS][4])
{
    tb_snap_input in;
    ops->fill_snapshot(w, &in);
    int n = 0;
    for (uint32_t i = 0; i < in.body_count; i++) {
        const tb_proto_body *b = &in.bodies[i];
        if (b->id >= TB_TOWER_PLANKS) continue;
        for (int a = 0; a < 3; a++) pos[b->id][a] = (float)b->pos[a];
        for (int a = 0; a < 4; a++) rot[b->id][a] = (float)b->rot[a];
        n++;
    }
    assert_int_equal(n, TB_TOWER_PLANKS);
}

/* What the room used to do: the plain build, stepped until every plank
 * sleeps, in a world like the room's (same capacity and parameters). */
static void reference_poses(const void *room, float friction, float pos[TB_TOWER_PLANKS][3],
                            float rot[TB_TOWER_PLANKS][4])
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = (int)ops->max_bodies(room);
    def.friction = friction;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    assert_non_null(w);
    assert_int_equal(tb_rigid_scene_tower(w, NULL), TB_PHYS_OK);
    int steps = 0;
    while (tb_rigid_world_awake_count(w) > 0) {
        assert_true(++steps <= TB_TOWER_SETTLE_MAX_STEPS);
        assert_int_equal(tb_rigid_world_step(w, DT), TB_PHYS_OK);
    }
    for (int i = 0; i < TB_TOWER_PLANKS; i++) {
        tb_vec3 p;
        tb_quat q;
        assert_int_equal(tb_rigid_body_get_pose(w, i, &p, &q), TB_PHYS_OK);
        float pp[3] = {p.x, p.y, p.z}, qq[4] = {q.x, q.y, q.z, q.w};
        memcpy(pos[i], pp, sizeof pp);
        memcpy(rot[i], qq, sizeof qq);
    }
    tb_rigid_world_destroy(w);
}

static void rebuilt_tower_is_asleep_at_once_with_the_settled_poses(void **state)
{
    (void)state;
    void *w = tower_room();
    assert_int_equal(awake(w), 0); /* creation builds the settled tower too */
    float ref_pos[TB_TOWER_PLANKS][3], ref_rot[TB_TOWER_PLANKS][4], pos[TB_TOWER_PLANKS][3], rot[TB_TOWER_PLANKS][4];
    reference_poses(w, 0.5f, ref_pos, ref_rot);
    plank_poses(w, pos, rot);
    assert_memory_equal(pos, ref_pos, sizeof pos);
    assert_memory_equal(rot, ref_rot, sizeof rot);

    knock_and_rebuild(w);
    assert_int_equal(awake(w), 0);
    plank_poses(w, pos, rot);
    assert_memory_equal(pos, ref_pos, sizeof pos);
    assert_memory_equal(rot, ref_rot, sizeof rot);
    ops->destroy(w);
}

/* A rebuilt tower is asleep, and a sleeping tower stands still by
 * construction: so it is woken through the room (a restitution change to
 * the value it has, which wakes every body as any slider does), stepped 1 s,
 * and must stay within 3 mm of where it stood (the wake's one sag, see
 * test_rigid_settled) and be asleep again; then the knock-down still fells it. */
static void rebuilt_tower_woken_stands_still_for_1_s_and_falls_to_the_knock_down(void **state)
{
    (void)state;
    void *w = tower_room();
    knock_and_rebuild(w);
    float start[TB_TOWER_PLANKS][3], start_rot[TB_TOWER_PLANKS][4], pos[TB_TOWER_PLANKS][3], rot[TB_TOWER_PLANKS][4];
    plank_poses(w, start, start_rot);
    assert_int_equal(ops->param_set(w, "restitution", 0.3), 0);
    assert_int_equal(awake(w), TB_TOWER_PLANKS);
    float max_move = 0.0f;
    int awake_steps = 0;
    for (int i = 0; i < 120; i++) {
        step(w, 1);
        awake_steps += awake(w) > 0;
        plank_poses(w, pos, rot);
        for (int k = 0; k < TB_TOWER_PLANKS; k++)
            max_move = fmaxf(max_move, tb_v3_dist(tb_v3(pos[k][0], pos[k][1], pos[k][2]), tb_v3(start[k][0], start[k][1], start[k][2])));
    }
    print_message("woken rebuilt tower: max move %.5f m in 1 s, awake for %d steps\n", max_move, awake_steps);
    assert_true(awake_steps > 12);
    assert_true(max_move <= 0.003f);
    assert_int_equal(awake(w), 0);
    plank_poses(w, start, start_rot); /* the knock-down is measured from here */

    input(w, TB_INPUT_RESET, 1);
    step(w, 288); /* 2.4 s: test_rigid_tower's criterion */
    plank_poses(w, pos, rot);
    int moved = 0;
    for (int i = 0; i < TB_TOWER_PLANKS; i++) {
        tb_vec3 a = tb_v3(pos[i][0], pos[i][1], pos[i][2]), b = tb_v3(start[i][0], start[i][1], start[i][2]);
        moved += tb_v3_dist(a, b) > 0.5f;
    }
    print_message("planks moved more than 0.5 m: %d\n", moved);
    assert_true(moved >= 12);
    ops->destroy(w);
}

static void rebuild_after_a_friction_change_settles_with_that_friction(void **state)
{
    (void)state;
    void *w = tower_room();
    assert_int_equal(ops->param_set(w, "friction", 0.9), 0);
    assert_true(awake(w) > 0); /* the slider wakes the tower (the seed's rule) */
    input(w, TB_INPUT_RESET, 0);
    assert_int_equal(awake(w), 0);
    float ref_pos[TB_TOWER_PLANKS][3], ref_rot[TB_TOWER_PLANKS][4], pos[TB_TOWER_PLANKS][3], rot[TB_TOWER_PLANKS][4];
    reference_poses(w, 0.9f, ref_pos, ref_rot);
    plank_poses(w, pos, rot);
    assert_memory_equal(pos, ref_pos, sizeof pos);
    assert_memory_equal(rot, ref_rot, sizeof rot);
    double friction = 0.0;
    assert_int_equal(ops->param_get(w, "friction", &friction), 0);
    assert_float_equal(friction, 0.9, 1e-6);
    ops->destroy(w);
}

static void room_saved_after_a_rebuild_loads_and_steps_bit_identically(void **state)
{
    (void)state;
    void *w = tower_room();
    knock_and_rebuild(w);
    step(w, 3);
    unsigned char *buf = NULL;
    size_t len = 0;
    assert_int_equal(ops->save(w, &buf, &len), 0);
    void *back = NULL;
    assert_int_equal(ops->load("tower", 1, NULL, buf, len, &back), 0);
    free(buf);
    assert_int_equal(ops->hash(back), ops->hash(w));
    input(w, TB_INPUT_RESET, 1);
    input(back, TB_INPUT_RESET, 1);
    step(w, 240);
    step(back, 240);
    assert_true(awake(w) > 0);
    assert_int_equal(ops->hash(back), ops->hash(w));
    ops->destroy(back);
    ops->destroy(w);
}

/* The world interface's kind-neutral hooks: a dice room tells its result
 * once as an event, and the contacts overlay lists the last step's contacts. */
static void dice_result_is_one_event_and_contacts_an_overlay(void **state)
{
    (void)state;
    void *w = NULL;
    assert_int_equal(ops->create("dice", 7, NULL, &w), 0);
    assert_true(ops->overlays & (1u << TB_WORLD_OVERLAY_CONTACTS));
    tb_world_event ev;
    int events = 0, step_of_event = -1;
    uint32_t overlay_max = 0;
    for (int s = 0; s < 12 * 120; s++) {
        ops->step(w, DT);
        for (int k = 0; k < TB_WORLD_EVENTS_PER_STEP && ops->poll_event(w, &ev) > 0; k++) {
            events++;
            step_of_event = s;
            assert_int_equal(ev.kind, TB_WORLD_EVENT_DICE);
            assert_int_equal(ev.count, TB_DICE_COUNT);
            for (uint32_t i = 0; i < ev.count; i++) assert_in_range(ev.values[i], 1, 6);
        }
        tb_world_overlay ov;
        ops->overlay(w, TB_WORLD_OVERLAY_CONTACTS, &ov);
        assert_int_equal(ov.kind, TB_WORLD_OVERLAY_CONTACTS);
        assert_true(ov.count <= TB_PROTO_MAX_CONTACTS);
        for (uint32_t i = 0; i < ov.count; i++) {
            const float *n = ov.contacts[i].normal;
            float len2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
            assert_true(len2 > 0.98f && len2 < 1.02f);
        }
        if (ov.count > overlay_max) overlay_max = ov.count;
    }
    print_message("dice result after step %d, up to %u contacts\n", step_of_event, overlay_max);
    assert_int_equal(events, 1); /* told once per throw */
    assert_true(overlay_max >= TB_DICE_COUNT);
    ops->destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebuilt_tower_is_asleep_at_once_with_the_settled_poses),
        cmocka_unit_test(rebuilt_tower_woken_stands_still_for_1_s_and_falls_to_the_knock_down),
        cmocka_unit_test(rebuild_after_a_friction_change_settles_with_that_friction),
        cmocka_unit_test(room_saved_after_a_rebuild_loads_and_steps_bit_identically),
        cmocka_unit_test(dice_result_is_one_event_and_contacts_an_overlay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
