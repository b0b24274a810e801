/* load.h: tumble-load, the load generator (tests/load).
 *
 * One process, one thread, one libuv loop with one libwebsockets client
 * context on it, and hundreds to thousands of simulated players. Each player
 * (tl_client) joins a room over tumble.v1, applies every snapshot with the real
 * decoder (tb_snap_decoder), and sends the input a person would send in that
 * kind of room. The run (tl_run) owns the clients, paces connections, decides
 * when a measurement window starts and ends (or, in ramp mode, when to add
 * rooms), scrapes the server's /metrics at both ends of a window and prints the
 * report.
 *
 *   load_main.c     options, the run's phases and ramp, the report
 *   load_client.c   one simulated player: lws callbacks, decoding, behaviour
 *   load_metrics.c  GET /metrics over a plain uv_tcp, Prometheus text, /proc CPU
 *   load_hist.c     log-linear histograms (latency, jitter) and quantiles
 *
 * Names follow libuv: tl_ prefix, tl__ for file-internal helpers, <event>_cb for
 * callbacks. Times are seconds as double from a monotonic clock unless the
 * name says _us or _ms. */
#ifndef TL_LOAD_H
#define TL_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libwebsockets.h>
#include <uv.h>

#include "tb_proto.h"

/* ---- histograms (load_hist.c) ---------------------------------------------- */

/* Values in microseconds; exact below 128 us, then 64 sub-buckets per power of
 * two (about 1.5 % resolution) up to 2^40 us. */
#define TL_HIST_BUCKETS (128 + 34 * 64)
typedef struct tl_hist {
    uint64_t count;
    double sum_us, max_us;
    uint32_t bucket[TL_HIST_BUCKETS];
} tl_hist;

void tl_hist_add(tl_hist *h, double us);
/* Quantile q in 0..1 in microseconds; 0 when empty. */
double tl_hist_quantile(const tl_hist *h, double q);
void tl_hist_merge(tl_hist *into, const tl_hist *from);
/* Quantile of a plain array (sorts it in place); 0 when n == 0. */
double tl_quantile_sorted(double *v, size_t n, double q);

/* ---- the server's /metrics (load_metrics.c) -------------------------------- */

typedef struct tl_prom_sample {
    char key[128];      /* metric name with its {labels}, as printed */
    double value;
} tl_prom_sample;

typedef struct tl_prom {
    tl_prom_sample *s;
    size_t count, cap;
    double at;          /* when it was taken (tl_now) */
    bool ok;
} tl_prom;

int tl_prom_parse(tl_prom *p, const char *text, size_t len);
void tl_prom_free(tl_prom *p);
/* Value of an exact key, or NAN. */
double tl_prom_get(const tl_prom *p, const char *key);
/* Sum of every sample of a metric whatever its labels, or NAN. */
double tl_prom_sum(const tl_prom *p, const char *name);
/* Quantile q (0..1) of a Prometheus histogram between two scrapes, from the
 * bucket deltas (linear inside a bucket), in the metric's unit; NAN if no
 * observations in between. */
double tl_prom_hist_quantile(const tl_prom *before, const tl_prom *after, const char *name, double q);

typedef struct tl_scrape tl_scrape;
typedef void (*tl_scrape_cb)(tl_scrape *s, int status);
struct tl_scrape {
    uv_tcp_t tcp;
    uv_connect_t connect;
    uv_write_t write;
    uv_timer_t timeout;
    char request[256];
    char *buf;
    size_t len, cap;
    int handles_open;
    int status;            /* 0 ok, else a negative uv error or -1 (bad reply) */
    tl_prom *out;
    tl_scrape_cb done_cb;
    void *data;
};
/* GET http://host:port/metrics into out (parsed). done_cb runs exactly once. */
int tl_scrape_start(tl_scrape *s, uv_loop_t *loop, const struct sockaddr *addr, const char *host_header,
                    tl_prom *out, tl_scrape_cb done_cb);

/* CPU seconds (user + system) and resident set of a process from /proc; -1 if unknown. */
double tl_proc_cpu_seconds(int pid);
double tl_proc_rss_mb(int pid);
/* The pid of the local process listening on TCP port, or 0 (reads /proc/net/tcp*). */
int tl_find_listener_pid(int port);

/* ---- the machine (load_report.c) ---------------------------------------------- */

/* What a figure needs beside it: which CPU, how many cores, how busy the
 * machine was (the 1, 5 and 15 minute load averages) at both ends of the run. */
