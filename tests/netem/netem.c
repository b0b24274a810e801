/* netem.c: tumble-netem, a user-space network link emulator (a TCP proxy).
 *
 * Kernel netem is not available on the machines Tumble is tested on, so this
 * program stands in for a bad link between a client and a server: it accepts
 * TCP connections on a loopback port, opens one connection to the target for
 * each, and carries the bytes both ways through an emulated link per
 * direction ("down" = target -> client, "up" = client -> target):
 *
 *   bandwidth  a bottleneck of --kbps kbit/s: bytes are serialised one after
 *              another (MSS-sized segments, so a big write trickles out as on
 *              a real link), and wait in a FIFO queue in front of it. When
 *              more than --queue-bytes wait, the proxy stops reading from the
 *              sender, whose socket buffers then fill up: the backlog builds
 *              where it builds on a real path (the sender's TCP buffers and a
 *              router queue), out of reach of the sender's application.
 *   delay      --delay ms one-way propagation after the bottleneck;
 *   jitter     plus a uniform random -jitter..+jitter ms per segment, never
 *              letting a segment overtake the one before it (a TCP stream is
 *              never reordered: a late segment holds up those behind it, as
 *              head-of-line blocking does on a real TCP connection);
 *   stalls     --stall DUR/EVERY[@PHASE]: during [k*EVERY + PHASE, +DUR) ms
 *              after the proxy started, the link neither transmits nor
 *              delivers anything (a Wi-Fi hand-over, a tunnel); what waited
 *              comes out at the end of the stall. PHASE defaults to
 *              EVERY - DUR, so the first stall ends at EVERY.
 *
 * The options without a prefix set both directions; --down-* and --up-* set
 * one. Timing is taken from uv_hrtime (ns); delivery runs on a uv timer per
 * direction (1 ms resolution), so delays are honoured to about 1 ms.
 *
 * One thread, one libuv loop, a few hundred bytes per connection plus what is
 * queued: cheap enough to sit between tumble-load and a server for hundreds
 * of clients. It prints "tumble-netem: listening on 127.0.0.1:PORT" once it
 * listens (--listen 127.0.0.1:0 picks a free port) and stops on SIGINT or
 * SIGTERM. Tests start it through tests/integration/harness.mjs (startLink).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define NETEM_SEGMENT 1448 /* bytes per segment on a capped link: one TCP MSS */

typedef struct netem_dir_cfg {
    double delay_ms;  /* one-way propagation delay */
    double jitter_ms; /* uniform +-jitter per segment, order kept */
    double kbps;      /* bottleneck rate; 0 = unlimited */
} netem_dir_cfg;

typedef struct netem_cfg {
    char listen_host[64];
    int listen_port;
    char target_host[64];
    int target_port;
    netem_dir_cfg down, up;
    double stall_ms, stall_every_ms, stall_phase_ms; /* stall_ms 0: none */
    size_t queue_bytes;                              /* queue in front of the bottleneck */
    uint64_t seed;
    bool quiet;
} netem_cfg;

/* A run of bytes on its way: read at some time, due for delivery at `due_ns`. */
typedef struct netem_chunk {
    struct netem_chunk *next;
    uint64_t due_ns;
    size_t len;
    char data[];
} netem_chunk;

struct netem_conn;

/* One direction of a connection: bytes read from `from`, written to `to`. */
typedef struct netem_dir {
    struct netem_conn *conn;
    const netem_dir_cfg *cfg;
    uv_tcp_t *from, *to;
    netem_chunk *head, *tail;
    size_t queued;         /* bytes in the queue, not yet handed to uv_write */
    uint64_t link_free_ns; /* when the bottleneck finishes the last segment */
    uint64_t last_due_ns;  /* delivery time of the last segment (no reordering) */
    uv_timer_t timer;
    bool reading, eof, shut;
} netem_dir;

