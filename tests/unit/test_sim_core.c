/* test_sim_core.c: the room core that needs no physics: room ids, the
 * bounded ring, the fixed-step pacing with its catch-up cap, metrics
 * histograms, and the registry's limits and idle disposal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/pace.h"
#include "sim/registry.h"
#include "sim/ring.h"
#include "sim/room.h"
#include "sim/sched.h"
#include "sim/world.h"
#include "net/limits.h"

static void room_ids_are_short_url_safe_words(void **state)
{
    (void)state;
    assert_true(tb_room_id_valid("tower"));
    assert_true(tb_room_id_valid("A-b_9"));
    assert_true(tb_room_id_valid("x"));
    assert_true(tb_room_id_valid("abcdefghijklmnopqrstuvwxyz012345")); /* 32 */
    assert_false(tb_room_id_valid("abcdefghijklmnopqrstuvwxyz0123456")); /* 33 */
    assert_false(tb_room_id_valid(""));
    assert_false(tb_room_id_valid(NULL));
    assert_false(tb_room_id_valid("a b"));
    assert_false(tb_room_id_valid("../x"));
    assert_false(tb_room_id_valid("caf\xc3\xa9"));
    assert_false(tb_room_id_valid("a%2e"));
}

static void ring_is_fifo_and_refuses_when_full(void **state)
{
    (void)state;
    tb_ring ring;
    assert_int_equal(tb_ring_init(&ring, 5, sizeof(int)), 0);
    assert_int_equal(tb_ring_capacity(&ring), 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(tb_ring_push(&ring, &i), 0);
    int x = 99;
    assert_int_equal(tb_ring_push(&ring, &x), TB_RING_EFULL);
    assert_int_equal(tb_ring_count(&ring), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(tb_ring_pop(&ring, &x), 1);
        assert_int_equal(x, i);
    }
    assert_int_equal(tb_ring_pop(&ring, &x), 0);
    /* wraps around many times */
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(tb_ring_push(&ring, &i), 0);
        assert_int_equal(tb_ring_pop(&ring, &x), 1);
        assert_int_equal(x, i);
    }
    tb_ring_close(&ring);
}

typedef struct {
    tb_ring *ring;
    int producer;
    int pushed;
} producer_arg;

#define PER_PRODUCER 20000

static void *produce(void *p)
{
    producer_arg *a = p;
    for (int i = 0; i < PER_PRODUCER; i++) {
        int v = a->producer * PER_PRODUCER + i;
        while (tb_ring_push(a->ring, &v) != 0) {
        }
        a->pushed++;
    }
    return NULL;
}

static void ring_keeps_each_producers_order_under_contention(void **state)
{
    (void)state;
    tb_ring ring;
    assert_int_equal(tb_ring_init(&ring, 64, sizeof(int)), 0);
    pthread_t th[3];
    producer_arg args[3];
    for (int p = 0; p < 3; p++) {
        args[p] = (producer_arg){&ring, p, 0};
        pthread_create(&th[p], NULL, produce, &args[p]);
    }
    int last[3] = {-1, -1, -1}, got = 0, v;
    while (got < 3 * PER_PRODUCER) {
        if (!tb_ring_pop(&ring, &v))
            continue;
        int p = v / PER_PRODUCER, i = v % PER_PRODUCER;
        assert_true(i > last[p]);
        last[p] = i;
        got++;
    }
    for (int p = 0; p < 3; p++)
        pthread_join(th[p], NULL);
    assert_int_equal(tb_ring_pop(&ring, &v), 0);
    tb_ring_close(&ring);
}

#define STEP 8333333LL
#define CAP 250000000LL

static void pace_waits_then_owes_one_step_per_period(void **state)
{
    (void)state;
    tb_pace pace;
    tb_pace_init(&pace, 0, STEP, CAP);
    uint64_t overrun = 0;
    int64_t late = 0;
    assert_int_equal(tb_pace_take(&pace, STEP - 1, &overrun, &late), 0);
    assert_int_equal(tb_pace_take(&pace, STEP, &overrun, &late), 1);
    assert_int_equal(late, 0);
    assert_int_equal(tb_pace_take(&pace, STEP + 100, &overrun, &late), 0);
    assert_int_equal(tb_pace_take(&pace, 2 * STEP + 500, &overrun, &late), 1);
    assert_int_equal(late, 500);
    assert_int_equal(pace.next_ns, 3 * STEP);
    /* 120 wakes a second, each on time, give 120 steps */
    int steps = 0;
    for (int k = 0; k < 120; k++)
        steps += tb_pace_take(&pace, 3 * STEP + k * STEP + 1000, &overrun, &late);
    assert_int_equal(steps, 120);
    assert_int_equal(overrun, 0);
}