typedef struct tl_machine {
    char cpu_model[128];       /* /proc/cpuinfo "model name" ("unknown" if absent) */
    int cpu_family, cpu_model_number; /* its "cpu family" and "model" (-1 if absent): one "AMD
                                         EPYC" name covers several generations */
    double cpu_mhz;            /* its "cpu MHz" (0 if absent) */
    int l2_kib;                /* level 2 cache per core (0 if unknown) */
    char simd[16];             /* the widest of avx512f, avx2, sse4_2 in its flags, or "" */
    int cores;                 /* online processors */
    double load_start[3], load_end[3];   /* NAN when /proc/loadavg cannot be read */
} tl_machine;

void tl_machine_read(tl_machine *m);
/* "AMD EPYC (family 26 model 2, 2096 MHz, L2 1024 KiB) avx512f": what is known of it. */
void tl_machine_describe(const tl_machine *m, char *buf, size_t cap);
/* The 1, 5 and 15 minute load averages; 0 on success, -1 (all NAN) otherwise. */
int tl_loadavg(double out[3]);

/* ---- players and rooms ------------------------------------------------------ */

enum tl_scene { TL_TOWER, TL_DICE, TL_PILE, TL_FLAG, TL_CAPE, TL_DOUGH, TL_SCENE_COUNT };
extern const char *const tl_scene_names[TL_SCENE_COUNT];
extern const char *const tl_scene_kinds[TL_SCENE_COUNT];

/* TL_WAITING: closed by a server going away (1001), reconnecting at reconnect_at */
enum tl_state { TL_IDLE, TL_CONNECTING, TL_OPEN, TL_JOINED, TL_CLOSED, TL_FAILED, TL_WAITING };

/* Errors are counted by cause; "errors" in the report is their sum. */
enum tl_err {
    TL_ERR_CONNECT,        /* connection refused or handshake failed */
    TL_ERR_CLOSED,         /* the server closed a session before the end */
    TL_ERR_SERVER_ERROR,   /* an `error` message from the server */
    TL_ERR_BAD_FRAME,      /* undecodable or unexpected server frame */
    TL_ERR_BAD_SNAPSHOT,   /* a snapshot that did not fit the baseline (resync sent) */
    TL_ERR_JOIN_TIMEOUT,   /* no welcome within the join timeout */
    TL_ERR_COUNT
};
extern const char *const tl_err_names[TL_ERR_COUNT];

#define TL_OUTQ 16
#define TL_OUT_MAX 256

typedef struct tl_run tl_run;
typedef struct tl_room tl_room;

typedef struct tl_client {
    tl_run *run;
    tl_room *room;
    int index;                 /* in its room; 0 drives the scene */
    enum tl_state state;
    struct lws *wsi;
    double connect_at, joined_at;

    /* a message being reassembled from lws fragments */
    uint8_t *rx;
    size_t rx_len, rx_cap;

    /* outgoing frames, LWS_PRE bytes of headroom each */
    uint8_t out[TL_OUTQ][LWS_PRE + TL_OUT_MAX];
    size_t out_len[TL_OUTQ];
    int out_head, out_count;
    bool closing;
    int close_code;            /* the server's close code, 0 if none */
    int reconnect_tries;       /* attempts since the last going-away; 0: not reconnecting */
    double reconnect_at;

    tb_snap_decoder *dec;
    bool awaiting_key;         /* after a bad snapshot: deltas are ignored until a key */
    uint32_t seq;
    uint32_t poke_seq;         /* seq of the last poke (press, flick) sent */
    uint32_t client_id, snap_rate, tick_rate;
    int wind_param;            /* index in the welcome's params of a wind parameter, -1 if none */
    double wind_min, wind_max;
    char wind_name[TB_PROTO_NAME_MAX + 1];

    /* counters (whole run) */
    uint64_t snaps, bytes, msgs;
    double last_snap_at;
    double last_rtt_ms;        /* from the last pong, for the link report; < 0 before one */
    /* counters at the start of the current window */
    uint64_t win_snaps, win_bytes;
    bool in_window;

    /* behaviour */
    double next_at;            /* next input is due */
    int phase, step;
    double grab_point[3], grab_dir[3];
    double next_ping_at;
    /* the last few actions sent, to recognise a refusal that comes back late */
    char action_name[4][TB_PROTO_NAME_MAX + 1];
    uint32_t action_seq[4];
    int action_next;

    /* one outstanding input-to-effect probe */
    uint32_t probe_seq;
    double probe_sent_at;
    int probe_kind;            /* TL_PROBE_* */
    bool probe_acked;
    int32_t probe_ref[8][3];   /* cells of watched bodies when the input was sent */
    uint32_t probe_ref_count;
} tl_client;

