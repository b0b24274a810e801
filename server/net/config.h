/* config.h: every setting of tumble-server, from flags and environment.
 *
 * Each setting has a flag (--port), an environment variable (TUMBLE_PORT)
 * and a default; a flag beats the environment, the environment beats the
 * default. Parsing lives here rather than in main.c so it can be unit
 * tested; main only prints the result. tb_config_usage() is the --help text
 * and is generated from the same table, so the two cannot disagree.
 */
#ifndef TB_CONFIG_H
#define TB_CONFIG_H

#include <stdio.h>

#define TB_CONFIG_PATH_MAX 1024

/* The workers' default nice value: above the network thread and anything
 * else at 0 on the machine, so a step is not kept waiting behind them when
 * the cores are busy (BENCHMARKS.md "Load": the tail of tick lateness). */
#define TB_CONFIG_WORKER_NICE (-10)

enum { TB_LOG_ERROR = 0, TB_LOG_WARN, TB_LOG_INFO, TB_LOG_DEBUG };

typedef struct tb_config {
    int port;
    char bind[64];
    int workers;
    int worker_nice;         /* nice value the workers ask for (sim/sched.h); 0 = leave them */
    int pin_workers;         /* 1: each worker on a CPU of its own when there are as many (sim/sched.h) */
    char client_dir[TB_CONFIG_PATH_MAX];
    int snapshot_rate;       /* Hz, divides 120 */
    int max_rooms;
    int max_clients_per_room;
    int max_watchers_per_room;
    int client_kbps;         /* snapshot budget per client, kbit/s (0: none; hello.kbps may lower it) */
    int room_idle_timeout;   /* seconds */
    int log_level;           /* TB_LOG_* */
    char instance[64];
    char state_dir[TB_CONFIG_PATH_MAX];
    char allowed_origins[1024];
    char trusted_proxies[1024]; /* CIDRs whose X-Forwarded-For is believed (net/proxy.h) */
    /* limits */
    int max_message_bytes;
    int input_rate;          /* inputs per second per client (burst: 2x) */
    int throw_rate;          /* throws per second per client (burst: 2x) */
    int max_conns_per_address;
    int slow_reader_timeout; /* seconds without reading before disconnect */
    int room_create_rate;    /* rooms one address may create per minute (burst: same) */
    int max_grabs_per_client; /* pointers one connection may hold at once */
    /* reliability */
    char record_dir[TB_CONFIG_PATH_MAX]; /* --record: input logs with state hashes */
    char replay_file[TB_CONFIG_PATH_MAX]; /* --replay: re-simulate a record and exit */
    /* rooms that outlive their server (net/fleet.h) */
    char redis[512];         /* --redis URL; "" = no fleet */
    int checkpoint_interval; /* seconds between checkpoints of a changed room */
    int lease_ttl_ms;        /* a room's lease lives this long unless renewed (every second) */
    int redis_timeout_ms;    /* a Redis reply or connect that takes longer drops the connection */
    /* https and wss through libwebsockets' own TLS (both or neither) */
    char tls_cert[TB_CONFIG_PATH_MAX]; /* PEM certificate (chain) */
    char tls_key[TB_CONFIG_PATH_MAX];  /* PEM private key */
} tb_config;

/* getenv-like lookup, so tests can feed their own environment. */
typedef const char *(*tb_config_getenv_fn)(const char *name);

enum { TB_CONFIG_OK = 0, TB_CONFIG_HELP = 1, TB_CONFIG_ERROR = -1 };

/* Fills cfg from defaults, then env, then argv. TB_CONFIG_HELP when --help
 * was given; TB_CONFIG_ERROR with a one-line reason in err. */
int tb_config_parse(tb_config *cfg, int argc, char **argv, tb_config_getenv_fn getenv_fn, char *err,
                    size_t err_cap);
void tb_config_usage(FILE *out, const char *prog);
const char *tb_log_level_name(int level);

#endif
