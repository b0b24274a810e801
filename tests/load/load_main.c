/* load_main.c: tumble-load's options, the run's phases, ramp mode, the report.
 *
 * A run goes through these phases, driven by one 10 ms uv timer:
 *
 *   CONNECT  start the connections of the rooms not yet open, at most
 *            --connect-rate per second, and wait until every client has its
 *            welcome (or failed, or timed out)
 *   WARMUP   let the rooms settle (--warmup; in ramp mode --ramp-settle)
 *   MEASURE  the window: GET /metrics at both ends, client counters marked at
 *            the start and read at the end, histograms filled in between
 *   (ramp)   judge the window against the targets; if held and the ramp may
 *            go on, add --ramp-step rooms and go back to CONNECT
 *   CLOSE    close every WebSocket normally, destroy the lws context, print
 *
 * Everything is bounded: the join timeout, the window length, the ramp's
 * --duration and a hard deadline timer that ends the run even if the server
 * stops answering. Only loopback servers are accepted unless --allow-remote. */
#define _GNU_SOURCE
#include "load/load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sim/clock.h"

enum { P_CONNECT, P_WARMUP, P_MEASURE, P_SCRAPE_END, P_CLOSE, P_DONE };

static void tl__usage(FILE *f)
{
    fprintf(f,
        "usage: tumble-load [options]\n"
        "Simulated players for a Tumble server: each joins a room over tumble.v1, decodes every\n"
        "snapshot with the real decoder and sends realistic input; the server's /metrics is read\n"
        "at both ends of the measurement window. Loopback servers only unless --allow-remote.\n"
        "\n"
        "  --url URL               server (default ws://127.0.0.1:8080); {room} in the path is\n"
        "                          replaced by the room id (a router: ws://host/ws/{room})\n"
        "  --rooms R               rooms to open (default 10; in ramp mode the first step)\n"
        "  --clients-per-room C    players per room (default 2; client 0 drives the scene)\n"
        "  --scene S               tower, dice, pile, flag, cape or dough (default tower)\n"
        "  --kind K                rigid, cloth or soft (its first scene: tower, flag, dough)\n"
        "  --mix S,S,...           rooms take these scenes in turn (e.g. tower,dice,flag,cape,dough)\n"
        "  --duration S            measurement window in seconds (default 10); ramp: longest run (600)\n"
        "  --warmup S              seconds between the last welcome and the window (default 2)\n"
        "  --idle                  join and send nothing (idle rooms; pings off)\n"
        "  --leave                 close each client right after its welcome: the rooms stay open\n"
        "                          and empty (memory per room: see server_kb_per_room)\n"
        "  --ramp                  add rooms step by step until the server falls behind\n"
        "  --ramp-step K           rooms added per step (default 10)\n"
        "  --ramp-interval S       window per step in seconds (default 5)\n"
        "  --ramp-settle S         seconds after a step's joins before its window (default 2)\n"
        "  --ramp-max-rooms N      stop there even if the server holds (default 2000)\n"
        "  --ramp-retries N        measure a step that fell behind again, up to N times, before\n"
        "                          stopping (default 1: one noisy window does not end a ramp)\n"
        "  --target-ratio F        snapshots received/expected a step must hold (default 0.99)\n"
        "  --target-lateness MS    p99 tick lateness a step must stay under (default 8.333)\n"
        "  --server-pid PID        read the server's CPU and memory from /proc (default: the local\n"
        "                          process listening on the URL's port, when found)\n"
        "  --connect-rate N        connections started per second (default 400)\n"
        "  --source-addrs N        spread the clients over N loopback source addresses\n"
        "                          (127.0.0.1..N) to stay under a per-address connection limit\n"
        "  --join-timeout S        seconds a client may take to get its welcome (default 15)\n"
        "  --deadline S            hard stop after S seconds whatever happens (default: the\n"
        "                          phases' own bounds + 30 s)\n"
        "  --prefix P              room id prefix (default load-<pid>)\n"
        "  --seed N                behaviour random seed (default 1)\n"
        "  --allow-remote          allow a server that is not on a loopback address\n"
        "  --json                  one JSON object on stdout instead of the table (with the CPU\n"
        "                          model, the core count and the load average at both ends)\n"
        "  --report FILE           also draw the steps (a ramp's, or the one window) as a picture:\n"
        "                          FILE.svg an SVG, anything else a self-contained HTML page\n"
        "  --quiet                 no progress or per-client messages on stderr\n"
        "  --help\n"
        "\n"
        "Exit status: 0 when the run completed with no errors, 1 with errors, 2 on bad usage\n"
        "or when the run could not start.\n");
}

static int tl__scene_by_name(const char *s)
{
    for (int i = 0; i < TL_SCENE_COUNT; i++)
        if (strcmp(s, tl_scene_names[i]) == 0)
            return i;
    return -1;
}

static int tl__parse_url(tl_options *o)
{
    const char *u = o->url;
    if (strncmp(u, "ws://", 5) != 0) {
        fprintf(stderr, "tumble-load: --url must start with ws:// (got %s)\n", u);
        return -1;
    }
    u += 5;
    const char *slash = strchr(u, '/');
    size_t hostport = slash ? (size_t)(slash - u) : strlen(u);
    char hp[128];
    if (hostport == 0 || hostport >= sizeof hp) {
        fprintf(stderr, "tumble-load: bad --url %s\n", o->url);
        return -1;
    }
    memcpy(hp, u, hostport);
    hp[hostport] = 0;
    snprintf(o->path, sizeof o->path, "%s", slash ? slash : "/");
    char *colon = strrchr(hp, ':');
    o->port = 80;
    if (colon) {
        *colon = 0;
        o->port = atoi(colon + 1);
        if (o->port <= 0 || o->port > 65535) {
            fprintf(stderr, "tumble-load: bad port in --url %s\n", o->url);
            return -1;
        }
    }
    memcpy(o->host, hp, sizeof o->host);
    return 0;
}

