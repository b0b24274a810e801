/* test_reliability.c: rooms survive restarts and bad physics.
 *
 * Save/load round trip of a room in every scene (the restored room steps
 * bit-identically to the original), every truncation and many corruptions
 * of a state image refused without a crash, a room's state file written
 * atomically and restored into a registry, and the per-step world check:
 * a rigid body that got out of the room is removed, extreme grabs on cloth and
 * dough never leave a non-finite vertex. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "physics/rigid.h"
#include "sim/error.h"
#include "sim/input.h"
#include "sim/persist.h"
#include "sim/registry.h"
#include "sim/room.h"
#include "sim/sched.h"
#include "sim/world.h"

#define DT (1.0f / 120.0f)

static tb_room *make_room(const char *id, const char *scene)
{
    tb_room *room = NULL;
    assert_int_equal(tb_room_new(id, scene, 42, false, &room), 0);
    assert_int_equal(room->ops->create(room->scene, room->seed, NULL, &room->world), 0);
    return room;
}

static void step(tb_room *room, int n)
{
    for (int i = 0; i < n; i++) {
        room->ops->step(room->world, DT);
        room->tick++;
        if (room->ops->check)
            room->ops->check(room->world);
    }
}

static tb_input input(int type)
{
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = (uint8_t)type;
    in.client = 1;
    in.target = -1;
    return in;
}

/* Something happening in each scene, so the saved state is mid-motion. */
static void stir(tb_room *room)
{
    tb_input in = input(TB_INPUT_RESET);
    if (strcmp(room->scene, "tower") == 0) {
        in.flags = 1; /* knock */
        assert_int_equal(room->ops->apply_input(room->world, &in), 0);
    } else if (strcmp(room->ops->kind, "rigid") == 0) {
        in = input(TB_INPUT_THROW);
        in.pos[1] = 2.0f;
        in.vec[0] = 4.0f;
        room->ops->apply_input(room->world, &in);
    } else {
        in = input(TB_INPUT_POKE);
        in.pos[1] = 1.0f;
        in.vec[2] = 5.0f;
        room->ops->apply_input(room->world, &in);
    }
}

static void every_scene_round_trips_and_continues_bit_identically(void **state)
{
    (void)state;
    for (const tb_scene *sc = tb_scene_table(); sc->name; sc++) {
        tb_room *a = make_room("saved", sc->name);
        step(a, 30);
        stir(a);
        step(a, 45); /* mid-fall, mid-flap */
        unsigned char *buf = NULL;
        size_t len = 0;
        assert_int_equal(tb_persist_encode(a, &buf, &len), 0);
        tb_room *b = NULL;
        char why[160] = "";
        int rc = tb_persist_decode(buf, len, NULL, &b, why, sizeof why);
        if (rc != 0)
            fail_msg("%s: %s", sc->name, why);
        assert_string_equal(b->id, "saved");
        assert_string_equal(b->scene, a->scene);
        assert_int_equal(b->tick, a->tick);
        assert_true(a->ops->hash(a->world) == b->ops->hash(b->world));
        step(a, 120);
        step(b, 120);
        if (a->ops->hash(a->world) != b->ops->hash(b->world))
            fail_msg("%s diverged after restore", sc->name);
        free(buf);
        tb_room_unref(a);
        tb_room_unref(b);
    }
}

static void truncated_and_corrupt_images_are_refused(void **state)
{
    (void)state;
    tb_room *a = make_room("c", "tower");
    step(a, 10);
    unsigned char *buf = NULL;
    size_t len = 0;
    assert_int_equal(tb_persist_encode(a, &buf, &len), 0);
    char why[160];
    tb_room *b = NULL;
    for (size_t n = 0; n < len; n += (n < 256 ? 1 : 97)) {
        assert_int_equal(tb_persist_decode(buf, n, NULL, &b, why, sizeof why), TB_EINVAL);
        assert_null(b);
        assert_true(why[0] != 0);
    }
    unsigned char *bad = malloc(len);
    for (size_t i = 0; i < len; i += 13) {
        memcpy(bad, buf, len);
        bad[i] ^= 0x5a;
        assert_int_equal(tb_persist_decode(bad, len, NULL, &b, why, sizeof why), TB_EINVAL);
        assert_null(b);
    }
    free(bad);
    free(buf);
    tb_room_unref(a);
}

static void wake_noop(void *data) { (void)data; }

