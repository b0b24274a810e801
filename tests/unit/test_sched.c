/* test_sched.c: the workers as the network thread sees them, with real
 * worlds and no sockets: what an empty room costs (no snapshot encoding),
 * what a join gets (a current keyframe that later deltas chain from), that
 * control messages survive a full snapshot ring, that a worker spreads its
 * rooms over the phases of its 120 Hz period (each room on its phase's grid,
 * lateness measured from its own due time) and wakes the network thread
 * once per phase pass, not once per room. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/clock.h"
#include "sim/metrics.h"
#include "sim/pace.h"
#include "sim/registry.h"
#include "sim/room.h"
#include "sim/sched.h"
#include "sim/wire.h"
#include "tb_proto.h"

static void wake_nothing(void *data) { (void)data; }

typedef struct fixture {
    tb_metrics metrics;
    tb_sched sched;
    tb_registry reg;
} fixture;

static void fixture_start(fixture *f, int workers, int snapshot_hz)
{
    tb_metrics_init(&f->metrics);
    assert_int_equal(tb_sched_init(&f->sched, workers, snapshot_hz, "test", &f->metrics, wake_nothing, NULL), 0);
    tb_registry_init(&f->reg, &f->sched, &f->metrics, 1000, 60 * TB_NS_PER_SEC, 1);
    assert_int_equal(tb_sched_start(&f->sched), 0);
}

static void fixture_stop(fixture *f)
{
    tb_sched_stop(&f->sched);
    tb_registry_close(&f->reg);
    tb_sched_close(&f->sched);
}

static tb_room *open_room(fixture *f, const char *id, const char *scene)
{
    tb_room *room = NULL;
    assert_int_equal(tb_registry_get_or_create(&f->reg, id, scene, false, &room, NULL), 0);
    return room;
}

static void join(tb_room *room, uint32_t client)
{
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_JOIN;
    in.client = client;
    in.target = -1;
    in.serial = ++room->next_serial;
    snprintf(in.by_name, sizeof in.by_name, "p%u", client);
    assert_int_equal(tb_room_push_input(room, &in), 0);
}

/* n dice rooms "<prefix><i>", each with one client (first_client + i) joined. */
static void open_joined_rooms(fixture *f, const char *prefix, int n, tb_room **rooms, uint32_t first_client)
{
    for (int i = 0; i < n; i++) {
        char id[TB_ROOM_ID_MAX + 1];
        snprintf(id, sizeof id, "%.16s%d", prefix, i);
        rooms[i] = open_room(f, id, "dice");
        join(rooms[i], first_client + (uint32_t)i);
    }
}

static void close_rooms(tb_room **rooms, int n)
{
    for (int i = 0; i < n; i++)
        tb_room_unref(rooms[i]);
}

static uint64_t count(const atomic_uint_fast64_t *c) { return atomic_load((atomic_uint_fast64_t *)c); }

static void release(tb_out *out)
{
    tb_msg_unref(out->msg);
    tb_msg_unref(out->key);
    tb_room_unref(out->room);
}

/* Polls until a record of `kind` for `client` (0: any) of `room` comes,
 * releasing everything else; false after timeout_ms. */
static bool wait_for(fixture *f, tb_room *room, int kind, uint32_t client, tb_out *got, int timeout_ms)
{
    int64_t end = tb_clock_now_ns() + (int64_t)timeout_ms * TB_NS_PER_MS;
    while (tb_clock_now_ns() < end) {
        tb_out out;
        if (!tb_sched_poll(&f->sched, &out)) {
            tb_clock_sleep_until(tb_clock_now_ns() + TB_NS_PER_MS);
            continue;
        }
        if (out.room == room && out.kind == kind && (client == 0 || out.client == client)) {
            *got = out;
            return true;
        }
        release(&out);
    }
    return false;
}

static void sleep_ms(int ms) { tb_clock_sleep_until(tb_clock_now_ns() + (int64_t)ms * TB_NS_PER_MS); }

static void empty_room_steps_but_encodes_no_snapshots(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, 1, 60);
    tb_room *room = open_room(&f, "empty", "tower");
    sleep_ms(300);
    assert_true(atomic_load(&room->step_count) >= 10); /* it is stepped */
    assert_int_equal(count(&f.metrics.snapshots_total), 0);
    tb_out out;
    assert_false(tb_sched_poll(&f.sched, &out));
    tb_room_unref(room);
    fixture_stop(&f);
}

