/* config.c: the settings table, parsing and --help (see config.h). */
#define _GNU_SOURCE
#include "net/config.h"
#include "net/proxy.h"
#include "net/redis.h"
#include "tb_proto.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { TB__INT, TB__STR, TB__LEVEL } tb__type;

typedef struct {
    const char *flag; /* without the leading -- */
    const char *env;
    tb__type type;
    size_t offset;
    size_t size;      /* TB__STR: buffer size */
    long min, max;    /* TB__INT */
    const char *help;
} tb__opt;

#define OFF(f) offsetof(tb_config, f)
#define SZ(f) sizeof(((tb_config *)0)->f)

static const tb__opt tb__opts[] = {
    {"port", "TUMBLE_PORT", TB__INT, OFF(port), 0, 0, 65535, "TCP port to listen on (0: any free port)"},
    {"bind", "TUMBLE_BIND", TB__STR, OFF(bind), SZ(bind), 0, 0, "address to bind"},
    {"workers", "TUMBLE_WORKERS", TB__INT, OFF(workers), 0, 1, 256, "simulation worker threads"},
    {"worker-nice", "TUMBLE_WORKER_NICE", TB__INT, OFF(worker_nice), 0, -20, 19,
     "nice value the worker threads ask for (below 0 needs root, CAP_SYS_NICE or RLIMIT_NICE; "
     "refused: they keep the server's own; 0: leave them)"},
    {"pin-workers", "TUMBLE_PIN_WORKERS", TB__INT, OFF(pin_workers), 0, 0, 1,
     "1: each worker thread on a CPU of its own when the server may use exactly as many CPUs as there "
     "are workers; 0: the kernel places them"},
    {"client-dir", "TUMBLE_CLIENT_DIR", TB__STR, OFF(client_dir), SZ(client_dir), 0, 0,
     "folder of the built web client"},
    {"snapshot-rate", "TUMBLE_SNAPSHOT_RATE", TB__INT, OFF(snapshot_rate), 0, 1, 120,
     "snapshots per second per room (must divide 120)"},
    {"max-rooms", "TUMBLE_MAX_ROOMS", TB__INT, OFF(max_rooms), 0, 1, 100000, "rooms open at once"},
    {"max-clients-per-room", "TUMBLE_MAX_CLIENTS_PER_ROOM", TB__INT, OFF(max_clients_per_room), 0, 1, 10000,
     "players joined to one room (watchers not counted)"},
    {"max-watchers-per-room", "TUMBLE_MAX_WATCHERS_PER_ROOM", TB__INT, OFF(max_watchers_per_room), 0, 0, 10000,
     "watchers joined to one room (hello with watch: receive, send no inputs; 0: none allowed)"},
    {"client-kbps", "TUMBLE_CLIENT_KBPS", TB__INT, OFF(client_kbps), 0, 0, 1000000,
     "snapshot bandwidth budget per client, kbit/s (0: none; a client may ask for less in its hello)"},
    {"room-idle-timeout", "TUMBLE_ROOM_IDLE_TIMEOUT", TB__INT, OFF(room_idle_timeout), 0, 1, 86400 * 7,
     "seconds a room without clients is kept (default rooms are never closed)"},
    {"log-level", "TUMBLE_LOG_LEVEL", TB__LEVEL, OFF(log_level), 0, 0, 0, "error, warn, info or debug"},
    {"instance", "TUMBLE_INSTANCE", TB__STR, OFF(instance), SZ(instance), 0, 0,
     "name of this server instance, sent in welcome (default: hostname)"},
    {"state-dir", "TUMBLE_STATE_DIR", TB__STR, OFF(state_dir), SZ(state_dir), 0, 0,
     "folder where rooms are saved on shutdown (empty: off)"},
    {"allowed-origins", "TUMBLE_ALLOWED_ORIGINS", TB__STR, OFF(allowed_origins), SZ(allowed_origins), 0, 0,
     "comma-separated WebSocket Origin allow-list (empty: any)"},
    {"trusted-proxies", "TUMBLE_TRUSTED_PROXIES", TB__STR, OFF(trusted_proxies), SZ(trusted_proxies), 0, 0,
     "comma-separated CIDRs of proxies whose X-Forwarded-For names the client (empty: none)"},
    {"max-message-bytes", "TUMBLE_MAX_MESSAGE_BYTES", TB__INT, OFF(max_message_bytes), 0, 256, 16 << 20,
     "largest client message, after reassembly"},
    {"input-rate", "TUMBLE_INPUT_RATE", TB__INT, OFF(input_rate), 0, 1, 100000,
     "inputs per second per client (bursts of twice that)"},
    {"throw-rate", "TUMBLE_THROW_RATE", TB__INT, OFF(throw_rate), 0, 1, 10000,
     "throws per second per client (bursts of twice that)"},
    {"max-conns-per-address", "TUMBLE_MAX_CONNS_PER_ADDRESS", TB__INT, OFF(max_conns_per_address), 0, 1,
     100000, "WebSocket connections from one IP address"},
    {"slow-reader-timeout", "TUMBLE_SLOW_READER_TIMEOUT", TB__INT, OFF(slow_reader_timeout), 0, 1, 3600,
     "seconds a client may leave data unread before it is disconnected"},
    {"room-create-rate", "TUMBLE_ROOM_CREATE_RATE", TB__INT, OFF(room_create_rate), 0, 1, 100000,
     "rooms one IP address may create per minute (bursts of as many)"},
    {"max-grabs-per-client", "TUMBLE_MAX_GRABS_PER_CLIENT", TB__INT, OFF(max_grabs_per_client), 0, 1, 64,
     "grabs (pointers) one connection may hold at once"},
    {"record", "TUMBLE_RECORD", TB__STR, OFF(record_dir), SZ(record_dir), 0, 0,
     "folder for per-room input logs with state hashes (empty: off)"},
    {"replay", "TUMBLE_REPLAY", TB__STR, OFF(replay_file), SZ(replay_file), 0, 0,
     "re-simulate a record headless, report whether every hash matches, exit 0/1"},
    /* a fleet sharing rooms through Redis (net/fleet.h), and TLS */
    {"redis", "TUMBLE_REDIS", TB__STR, OFF(redis), SZ(redis), 0, 0,
     "redis://[:password@]host[:port][/db]: checkpoints, leases and lobby shared by a fleet (empty: off)"},
    {"checkpoint-interval", "TUMBLE_CHECKPOINT_INTERVAL", TB__INT, OFF(checkpoint_interval), 0, 1, 3600,
     "seconds between checkpoints of a room whose world changed (with --redis)"},
    {"lease-ttl-ms", "TUMBLE_LEASE_TTL_MS", TB__INT, OFF(lease_ttl_ms), 0, 1500, 600000,
     "a room's lease expires this long after its server stops renewing it (with --redis)"},
    {"redis-timeout-ms", "TUMBLE_REDIS_TIMEOUT_MS", TB__INT, OFF(redis_timeout_ms), 0, 50, 60000,
     "a Redis reply or connect slower than this drops the connection (with --redis)"},
    {"tls-cert", "TUMBLE_TLS_CERT", TB__STR, OFF(tls_cert), SZ(tls_cert), 0, 0,
     "PEM certificate: serve https and wss (with --tls-key; empty: plain http and ws)"},
    {"tls-key", "TUMBLE_TLS_KEY", TB__STR, OFF(tls_key), SZ(tls_key), 0, 0, "PEM private key of --tls-cert"},
};
#define TB__NOPTS (sizeof tb__opts / sizeof tb__opts[0])