static int tl__parse(tl_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    snprintf(o->url, sizeof o->url, "ws://127.0.0.1:8080");
    o->rooms = -1;
    o->clients_per_room = 2;
    o->duration = -1;
    o->warmup = 2;
    o->join_timeout = 15;
    o->ramp_step = 10;
    o->ramp_interval = 5;
    o->ramp_settle = 2;
    o->ramp_max_rooms = 2000;
    o->ramp_retries = 1;
    o->connect_rate = 400;
    o->target_ratio = 0.99;
    o->target_lateness_ms = 1000.0 / 120.0;
    o->seed = 1;
    snprintf(o->prefix, sizeof o->prefix, "load-%d", (int)getpid());
    int kind = -1, scene = -1;
    bool allow_remote = false;
    enum { O_URL = 256, O_ROOMS, O_CPR, O_SCENE, O_KIND, O_MIX, O_DURATION, O_WARMUP, O_IDLE, O_LEAVE, O_RAMP,
           O_RAMP_STEP, O_RAMP_INTERVAL, O_RAMP_SETTLE, O_RAMP_MAX, O_RAMP_RETRIES, O_TRATIO, O_TLATE, O_PID, O_RATE,
           O_JOIN_TIMEOUT, O_DEADLINE, O_SRCADDR, O_PREFIX, O_SEED, O_REMOTE, O_JSON, O_QUIET, O_REPORT, O_HELP };
    static const struct option opts[] = {
        {"url", required_argument, 0, O_URL}, {"rooms", required_argument, 0, O_ROOMS},
        {"clients-per-room", required_argument, 0, O_CPR}, {"scene", required_argument, 0, O_SCENE},
        {"kind", required_argument, 0, O_KIND}, {"mix", required_argument, 0, O_MIX},
        {"duration", required_argument, 0, O_DURATION}, {"warmup", required_argument, 0, O_WARMUP},
        {"idle", no_argument, 0, O_IDLE}, {"leave", no_argument, 0, O_LEAVE}, {"ramp", no_argument, 0, O_RAMP},
        {"ramp-step", required_argument, 0, O_RAMP_STEP}, {"ramp-interval", required_argument, 0, O_RAMP_INTERVAL},
        {"ramp-settle", required_argument, 0, O_RAMP_SETTLE}, {"ramp-max-rooms", required_argument, 0, O_RAMP_MAX},
        {"ramp-retries", required_argument, 0, O_RAMP_RETRIES},
        {"target-ratio", required_argument, 0, O_TRATIO}, {"target-lateness", required_argument, 0, O_TLATE},
        {"server-pid", required_argument, 0, O_PID}, {"connect-rate", required_argument, 0, O_RATE},
        {"join-timeout", required_argument, 0, O_JOIN_TIMEOUT}, {"source-addrs", required_argument, 0, O_SRCADDR},
        {"deadline", required_argument, 0, O_DEADLINE}, {"prefix", required_argument, 0, O_PREFIX},
        {"seed", required_argument, 0, O_SEED}, {"allow-remote", no_argument, 0, O_REMOTE},
        {"json", no_argument, 0, O_JSON}, {"quiet", no_argument, 0, O_QUIET},
        {"report", required_argument, 0, O_REPORT}, {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    int ch;
    opterr = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case O_URL: snprintf(o->url, sizeof o->url, "%s", optarg); break;
        case O_ROOMS: o->rooms = atoi(optarg); break;
        case O_CPR: o->clients_per_room = atoi(optarg); break;
        case O_SCENE:
            if ((scene = tl__scene_by_name(optarg)) < 0) {
                fprintf(stderr, "tumble-load: unknown scene '%s'\n", optarg);
                return 2;
            }
            break;
        case O_KIND:
            if (strcmp(optarg, "rigid") == 0) kind = TL_TOWER;
            else if (strcmp(optarg, "cloth") == 0) kind = TL_FLAG;
            else if (strcmp(optarg, "soft") == 0) kind = TL_DOUGH;
            else {
                fprintf(stderr, "tumble-load: unknown kind '%s' (rigid, cloth, soft)\n", optarg);
                return 2;
            }
            break;
        case O_MIX: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            o->mix_count = 0;
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int s = tl__scene_by_name(t);
                if (s < 0 || o->mix_count == (int)(sizeof o->mix / sizeof o->mix[0])) {
                    fprintf(stderr, "tumble-load: bad --mix entry '%s'\n", t);
                    return 2;
                }
                o->mix[o->mix_count++] = (enum tl_scene)s;
            }
            break;
        }
        case O_DURATION: o->duration = atof(optarg); break;
        case O_WARMUP: o->warmup = atof(optarg); break;
        case O_IDLE: o->idle = true; break;
        case O_LEAVE: o->leave = o->idle = true; break;
        case O_RAMP: o->ramp = true; break;
        case O_RAMP_STEP: o->ramp_step = atoi(optarg); break;
        case O_RAMP_INTERVAL: o->ramp_interval = atof(optarg); break;
        case O_RAMP_SETTLE: o->ramp_settle = atof(optarg); break;
        case O_RAMP_MAX: o->ramp_max_rooms = atoi(optarg); break;
        case O_RAMP_RETRIES: o->ramp_retries = atoi(optarg); break;
        case O_TRATIO: o->target_ratio = atof(optarg); break;
        case O_TLATE: o->target_lateness_ms = atof(optarg); break;
        case O_PID: o->server_pid = atoi(optarg); break;
        case O_RATE: o->connect_rate = atoi(optarg); break;
        case O_JOIN_TIMEOUT: o->join_timeout = atof(optarg); break;
        case O_SRCADDR: o->source_addrs = atoi(optarg); break;
        case O_DEADLINE: o->deadline = atof(optarg); break;
        case O_PREFIX: snprintf(o->prefix, sizeof o->prefix, "%s", optarg); break;
        case O_SEED: o->seed = (uint32_t)strtoul(optarg, NULL, 10); break;
        case O_REMOTE: allow_remote = true; break;
        case O_JSON: o->json = true; break;
        case O_QUIET: o->quiet = true; break;
        case O_REPORT:
            if (strlen(optarg) >= sizeof o->report_path) {
                fprintf(stderr, "tumble-load: --report path too long\n");
                return 2;
            }
            snprintf(o->report_path, sizeof o->report_path, "%s", optarg);
            break;
        case 'h':
        case O_HELP: tl__usage(stdout); return 1;
        default: tl__usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tumble-load: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!o->mix_count) {
        o->mix[0] = scene >= 0 ? (enum tl_scene)scene : kind >= 0 ? (enum tl_scene)kind : TL_TOWER;
        o->mix_count = 1;
    }
    if (o->rooms < 0)
        o->rooms = o->ramp ? o->ramp_step : 10;
    if (o->duration < 0)
        o->duration = o->ramp ? 600 : 10;
    /* room ids are [A-Za-z0-9_-]{1,32}: the prefix, a dash and up to 6 digits */
    char probe[64];
    snprintf(probe, sizeof probe, "%s-999999", o->prefix);
    if (!tb_proto_room_id_valid(probe)) {
        fprintf(stderr, "tumble-load: --prefix must be [A-Za-z0-9_-], at most 25 characters\n");
        return 2;
    }
    if (o->clients_per_room < 1 || o->clients_per_room > TB_PROTO_MAX_PEERS || o->rooms < 0 ||
        o->rooms > 100000 || o->duration <= 0 || o->duration > 24 * 3600 || o->warmup < 0 ||
        o->ramp_step < 1 || o->ramp_interval <= 0 || o->ramp_settle < 0 || o->ramp_max_rooms < 1 || o->ramp_retries < 0 ||
        o->connect_rate < 1 || o->source_addrs < 0 || o->source_addrs > 65000 || o->join_timeout <= 0 || (!o->ramp && o->rooms < 1)) {
        fprintf(stderr, "tumble-load: an option is out of range (see --help)\n");
        return 2;
    }
    if (tl__parse_url(o) != 0)
        return 2;
    (void)allow_remote;
    o->quiet = o->quiet; /* kept as given */
    return allow_remote ? 3 : 0; /* 3: caller skips the loopback check */
}

/* ---- the run ------------------------------------------------------------------------ */

static tl_run tl__run;

static double tl__self_cpu(void) { return (double)tb_clock_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9; }

static uint64_t tl__errors(const tl_run *run)
{
    uint64_t n = 0;
    for (int e = 0; e < TL_ERR_COUNT; e++)
        n += run->win.errors[e];
    return n;
}