static void first_join_gets_a_current_keyframe_and_deltas_chain_from_it(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, 1, 60);
    tb_room *room = open_room(&f, "joined", "dice");
    sleep_ms(300);
    uint64_t ticks_before_join = atomic_load(&room->step_count);
    assert_true(ticks_before_join >= 10);
    join(room, 7);

    tb_out welcome;
    assert_true(wait_for(&f, room, TB_OUT_WELCOME, 7, &welcome, 5000));
    /* the state of the tick the join was applied at, not of the room's start */
    assert_true(welcome.msg->tick >= ticks_before_join);
    tb_snap_decoder *dec = tb_snap_decoder_create(256);
    tb_proto_err err;
    assert_int_equal(tb_snap_decoder_apply(dec, tb_msg_data(welcome.msg), welcome.msg->len, &err), TB_OK);
    assert_int_equal(tb_snap_decoder_tick(dec), (uint32_t)welcome.msg->tick);
    assert_true(tb_snap_decoder_body_count(dec) >= 3);
    uint32_t held = (uint32_t)welcome.msg->tick;
    release(&welcome);

    /* the next snapshots are deltas from the welcome's tick on, and decode */
    uint8_t frame[1 << 16];
    for (int i = 0; i < 5; i++) {
        tb_out snap;
        assert_true(wait_for(&f, room, TB_OUT_SNAPSHOT, 0, &snap, 5000));
        assert_int_equal(snap.msg->type, TB_MSG_SNAP_DELTA);
        assert_int_equal(snap.msg->base_tick, held);
        size_t n = tb_wire_snap_frame(snap.msg, 0, frame, sizeof frame);
        assert_true(n > 0);
        assert_int_equal(tb_snap_decoder_apply(dec, frame, n, &err), TB_OK);
        held = (uint32_t)snap.msg->tick;
        assert_int_equal(tb_snap_decoder_tick(dec), held);
        release(&snap);
    }
    assert_true(count(&f.metrics.snapshots_total) >= 5);
    tb_snap_decoder_destroy(dec);
    tb_room_unref(room);
    fixture_stop(&f);
}

static void welcome_arrives_while_the_snapshot_ring_is_full(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, 1, 120);
    enum { ROOMS = 64 };
    tb_room *rooms[ROOMS];
    open_joined_rooms(&f, "busy", ROOMS, rooms, 100);
    /* nobody polls: 64 rooms x 120 snapshots/s fill the 8192 ring */
    int64_t end = tb_clock_now_ns() + 60 * TB_NS_PER_SEC;
    while (count(&f.metrics.snapshots_dropped_total) == 0 && tb_clock_now_ns() < end)
        sleep_ms(50);
    assert_true(count(&f.metrics.snapshots_dropped_total) > 0);

    join(rooms[0], 999);
    sleep_ms(100); /* applied while the snapshot ring is still full */
    tb_out welcome;
    assert_true(wait_for(&f, rooms[0], TB_OUT_WELCOME, 999, &welcome, 10000));
    assert_int_equal(welcome.msg->type, TB_MSG_WELCOME);
    release(&welcome);
    assert_int_equal(count(&f.metrics.events_dropped_total), 0);
    close_rooms(rooms, ROOMS);
    fixture_stop(&f);
}

static void new_rooms_go_to_the_phase_with_fewest_rooms(void **state)
{
    (void)state;
    int rooms[4] = {0, 0, 0, 0};
    /* an empty worker fills phase 0, 1, 2, 3, then 0 again: round robin */
    for (int k = 0; k < 8; k++) {
        int p = tb_phase_pick(rooms, 4);
        assert_int_equal(p, k % 4);
        rooms[p]++;
    }
    /* a phase emptied by retired rooms is filled first */
    int uneven[4] = {5, 2, 5, 3};
    assert_int_equal(tb_phase_pick(uneven, 4), 1);
    int ties[4] = {4, 3, 3, 3};
    assert_int_equal(tb_phase_pick(ties, 4), 1); /* the lowest index among equals */
    int one[1] = {7};
    assert_int_equal(tb_phase_pick(one, 1), 0);
}

static void phase_grids_are_offset_by_a_share_of_the_period(void **state)
{
    (void)state;
    const int64_t step = TB_STEP_NS;
    assert_int_equal(tb_phase_offset(0, 8, step), 0);
    assert_int_equal(tb_phase_offset(4, 8, step), step / 2);
    assert_int_equal(tb_phase_offset(7, 8, step), 7 * step / 8);
    const int64_t origin = 1000 * step; /* phase 0 due at origin + n x step */
    /* strictly after: a time on the grid gives the next one */
    assert_int_equal(tb_phase_next_due(origin, 0, 8, step, origin), origin + step);
    assert_int_equal(tb_phase_next_due(origin, 0, 8, step, origin - 1), origin);
    assert_int_equal(tb_phase_next_due(origin, 2, 8, step, origin), origin + step / 4);
    /* far before and far after the origin: still on phase 2's grid, the first one past */
    int64_t o2 = origin + tb_phase_offset(2, 8, step);
    assert_int_equal(tb_phase_next_due(origin, 2, 8, step, origin - 37 * step + 5), o2 - 37 * step);
    assert_int_equal(tb_phase_next_due(origin, 2, 8, step, o2 + 12 * step + 3), o2 + 13 * step);
}

/* The case: a room on the phase 6 ms into the period, stepped at
 * 6.1 ms, is 0.1 ms late (with one grid per worker it counted 6.1 ms).
 * An 8 ms period in 4 phases keeps the numbers round. */