static void state_files_are_written_atomically_and_restored(void **state)
{
    (void)state;
    char dir[] = "/tmp/tumble-unit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tb_metrics metrics;
    tb_metrics_init(&metrics);
    tb_sched sched;
    assert_int_equal(tb_sched_init(&sched, 1, 60, "t", &metrics, wake_noop, NULL), 0);
    tb_registry reg;
    tb_registry_init(&reg, &sched, &metrics, 16, 1000000000LL, 1);
    tb_room *room = NULL;
    assert_int_equal(tb_registry_get_or_create(&reg, "keepme", "dough", false, &room, NULL), 0);
    room->tick = 777;
    tb_room_unref(room);
    assert_int_equal(tb_persist_save_all(&reg, dir, NULL), 1);
    char path[512];
    snprintf(path, sizeof path, "%s/room-keepme.state", dir);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/.room-keepme.state.tmp", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    tb_registry_close(&reg);
    tb_sched_close(&sched);

    assert_int_equal(tb_sched_init(&sched, 1, 60, "t", &metrics, wake_noop, NULL), 0);
    tb_registry_init(&reg, &sched, &metrics, 16, 1000000000LL, 1);
    assert_int_equal(tb_persist_restore(&reg, dir, NULL), 1);
    room = tb_registry_find(&reg, "keepme");
    assert_non_null(room);
    assert_int_equal(room->tick, 777);
    assert_string_equal(room->scene, "dough");
    tb_room_unref(room);
    assert_int_equal(atomic_load(&metrics.rooms_restored_total), 1);
    tb_registry_close(&reg);
    tb_sched_close(&sched);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

/* ---- physics faults ---------------------------------------------------- */

static int finite_snapshot(tb_room *room)
{
    tb_snap_input in;
    room->ops->fill_snapshot(room->world, &in);
    for (uint32_t i = 0; i < in.body_count; i++)
        for (int a = 0; a < 3; a++)
            if (!isfinite(in.bodies[i].pos[a]) || fabsf(in.bodies[i].pos[a]) > 1000.0f)
                return 0;
    tb_proto_welcome *w = calloc(1, sizeof *w);
    room->ops->describe(room->world, w);
    for (uint32_t m = 0; m < w->st.mesh_count; m++)
        for (uint32_t i = 0; i < 3 * w->st.meshes[m].verts; i++)
            if (!isfinite(in.verts[m][i])) {
                free(w);
                return 0;
            }
    free(w);
    return 1;
}

/* The rigid world refuses non-finite and over-fast states itself (its
 * setters and impulses check), so what is left to catch is a body that got
 * out of the room: through the floor or a wall. White box: the rigid
 * adapter's first field is its tb_rigid_world (sim/world_rigid.c), used
 * here to teleport planks where a tunnelling body would end up. */
static void a_body_out_of_the_room_is_removed_and_the_room_goes_on(void **state)
{
    (void)state;
    tb_room *room = make_room("out", "tower");
    tb_rigid_world *world = *(tb_rigid_world **)room->world;
    tb_world_info before, after;
    room->ops->info(room->world, &before);
    assert_int_equal(room->ops->check(room->world), 0);
    tb_quat q = {0, 0, 0, 1};
    assert_int_equal(tb_rigid_body_set_pose(world, 23, tb_v3(0, -30, 0), q), 0);  /* under the floor */
    assert_int_equal(tb_rigid_body_set_pose(world, 22, tb_v3(80, 2, 0), q), 0);   /* beyond a wall */
    assert_int_equal(tb_rigid_body_set_pose(world, 21, tb_v3(0, 40, 0), q), 0);   /* high up: stays */
    room->ops->step(room->world, DT);
    assert_int_equal(room->ops->check(room->world), 2);
    room->ops->info(room->world, &after);
    assert_int_equal(after.bodies, before.bodies - 2);
    step(room, 240); /* the high plank falls back in; nothing else goes */
    room->ops->info(room->world, &after);
    assert_int_equal(after.bodies, before.bodies - 2);
    assert_true(finite_snapshot(room));
    /* and the room still takes inputs */
    tb_input in = input(TB_INPUT_RESET);
    in.flags = 1;
    assert_int_equal(room->ops->apply_input(room->world, &in), 0);
    step(room, 120);
    assert_true(finite_snapshot(room));
    tb_room_unref(room);
}

/* Grabs dragged to the far edge of the protocol's range (10 km), every
 * pointer a world allows, for two seconds: never a non-finite vertex. */
static void extreme_grabs_never_poison_cloth_or_dough(void **state)
{
    (void)state;
    const char *scenes[] = {"flag", "cape", "dough"};
    for (int s = 0; s < 3; s++) {
        tb_room *room = make_room("grab", scenes[s]);
        tb_proto_welcome *w = calloc(1, sizeof *w);
        room->ops->describe(room->world, w);
        tb_snap_input snap;
        room->ops->fill_snapshot(room->world, &snap);
        uint32_t nv = w->st.meshes[0].verts;
        for (uint32_t p = 0; p < 16; p++) {
            tb_input in = input(TB_INPUT_GRAB_START);
            in.pointer = p;
            const float *v = snap.verts[0] + 3 * ((p * 37) % nv);
            memcpy(in.pos, v, sizeof in.pos);
            room->ops->apply_input(room->world, &in);
        }
        for (int t = 0; t < 240; t++) {
            for (uint32_t p = 0; p < 16; p++) {
                tb_input in = input(TB_INPUT_GRAB_MOVE);
                in.pointer = p;
                float far = (t % 2 ? 1.0f : -1.0f) * 10000.0f;
                in.pos[0] = far;
                in.pos[1] = p % 2 ? far : 0.0f;
                in.pos[2] = -far;
                room->ops->apply_input(room->world, &in);
            }
            room->ops->step(room->world, DT);
            room->ops->check(room->world);
            if (!finite_snapshot(room))
                fail_msg("%s: non-finite state at step %d", scenes[s], t);
        }
        tb_input leave = input(TB_INPUT_LEAVE);
        room->ops->apply_input(room->world, &leave);
        step(room, 120);
        assert_true(finite_snapshot(room));
        free(w);
        tb_room_unref(room);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_scene_round_trips_and_continues_bit_identically),
        cmocka_unit_test(truncated_and_corrupt_images_are_refused),
        cmocka_unit_test(state_files_are_written_atomically_and_restored),
        cmocka_unit_test(a_body_out_of_the_room_is_removed_and_the_room_goes_on),
        cmocka_unit_test(extreme_grabs_never_poison_cloth_or_dough),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