static void pace_catches_up_a_short_stall_exactly(void **state)
{
    (void)state;
    tb_pace pace;
    tb_pace_init(&pace, 0, STEP, CAP);
    uint64_t overrun = 0;
    int64_t late = 0;
    /* 100 ms late: 12 + 1 steps owed, all taken, none lost */
    int n = tb_pace_take(&pace, STEP + 100000000LL, &overrun, &late);
    assert_int_equal(n, 13);
    assert_int_equal(overrun, 0);
    assert_int_equal(late, 100000000LL);
    assert_true(pace.next_ns > STEP + 100000000LL);
    assert_true(pace.next_ns <= STEP + 100000000LL + STEP);
}

static void pace_caps_catch_up_at_a_quarter_second_and_counts_overruns(void **state)
{
    (void)state;
    tb_pace pace;
    tb_pace_init(&pace, 0, STEP, CAP);
    uint64_t overrun = 0;
    int64_t late = 0;
    /* stalled for 2 s: 241 steps owed, 30 taken (0.25 s), 211 counted */
    int64_t now = STEP + 2000000000LL;
    int n = tb_pace_take(&pace, now, &overrun, &late);
    assert_int_equal(n, 30);
    assert_int_equal(overrun, 241 - 30);
    /* and the room is back on schedule: the next step is due within a period */
    assert_true(pace.next_ns > now && pace.next_ns <= now + STEP);
    assert_int_equal(tb_pace_take(&pace, now + 1, &overrun, &late), 0);
}

static void histogram_quantiles_fall_in_the_right_bucket(void **state)
{
    (void)state;
    tb_metrics m;
    tb_metrics_init(&m);
    for (int i = 0; i < 90; i++)
        tb_hist_observe(&m.step_time, 80);   /* (50,100] */
    for (int i = 0; i < 10; i++)
        tb_hist_observe(&m.step_time, 3000); /* (2000,4000] */
    double p50 = tb_hist_quantile(&m.step_time, 0.5), p99 = tb_hist_quantile(&m.step_time, 0.99);
    assert_true(p50 > 50 && p50 <= 100);
    assert_true(p99 > 2000 && p99 <= 4000);
    char buf[16384];
    size_t n = tb_metrics_write(&m, buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_non_null(strstr(buf, "tumble_step_seconds_bucket{le=\"0.0001\"} 90\n"));
    assert_non_null(strstr(buf, "tumble_step_seconds_count 100\n"));
    assert_true(tb_metrics_write(&m, NULL, 0) == n);
}

/* Workers keep counting while /metrics is written: counters gain digits,
 * histogram sums (%g) change length. */
static atomic_bool metrics_churn_stop;
static void *metrics_churn(void *arg)
{
    tb_metrics *m = arg;
    uint64_t v = 1;
    while (!atomic_load(&metrics_churn_stop)) {
        v = v > UINT64_MAX / 10 ? 1 : v * 10;
        atomic_store(&m->bytes_sent_total, v);
        atomic_store(&m->steps_total, v / 3);
        tb_hist_observe(&m->step_time, (int64_t)(v % 997) + 1);
    }
    return NULL;
}

static void metrics_text_fits_while_the_counters_grow(void **state)
{
    (void)state;
    static tb_metrics m;
    tb_metrics_init(&m);
    atomic_store(&metrics_churn_stop, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, metrics_churn, &m), 0);
    int grew = 0, i;
    for (i = 0; i < 200000 && (grew < 20 || i < 5000); i++) {
        size_t measured = tb_metrics_write(&m, NULL, 0), len = 0, cap = 0;
        char *text = tb_metrics_render(&m, 64, &len, &cap);
        assert_non_null(text);
        /* the text came out longer than measured: what used to overflow */
        if (len > measured)
            grew++;
        assert_true(len + 64 < cap);
        assert_int_equal(strlen(text), len);
        assert_int_equal(text[len - 1], '\n');
        assert_non_null(strstr(text, "tumble_connections_refused_total{reason=\"room_mismatch\"} 0\n"));
        free(text);
    }
    atomic_store(&metrics_churn_stop, true);
    pthread_join(t, NULL);
    print_message("%d of %d renders came out longer than a measuring pass before them\n", grew, i);
    assert_true(grew > 0);
}

static void wake_nothing(void *data) { (void)data; }