typedef struct netem_write {
    uv_write_t req;
    netem_dir *dir;
    netem_chunk *chunk;
} netem_write;

typedef struct netem_conn {
    uv_tcp_t client, server;
    uv_connect_t connect_req;
    uv_shutdown_t shutdown_req[2];
    netem_dir down, up; /* down: server -> client; up: client -> server */
    int open_handles;   /* handles not yet closed: client, server, 2 timers */
    int shutdowns_done; /* write sides shut (after their queued writes) */
    bool closing, connected;
} netem_conn;

static netem_cfg g_cfg;
static uv_loop_t *g_loop;
static uv_tcp_t g_listener;
static uv_signal_t g_sigint, g_sigterm;
static uint64_t g_start_ns;
static uint64_t g_rng;
static struct sockaddr_in g_target;
static long g_conns_open;

/* xorshift64*: jitter only needs a cheap, seedable, uniform source. */
static double netem__uniform(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (double)((g_rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* If t falls inside a stall window, the end of that window; else t. */
static uint64_t netem__after_stall(uint64_t t)
{
    if (g_cfg.stall_ms <= 0 || t < g_start_ns)
        return t;
    uint64_t every = (uint64_t)(g_cfg.stall_every_ms * 1e6);
    uint64_t phase = (uint64_t)(g_cfg.stall_phase_ms * 1e6);
    uint64_t dur = (uint64_t)(g_cfg.stall_ms * 1e6);
    uint64_t rel = t - g_start_ns;
    if (rel < phase)
        return t;
    uint64_t in_period = (rel - phase) % every;
    return in_period < dur ? t + (dur - in_period) : t;
}

static void netem__conn_close(netem_conn *c);
static void netem__on_timer_closed(uv_handle_t *h);
static void netem__dir_pump(netem_dir *d);

static void netem__on_handle_closed(uv_handle_t *h)
{
    netem_conn *c = h->data;
    if (--c->open_handles == 0) {
        for (netem_dir *d = &c->down; d; d = d == &c->down ? &c->up : NULL) {
            while (d->head) {
                netem_chunk *n = d->head->next;
                free(d->head);
                d->head = n;
            }
        }
        free(c);
        g_conns_open--;
    }
}

static void netem__conn_close(netem_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->client, netem__on_handle_closed);
    uv_close((uv_handle_t *)&c->server, netem__on_handle_closed);
    uv_close((uv_handle_t *)&c->down.timer, netem__on_timer_closed);
    uv_close((uv_handle_t *)&c->up.timer, netem__on_timer_closed);
}

static void netem__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    static char slab[65536];
    (void)suggested;
    *buf = uv_buf_init(slab, sizeof slab);
}

static void netem__dir_update_reading(netem_dir *d);
static void netem__on_timer(uv_timer_t *t);
static void netem__start_reading(netem_dir *d);

/* A write side is shut once everything queued before it was written; when both
 * are (each end sent its FIN and got the other's bytes), the connection is done. */
static void netem__on_shutdown(uv_shutdown_t *req, int status)
{
    netem_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0 || ++c->shutdowns_done == 2)
        netem__conn_close(c);
}

static void netem__on_write(uv_write_t *req, int status)
{
    netem_write *w = (netem_write *)req;
    netem_dir *d = w->dir;
    free(w->chunk);
    free(w);
    if (d->conn->closing)
        return;
    if (status < 0) {
        netem__conn_close(d->conn);
        return;
    }
    netem__dir_update_reading(d);
    netem__dir_pump(d);
}

/* Hand every due chunk to the writer, then arm the timer for the next one.
 * After EOF from the sender and an empty queue, shut the other side's write. */