static void a_late_phase_room_is_late_by_its_own_delay(void **state)
{
    (void)state;
    const int64_t step = 8 * TB_NS_PER_MS, origin = 500 * step;
    int64_t due = tb_phase_next_due(origin, 3, 4, step, origin - 1);
    assert_int_equal(due - origin, 6 * TB_NS_PER_MS);
    tb_pace pace;
    tb_pace_init(&pace, due - step, step, TB_MAX_BEHIND_NS);
    uint64_t overrun = 0;
    int64_t late = -1;
    /* at the start of the period (when phase 0 is stepped) it is not due yet */
    assert_int_equal(tb_pace_take(&pace, origin, &overrun, &late), 0);
    assert_int_equal(tb_pace_take(&pace, origin + 6100 * TB_NS_PER_US, &overrun, &late), 1);
    assert_int_equal(late, 100 * TB_NS_PER_US);
    assert_int_equal(overrun, 0);
    /* and the next period the same: the room stays on its phase */
    assert_int_equal(pace.next_ns, due + step);
    assert_int_equal(tb_pace_take(&pace, origin + step + 6050 * TB_NS_PER_US, &overrun, &late), 1);
    assert_int_equal(late, 50 * TB_NS_PER_US);
}

/* A worker's rooms, once running, are spread evenly over the phases and
 * each room is due on its own phase's grid (its due time minus the worker's
 * origin is the phase's offset, modulo the period). */
static void a_worker_spreads_its_rooms_over_the_phases(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, 1, 60);
    enum { PER_PHASE = 3, ROOMS = PER_PHASE * TB_SCHED_PHASES };
    tb_room *rooms[ROOMS];
    open_joined_rooms(&f, "phase", ROOMS, rooms, 300);
    sleep_ms(300);
    for (int i = 0; i < ROOMS; i++)
        assert_true(atomic_load(&rooms[i]->step_count) >= 10);
    tb_sched_stop(&f.sched); /* the worker's own fields are ours to read now */
    tb_worker *w = &f.sched.workers[0];
    int placed = 0;
    for (int p = 0; p < TB_SCHED_PHASES; p++) {
        tb_sched_phase *ph = &w->phases[p];
        assert_int_equal(ph->count, PER_PHASE);
        for (int i = 0; i < ph->count; i++) {
            int64_t into = (ph->rooms[i]->pace.next_ns - w->origin_ns) % TB_STEP_NS;
            if (into < 0)
                into += TB_STEP_NS;
            assert_int_equal(into, tb_phase_offset(p, TB_SCHED_PHASES, TB_STEP_NS));
            placed++;
        }
    }
    assert_int_equal(placed, ROOMS);
    close_rooms(rooms, ROOMS);
    tb_registry_close(&f.reg);
    tb_sched_close(&f.sched);
}

static void rooms_of_a_worker_share_one_wake_per_phase(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, 1, 60);
    enum { ROOMS = 4 * TB_SCHED_PHASES };
    tb_room *rooms[ROOMS];
    open_joined_rooms(&f, "grid", ROOMS, rooms, 200);
    sleep_ms(200);
    uint64_t steps0 = tb_sched_worker_steps(&f.sched, 0), wakes0 = tb_sched_worker_wakes(&f.sched, 0);
    int64_t t0 = tb_clock_now_ns();
    /* drain as the network thread would, for one second */
    while (tb_clock_now_ns() - t0 < TB_NS_PER_SEC) {
        tb_out out;
        while (tb_sched_poll(&f.sched, &out))
            release(&out);
        sleep_ms(2);
    }
    double seconds = (double)(tb_clock_now_ns() - t0) / 1e9;
    uint64_t steps = tb_sched_worker_steps(&f.sched, 0) - steps0;
    uint64_t wakes = tb_sched_worker_wakes(&f.sched, 0) - wakes0;
    /* every room stepped (a loaded machine may lag, then catch up within a period) ... */
    assert_true((double)steps >= ROOMS * 60 * seconds);
    /* ... in at most one wake-up per phase pass (phases x 120/s), not one per room */
    assert_true((double)wakes <= TB_SCHED_PHASES * 121 * seconds + 5);
    assert_true(wakes * 3 < steps);
    close_rooms(rooms, ROOMS);
    fixture_stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_room_steps_but_encodes_no_snapshots),
        cmocka_unit_test(first_join_gets_a_current_keyframe_and_deltas_chain_from_it),
        cmocka_unit_test(welcome_arrives_while_the_snapshot_ring_is_full),
        cmocka_unit_test(new_rooms_go_to_the_phase_with_fewest_rooms),
        cmocka_unit_test(phase_grids_are_offset_by_a_share_of_the_period),
        cmocka_unit_test(a_late_phase_room_is_late_by_its_own_delay),
        cmocka_unit_test(a_worker_spreads_its_rooms_over_the_phases),
        cmocka_unit_test(rooms_of_a_worker_share_one_wake_per_phase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