static const char *const tb__levels[] = {"error", "warn", "info", "debug"};

const char *tb_log_level_name(int level)
{
    return level >= 0 && level <= TB_LOG_DEBUG ? tb__levels[level] : "?";
}

static void tb__defaults(tb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 8080;
    strcpy(cfg->bind, "0.0.0.0");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->workers = cores > 0 ? (int)(cores > 256 ? 256 : cores) : 1;
    cfg->worker_nice = TB_CONFIG_WORKER_NICE;
    cfg->pin_workers = 1;
    strcpy(cfg->client_dir, "client-web/dist");
    cfg->snapshot_rate = 60;
    cfg->max_rooms = 256;
    cfg->max_clients_per_room = 32;
    cfg->max_watchers_per_room = 64;
    cfg->room_idle_timeout = 300;
    cfg->log_level = TB_LOG_INFO;
    if (gethostname(cfg->instance, sizeof cfg->instance - 1) != 0 || !cfg->instance[0])
        strcpy(cfg->instance, "tumble");
    cfg->max_message_bytes = 4096; /* the protocol's client frame limit */
    cfg->input_rate = 120;
    cfg->throw_rate = 5;
    cfg->max_conns_per_address = 32;
    cfg->slow_reader_timeout = 10;
    cfg->room_create_rate = 10;
    cfg->max_grabs_per_client = 4;
    cfg->checkpoint_interval = 5;
    cfg->lease_ttl_ms = 3000;
    cfg->redis_timeout_ms = 1000;
}