static void netem__dir_pump(netem_dir *d)
{
    netem_conn *c = d->conn;
    if (c->closing || !c->connected)
        return;
    uint64_t now = uv_hrtime();
    while (d->head && d->head->due_ns <= now) {
        netem_chunk *ch = d->head;
        d->head = ch->next;
        if (!d->head)
            d->tail = NULL;
        d->queued -= ch->len;
        netem_write *w = malloc(sizeof *w);
        if (!w) {
            free(ch);
            netem__conn_close(c);
            return;
        }
        w->dir = d;
        w->chunk = ch;
        uv_buf_t buf = uv_buf_init(ch->data, (unsigned)ch->len);
        if (uv_write(&w->req, (uv_stream_t *)d->to, &buf, 1, netem__on_write) < 0) {
            free(ch);
            free(w);
            netem__conn_close(c);
            return;
        }
    }
    if (d->head) {
        uint64_t wait_ms = (d->head->due_ns - now + 999999) / 1000000;
        uv_timer_start(&d->timer, netem__on_timer, wait_ms, 0);
    } else if (d->eof && !d->shut) {
        d->shut = true;
        uv_shutdown_t *req = &c->shutdown_req[d == &c->down ? 0 : 1];
        req->data = c;
        if (uv_shutdown(req, (uv_stream_t *)d->to, netem__on_shutdown) < 0)
            netem__conn_close(c);
    }
    netem__dir_update_reading(d);
}

static void netem__on_timer(uv_timer_t *t)
{
    netem__dir_pump(t->data);
}

/* Bytes waiting in front of the bottleneck (not yet serialised), plus what the
 * writer toward the receiver still holds (a receiver that does not read). */
static size_t netem__waiting(const netem_dir *d)
{
    size_t waiting = uv_stream_get_write_queue_size((const uv_stream_t *)d->to);
    if (d->cfg->kbps > 0) {
        uint64_t now = uv_hrtime();
        if (d->link_free_ns > now)
            waiting += (size_t)((double)(d->link_free_ns - now) * d->cfg->kbps / 8e6);
    }
    return waiting;
}

/* Stop reading from the sender while the queue is full; start again below 3/4 of
 * it. Memory stays bounded however the two ends behave: at most 64 queue-fulls
 * (delayed bytes in flight on an uncapped link) are held. */
static void netem__dir_update_reading(netem_dir *d)
{
    netem_conn *c = d->conn;
    if (c->closing || !c->connected || d->eof)
        return;
    size_t waiting = netem__waiting(d);
    size_t hard = g_cfg.queue_bytes * 64;
    if (d->reading && (waiting > g_cfg.queue_bytes || d->queued > hard)) {
        uv_read_stop((uv_stream_t *)d->from);
        d->reading = false;
    } else if (!d->reading && waiting <= g_cfg.queue_bytes * 3 / 4 && d->queued <= hard / 2) {
        netem__start_reading(d);
    }
}

static void netem__enqueue(netem_dir *d, uint64_t due, const char *data, size_t len)
{
    if (due < d->last_due_ns)
        due = d->last_due_ns; /* never overtake: a TCP stream keeps its order */
    d->last_due_ns = due;
    netem_chunk *ch = malloc(sizeof *ch + len);
    if (!ch) {
        netem__conn_close(d->conn);
        return;
    }
    ch->next = NULL;
    ch->due_ns = due;
    ch->len = len;
    memcpy(ch->data, data, len);
    if (d->tail)
        d->tail->next = ch;
    else
        d->head = ch;
    d->tail = ch;
    d->queued += len;
}

/* One-way delay of one segment: propagation plus jitter, never negative. */
static uint64_t netem__delay_ns(const netem_dir *d)
{
    double ms = d->cfg->delay_ms;
    if (d->cfg->jitter_ms > 0)
        ms += (2.0 * netem__uniform() - 1.0) * d->cfg->jitter_ms;
    return ms > 0 ? (uint64_t)(ms * 1e6) : 0;
}

/* Bytes read from one end: through the bottleneck (segment by segment on a
 * capped link), then the delay, then in order into the queue. */
