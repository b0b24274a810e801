/* test_server_config.c: flags, environment and defaults of tumble-server
 * (server/net/config.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "net/config.h"

static const char *const *fake_env;

static const char *lookup(const char *name)
{
    for (const char *const *e = fake_env; e && *e; e += 2)
        if (strcmp(e[0], name) == 0)
            return e[1];
    return NULL;
}

static int parse(tb_config *cfg, const char *const *env, int argc, const char **argv, char *err)
{
    fake_env = env;
    return tb_config_parse(cfg, argc, (char **)argv, lookup, err, 256);
}

static void defaults_match_the_documentation(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *argv[] = {"tumble-server"};
    assert_int_equal(parse(&cfg, NULL, 1, argv, err), TB_CONFIG_OK);
    assert_int_equal(cfg.port, 8080);
    assert_string_equal(cfg.bind, "0.0.0.0");
    assert_true(cfg.workers >= 1);
    assert_string_equal(cfg.client_dir, "client-web/dist");
    assert_int_equal(cfg.snapshot_rate, 60);
    assert_int_equal(cfg.slow_reader_timeout, 10);
    assert_int_equal(cfg.max_clients_per_room, 32);
    assert_int_equal(cfg.max_watchers_per_room, 64);
    assert_int_equal(cfg.log_level, TB_LOG_INFO);
    assert_true(cfg.instance[0] != 0);
    assert_int_equal(cfg.worker_nice, -10);
    assert_int_equal(cfg.pin_workers, 1);
}

/* Pinning is on or off; anything else is refused by name. */
static void pin_workers_is_on_or_off(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *off[] = {"x", "--pin-workers", "0"};
    assert_int_equal(parse(&cfg, NULL, 3, off, err), TB_CONFIG_OK);
    assert_int_equal(cfg.pin_workers, 0);
    const char *env[] = {"TUMBLE_PIN_WORKERS", "0", NULL};
    const char *none[] = {"x"};
    assert_int_equal(parse(&cfg, env, 1, none, err), TB_CONFIG_OK);
    assert_int_equal(cfg.pin_workers, 0);
    const char *bad[][3] = {{"x", "--pin-workers", "2"}, {"x", "--pin-workers", "yes"}, {"x", "--pin-workers", "-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse(&cfg, NULL, 3, bad[i], err), TB_CONFIG_ERROR);
        assert_non_null(strstr(err, "--pin-workers"));
    }
}

/* A negative value is a value, not the next flag; the range is nice's own. */
static void worker_nice_takes_the_whole_range_of_nice(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *low[] = {"x", "--worker-nice", "-20"};
    assert_int_equal(parse(&cfg, NULL, 3, low, err), TB_CONFIG_OK);
    assert_int_equal(cfg.worker_nice, -20);
    const char *env[] = {"TUMBLE_WORKER_NICE", "0", NULL};
    const char *none[] = {"x"};
    assert_int_equal(parse(&cfg, env, 1, none, err), TB_CONFIG_OK);
    assert_int_equal(cfg.worker_nice, 0);
    const char *bad[][3] = {{"x", "--worker-nice", "-21"}, {"x", "--worker-nice", "20"}, {"x", "--worker-nice", "high"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse(&cfg, NULL, 3, bad[i], err), TB_CONFIG_ERROR);
        assert_non_null(strstr(err, "--worker-nice"));
        assert_non_null(strstr(err, "-20..19"));
    }
}

static void watcher_limit_is_its_own_option(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *env[] = {"TUMBLE_MAX_WATCHERS_PER_ROOM", "5", NULL};
    const char *argv[] = {"tumble-server", "--max-clients-per-room", "3"};
    assert_int_equal(parse(&cfg, env, 3, argv, err), TB_CONFIG_OK);
    assert_int_equal(cfg.max_clients_per_room, 3);
    assert_int_equal(cfg.max_watchers_per_room, 5);
    const char *none[] = {"tumble-server", "--max-watchers-per-room", "0"}; /* 0: nobody may watch */
    assert_int_equal(parse(&cfg, NULL, 3, none, err), TB_CONFIG_OK);
    assert_int_equal(cfg.max_watchers_per_room, 0);
    const char *bad[] = {"tumble-server", "--max-watchers-per-room", "-1"};
    assert_int_not_equal(parse(&cfg, NULL, 3, bad, err), TB_CONFIG_OK);
}

static void flag_beats_environment_beats_default(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *env[] = {"TUMBLE_PORT", "9000", "TUMBLE_WORKERS", "3", "TUMBLE_LOG_LEVEL", "debug", NULL};
    const char *argv[] = {"tumble-server", "--port", "7000", "--bind=127.0.0.1"};
    assert_int_equal(parse(&cfg, env, 4, argv, err), TB_CONFIG_OK);
    assert_int_equal(cfg.port, 7000);
    assert_int_equal(cfg.workers, 3);
    assert_int_equal(cfg.log_level, TB_LOG_DEBUG);
    assert_string_equal(cfg.bind, "127.0.0.1");
}

static void snapshot_rate_must_divide_120(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *ok[] = {"x", "--snapshot-rate", "30"};
    assert_int_equal(parse(&cfg, NULL, 3, ok, err), TB_CONFIG_OK);
    const char *bad[] = {"x", "--snapshot-rate", "50"};
    assert_int_equal(parse(&cfg, NULL, 3, bad, err), TB_CONFIG_ERROR);
    assert_non_null(strstr(err, "divide 120"));
}

static void invalid_values_are_clear_errors(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *cases[][3] = {
        {"x", "--port", "70000"},    {"x", "--port", "80a"},       {"x", "--workers", "0"},
        {"x", "--log-level", "loud"}, {"x", "--no-such-flag", "1"}, {"x", "stray", "1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse(&cfg, NULL, 3, cases[i], err), TB_CONFIG_ERROR);
        assert_true(strlen(err) > 10);
    }
    const char *missing[] = {"x", "--port"};
    assert_int_equal(parse(&cfg, NULL, 2, missing, err), TB_CONFIG_ERROR);
    const char *env[] = {"TUMBLE_MAX_ROOMS", "many", NULL};
    const char *argv[] = {"x"};
    assert_int_equal(parse(&cfg, env, 1, argv, err), TB_CONFIG_ERROR);
    assert_non_null(strstr(err, "TUMBLE_MAX_ROOMS"));
}

static void help_is_recognised(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *argv[] = {"x", "--port", "1", "--help"};
    assert_int_equal(parse(&cfg, NULL, 4, argv, err), TB_CONFIG_HELP);
}

static void later_flags_are_accepted_and_stored(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *argv[] = {"x", "--state-dir", "/var/lib/tumble", "--allowed-origins", "https://a.example,https://b.example",
                          "--instance", "eu-1"};
    assert_int_equal(parse(&cfg, NULL, 7, argv, err), TB_CONFIG_OK);
    assert_string_equal(cfg.state_dir, "/var/lib/tumble");
    assert_string_equal(cfg.allowed_origins, "https://a.example,https://b.example");
    assert_string_equal(cfg.instance, "eu-1");
}

static void trusted_proxies_are_checked_when_parsed(void **state)
{
    (void)state;
    tb_config cfg;
    char err[256];
    const char *env[] = {"TUMBLE_TRUSTED_PROXIES", "10.0.0.0/8,fd00::/8", NULL};
    const char *argv[] = {"tumble-server"};
    assert_int_equal(parse(&cfg, env, 1, argv, err), TB_CONFIG_OK);
    assert_string_equal(cfg.trusted_proxies, "10.0.0.0/8,fd00::/8");
    const char *bad[] = {"tumble-server", "--trusted-proxies", "10.0.0.0/40"};
    assert_int_equal(parse(&cfg, NULL, 3, bad, err), TB_CONFIG_ERROR);
    assert_string_equal(err, "--trusted-proxies: '/40' is not a prefix length 0..32");
    assert_int_equal(parse(&cfg, NULL, 1, argv, err), TB_CONFIG_OK);
    assert_string_equal(cfg.trusted_proxies, ""); /* default: trust no one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_match_the_documentation),
        cmocka_unit_test(watcher_limit_is_its_own_option),
        cmocka_unit_test(worker_nice_takes_the_whole_range_of_nice),
        cmocka_unit_test(pin_workers_is_on_or_off),
        cmocka_unit_test(flag_beats_environment_beats_default),
        cmocka_unit_test(snapshot_rate_must_divide_120),
        cmocka_unit_test(invalid_values_are_clear_errors),
        cmocka_unit_test(help_is_recognised),
        cmocka_unit_test(later_flags_are_accepted_and_stored),
        cmocka_unit_test(trusted_proxies_are_checked_when_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