static void registry_limits_rooms_and_retires_idle_ones(void **state)
{
    (void)state;
    tb_metrics m;
    tb_metrics_init(&m);
    tb_sched sched;
    assert_int_equal(tb_sched_init(&sched, 2, 60, "test", &m, wake_nothing, NULL), 0);
    tb_registry reg;
    tb_registry_init(&reg, &sched, &m, 6, 1000, 1);
    assert_int_equal(tb_registry_open_defaults(&reg), 0);
    assert_int_equal(tb_registry_count(&reg), 5);
    assert_int_equal(tb_sched_worker_load(&sched, 0) + tb_sched_worker_load(&sched, 1), 5);
    assert_true(abs(tb_sched_worker_load(&sched, 0) - tb_sched_worker_load(&sched, 1)) <= 1);

    tb_room *room = NULL;
    bool created = false;
    assert_int_equal(tb_registry_get_or_create(&reg, "bad id", "tower", false, &room, &created), TB_EBADID);
    assert_int_equal(tb_registry_get_or_create(&reg, "r1", "no-scene", false, &room, &created), TB_EBADSCENE);
    assert_int_equal(tb_registry_get_or_create(&reg, "r1", "dough", false, &room, &created), 0);
    assert_true(created);
    tb_room_unref(room);
    assert_int_equal(tb_registry_get_or_create(&reg, "r1", "tower", false, &room, &created), 0);
    assert_false(created);
    assert_string_equal(room->scene, "dough"); /* an existing room keeps its scene */
    tb_room_unref(room);
    assert_int_equal(tb_registry_get_or_create(&reg, "r2", "tower", false, &room, &created), TB_EMAXROOMS);

    /* idle: first sweep starts the clock, a later one past the timeout retires */
    assert_int_equal(tb_registry_sweep(&reg, 10000), 0);
    assert_int_equal(tb_registry_sweep(&reg, 10500), 0);
    assert_int_equal(tb_registry_sweep(&reg, 11000), 1);
    assert_int_equal(tb_registry_count(&reg), 5); /* the default rooms stay */
    assert_null(tb_registry_find(&reg, "r1"));
    tb_room *tower = tb_registry_find(&reg, "tower");
    assert_non_null(tower);
    tb_room_unref(tower);

    tb_registry_close(&reg);
    tb_sched_close(&sched);
}

/* The settled tower is remembered by the scheduler (sim/tower_memo.h), not
 * by physics: tower rooms of one scheduler share it, another scheduler has
 * its own. */
static void tower_rooms_share_their_schedulers_settled_tower(void **state)
{
    (void)state;
    tb_metrics m;
    tb_metrics_init(&m);
    tb_sched a, b;
    assert_int_equal(tb_sched_init(&a, 1, 60, "a", &m, wake_nothing, NULL), 0);
    assert_int_equal(tb_sched_init(&b, 1, 60, "b", &m, wake_nothing, NULL), 0);
    tb_registry ra, rb;
    tb_registry_init(&ra, &a, &m, 10, 1000, 1);
    tb_registry_init(&rb, &b, &m, 10, 1000, 1);
    tb_room *room = NULL;
    assert_int_equal(tb_registry_get_or_create(&ra, "t1", "tower", false, &room, NULL), 0);
    assert_ptr_equal(room->env, &a.env);
    tb_room_unref(room);
    assert_int_equal(tb_registry_get_or_create(&ra, "t2", "tower", false, &room, NULL), 0);
    tb_room_unref(room);
    assert_int_equal(tb_registry_get_or_create(&rb, "t3", "tower", false, &room, NULL), 0);
    tb_room_unref(room);
    tb_tower_memo_stats st;
    tb_tower_memo_get_stats(&a.tower_memo, &st);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.hits, 1);
    tb_tower_memo_get_stats(&b.tower_memo, &st);
    assert_int_equal(st.settles, 1);
    assert_int_equal(st.hits, 0);
    tb_registry_close(&ra);
    tb_registry_close(&rb);
    tb_sched_close(&a);
    tb_sched_close(&b);
}