static void netem__dir_take(netem_dir *d, const char *data, size_t len)
{
    uint64_t now = uv_hrtime();
    if (d->cfg->kbps <= 0) {
        uint64_t sent = netem__after_stall(now);
        netem__enqueue(d, netem__after_stall(sent + netem__delay_ns(d)), data, len);
        return;
    }
    double ns_per_byte = 8e6 / d->cfg->kbps;
    for (size_t off = 0; off < len && !d->conn->closing; off += NETEM_SEGMENT) {
        size_t n = len - off < NETEM_SEGMENT ? len - off : NETEM_SEGMENT;
        uint64_t start = d->link_free_ns > now ? d->link_free_ns : now;
        start = netem__after_stall(start);
        d->link_free_ns = start + (uint64_t)(ns_per_byte * (double)n);
        netem__enqueue(d, netem__after_stall(d->link_free_ns + netem__delay_ns(d)), data + off, n);
    }
}

static void netem__on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    netem_conn *c = s->data;
    netem_dir *d = s == (uv_stream_t *)&c->client ? &c->up : &c->down;
    if (c->closing)
        return;
    if (nread < 0) {
        if (nread != UV_EOF) {
            netem__conn_close(c);
            return;
        }
        d->eof = true;
        uv_read_stop(s);
        d->reading = false;
        netem__dir_pump(d); /* shuts the other side down once the queue is empty */
        return;
    }
    if (nread == 0)
        return;
    netem__dir_take(d, buf->base, (size_t)nread);
    netem__dir_pump(d);
}

static void netem__start_reading(netem_dir *d)
{
    if (uv_read_start((uv_stream_t *)d->from, netem__alloc, netem__on_read) == 0)
        d->reading = true;
    else
        netem__conn_close(d->conn);
}

static void netem__on_connect(uv_connect_t *req, int status)
{
    netem_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        if (!g_cfg.quiet)
            fprintf(stderr, "tumble-netem: connect to %s:%d failed: %s\n", g_cfg.target_host, g_cfg.target_port,
                    uv_strerror(status));
        netem__conn_close(c);
        return;
    }
    c->connected = true;
    uv_tcp_nodelay(&c->client, 1);
    uv_tcp_nodelay(&c->server, 1);
    netem__start_reading(&c->up);
    netem__start_reading(&c->down);
}

static void netem__dir_init(netem_conn *c, netem_dir *d, const netem_dir_cfg *cfg, uv_tcp_t *from, uv_tcp_t *to)
{
    memset(d, 0, sizeof *d);
    d->conn = c;
    d->cfg = cfg;
    d->from = from;
    d->to = to;
    uv_timer_init(g_loop, &d->timer);
    d->timer.data = d;
}

static void netem__on_timer_closed(uv_handle_t *h)
{
    netem_dir *d = h->data;
    h->data = d->conn;
    netem__on_handle_closed(h);
}

static void netem__on_connection(uv_stream_t *listener, int status)
{
    if (status < 0)
        return;
    netem_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    uv_tcp_init(g_loop, &c->client);
    uv_tcp_init(g_loop, &c->server);
    c->client.data = c->server.data = c;
    c->open_handles = 4;
    g_conns_open++;
    netem__dir_init(c, &c->up, &g_cfg.up, &c->client, &c->server);
    netem__dir_init(c, &c->down, &g_cfg.down, &c->server, &c->client);
    if (uv_accept(listener, (uv_stream_t *)&c->client) < 0) {
        netem__conn_close(c);
        return;
    }
    c->connect_req.data = c;
    if (uv_tcp_connect(&c->connect_req, &c->server, (const struct sockaddr *)&g_target, netem__on_connect) < 0)
        netem__conn_close(c);
}

static void netem__on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    if (!g_cfg.quiet)
        fprintf(stderr, "tumble-netem: signal %d, %ld connections open, stopping\n", signum, g_conns_open);
    exit(0);
}

/* ---- options ---------------------------------------------------------------- */