enum { TL_PROBE_NONE, TL_PROBE_BALL, TL_PROBE_DICE, TL_PROBE_ACK };

struct tl_room {
    int index;
    enum tl_scene scene;
    char id[TB_PROTO_NAME_MAX + 1];
    tl_client *clients;        /* clients_per_room */
};

/* Totals a window reports. Histograms are filled only while a window is open. */
typedef struct tl_window_stats {
    tl_hist jitter, latency, ack_latency, rtt;
    uint64_t latency_timeouts;
    uint64_t inputs_refused;   /* unknown_body / not_allowed: refused by the world, not errors */
    uint64_t reconnects;       /* a server went away (1001) and the client was welcomed again */
    uint64_t inputs_sent_by_scene[TL_SCENE_COUNT], inputs_refused_by_scene[TL_SCENE_COUNT]; /* inputs, not pings */
    uint64_t pokes_sent_by_scene[TL_SCENE_COUNT], pokes_refused_by_scene[TL_SCENE_COUNT];   /* of them, pokes */
    uint64_t errors[TL_ERR_COUNT];
    uint64_t server_errors_by_code[TB_ERR__COUNT + 1];
} tl_window_stats;

typedef struct tl_options {
    char url[256];
    char host[128];
    int port;
    char path[128];
    int rooms, clients_per_room;
    enum tl_scene mix[TL_SCENE_COUNT * 4];
    int mix_count;
    double duration, warmup, join_timeout, deadline;
    bool json, quiet;
    bool ramp;
    int ramp_step, ramp_max_rooms, ramp_retries;
    double ramp_interval, ramp_settle;
    int server_pid;
    bool idle;                 /* clients join and then send nothing */
    bool leave;                /* clients close right after their welcome (rooms stay, empty) */
    int connect_rate;          /* connections started per second */
    int source_addrs;          /* spread clients over 127.0.0.1 .. 127.0.0.N (per-address limits) */
    char prefix[32];
    double target_ratio;       /* snapshots received / expected a ramp step must hold */
    double target_lateness_ms;
    uint32_t seed;
    char report_path[256];     /* --report: the steps as a picture (.svg, else .html) */
} tl_options;

/* What one measurement window found (the whole run, or one ramp step). */
typedef struct tl_report {
    int rooms, clients, clients_joined, clients_in_window, clients_without_snapshots;
    double window_s;
    uint32_t snap_rate, tick_rate;
    double snapshot_rate_ratio, snaps_per_s_min, snaps_per_s_p01, snaps_per_s_p50, snaps_per_s_p99;
    double jitter_p50_ms, jitter_p99_ms, jitter_max_ms;
    double latency_p50_ms, latency_p99_ms, ack_latency_p50_ms, ack_latency_p99_ms, rtt_p50_ms, rtt_p99_ms;
    uint64_t latency_count, ack_latency_count, latency_timeouts;
    double kbit_mean, kbit_p50, kbit_p99;
    double kbit_by_scene[TL_SCENE_COUNT], ratio_by_scene[TL_SCENE_COUNT];
    int clients_by_scene[TL_SCENE_COUNT];
    /* from /metrics (NAN when not available) */
    double lateness_p50_ms, lateness_p99_ms, step_p50_ms, step_p99_ms, steps_per_room_s;
    double overruns, overruns_total, server_rooms, server_clients, server_snapshots_skipped;
    double server_worker_nice; /* tumble_worker_nice at the end (NaN: not exported) */
    double server_workers_pinned; /* tumble_workers_pinned at the end (NaN: not exported) */
    /* the server's CPU by thread (tumble_worker_cpu_seconds_total summed over the
     * workers, tumble_network_thread_cpu_seconds_total), cores over the window (NaN:
     * not exported) */
    double server_workers_cpu_cores, server_network_cpu_cores;
    /* process_cpu_seconds_total from /metrics, else /proc; memory from /proc */
    double server_cpu_cores, server_cpu_ms_per_room_s, server_rss_mb, server_rss_before_mb, server_kb_per_room, generator_cpu_cores;
    uint64_t inputs_refused, reconnects;
    uint64_t inputs_sent_by_scene[TL_SCENE_COUNT], inputs_refused_by_scene[TL_SCENE_COUNT];
    uint64_t pokes_sent_by_scene[TL_SCENE_COUNT], pokes_refused_by_scene[TL_SCENE_COUNT];
    uint64_t errors, errors_by[TL_ERR_COUNT], server_errors_by_code[TB_ERR__COUNT + 1];
    bool held;                 /* ramp: the step met every target */
    char why[160];             /* ramp: the first target missed */
} tl_report;