/* Create rooms [room_count, target) (their clients connect through pacing). */
static int tl__add_rooms(tl_run *run, int target)
{
    if (target > run->room_cap) {
        int cap = run->room_cap ? run->room_cap : 16;
        while (cap < target)
            cap *= 2;
        tl_room *r = realloc(run->rooms, (size_t)cap * sizeof *r);
        if (!r)
            return -1;
        /* clients point at their room: fix them up after the move */
        for (int i = 0; i < run->room_count; i++)
            for (int k = 0; k < run->opt.clients_per_room; k++)
                r[i].clients[k].room = &r[i];
        run->rooms = r;
        run->room_cap = cap;
    }
    for (int i = run->room_count; i < target; i++) {
        tl_room *room = &run->rooms[i];
        memset(room, 0, sizeof *room);
        room->index = i;
        room->scene = run->opt.mix[i % run->opt.mix_count];
        char id[64];
        snprintf(id, sizeof id, "%s-%d", run->opt.prefix, i);
        memcpy(room->id, id, sizeof room->id - 1); /* the prefix was checked to fit */
        room->clients = calloc((size_t)run->opt.clients_per_room, sizeof *room->clients);
        if (!room->clients)
            return -1;
        for (int k = 0; k < run->opt.clients_per_room; k++) {
            room->clients[k].run = run;
            room->clients[k].room = room;
            room->clients[k].index = k;
        }
    }
    run->room_count = target;
    run->clients_total = target * run->opt.clients_per_room;
    return 0;
}

#define TL_FOR_CLIENTS(run, c)                                                                  \
    for (int ri_ = 0; ri_ < (run)->room_count; ri_++)                                           \
        for (tl_client *c = (run)->rooms[ri_].clients; c < (run)->rooms[ri_].clients + (run)->opt.clients_per_room; c++)

static tl_client *tl__client_at(tl_run *run, int n)
{
    return &run->rooms[n / run->opt.clients_per_room].clients[n % run->opt.clients_per_room];
}

static void tl__scrape_done_cb(tl_scrape *s, int status)
{
    tl_run *run = s->data;
    run->scrape_busy = false;
    if (status != 0 && !run->opt.quiet)
        fprintf(stderr, "tumble-load: GET /metrics failed (%s); server figures will be missing\n",
                status == -1 ? "bad reply" : uv_strerror(status));
}

static void tl__scrape(tl_run *run, tl_prom *into)
{
    run->scrape_busy = true;
    tl_scrape_start(&run->scrape, run->loop, (const struct sockaddr *)&run->addr, run->host_header, into,
                    tl__scrape_done_cb);
}

static double tl__cpu_now(const tl_run *run)
{
    return run->opt.server_pid > 0 ? tl_proc_cpu_seconds(run->opt.server_pid) : -1;
}

static void tl__open_window(tl_run *run, double now)
{
    memset(&run->win.jitter, 0, sizeof run->win.jitter);
    memset(&run->win.latency, 0, sizeof run->win.latency);
    memset(&run->win.ack_latency, 0, sizeof run->win.ack_latency);
    memset(&run->win.rtt, 0, sizeof run->win.rtt);
    run->win.latency_timeouts = 0;
    memset(run->win.inputs_sent_by_scene, 0, sizeof run->win.inputs_sent_by_scene);
    memset(run->win.inputs_refused_by_scene, 0, sizeof run->win.inputs_refused_by_scene);
    memset(run->win.pokes_sent_by_scene, 0, sizeof run->win.pokes_sent_by_scene);
    memset(run->win.pokes_refused_by_scene, 0, sizeof run->win.pokes_refused_by_scene);
    run->window_start = now;
    run->window_end = 0;
    TL_FOR_CLIENTS(run, c) {
        c->in_window = c->state == TL_JOINED;
        c->win_snaps = c->snaps;
        c->win_bytes = c->bytes;
    }
    run->cpu_start = tl__cpu_now(run);
    run->self_cpu_start = tl__self_cpu();
    run->rss_start_mb = run->opt.server_pid > 0 ? tl_proc_rss_mb(run->opt.server_pid) : -1;
    tl__scrape(run, &run->prom_start);
}

static double tl__ms(const tl_hist *h, double q) { return tl_hist_quantile(h, q) / 1e3; }

/* How fast counter `name` (all its labels summed) grew between two scrapes
 * `dt` seconds apart, per second; NaN when the server does not export it. */
static double tl__per_s(const tl_prom *a, const tl_prom *b, const char *name, double dt)
{
    return dt > 0 ? (tl_prom_sum(b, name) - tl_prom_sum(a, name)) / dt : NAN;
}

/* Everything the window measured, from the client counters, the histograms and
 * the two scrapes. */