static void netem__usage(FILE *f)
{
    fprintf(f,
        "usage: tumble-netem --target HOST:PORT [--listen HOST:PORT] [link options]\n"
        "A TCP proxy that emulates a link: every connection to --listen is carried to\n"
        "--target through a bottleneck, a delay, jitter and periodic stalls, per direction.\n"
        "\n"
        "  --listen HOST:PORT    where to accept (default 127.0.0.1:0, a free port; the port\n"
        "                        is printed as \"tumble-netem: listening on HOST:PORT\")\n"
        "  --target HOST:PORT    the server (IPv4 address)\n"
        "  --delay MS            one-way delay, both directions (RTT = 2 x delay)\n"
        "  --jitter MS           +-MS uniform per segment, both directions; order is kept\n"
        "  --kbps N              bottleneck rate in kbit/s, both directions (0: unlimited)\n"
        "  --down-delay, --down-jitter, --down-kbps   server -> client only\n"
        "  --up-delay, --up-jitter, --up-kbps         client -> server only\n"
        "  --stall DUR/EVERY[@PHASE]  nothing passes for DUR ms every EVERY ms, from PHASE ms\n"
        "                        after start (default PHASE = EVERY - DUR), e.g. 1000/10000\n"
        "  --queue-bytes N       queue in front of the bottleneck before the sender is held\n"
        "                        back (default 65536)\n"
        "  --seed N              jitter random seed (default 1)\n"
        "  --quiet               no messages on stderr\n");
}

static int netem__hostport(const char *s, char *host, size_t hostsz, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= hostsz || colon == s)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

