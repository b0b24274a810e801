/* test_server_proxy.c: --trusted-proxies ranges and the address a
 * connection counts as behind them (server/net/proxy.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "net/proxy.h"

static void ranges_parse_and_match(void **state)
{
    (void)state;
    tb_proxy_list l;
    char err[160];
    assert_int_equal(tb_proxy_parse(&l, "10.0.0.0/8, 172.16.0.0/12,192.168.1.7 ,fd00::/8,::1", err, sizeof err), 0);
    assert_int_equal(l.count, 5);
    assert_true(tb_proxy_trusted(&l, "10.255.1.2"));
    assert_false(tb_proxy_trusted(&l, "11.0.0.1"));
    assert_true(tb_proxy_trusted(&l, "172.31.255.255"));
    assert_false(tb_proxy_trusted(&l, "172.32.0.0"));
    assert_true(tb_proxy_trusted(&l, "192.168.1.7"));
    assert_false(tb_proxy_trusted(&l, "192.168.1.8"));
    assert_true(tb_proxy_trusted(&l, "fd12:3456::1"));
    assert_true(tb_proxy_trusted(&l, "::1"));
    assert_false(tb_proxy_trusted(&l, "::2"));
    assert_true(tb_proxy_trusted(&l, "::ffff:10.1.1.1")); /* IPv4-mapped, as a dual-stack socket reports it */
    assert_false(tb_proxy_trusted(&l, "garbage"));
    assert_false(tb_proxy_trusted(&l, ""));
    assert_int_equal(tb_proxy_parse(&l, "", err, sizeof err), 0);
    assert_int_equal(l.count, 0);
    assert_false(tb_proxy_trusted(&l, "127.0.0.1"));
    assert_int_equal(tb_proxy_parse(&l, "0.0.0.0/0", err, sizeof err), 0);
    assert_true(tb_proxy_trusted(&l, "8.8.8.8"));
    assert_false(tb_proxy_trusted(&l, "2001:db8::1")); /* an IPv4 range holds no IPv6 address */
}

static void malformed_ranges_are_refused_with_a_reason(void **state)
{
    (void)state;
    tb_proxy_list l;
    char err[160];
    const char *bad[] = {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "1.2.3", "::1/129", "host.example", "10.0.0.0/-1",
                         "1.2.3.4.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(tb_proxy_parse(&l, bad[i], err, sizeof err), -1);
        assert_non_null(strstr(err, "--trusted-proxies: "));
    }
    char many[33 * 12] = "";
    for (int i = 0; i < 33; i++)
        strcat(many, "10.0.0.1,");
    assert_int_equal(tb_proxy_parse(&l, many, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 32"));
}

static void forwarded_for_counts_only_through_a_trusted_peer(void **state)
{
    (void)state;
    tb_proxy_list l;
    char err[160], out[48];
    assert_int_equal(tb_proxy_parse(&l, "10.0.0.0/8", err, sizeof err), 0);
    static const struct { const char *peer, *xff, *counts_as, *why; } cases[] = {
        {"198.51.100.4", "203.0.113.1", "198.51.100.4", "untrusted peer: the header is ignored"},
        {"10.0.0.2", "203.0.113.1", "203.0.113.1", "trusted peer, one hop"},
        {"10.0.0.2", "1.1.1.1, 203.0.113.1, 10.9.9.9", "203.0.113.1", "the rightmost untrusted address wins"},
        {"10.0.0.2", NULL, "10.0.0.2", "no header: the peer"},
        {"10.0.0.2", "", "10.0.0.2", "empty header: the peer"},
        {"10.0.0.2", "203.0.113.1, unknown", "10.0.0.2", "unparseable: the peer"},
        {"10.0.0.2", "203.0.113.1,,", "10.0.0.2", "empty item: the peer"},
        {"10.0.0.2", " 2001:db8::5 ", "2001:db8::5", "IPv6 client through the proxy"},
        {"10.0.0.2", "10.0.0.9, 10.0.0.8", "10.0.0.9", "only proxies: the leftmost is as far as it goes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tb_proxy_client_addr(&l, cases[i].peer, cases[i].xff, out, sizeof out);
        if (strcmp(out, cases[i].counts_as) != 0)
            fail_msg("%s: got %s, want %s", cases[i].why, out, cases[i].counts_as);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranges_parse_and_match),
        cmocka_unit_test(malformed_ranges_are_refused_with_a_reason),
        cmocka_unit_test(forwarded_for_counts_only_through_a_trusted_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