static int tb__set(tb_config *cfg, const tb__opt *o, const char *value, const char *source, char *err,
                   size_t err_cap)
{
    void *field = (char *)cfg + o->offset;
    switch (o->type) {
    case TB__INT: {
        char *end = NULL;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < o->min || v > o->max) {
            snprintf(err, err_cap, "%s: '%s' is not a whole number in %ld..%ld", source, value, o->min, o->max);
            return -1;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case TB__STR:
        if (strlen(value) >= o->size) {
            snprintf(err, err_cap, "%s: value longer than %zu characters", source, o->size - 1);
            return -1;
        }
        strcpy(field, value);
        return 0;
    case TB__LEVEL:
        for (int l = 0; l <= TB_LOG_DEBUG; l++)
            if (strcmp(value, tb__levels[l]) == 0) {
                *(int *)field = l;
                return 0;
            }
        snprintf(err, err_cap, "%s: '%s' is not one of error, warn, info, debug", source, value);
        return -1;
    }
    return -1;
}

int tb_config_parse(tb_config *cfg, int argc, char **argv, tb_config_getenv_fn getenv_fn, char *err,
                    size_t err_cap)
{
    tb__defaults(cfg);
    char source[96];
    for (size_t i = 0; i < TB__NOPTS && getenv_fn; i++) {
        const char *v = getenv_fn(tb__opts[i].env);
        if (v && *v) {
            snprintf(source, sizeof source, "%s", tb__opts[i].env);
            if (tb__set(cfg, &tb__opts[i], v, source, err, err_cap) < 0)
                return TB_CONFIG_ERROR;
        }
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return TB_CONFIG_HELP;
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, err_cap, "unexpected argument '%s' (see --help)", arg);
            return TB_CONFIG_ERROR;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const tb__opt *o = NULL;
        for (size_t i = 0; i < TB__NOPTS; i++)
            if (strlen(tb__opts[i].flag) == nlen && strncmp(tb__opts[i].flag, name, nlen) == 0)
                o = &tb__opts[i];
        if (!o) {
            snprintf(err, err_cap, "unknown flag '--%.*s' (see --help)", (int)nlen, name);
            return TB_CONFIG_ERROR;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (a + 1 >= argc) {
                snprintf(err, err_cap, "--%s needs a value", o->flag);
                return TB_CONFIG_ERROR;
            }
            value = argv[++a];
        }
        snprintf(source, sizeof source, "--%s", o->flag);
        if (tb__set(cfg, o, value, source, err, err_cap) < 0)
            return TB_CONFIG_ERROR;
    }
    if (120 % cfg->snapshot_rate != 0) {
        snprintf(err, err_cap, "--snapshot-rate %d does not divide 120 (use 1,2,3,4,5,6,8,10,12,15,20,24,30,40,60,120)",
                 cfg->snapshot_rate);
        return TB_CONFIG_ERROR;
    }
    if (cfg->client_kbps > 0 && cfg->client_kbps < TB_PROTO_KBPS_MIN) {
        snprintf(err, err_cap, "--client-kbps %d is below %d kbit/s (0 for no budget)", cfg->client_kbps, TB_PROTO_KBPS_MIN);
        return TB_CONFIG_ERROR;
    }
    tb_proxy_list proxies;
    if (tb_proxy_parse(&proxies, cfg->trusted_proxies, err, err_cap) < 0)
        return TB_CONFIG_ERROR;
    if (cfg->redis[0]) { /* a bad URL is a start-up error, not a retry loop */
        tb_redis_url url;
        if (tb_redis_url_parse(cfg->redis, &url, err, err_cap) < 0)
            return TB_CONFIG_ERROR;
    }
    if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
        snprintf(err, err_cap, "--tls-cert and --tls-key go together");
        return TB_CONFIG_ERROR;
    }
    for (int i = 0; cfg->tls_cert[0] && i < 2; i++) {
        const char *file = i ? cfg->tls_key : cfg->tls_cert;
        if (access(file, R_OK) != 0) {
            snprintf(err, err_cap, "%s: cannot read %s: %s", i ? "--tls-key" : "--tls-cert", file, strerror(errno));
            return TB_CONFIG_ERROR;
        }
    }
    if (!cfg->bind[0]) {
        snprintf(err, err_cap, "--bind must not be empty");
        return TB_CONFIG_ERROR;
    }
    return TB_CONFIG_OK;
}

void tb_config_usage(FILE *out, const char *prog)
{
    tb_config d;
    tb__defaults(&d);
    fprintf(out, "usage: %s [--flag value | --flag=value]...\n\n"
                 "Tumble room server: steps rooms at 120 Hz and streams them over WebSocket.\n"
                 "Every flag has an environment variable; a flag wins over its variable.\n\n",
            prog);
    for (size_t i = 0; i < TB__NOPTS; i++) {
        const tb__opt *o = &tb__opts[i];
        const void *field = (const char *)&d + o->offset;
        char def[160];
        if (o->type == TB__INT)
            snprintf(def, sizeof def, "%d", *(const int *)field);
        else if (o->type == TB__LEVEL)
            snprintf(def, sizeof def, "%s", tb_log_level_name(*(const int *)field));
        else
            snprintf(def, sizeof def, "%s", *(const char *)field ? (const char *)field : "(empty)");
        if (strcmp(o->flag, "workers") == 0)
            snprintf(def, sizeof def, "%d (one per core)", d.workers);
        fprintf(out, "  --%-24s %-30s %s\n  %26s default: %s\n", o->flag, o->env, o->help, "", def);
    }
    fprintf(out, "  --%-24s %-30s %s\n", "help", "", "this text");
}