static void tl__fill_report(tl_run *run, tl_report *r, uint64_t errors_before)
{
    memset(r, 0, sizeof *r);
    double win = run->window_end - run->window_start;
    r->window_s = win;
    r->rooms = run->room_count;
    r->clients = run->clients_total;
    size_t n = 0;
    double *rates = calloc((size_t)run->clients_total + 1, sizeof *rates);
    double *kbits = calloc((size_t)run->clients_total + 1, sizeof *kbits);
    double got = 0, expected = 0, got_s[TL_SCENE_COUNT] = {0}, exp_s[TL_SCENE_COUNT] = {0};
    double kbit_sum = 0;
    TL_FOR_CLIENTS(run, c) {
        if (c->state == TL_JOINED || c->state == TL_CLOSED)
            r->clients_joined++;
        if (!c->in_window || !rates || !kbits)
            continue;
        if (!r->snap_rate) {
            r->snap_rate = c->snap_rate;
            r->tick_rate = c->tick_rate;
        }
        uint64_t snaps = c->snaps - c->win_snaps;
        double exp_c = c->snap_rate * win;
        got += (double)snaps;
        expected += exp_c;
        got_s[c->room->scene] += (double)snaps;
        exp_s[c->room->scene] += exp_c;
        if (snaps == 0)
            r->clients_without_snapshots++;
        rates[n] = snaps / win;
        kbits[n] = (double)(c->bytes - c->win_bytes) * 8 / 1000 / win;
        kbit_sum += kbits[n];
        r->kbit_by_scene[c->room->scene] += kbits[n];
        r->clients_by_scene[c->room->scene]++;
        n++;
    }
    r->clients_in_window = (int)n;
    r->snapshot_rate_ratio = expected > 0 ? got / expected : NAN;
    for (int s = 0; s < TL_SCENE_COUNT; s++) {
        r->ratio_by_scene[s] = exp_s[s] > 0 ? got_s[s] / exp_s[s] : NAN;
        r->kbit_by_scene[s] = r->clients_by_scene[s] ? r->kbit_by_scene[s] / r->clients_by_scene[s] : NAN;
    }
    r->kbit_mean = n ? kbit_sum / (double)n : 0;
    if (rates && kbits) {
        r->snaps_per_s_p01 = tl_quantile_sorted(rates, n, 0.01);
        r->snaps_per_s_p50 = tl_quantile_sorted(rates, n, 0.5);
        r->snaps_per_s_p99 = tl_quantile_sorted(rates, n, 0.99);
        r->snaps_per_s_min = n ? rates[0] : 0;
        r->kbit_p50 = tl_quantile_sorted(kbits, n, 0.5);
        r->kbit_p99 = tl_quantile_sorted(kbits, n, 0.99);
    }
    free(rates);
    free(kbits);
    const tl_window_stats *w = &run->win;
    r->jitter_p50_ms = tl__ms(&w->jitter, 0.5);
    r->jitter_p99_ms = tl__ms(&w->jitter, 0.99);
    r->jitter_max_ms = w->jitter.max_us / 1e3;
    r->latency_p50_ms = w->latency.count ? tl__ms(&w->latency, 0.5) : NAN;
    r->latency_p99_ms = w->latency.count ? tl__ms(&w->latency, 0.99) : NAN;
    r->latency_count = w->latency.count;
    r->latency_timeouts = w->latency_timeouts;
    r->ack_latency_p50_ms = w->ack_latency.count ? tl__ms(&w->ack_latency, 0.5) : NAN;
    r->ack_latency_p99_ms = w->ack_latency.count ? tl__ms(&w->ack_latency, 0.99) : NAN;
    r->ack_latency_count = w->ack_latency.count;
    r->rtt_p50_ms = w->rtt.count ? tl__ms(&w->rtt, 0.5) : NAN;
    r->rtt_p99_ms = w->rtt.count ? tl__ms(&w->rtt, 0.99) : NAN;

    const tl_prom *a = &run->prom_start, *b = &run->prom_end;
    bool both = a->ok && b->ok;
    r->lateness_p50_ms = both ? tl_prom_hist_quantile(a, b, "tumble_tick_lateness_seconds", 0.5) * 1e3 : NAN;
    r->lateness_p99_ms = both ? tl_prom_hist_quantile(a, b, "tumble_tick_lateness_seconds", 0.99) * 1e3 : NAN;
    r->step_p50_ms = both ? tl_prom_hist_quantile(a, b, "tumble_step_seconds", 0.5) * 1e3 : NAN;
    r->step_p99_ms = both ? tl_prom_hist_quantile(a, b, "tumble_step_seconds", 0.99) * 1e3 : NAN;
    r->server_rooms = b->ok ? tl_prom_get(b, "tumble_rooms") : NAN;
    r->server_clients = b->ok ? tl_prom_get(b, "tumble_clients") : NAN;
    r->server_worker_nice = b->ok ? tl_prom_get(b, "tumble_worker_nice") : NAN;
    r->server_workers_pinned = b->ok ? tl_prom_get(b, "tumble_workers_pinned") : NAN;
    double dt = b->at - a->at;
    r->steps_per_room_s = both && dt > 0 && r->server_rooms > 0
        ? (tl_prom_get(b, "tumble_steps_total") - tl_prom_get(a, "tumble_steps_total")) / dt / r->server_rooms
        : NAN;
    r->overruns = both ? tl_prom_get(b, "tumble_overrun_steps_total") - tl_prom_get(a, "tumble_overrun_steps_total") : NAN;
    r->overruns_total = b->ok ? tl_prom_get(b, "tumble_overrun_steps_total") : NAN;
    r->server_snapshots_skipped = both ? tl_prom_get(b, "tumble_snapshots_skipped_total") -
                                             tl_prom_get(a, "tumble_snapshots_skipped_total")
                                       : NAN;
    r->server_workers_cpu_cores = both ? tl__per_s(a, b, "tumble_worker_cpu_seconds_total", dt) : NAN;
    r->server_network_cpu_cores = both ? tl__per_s(a, b, "tumble_network_thread_cpu_seconds_total", dt) : NAN;
    double cpu = both ? tl__per_s(a, b, "process_cpu_seconds_total", dt) : NAN;
    if (!isnan(cpu))
        r->server_cpu_cores = cpu;
    else if (run->cpu_start >= 0 && run->cpu_end >= 0 && win > 0)
        r->server_cpu_cores = (run->cpu_end - run->cpu_start) / win;
    else
        r->server_cpu_cores = NAN;
    /* CPU per open room (default rooms included), robust to a shared machine: what a
     * room costs, not how many fit next to everyone else's processes */
    r->server_cpu_ms_per_room_s = r->server_rooms > 0 ? r->server_cpu_cores * 1e3 / r->server_rooms : NAN;
    r->server_rss_mb = run->rss_end_mb >= 0 ? run->rss_end_mb : NAN;
    r->server_rss_before_mb = run->rss_before_mb >= 0 ? run->rss_before_mb : NAN;
    r->server_kb_per_room = run->rss_end_mb >= 0 && run->rss_before_mb >= 0 && run->room_count
        ? (run->rss_end_mb - run->rss_before_mb) * 1024 / run->room_count : NAN;
    r->generator_cpu_cores = win > 0 ? (run->self_cpu_end - run->self_cpu_start) / win : NAN;
    for (int e = 0; e < TL_ERR_COUNT; e++)
        r->errors_by[e] = w->errors[e];
    memcpy(r->server_errors_by_code, w->server_errors_by_code, sizeof r->server_errors_by_code);
    r->errors = tl__errors(run) - errors_before;
    r->inputs_refused = w->inputs_refused;
    r->reconnects = w->reconnects;
    memcpy(r->inputs_sent_by_scene, w->inputs_sent_by_scene, sizeof r->inputs_sent_by_scene);
    memcpy(r->inputs_refused_by_scene, w->inputs_refused_by_scene, sizeof r->inputs_refused_by_scene);
    memcpy(r->pokes_sent_by_scene, w->pokes_sent_by_scene, sizeof r->pokes_sent_by_scene);
    memcpy(r->pokes_refused_by_scene, w->pokes_refused_by_scene, sizeof r->pokes_refused_by_scene);

    /* the ramp's targets */
    double tick = r->tick_rate ? r->tick_rate : 120;
    r->held = true;
    if (r->errors) {
        snprintf(r->why, sizeof r->why, "%llu errors", (unsigned long long)r->errors);
        r->held = false;
    } else if (!isnan(r->snapshot_rate_ratio) && r->snapshot_rate_ratio < run->opt.target_ratio) {
        snprintf(r->why, sizeof r->why, "snapshots at %.3f of the set rate (< %.2f)", r->snapshot_rate_ratio,
                 run->opt.target_ratio);
        r->held = false;
    } else if (!isnan(r->steps_per_room_s) && r->steps_per_room_s < 0.99 * tick) {
        snprintf(r->why, sizeof r->why, "%.1f steps/s per room (< %.1f)", r->steps_per_room_s, 0.99 * tick);
        r->held = false;
    } else if (!isnan(r->lateness_p99_ms) && r->lateness_p99_ms >= run->opt.target_lateness_ms) {
        snprintf(r->why, sizeof r->why, "p99 tick lateness %.2f ms (>= %.2f)", r->lateness_p99_ms,
                 run->opt.target_lateness_ms);
        r->held = false;
    } else if (isnan(r->lateness_p99_ms) || isnan(r->steps_per_room_s)) {
        snprintf(r->why, sizeof r->why, "no /metrics: judged on snapshots only");
    }
}

static void tl__close_window(tl_run *run, double now)
{
    run->window_end = now;
    run->cpu_end = tl__cpu_now(run);
    run->self_cpu_end = tl__self_cpu();
    run->rss_end_mb = run->opt.server_pid > 0 ? tl_proc_rss_mb(run->opt.server_pid) : -1;
    tl__scrape(run, &run->prom_end);
}

static uint64_t tl__step_errors_base;

static void tl__begin_close(tl_run *run, double now)
{
    run->stopping = true;
    run->phase = P_CLOSE;
    run->phase_at = now;
    TL_FOR_CLIENTS(run, c) {
        if (c->state != TL_IDLE)
            tl_client_close(c);
    }
}

static void tl__handle_closed_cb(uv_handle_t *h)
{
    tl_run *run = h->data;
    run->handles_open--;
}

