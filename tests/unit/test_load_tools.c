/* test_load_tools.c: the measuring parts of tumble-load (tests/load): its
 * histograms, its reading of the server's Prometheus text, finding the
 * local server process by its listening port, the machine it names beside its
 * figures, and the ramp's picture (--report). The network side is covered by
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
#include "load/load_report.c"

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

static char *slurp(const char *path);

static void the_machine_is_named_with_its_load(void **state)
{
    (void)state;
    tl_machine m;
    tl_machine_read(&m);
    assert_int_equal(m.cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(m.cpu_model[0] != 0);
    /* where the kernel names the family and model (x86), they are read */
    const char *info = slurp("/proc/cpuinfo");
    if (strstr(info, "\ncpu family\t"))
        assert_true(m.cpu_family > 0 && m.cpu_model_number >= 0);
    double l[3];
    assert_int_equal(tl_loadavg(l), 0);
    for (int i = 0; i < 3; i++)
        assert_true(isfinite(l[i]) && l[i] >= 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The cy of the point of `series` at `rooms` in the picture, or NAN. */
static double point_y(const char *text, const char *series, int rooms)
{
    char key[96];
    snprintf(key, sizeof key, "class=\"pt %s", series);
    for (const char *p = text; (p = strstr(p, key)) != NULL; p += strlen(key)) {
        int r;
        const char *d = strstr(p, "data-rooms=\"");
        const char *cy = strstr(p, "cy=\"");
        if (d && cy && sscanf(d, "data-rooms=\"%d\"", &r) == 1 && r == rooms)
            return atof(cy + 4);
    }
    return NAN;
}

/* Twelve steps of 25 rooms, the last two fell behind: every step is a point on
 * each of the four series, the held limit is marked at 250, the axes are there,
 * a higher lateness is drawn higher, and text from the machine is escaped. */
static void the_ramp_picture_has_every_step_and_the_held_mark(void **state)
{
    (void)state;
    tl_report steps[12];
    memset(steps, 0, sizeof steps);
    for (int i = 0; i < 12; i++) {
        tl_report *r = &steps[i];
        r->rooms = 25 * (i + 1);
        r->clients = 2 * r->rooms;
        r->lateness_p99_ms = 1.0 + 0.6 * i + (i >= 10 ? 8.0 * (i - 9) : 0);
        r->snapshot_rate_ratio = i >= 10 ? 0.985 : 1.001;
        r->steps_per_room_s = 120;
        r->server_cpu_cores = 0.006 * r->rooms;
        r->generator_cpu_cores = 0.001 * r->rooms;
        r->server_workers_cpu_cores = 0.004 * r->rooms;
        /* the first two steps from a server that does not say (NaN: no point drawn) */
        r->server_network_cpu_cores = i < 2 ? NAN : 0.002 * r->rooms;
        r->held = i < 10;
        snprintf(r->why, sizeof r->why, "%s", r->held ? "" : "p99 tick lateness <high>");
    }
    tl_machine m;
    memset(&m, 0, sizeof m);
    snprintf(m.cpu_model, sizeof m.cpu_model, "Test CPU <5 GHz> & \"friends\"");
    snprintf(m.simd, sizeof m.simd, "avx2");
    m.cpu_family = 26;
    m.cpu_model_number = 2;
    m.cpu_mhz = 2095.98;
    m.l2_kib = 1024;
    m.cores = 2;
    m.load_start[0] = 1.5;
    m.load_end[0] = 2.25;
    tl_report_meta meta = {.machine = &m, .scenes = "tower", .clients_per_room = 2, .max_rooms_held = 250,
                           .target_ratio = 0.99, .target_lateness_ms = 8.333, .when = "2026-12-01 10:00 UTC"};
    char dir[] = "/tmp/tl-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char svg[64], html[64];
    snprintf(svg, sizeof svg, "%s/ramp.svg", dir);
    snprintf(html, sizeof html, "%s/ramp.html", dir);
    assert_int_equal(tl_report_write(svg, steps, 12, &meta), 0);
    const char *t = slurp(svg);
    assert_true(strncmp(t, "<?xml", 5) == 0);
    assert_non_null(strstr(t, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_int_equal(count_of(t, "class=\"axis x\" data-name=\"rooms\""), 1);
    assert_int_equal(count_of(t, "class=\"axis y\""), 3);
    assert_int_equal(count_of(t, "class=\"pt lateness"), 12);
    assert_int_equal(count_of(t, "class=\"pt ratio"), 12);
    assert_int_equal(count_of(t, "class=\"pt server-cpu"), 12);
    assert_int_equal(count_of(t, "class=\"pt generator-cpu"), 12);
    assert_int_equal(count_of(t, "class=\"pt workers-cpu"), 12);
    assert_int_equal(count_of(t, "class=\"pt network-cpu"), 10);
    assert_int_equal(count_of(t, " missed\""), 2 * 6);
    assert_int_equal(count_of(t, "class=\"held-mark\" data-rooms=\"250\""), 1);
    assert_int_equal(count_of(t, "<script"), 0);
    assert_non_null(strstr(t, "Test CPU &lt;5 GHz&gt; &amp; &quot;friends&quot; (family 26 model 2, 2096 MHz, L2 1024 KiB) "
                              "avx2, 2 cores</text>"));
    assert_non_null(strstr(t, "load average 1.50 at the start, 2.25 at the end, 2026-12-01 10:00 UTC</text>"));
    /* screen y grows downwards: the worst lateness is highest, and each rise is drawn as one */
    for (int rooms = 50; rooms <= 300; rooms += 25)
        assert_true(point_y(t, "lateness", rooms) < point_y(t, "lateness", rooms - 25));
    assert_true(point_y(t, "server-cpu", 300) < point_y(t, "server-cpu", 25));
    /* the split under its total: workers below the server, the network thread below the workers */
    assert_true(point_y(t, "server-cpu", 300) < point_y(t, "workers-cpu", 300));
    assert_true(point_y(t, "workers-cpu", 300) < point_y(t, "network-cpu", 300));

    assert_int_equal(tl_report_write(html, steps, 12, &meta), 0);
    t = slurp(html);
    assert_true(strncmp(t, "<!doctype html>", 15) == 0);
    assert_int_equal(count_of(t, "<svg class=\"tumble-ramp\""), 1);
    assert_int_equal(count_of(t, "<tr class=\"step\">"), 12);
    assert_non_null(strstr(t, "<th>workers</th><th>network thread</th>"));
    assert_non_null(strstr(t, "<td>1.80</td><td>1.20</td><td>0.60</td><td>0.30</td>")); /* 300 rooms: server, workers, network, generator */
    assert_int_equal(count_of(t, "fell behind: p99 tick lateness &lt;high&gt;"), 2);
    assert_int_equal(count_of(t, "<script"), 0);
    assert_int_equal(count_of(t, "src=\""), 0);
    unlink(svg);
    unlink(html);
    rmdir(dir);

    /* an unwritable path is an error, not a crash */
    assert_int_equal(tl_report_write("/nonexistent-dir/x.svg", steps, 12, &meta), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(histogram_quantiles_are_within_two_percent),
        cmocka_unit_test(histogram_small_values_are_exact),
        cmocka_unit_test(prometheus_text_is_read_by_key),
        cmocka_unit_test(histogram_quantiles_come_from_bucket_deltas),
        cmocka_unit_test(the_listening_process_is_found_by_port),
        cmocka_unit_test(the_machine_is_named_with_its_load),
        cmocka_unit_test(the_ramp_picture_has_every_step_and_the_held_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