struct tl_run {
    tl_options opt;
    uv_loop_t *loop;
    struct lws_context *context;
    struct sockaddr_storage addr;      /* the server, for /metrics */
    char host_header[160];
    char origin[180];

    tl_room *rooms;
    int room_count, room_cap;          /* created so far / allocated */
    int clients_started;               /* connections begun (pacing) */
    int clients_total;                 /* room_count * clients_per_room */

    uv_timer_t tick;                   /* 10 ms: inputs, pacing, phases */
    uv_timer_t deadline;               /* hard stop */
    uv_signal_t sigint;
    int handles_open;
    double started_at;
    bool stopping, finished;

    /* phases */
    int phase;
    double phase_at;
    double window_start, window_end;
    tl_prom prom_start, prom_end;
    tl_scrape scrape;
    bool scrape_busy;
    double cpu_start, cpu_end, self_cpu_start, self_cpu_end;
    double rss_start_mb, rss_end_mb, rss_before_mb;
    tl_window_stats win;

    /* ramp */
    tl_report *steps;
    int step_count, step_cap;
    int max_rooms_held;
    int retries_left;

    /* Servers that name an action differently from PROTOCOL.md: the tool switches
     * to the alternative once and reports it (not as an error). */
    bool rebuild_as_reset, throw_dice_as_roll;

    /* Server limits that refused this run's clients, each explained once
     * (tl_note_limit): a bit per enum tl_limit. */
    unsigned limits_told;

    tl_machine machine;                /* CPU, cores, load average at both ends */
    char started_utc[32];

    int exit_code;
};

/* Server limits a load run can run into; tl_note_limit names the server flag
 * and how to run (once per run, not per client). */
enum tl_limit {
    TL_LIMIT_CONNS_PER_ADDRESS,   /* HTTP 429 at the upgrade */
    TL_LIMIT_ROOM_CREATE_RATE,    /* rate_limited on a hello that creates a room */
    TL_LIMIT_MAX_ROOMS,           /* too_many_rooms */
    TL_LIMIT_CLIENTS_PER_ROOM,    /* room_full */
    TL_LIMIT_INPUT_RATE,          /* rate_limited on inputs */
    TL_LIMIT_ORIGIN,              /* HTTP 403 */
    TL_LIMIT_OTHER_HTTP,          /* any other refusal of the upgrade */
    TL_LIMIT_COUNT
};

/* ---- the ramp's picture (load_report.c) --------------------------------- */

/* What the picture says about the run beside the steps. */
typedef struct tl_report_meta {
    const tl_machine *machine;
    const char *scenes;        /* e.g. "tower" */
    int clients_per_room;
    int max_rooms_held;        /* the held limit: 0 when no step held */
    double target_ratio, target_lateness_ms;
    const char *when;          /* UTC date and time of the start */
} tl_report_meta;

/* Writes the steps as one self-contained picture: rooms on the x axis; p99
 * tick lateness, snapshot ratio, and server and generator CPU (cores) on three
 * stacked y axes, each target drawn as a line, every step a point, the held
 * limit a vertical mark. An .svg path gets a bare SVG document, anything else
 * an HTML page with the SVG inline and the steps as a table (no scripts, no
 * external files). 0 on success, -1 with errno set. */
int tl_report_write(const char *path, const tl_report *steps, int count, const tl_report_meta *meta);

/* load_client.c */
extern const struct lws_protocols tl_protocols[];
int tl_client_connect(tl_client *c);
/* Called every tick: due inputs, probe timeouts. */
void tl_client_tick(tl_client *c, double now);
/* Ask a client to close (normal closure) at its next writable callback. */
void tl_client_close(tl_client *c);
void tl_client_free(tl_client *c);
double tl_now(void);
void tl_count_error(tl_run *run, int err);
/* Prints, the first time a run meets `limit`, which server limit refused it
 * and how to run instead; true then, false when it was told already. */
bool tl_note_limit(tl_run *run, enum tl_limit limit, int http_status);
void tl_client_seed(uint32_t seed);

#endif
