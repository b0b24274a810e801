/* test_server_redis.c: --redis URLs (server/net/redis.c) and who may drain
 * a fleet server (server/net/fleet.c). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "net/fleet.h"
#include "net/proxy.h"
#include "net/redis.h"

static void redis_urls_parse_into_host_port_auth_and_db(void **state)
{
    (void)state;
    tb_redis_url u;
    char err[160];
    assert_int_equal(tb_redis_url_parse("redis://127.0.0.1:6380/2", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 2);
    assert_string_equal(u.password, "");
    assert_int_equal(tb_redis_url_parse("redis://redis", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "redis");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_int_equal(tb_redis_url_parse("redis://:s3cret@redis.svc:7000/", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "redis.svc");
    assert_int_equal(u.port, 7000);
    assert_string_equal(u.user, "");
    assert_string_equal(u.password, "s3cret");
    assert_int_equal(tb_redis_url_parse("redis://tumble:p@ss@[::1]:6379/1", &u, err, sizeof err), 0);
    assert_string_equal(u.user, "tumble");
    assert_string_equal(u.password, "p@ss"); /* the last @ ends the password */
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.db, 1);
    assert_int_equal(tb_redis_url_parse("localhost:6390", &u, err, sizeof err), 0); /* no scheme */
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6390);
}

static void bad_redis_urls_are_refused_with_a_reason(void **state)
{
    (void)state;
    static const struct { const char *url, *reason; } cases[] = {
        {"http://redis:6379", "must start with redis://"},
        {"redis://", "missing or too long host"},
        {"redis://:6379", "missing or too long host"},
        {"redis://host:0", "port must be 1..65535"},
        {"redis://host:65536", "port must be 1..65535"},
        {"redis://host:12x", "port must be 1..65535"},
        {"redis://host/abc", "database must be a number"},
        {"redis://host/1/2", "database must be a number"},
        {"redis://[::1", "missing ]"},
        {"redis://ho st", "bad character"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tb_redis_url u;
        char err[160] = "";
        if (tb_redis_url_parse(cases[i].url, &u, err, sizeof err) != -1)
            fail_msg("%s: accepted", cases[i].url);
        if (!strstr(err, cases[i].reason))
            fail_msg("%s: reason '%s', want '%s'", cases[i].url, err, cases[i].reason);
    }
}

static void only_loopback_and_trusted_proxies_may_drain(void **state)
{
    (void)state;
    tb_proxy_list l;
    char err[160];
    assert_int_equal(tb_proxy_parse(&l, "10.0.0.0/8", err, sizeof err), 0);
    assert_true(tb_fleet_admin_allowed("127.0.0.1", &l));
    assert_true(tb_fleet_admin_allowed("::1", &l));
    assert_true(tb_fleet_admin_allowed("::ffff:127.0.0.1", &l));
    assert_true(tb_fleet_admin_allowed("10.3.4.5", &l));
    assert_false(tb_fleet_admin_allowed("203.0.113.7", &l));
    assert_false(tb_fleet_admin_allowed("128.0.0.1", &l));
    assert_false(tb_fleet_admin_allowed("", &l));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis_urls_parse_into_host_port_auth_and_db),
        cmocka_unit_test(bad_redis_urls_are_refused_with_a_reason),
        cmocka_unit_test(only_loopback_and_trusted_proxies_may_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