static void registry_finds_each_of_many_rooms_across_retirements(void **state)
{
    (void)state;
    tb_metrics m;
    tb_metrics_init(&m);
    tb_sched sched;
    assert_int_equal(tb_sched_init(&sched, 1, 60, "test", &m, wake_nothing, NULL), 0);
    tb_registry reg;
    tb_registry_init(&reg, &sched, &m, 1000, 1000, 1);
    enum { N = 300 };
    char id[24];
    for (int i = 0; i < N; i++) {
        tb_room *room = NULL;
        snprintf(id, sizeof id, "room-%d", i);
        assert_int_equal(tb_registry_get_or_create(&reg, id, "dice", false, &room, NULL), 0);
        if (i % 2) /* odd rooms have a client and stay */
            atomic_store(&room->clients, 1);
        tb_room_unref(room);
    }
    assert_int_equal(tb_registry_count(&reg), N);
    assert_int_equal(tb_registry_sweep(&reg, 10000), 0);
    assert_int_equal(tb_registry_sweep(&reg, 12000), N / 2);
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "room-%d", i);
        tb_room *room = tb_registry_find(&reg, id);
        if (i % 2) {
            assert_non_null(room);
            assert_string_equal(room->id, id);
            tb_room_unref(room);
        } else {
            assert_null(room);
        }
    }
    /* a retired id can be opened again, and is a new room */
    tb_room *again = NULL;
    bool created = false;
    assert_int_equal(tb_registry_get_or_create(&reg, "room-0", "tower", false, &again, &created), 0);
    assert_true(created);
    assert_string_equal(again->scene, "tower");
    tb_room_unref(again);
    assert_int_equal(tb_registry_count(&reg), N / 2 + 1);
    tb_registry_close(&reg);
    tb_sched_close(&sched);
}


/* PROTOCOL.md §5: values as people write them, range at float32 precision. */
static void param_values_go_out_as_decimals_and_slider_ends_are_in_range(void **state)
{
    (void)state;
    assert_true(tb_world_param_decimal((double)0.2f) == 0.2);
    assert_true(tb_world_param_decimal((double)0.9f) == 0.9);
    assert_true(tb_world_param_decimal((double)-3.14159f) == -3.14159);
    assert_true(tb_world_param_decimal(12.0) == 12.0);
    assert_true(tb_world_param_decimal((double)1e-7f) == 1e-7);
    const tb_world_param restitution = {"restitution", 0.0, 0.9f, 0.3, 0.05}; /* a float max, as the physics keeps it */
    assert_int_equal(tb_world_param_check(&restitution, 0.9), 0);
    assert_int_equal(tb_world_param_check(&restitution, 0.9000000000000001), 0);
    assert_int_equal(tb_world_param_check(&restitution, 0.0), 0);
    assert_int_not_equal(tb_world_param_check(&restitution, 0.91), 0);
    assert_int_not_equal(tb_world_param_check(&restitution, -1e-6), 0);
    assert_int_not_equal(tb_world_param_check(&restitution, 0.0 / 0.0), 0);
    tb_proto_param out;
    tb_world_param_describe(&restitution, (double)0.2f, &out);
    assert_true(out.value == 0.2 && out.max == 0.9 && out.step == 0.05);
}

/* net/limits.h: the one token bucket every limit uses. */
static void token_bucket_starts_full_refills_and_caps_at_its_burst(void **state)
{
    (void)state;
    tb_bucket b;
    int64_t t = 1000000000;
    tb_bucket_init(&b, 4, t);
    for (int i = 0; i < 4; i++)
        assert_true(tb_bucket_take(&b, 2, 4, t));
    assert_false(tb_bucket_take(&b, 2, 4, t));
    assert_false(tb_bucket_take(&b, 2, 4, t + 400000000)); /* 0.8 tokens */
    assert_true(tb_bucket_take(&b, 2, 4, t + 500000000));  /* 1 token after 0.5 s at 2/s */
    t += 60 * 1000000000LL;                                 /* a minute idle: full, not 120 */
    for (int i = 0; i < 4; i++)
        assert_true(tb_bucket_take(&b, 2, 4, t));
    assert_false(tb_bucket_take(&b, 2, 4, t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(room_ids_are_short_url_safe_words),
        cmocka_unit_test(param_values_go_out_as_decimals_and_slider_ends_are_in_range),
        cmocka_unit_test(token_bucket_starts_full_refills_and_caps_at_its_burst),
        cmocka_unit_test(ring_is_fifo_and_refuses_when_full),
        cmocka_unit_test(ring_keeps_each_producers_order_under_contention),
        cmocka_unit_test(pace_waits_then_owes_one_step_per_period),
        cmocka_unit_test(pace_catches_up_a_short_stall_exactly),
        cmocka_unit_test(pace_caps_catch_up_at_a_quarter_second_and_counts_overruns),
        cmocka_unit_test(histogram_quantiles_fall_in_the_right_bucket),
        cmocka_unit_test(metrics_text_fits_while_the_counters_grow),
        cmocka_unit_test(registry_limits_rooms_and_retires_idle_ones),
        cmocka_unit_test(tower_rooms_share_their_schedulers_settled_tower),
        cmocka_unit_test(registry_finds_each_of_many_rooms_across_retirements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
