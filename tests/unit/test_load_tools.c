/* test_load_tools.c: the measuring parts of tumble-load (tests/load): its
 * histograms, its reading of the server's Prometheus text, and finding the
 * local server process by its listening port. The network side is covered by
 * tests/integration/load.test.mjs against a real server.
 *
 * The load tool is a program, not part of libtumble, so its sources are
 * compiled into this test directly (everything but load_main.c). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "load/load_client.c"
#include "load/load_hist.c"
#include "load/load_metrics.c"

static void histogram_quantiles_are_within_two_percent(void **state)
{
    (void)state;
    static tl_hist h;
    memset(&h, 0, sizeof h);
    /* 1..100000 us uniformly: the q-quantile is q * 100000 */
    for (int v = 1; v <= 100000; v++)
        tl_hist_add(&h, v);
    assert_int_equal(h.count, 100000);
    double qs[] = {0.01, 0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double got = tl_hist_quantile(&h, qs[i]), want = qs[i] * 100000;
        assert_true(fabs(got - want) <= 0.02 * want);
    }
    assert_true(tl_hist_quantile(&h, 1.0) <= 100000);
}

static void histogram_small_values_are_exact(void **state)
{
    (void)state;
    static tl_hist h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 99; i++)
        tl_hist_add(&h, 10);
    tl_hist_add(&h, 50);
    assert_true(tl_hist_quantile(&h, 0.5) >= 10 && tl_hist_quantile(&h, 0.5) <= 11);
    assert_true(tl_hist_quantile(&h, 1.0) <= 50);
    static tl_hist empty;
    assert_true(tl_hist_quantile(&empty, 0.99) == 0);
}

static const char before_text[] =
    "# HELP tumble_rooms Rooms open.\n# TYPE tumble_rooms gauge\ntumble_rooms 5\n"
    "tumble_steps_total 1000\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.001\"} 100\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.002\"} 100\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.008\"} 100\n"
    "tumble_tick_lateness_seconds_bucket{le=\"+Inf\"} 100\n"
    "tumble_inputs_rejected_total{reason=\"rate\"} 2\n"
    "tumble_inputs_rejected_total{reason=\"malformed\"} 1\n";

/* Between the scrapes: 90 observations under 1 ms, 9 in (1, 2] ms, 1 in (2, 8] ms. */
static const char after_text[] =
    "tumble_rooms 5\r\n"
    "tumble_steps_total 2200\r\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.001\"} 190\r\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.002\"} 199\r\n"
    "tumble_tick_lateness_seconds_bucket{le=\"0.008\"} 200\r\n"
    "tumble_tick_lateness_seconds_bucket{le=\"+Inf\"} 200\r\n"
    "tumble_inputs_rejected_total{reason=\"rate\"} 3\r\n"
    "garbage line without value\r\n";

static void prometheus_text_is_read_by_key(void **state)
{
    (void)state;
    tl_prom a = {0}, b = {0};
    assert_int_equal(tl_prom_parse(&a, before_text, strlen(before_text)), 0);
    assert_int_equal(tl_prom_parse(&b, after_text, strlen(after_text)), 0);
    assert_true(tl_prom_get(&a, "tumble_rooms") == 5);
    assert_true(tl_prom_get(&b, "tumble_steps_total") == 2200);
    assert_true(isnan(tl_prom_get(&a, "tumble_nothing")));
    assert_true(tl_prom_sum(&a, "tumble_inputs_rejected_total") == 3);
    assert_true(tl_prom_get(&a, "tumble_inputs_rejected_total{reason=\"rate\"}") == 2);
    tl_prom_free(&a);
    tl_prom_free(&b);
}

static void histogram_quantiles_come_from_bucket_deltas(void **state)
{
    (void)state;
    tl_prom a = {0}, b = {0};
    tl_prom_parse(&a, before_text, strlen(before_text));
    tl_prom_parse(&b, after_text, strlen(after_text));
    /* p50: rank 50 of 100, inside the first bucket (0, 1 ms]: 50/90 of the way */
    double p50 = tl_prom_hist_quantile(&a, &b, "tumble_tick_lateness_seconds", 0.5);
    assert_true(fabs(p50 - 0.001 * 50.0 / 90.0) < 1e-9);
    /* p99: rank 99, the last of the (1, 2] ms bucket */
    double p99 = tl_prom_hist_quantile(&a, &b, "tumble_tick_lateness_seconds", 0.99);
    assert_true(fabs(p99 - 0.002) < 1e-9);
    /* no observations between two identical scrapes */
    assert_true(isnan(tl_prom_hist_quantile(&a, &a, "tumble_tick_lateness_seconds", 0.99)));
    assert_true(isnan(tl_prom_hist_quantile(&a, &b, "tumble_nothing_seconds", 0.99)));
    tl_prom_free(&a);
    tl_prom_free(&b);
}

static void the_listening_process_is_found_by_port(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    assert_int_equal(tl_find_listener_pid(ntohs(sa.sin_port)), getpid());
    close(fd);
    assert_true(tl_proc_cpu_seconds(getpid()) >= 0);
    assert_true(tl_proc_rss_mb(getpid()) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(histogram_quantiles_are_within_two_percent),
        cmocka_unit_test(histogram_small_values_are_exact),
        cmocka_unit_test(prometheus_text_is_read_by_key),
        cmocka_unit_test(histogram_quantiles_come_from_bucket_deltas),
        cmocka_unit_test(the_listening_process_is_found_by_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