static void tl__finish(tl_run *run)
{
    if (run->phase == P_DONE)
        return;
    run->phase = P_DONE;
    if (run->context) {
        lws_context_destroy(run->context);
        run->context = NULL;
    }
    uv_close((uv_handle_t *)&run->tick, tl__handle_closed_cb);
    uv_close((uv_handle_t *)&run->deadline, tl__handle_closed_cb);
    uv_close((uv_handle_t *)&run->sigint, tl__handle_closed_cb);
}

static bool tl__all_settled(tl_run *run)
{
    if (run->clients_started < run->clients_total)
        return false;
    TL_FOR_CLIENTS(run, c) {
        if (c->state == TL_CONNECTING || c->state == TL_OPEN)
            return false;
    }
    return true;
}

static void tl__progress(tl_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tl__progress(tl_run *run, const char *fmt, ...)
{
    if (run->opt.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tumble-load: [%6.1f s] ", tl_now() - run->started_at);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A ramp step's window has ended and its scrape is back: judge it. */
static void tl__ramp_judge(tl_run *run, double now)
{
    if (run->step_count == run->step_cap) {
        int cap = run->step_cap ? run->step_cap * 2 : 16;
        tl_report *s = realloc(run->steps, (size_t)cap * sizeof *s);
        if (!s) {
            tl__begin_close(run, now);
            return;
        }
        run->steps = s;
        run->step_cap = cap;
    }
    tl_report *r = &run->steps[run->step_count++];
    tl__fill_report(run, r, tl__step_errors_base);
    tl__progress(run, "step %d: %d rooms, %d clients: snapshots %.3f, %.1f steps/s/room, lateness p99 %.2f ms, "
                      "server cpu %.2f, generator cpu %.2f: %s%s%s",
                 run->step_count, r->rooms, r->clients, r->snapshot_rate_ratio, r->steps_per_room_s,
                 r->lateness_p99_ms, r->server_cpu_cores, r->generator_cpu_cores, r->held ? "held" : "FELL BEHIND",
                 r->why[0] ? ": " : "", r->why);
    if (r->held) {
        if (r->rooms > run->max_rooms_held)
            run->max_rooms_held = r->rooms;
        run->retries_left = run->opt.ramp_retries;
    } else if (run->retries_left > 0 &&
               now - run->started_at + run->opt.ramp_interval + run->opt.ramp_settle + 5 < run->opt.duration) {
        /* the same room count once more: one noisy window should not end the ramp */
        run->retries_left--;
        tl__step_errors_base = tl__errors(run);
        run->window_start = run->window_end = 0;
        run->phase = P_WARMUP;
        run->phase_at = now;
        return;
    }
    bool more = r->held && run->room_count + run->opt.ramp_step <= run->opt.ramp_max_rooms &&
                now - run->started_at + run->opt.ramp_interval + run->opt.ramp_settle + 5 < run->opt.duration;
    if (!more) {
        tl__begin_close(run, now);
        return;
    }
    tl__step_errors_base = tl__errors(run);
    if (tl__add_rooms(run, run->room_count + run->opt.ramp_step) != 0) {
        fprintf(stderr, "tumble-load: out of memory\n");
        tl__begin_close(run, now);
        return;
    }
    run->window_start = run->window_end = 0;
    run->phase = P_CONNECT;
    run->phase_at = now;
}

static void tl__tick_cb(uv_timer_t *t)
{
    tl_run *run = t->data;
    double now = tl_now();
    const tl_options *o = &run->opt;

    /* pacing: start at most connect_rate connections per second */
    if (run->phase == P_CONNECT && !run->stopping) {
        int budget = o->connect_rate / 100 > 0 ? o->connect_rate / 100 : 1;
        while (budget-- > 0 && run->clients_started < run->clients_total)
            tl_client_connect(tl__client_at(run, run->clients_started++));
    }
    TL_FOR_CLIENTS(run, c) {
        if (c->state != TL_IDLE)
            tl_client_tick(c, now);
    }

    switch (run->phase) {
    case P_CONNECT:
        if (tl__all_settled(run)) {
            int joined = 0;
            TL_FOR_CLIENTS(run, c) joined += c->state == TL_JOINED;
            tl__progress(run, "%d rooms, %d/%d clients joined in %.1f s", run->room_count, joined,
                         run->clients_total, now - run->phase_at);
            run->phase = P_WARMUP;
            run->phase_at = now;
        }
        break;
    case P_WARMUP:
        if (now - run->phase_at >= (o->ramp ? o->ramp_settle : o->warmup) && !run->scrape_busy) {
            tl__open_window(run, now);
            run->phase = P_MEASURE;
            run->phase_at = now;
        }
        break;
    case P_MEASURE:
        if (now - run->window_start >= (o->ramp ? o->ramp_interval : o->duration) && !run->scrape_busy) {
            tl__close_window(run, now);
            run->phase = P_SCRAPE_END;
            run->phase_at = now;
        }
        break;
    case P_SCRAPE_END:
        if (!run->scrape_busy) {
            if (o->ramp) {
                tl__ramp_judge(run, now);
            } else {
                run->steps = calloc(1, sizeof *run->steps);
                if (run->steps) {
                    run->step_count = 1;
                    tl__fill_report(run, &run->steps[0], 0);
                }
                tl__begin_close(run, now);
            }
        }
        break;
    case P_CLOSE: {
        bool open = false;
        TL_FOR_CLIENTS(run, c) open |= c->wsi != NULL;
        /* lws_context_destroy() with sockets still open is left as the last resort */
        if ((!open && !run->scrape_busy) || now - run->phase_at > 5.0)
            tl__finish(run);
        break;
    }
    default:
        break;
    }
}

static void tl__deadline_cb(uv_timer_t *t)
{
    tl_run *run = t->data;
    fprintf(stderr, "tumble-load: hard deadline reached; stopping\n");
    run->exit_code = 1;
    if (run->phase < P_CLOSE)
        tl__begin_close(run, tl_now());
    else
        tl__finish(run);
    uv_timer_start(&run->deadline, tl__deadline_cb, 4000, 0);
}

static void tl__sigint_cb(uv_signal_t *s, int signum)
{
    tl_run *run = s->data;
    double now = tl_now();
    if (run->phase == P_MEASURE && !run->opt.ramp && !run->scrape_busy) {
        tl__progress(run, "interrupted: ending the window now");
        tl__close_window(run, now);
        run->phase = P_SCRAPE_END;
    } else if (run->phase < P_CLOSE) {
        tl__begin_close(run, now);
    } else {
        tl__finish(run);
    }
}

/* ---- output -------------------------------------------------------------------------- */

static void tl__jnum(const char *key, double v, bool comma)
{
    if (isnan(v) || isinf(v))
        printf("\"%s\":null%s", key, comma ? "," : "");
    else
        printf("\"%s\":%.4g%s", key, v, comma ? "," : "");
}

static void tl__json_report(const tl_report *r)
{
    printf("{\"rooms\":%d,\"clients\":%d,\"clients_joined\":%d,\"clients_measured\":%d,"
           "\"clients_without_snapshots\":%d,",
           r->rooms, r->clients, r->clients_joined, r->clients_in_window, r->clients_without_snapshots);
    tl__jnum("window_s", r->window_s, true);
    printf("\"tick_rate\":%u,\"snap_rate\":%u,", r->tick_rate, r->snap_rate);
    tl__jnum("snapshot_rate_ratio", r->snapshot_rate_ratio, true);
    printf("\"snapshots_per_s\":{");
    tl__jnum("min", r->snaps_per_s_min, true);
    tl__jnum("p01", r->snaps_per_s_p01, true);
    tl__jnum("p50", r->snaps_per_s_p50, true);
    tl__jnum("p99", r->snaps_per_s_p99, false);
    printf("},\"jitter_ms\":{");
    tl__jnum("p50", r->jitter_p50_ms, true);
    tl__jnum("p99", r->jitter_p99_ms, true);
    tl__jnum("max", r->jitter_max_ms, false);
    printf("},\"latency_ms\":{");
    tl__jnum("p50", r->latency_p50_ms, true);
    tl__jnum("p99", r->latency_p99_ms, true);
    printf("\"count\":%llu,\"timeouts\":%llu},", (unsigned long long)r->latency_count,
           (unsigned long long)r->latency_timeouts);
    tl__jnum("latency_p99_ms", r->latency_p99_ms, true);
    printf("\"ack_latency_ms\":{");
    tl__jnum("p50", r->ack_latency_p50_ms, true);
    tl__jnum("p99", r->ack_latency_p99_ms, true);
    printf("\"count\":%llu},\"rtt_ms\":{", (unsigned long long)r->ack_latency_count);
    tl__jnum("p50", r->rtt_p50_ms, true);
    tl__jnum("p99", r->rtt_p99_ms, false);
    printf("},");
    tl__jnum("kbit_per_s_per_client", r->kbit_mean, true);
    printf("\"kbit_per_s\":{");
    tl__jnum("mean", r->kbit_mean, true);
    tl__jnum("p50", r->kbit_p50, true);
    tl__jnum("p99", r->kbit_p99, false);
    printf("},\"by_scene\":{");
    bool first = true;
    for (int s = 0; s < TL_SCENE_COUNT; s++) {
        if (!r->clients_by_scene[s])
            continue;
        printf("%s\"%s\":{\"clients\":%d,", first ? "" : ",", tl_scene_names[s], r->clients_by_scene[s]);
        tl__jnum("kbit_per_s_per_client", r->kbit_by_scene[s], true);
        tl__jnum("snapshot_rate_ratio", r->ratio_by_scene[s], true);
        printf("\"inputs_sent\":%llu,\"inputs_refused\":%llu,\"pokes_sent\":%llu,\"pokes_refused\":%llu}",
               (unsigned long long)r->inputs_sent_by_scene[s], (unsigned long long)r->inputs_refused_by_scene[s],
               (unsigned long long)r->pokes_sent_by_scene[s], (unsigned long long)r->pokes_refused_by_scene[s]);
        first = false;
    }
    printf("},\"tick_lateness_ms\":{");
    tl__jnum("p50", r->lateness_p50_ms, true);
    tl__jnum("p99", r->lateness_p99_ms, false);
    printf("},");
    tl__jnum("tick_lateness_p99_ms", r->lateness_p99_ms, true);
    printf("\"step_time_ms\":{");
    tl__jnum("p50", r->step_p50_ms, true);
    tl__jnum("p99", r->step_p99_ms, false);
    printf("},");
    tl__jnum("steps_per_room_per_s", r->steps_per_room_s, true);
    tl__jnum("overruns", r->overruns, true);
    tl__jnum("overruns_total", r->overruns_total, true);
    tl__jnum("server_snapshots_skipped", r->server_snapshots_skipped, true);
    tl__jnum("server_rooms", r->server_rooms, true);
    tl__jnum("server_clients", r->server_clients, true);
    tl__jnum("server_worker_nice", r->server_worker_nice, true);
    tl__jnum("server_workers_pinned", r->server_workers_pinned, true);
    tl__jnum("server_cpu_cores", r->server_cpu_cores, true);
    tl__jnum("server_cpu_ms_per_room_s", r->server_cpu_ms_per_room_s, true);
    tl__jnum("server_workers_cpu_cores", r->server_workers_cpu_cores, true);
    tl__jnum("server_network_cpu_cores", r->server_network_cpu_cores, true);
    tl__jnum("server_rss_mb", r->server_rss_mb, true);
    tl__jnum("server_rss_before_mb", r->server_rss_before_mb, true);
    tl__jnum("server_kb_per_room", r->server_kb_per_room, true);
    tl__jnum("generator_cpu_cores", r->generator_cpu_cores, true);
    printf("\"inputs_refused\":%llu,", (unsigned long long)r->inputs_refused);
    printf("\"reconnects\":%llu,", (unsigned long long)r->reconnects);
    printf("\"errors\":%llu,\"errors_by\":{", (unsigned long long)r->errors);
    for (int e = 0; e < TL_ERR_COUNT; e++)
        printf("%s\"%s\":%llu", e ? "," : "", tl_err_names[e], (unsigned long long)r->errors_by[e]);
    printf("},\"server_errors\":{");
    first = true;
    for (int code = 0; code <= TB_ERR__COUNT; code++) {
        if (!r->server_errors_by_code[code])
            continue;
        printf("%s\"%s\":%llu", first ? "" : ",", code < TB_ERR__COUNT ? tb_proto_code_name(code) : "other",
               (unsigned long long)r->server_errors_by_code[code]);
        first = false;
    }
    printf("}");
}

static void tl__print_json(const tl_run *run, const tl_report *top)
{
    if (top) {
        tl__json_report(top);
        printf(",");
    } else {
        printf("{\"rooms\":%d,\"clients\":%d,\"errors\":%llu,", run->room_count, run->clients_total,
               (unsigned long long)tl__errors(run));
    }
    printf("\"url\":\"%s\",\"mix\":\"", run->opt.url);
    for (int i = 0; i < run->opt.mix_count; i++)
        printf("%s%s", i ? "," : "", tl_scene_names[run->opt.mix[i]]);
    printf("\",\"protocol_deviations\":[%s%s%s]", run->rebuild_as_reset ? "\"rebuild is reset\"" : "",
           run->rebuild_as_reset && run->throw_dice_as_roll ? "," : "",
           run->throw_dice_as_roll ? "\"throw_dice is roll\"" : "");
    const tl_machine *m = &run->machine;
    printf(",\"machine\":{\"cpu_model\":\"");
    for (const char *c = m->cpu_model; *c; c++)
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if ((unsigned char)*c >= 0x20)
            putchar(*c);
    printf("\",\"cpu_family\":%d,\"cpu_model_number\":%d,\"cpu_mhz\":%.0f,\"l2_kib\":%d", m->cpu_family,
           m->cpu_model_number, m->cpu_mhz, m->l2_kib);
    printf(",\"simd\":\"%s\",\"cores\":%d,\"load_average_start\":[", m->simd, m->cores);
    for (int i = 0; i < 3; i++)
        isnan(m->load_start[i]) ? printf("%snull", i ? "," : "") : printf("%s%.2f", i ? "," : "", m->load_start[i]);
    printf("],\"load_average_end\":[");
    for (int i = 0; i < 3; i++)
        isnan(m->load_end[i]) ? printf("%snull", i ? "," : "") : printf("%s%.2f", i ? "," : "", m->load_end[i]);
    printf("],\"started_utc\":\"%s\"}", run->started_utc);
    printf(",\"clients_per_room\":%d,\"idle\":%s,\"leave\":%s,\"server_pid\":%d", run->opt.clients_per_room,
           run->opt.idle ? "true" : "false", run->opt.leave ? "true" : "false", run->opt.server_pid);
    if (run->opt.ramp) {
        printf(",\"ramp\":{\"max_rooms_held\":%d,\"max_clients_held\":%d,\"steps\":[", run->max_rooms_held,
               run->max_rooms_held * run->opt.clients_per_room);
        for (int i = 0; i < run->step_count; i++) {
            const tl_report *r = &run->steps[i];
            printf("%s{\"rooms\":%d,\"clients\":%d,", i ? "," : "", r->rooms, r->clients);
            tl__jnum("snapshot_rate_ratio", r->snapshot_rate_ratio, true);
            tl__jnum("steps_per_room_per_s", r->steps_per_room_s, true);
            tl__jnum("tick_lateness_p50_ms", r->lateness_p50_ms, true);
            tl__jnum("tick_lateness_p99_ms", r->lateness_p99_ms, true);
            tl__jnum("step_time_p99_ms", r->step_p99_ms, true);
            tl__jnum("jitter_p99_ms", r->jitter_p99_ms, true);
            tl__jnum("latency_p99_ms", r->latency_p99_ms, true);
            tl__jnum("kbit_per_s_per_client", r->kbit_mean, true);
            tl__jnum("overruns", r->overruns, true);
            tl__jnum("server_cpu_cores", r->server_cpu_cores, true);
            tl__jnum("server_cpu_ms_per_room_s", r->server_cpu_ms_per_room_s, true);
            tl__jnum("server_workers_cpu_cores", r->server_workers_cpu_cores, true);
            tl__jnum("server_network_cpu_cores", r->server_network_cpu_cores, true);
            tl__jnum("server_rss_mb", r->server_rss_mb, true);
            tl__jnum("generator_cpu_cores", r->generator_cpu_cores, true);
            printf("\"errors\":%llu,\"held\":%s,\"why\":\"%s\"}", (unsigned long long)r->errors,
                   r->held ? "true" : "false", r->why);
        }
        printf("]}");
    }
    printf("}\n");
}

static void tl__print_table(const tl_run *run, const tl_report *r)
{
    if (!r) {
        printf("tumble-load: no measurement window completed (%d rooms, %d clients, %llu errors)\n",
               run->room_count, run->clients_total, (unsigned long long)tl__errors(run));
        return;
    }
    printf("\ntumble-load against %s: %d rooms x %d clients (%d joined, %d measured), window %.1f s\n",
           run->opt.url, r->rooms, run->opt.clients_per_room, r->clients_joined, r->clients_in_window, r->window_s);
    char machine[256];
    tl_machine_describe(&run->machine, machine, sizeof machine);
    printf("  machine: %s, %d cores, load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n",
           machine, run->machine.cores,
           run->machine.load_start[0], run->machine.load_start[1], run->machine.load_start[2],
           run->machine.load_end[0], run->machine.load_end[1], run->machine.load_end[2]);
    printf("  %-34s %10s %10s %10s\n", "figure", "p50", "p99", "other");
    printf("  %-34s %10.2f %10.2f %10.2f  (min; set rate %u/s)\n", "snapshots/s per client", r->snaps_per_s_p50,
           r->snaps_per_s_p99, r->snaps_per_s_min, r->snap_rate);
    printf("  %-34s %10s %10s %10.4f\n", "snapshot rate ratio (all clients)", "", "", r->snapshot_rate_ratio);
    printf("  %-34s %10.2f %10.2f %10.2f  (max)\n", "inter-arrival jitter ms", r->jitter_p50_ms, r->jitter_p99_ms,
           r->jitter_max_ms);
    printf("  %-34s %10.2f %10.2f %10llu  (samples; %llu timeouts)\n", "input-to-effect latency ms",
           r->latency_p50_ms, r->latency_p99_ms, (unsigned long long)r->latency_count,
           (unsigned long long)r->latency_timeouts);
    printf("  %-34s %10.2f %10.2f %10llu  (samples)\n", "input-to-ack latency ms", r->ack_latency_p50_ms,
           r->ack_latency_p99_ms, (unsigned long long)r->ack_latency_count);
    printf("  %-34s %10.2f %10.2f\n", "ping round trip ms", r->rtt_p50_ms, r->rtt_p99_ms);
    printf("  %-34s %10.2f %10.2f %10.2f  (mean)\n", "kbit/s per client", r->kbit_p50, r->kbit_p99, r->kbit_mean);
    for (int s = 0; s < TL_SCENE_COUNT; s++)
        if (r->clients_by_scene[s])
            printf("  %-34s %10s %10s %10.2f  (ratio %.4f)\n", tl_scene_names[s], "", "", r->kbit_by_scene[s],
                   r->ratio_by_scene[s]);
    printf("  %-34s %10.3f %10.3f\n", "server tick lateness ms", r->lateness_p50_ms, r->lateness_p99_ms);
    printf("  %-34s %10.3f %10.3f\n", "server step time ms", r->step_p50_ms, r->step_p99_ms);
    printf("  %-34s %10s %10s %10.2f\n", "server steps/s per room", "", "", r->steps_per_room_s);
    printf("  %-34s %10s %10s %10.0f\n", "server worker nice value", "", "", r->server_worker_nice);
    printf("  %-34s %10s %10s %10.0f\n", "server workers on a CPU of their own", "", "", r->server_workers_pinned);
    printf("  %-34s %10s %10s %10.0f  (total %.0f)\n", "server overruns in window", "", "", r->overruns,
           r->overruns_total);
    printf("  %-34s %10s %10s %10.2f  (rss %.1f MB, %.1f before the run: %.1f kB per room)\n",
           "server cpu (cores)", "", "", r->server_cpu_cores, r->server_rss_mb, r->server_rss_before_mb,
           r->server_kb_per_room);
    printf("  %-34s %10s %10s %10.2f\n", "server cpu ms per room per s", "", "", r->server_cpu_ms_per_room_s);
    printf("  %-34s %10s %10s %10.2f  (network thread %.2f)\n", "server workers cpu (cores)", "", "",
           r->server_workers_cpu_cores, r->server_network_cpu_cores);
    printf("  %-34s %10s %10s %10.2f\n", "generator cpu (cores)", "", "", r->generator_cpu_cores);
    printf("  inputs refused by the world (unknown_body, not_allowed; not errors): %llu\n",
           (unsigned long long)r->inputs_refused);
    printf("  reconnects (server going away, client back in its room; not errors): %llu\n",
           (unsigned long long)r->reconnects);
    printf("  errors: %llu (", (unsigned long long)r->errors);
    for (int e = 0; e < TL_ERR_COUNT; e++)
        printf("%s%s %llu", e ? ", " : "", tl_err_names[e], (unsigned long long)r->errors_by[e]);
    printf(")\n");
    if (run->rebuild_as_reset || run->throw_dice_as_roll)
        printf("  protocol deviations: the server knows %s%s%s\n", run->rebuild_as_reset ? "`rebuild` as `reset`" : "",
               run->rebuild_as_reset && run->throw_dice_as_roll ? ", " : "",
               run->throw_dice_as_roll ? "`throw_dice` as `roll`" : "");
    if (run->opt.ramp) {
        printf("\n  ramp steps:\n  %6s %7s %8s %10s %10s %8s %8s  %s\n", "rooms", "clients", "ratio", "steps/s",
               "late p99", "srv cpu", "gen cpu", "verdict");
        for (int i = 0; i < run->step_count; i++) {
            const tl_report *s = &run->steps[i];
            printf("  %6d %7d %8.4f %10.2f %10.3f %8.2f %8.2f  %s%s%s\n", s->rooms, s->clients,
                   s->snapshot_rate_ratio, s->steps_per_room_s, s->lateness_p99_ms, s->server_cpu_cores,
                   s->generator_cpu_cores, s->held ? "held" : "fell behind", s->why[0] ? ": " : "", s->why);
        }
        printf("  largest room count held: %d (%d clients)\n", run->max_rooms_held,
               run->max_rooms_held * run->opt.clients_per_room);
    }
}

/* ---- main ------------------------------------------------------------------------------ */

static void tl__walk_close_cb(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static bool tl__is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

int main(int argc, char **argv)
{
    tl_run *run = &tl__run;
    int rc = tl__parse(&run->opt, argc, argv);
    if (rc == 1)
        return 0; /* --help */
    if (rc == 2)
        return 2;
    bool allow_remote = rc == 3;
    tl_options *o = &run->opt;
    tl_client_seed(o->seed);

    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(o->host, port, &hints, &res);
    if (gai != 0 || !res) {
        fprintf(stderr, "tumble-load: cannot resolve %s: %s\n", o->host, gai_strerror(gai));
        return 2;
    }
    memcpy(&run->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (!allow_remote && !tl__is_loopback(&run->addr)) {
        fprintf(stderr, "tumble-load: %s is not a loopback address; load only your own server "
                        "(--allow-remote if it is)\n", o->host);
        return 2;
    }
    snprintf(run->host_header, sizeof run->host_header, "%s:%d", o->host, o->port);
    snprintf(run->origin, sizeof run->origin, "http://%.160s", run->host_header);
    if (o->source_addrs > 1 && (run->addr.ss_family != AF_INET || !tl__is_loopback(&run->addr))) {
        fprintf(stderr, "tumble-load: --source-addrs needs an IPv4 loopback server\n");
        return 2;
    }
    if (!o->server_pid && tl__is_loopback(&run->addr))
        o->server_pid = tl_find_listener_pid(o->port);

    /* One fd per connection. lws sizes its fd -> wsi table from the soft limit;
     * a smaller fd_limit_per_thread would make it search that table linearly on
     * every socket event (3.4 % of the generator's CPU at 200 clients, growing
     * with the client count), so the soft limit itself is set to what the run
     * needs (the table stays small) as far as the hard limit allows. */
    int max_clients = (o->ramp ? (o->ramp_max_rooms > o->rooms ? o->ramp_max_rooms : o->rooms) : o->rooms) *
                      o->clients_per_room;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rlim_t want = (rlim_t)max_clients + 128; /* + lws's cancel pipe, libuv, stdio, /proc reads */
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)max_clients + 64 > rl.rlim_cur)
            fprintf(stderr, "tumble-load: warning: %d clients but only %llu file descriptors\n", max_clients,
                    (unsigned long long)rl.rlim_cur);
    }

    uv_loop_t loop;
    uv_loop_init(&loop);
    run->loop = &loop;
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *foreign_loops[1] = {&loop};
    info.foreign_loops = foreign_loops;
    info.options = LWS_SERVER_OPTION_LIBUV;
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = tl_protocols;
    info.gid = -1;
    info.uid = -1;
    info.timeout_secs = (unsigned)(o->join_timeout > 5 ? o->join_timeout : 5);
    info.pcontext = &run->context;
    run->context = lws_create_context(&info);
    if (!run->context) {
        fprintf(stderr, "tumble-load: cannot create the lws context (is libwebsockets-evlib-uv installed?)\n");
        return 2;
    }

    run->started_at = tl_now();
    tl_machine_read(&run->machine);
    tl_loadavg(run->machine.load_start);
    {
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(run->started_utc, sizeof run->started_utc, "%Y-%m-%d %H:%M UTC", &tm);
    }
    run->rss_before_mb = o->server_pid > 0 ? tl_proc_rss_mb(o->server_pid) : -1;
    if (tl__add_rooms(run, o->rooms) != 0) {
        fprintf(stderr, "tumble-load: out of memory\n");
        return 2;
    }
    run->scrape.data = run;
    run->retries_left = o->ramp_retries;
    uv_timer_init(&loop, &run->tick);
    uv_timer_init(&loop, &run->deadline);
    uv_signal_init(&loop, &run->sigint);
    run->tick.data = run->deadline.data = run->sigint.data = run;
    run->handles_open = 3;
    uv_timer_start(&run->tick, tl__tick_cb, 10, 10);
    double bound = o->deadline > 0 ? o->deadline
                   : o->ramp      ? o->duration + 60
                                  : o->join_timeout + o->warmup + o->duration + 30;
    uv_timer_start(&run->deadline, tl__deadline_cb, (uint64_t)(bound * 1000), 0);
    uv_signal_start(&run->sigint, tl__sigint_cb, SIGINT);
    run->phase = P_CONNECT;
    run->phase_at = run->started_at;
    tl__progress(run, "%d rooms x %d clients against %s (server pid %d)", o->rooms, o->clients_per_room, o->url,
                 o->server_pid);

    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) == UV_EBUSY) {
        uv_walk(&loop, tl__walk_close_cb, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
    }

    tl_loadavg(run->machine.load_end);
    const tl_report *top = NULL;
    if (o->ramp) {
        for (int i = 0; i < run->step_count; i++)
            if (run->steps[i].held)
                top = &run->steps[i];
        if (!top && run->step_count)
            top = &run->steps[run->step_count - 1];
    } else if (run->step_count) {
        top = &run->steps[0];
    }
    if (o->json)
        tl__print_json(run, top);
    else
        tl__print_table(run, top);
    if (o->report_path[0]) {
        char scenes[128] = "";
        for (int i = 0; i < o->mix_count; i++)
            snprintf(scenes + strlen(scenes), sizeof scenes - strlen(scenes), "%s%s", i ? "," : "",
                     tl_scene_names[o->mix[i]]);
        tl_report_meta meta = {
            .machine = &run->machine, .scenes = scenes, .clients_per_room = o->clients_per_room,
            .max_rooms_held = o->ramp ? run->max_rooms_held : (top && top->held ? top->rooms : 0),
            .target_ratio = o->target_ratio, .target_lateness_ms = o->target_lateness_ms, .when = run->started_utc,
        };
        if (tl_report_write(o->report_path, run->steps, run->step_count, &meta) != 0) {
            fprintf(stderr, "tumble-load: cannot write %s: %s\n", o->report_path, strerror(errno));
            if (!run->exit_code)
                run->exit_code = 1;
        } else if (!o->quiet) {
            fprintf(stderr, "tumble-load: wrote %s (%d steps)\n", o->report_path, run->step_count);
        }
    }

    uint64_t errors = o->ramp ? (top ? top->errors : tl__errors(run)) : tl__errors(run);
    for (int i = 0; i < run->room_count; i++) {
        for (int k = 0; k < o->clients_per_room; k++)
            tl_client_free(&run->rooms[i].clients[k]);
        free(run->rooms[i].clients);
    }
    free(run->rooms);
    free(run->steps);
    tl_prom_free(&run->prom_start);
    tl_prom_free(&run->prom_end);
    if (run->exit_code)
        return run->exit_code;
    if (!top)
        return 1;
    return errors ? 1 : 0;
}