static int netem__num(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

static int netem__parse(int argc, char **argv)
{
    enum { O_LISTEN = 256, O_TARGET, O_DELAY, O_JITTER, O_KBPS, O_DDELAY, O_DJITTER, O_DKBPS, O_UDELAY, O_UJITTER,
           O_UKBPS, O_STALL, O_QUEUE, O_SEED, O_QUIET, O_HELP };
    static const struct option opts[] = {
        {"listen", 1, 0, O_LISTEN},      {"target", 1, 0, O_TARGET},       {"delay", 1, 0, O_DELAY},
        {"jitter", 1, 0, O_JITTER},      {"kbps", 1, 0, O_KBPS},           {"down-delay", 1, 0, O_DDELAY},
        {"down-jitter", 1, 0, O_DJITTER}, {"down-kbps", 1, 0, O_DKBPS},    {"up-delay", 1, 0, O_UDELAY},
        {"up-jitter", 1, 0, O_UJITTER},  {"up-kbps", 1, 0, O_UKBPS},       {"stall", 1, 0, O_STALL},
        {"queue-bytes", 1, 0, O_QUEUE},  {"seed", 1, 0, O_SEED},           {"quiet", 0, 0, O_QUIET},
        {"help", 0, 0, O_HELP},          {0, 0, 0, 0}};
    netem_cfg *c = &g_cfg;
    snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->queue_bytes = 65536;
    c->seed = 1;
    c->target_port = -1;
    int o;
    double v;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int bad = 0;
        switch (o) {
        case O_LISTEN: bad = netem__hostport(optarg, c->listen_host, sizeof c->listen_host, &c->listen_port); break;
        case O_TARGET: bad = netem__hostport(optarg, c->target_host, sizeof c->target_host, &c->target_port); break;
        case O_DELAY: bad = netem__num(optarg, &v); c->down.delay_ms = c->up.delay_ms = v; break;
        case O_JITTER: bad = netem__num(optarg, &v); c->down.jitter_ms = c->up.jitter_ms = v; break;
        case O_KBPS: bad = netem__num(optarg, &v); c->down.kbps = c->up.kbps = v; break;
        case O_DDELAY: bad = netem__num(optarg, &c->down.delay_ms); break;
        case O_DJITTER: bad = netem__num(optarg, &c->down.jitter_ms); break;
        case O_DKBPS: bad = netem__num(optarg, &c->down.kbps); break;
        case O_UDELAY: bad = netem__num(optarg, &c->up.delay_ms); break;
        case O_UJITTER: bad = netem__num(optarg, &c->up.jitter_ms); break;
        case O_UKBPS: bad = netem__num(optarg, &c->up.kbps); break;
        case O_STALL: {
            double dur, every, phase = -1;
            int n = sscanf(optarg, "%lf/%lf@%lf", &dur, &every, &phase);
            bad = n < 2 || !(dur > 0) || !(every > dur) || (n == 3 && !(phase >= 0));
            c->stall_ms = dur;
            c->stall_every_ms = every;
            c->stall_phase_ms = n == 3 ? phase : every - dur;
            break;
        }
        case O_QUEUE: bad = netem__num(optarg, &v) || v < NETEM_SEGMENT; c->queue_bytes = (size_t)v; break;
        case O_SEED: bad = netem__num(optarg, &v); c->seed = (uint64_t)v; break;
        case O_QUIET: c->quiet = true; break;
        case O_HELP: netem__usage(stdout); exit(0);
        default: netem__usage(stderr); return -1;
        }
        if (bad) {
            fprintf(stderr, "tumble-netem: bad value for --%s: %s\n", opts[o - O_LISTEN].name, optarg);
            return -1;
        }
    }
    if (optind < argc || c->target_port <= 0) {
        fprintf(stderr, "tumble-netem: --target HOST:PORT is required\n");
        netem__usage(stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (netem__parse(argc, argv) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN); /* a peer that closed is an error return from write, not a death */
    g_loop = uv_default_loop();
    g_rng = g_cfg.seed * 0x9E3779B97F4A7C15ULL + 1;
    struct sockaddr_in addr;
    int rc = uv_ip4_addr(g_cfg.target_host, g_cfg.target_port, &g_target);
    if (rc == 0)
        rc = uv_ip4_addr(g_cfg.listen_host, g_cfg.listen_port, &addr);
    if (rc < 0) {
        fprintf(stderr, "tumble-netem: addresses must be IPv4 (%s)\n", uv_strerror(rc));
        return 2;
    }
    uv_tcp_init(g_loop, &g_listener);
    if ((rc = uv_tcp_bind(&g_listener, (const struct sockaddr *)&addr, 0)) < 0 ||
        (rc = uv_listen((uv_stream_t *)&g_listener, 1024, netem__on_connection)) < 0) {
        fprintf(stderr, "tumble-netem: cannot listen on %s:%d: %s\n", g_cfg.listen_host, g_cfg.listen_port,
                uv_strerror(rc));
        return 1;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&g_listener, (struct sockaddr *)&bound, &len);
    uv_signal_init(g_loop, &g_sigint);
    uv_signal_init(g_loop, &g_sigterm);
    uv_signal_start(&g_sigint, netem__on_signal, SIGINT);
    uv_signal_start(&g_sigterm, netem__on_signal, SIGTERM);
    g_start_ns = uv_hrtime();
    printf("tumble-netem: listening on %s:%d -> %s:%d (down %.0f ms +-%.0f, %.0f kbit/s; up %.0f ms +-%.0f, "
           "%.0f kbit/s; stall %.0f ms every %.0f ms from %.0f ms)\n",
           g_cfg.listen_host, ntohs(((struct sockaddr_in *)&bound)->sin_port), g_cfg.target_host, g_cfg.target_port,
           g_cfg.down.delay_ms, g_cfg.down.jitter_ms, g_cfg.down.kbps, g_cfg.up.delay_ms, g_cfg.up.jitter_ms,
           g_cfg.up.kbps, g_cfg.stall_ms, g_cfg.stall_every_ms, g_cfg.stall_phase_ms);
    fflush(stdout);
    return uv_run(g_loop, UV_RUN_DEFAULT);
}
