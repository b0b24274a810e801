/* metrics.h: the counters and histograms behind /metrics.
 *
 * One tb_metrics lives in the server (main owns it and hands a pointer to
 * the scheduler and the network layer); nothing here is global. Every field
 * is a relaxed atomic: workers and the network thread bump them without
 * locks, and /metrics reads a slightly torn but never corrupt view, which is
 * what Prometheus expects of a scrape.
 *
 * Histograms have fixed upper bounds in microseconds (cumulative buckets are
 * computed when the text is written).
 */
#ifndef TB_METRICS_H
#define TB_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tb_proto.h"

#define TB_HIST_BUCKETS 16
typedef struct tb_hist {
    atomic_uint_fast64_t bucket[TB_HIST_BUCKETS + 1]; /* last one: +Inf */
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_us;
} tb_hist;

/* Upper bounds (us) shared by the step and latency histograms: 25 us .. 250 ms. */
extern const double tb_hist_bounds_us[TB_HIST_BUCKETS];
/* ... and of the client link histograms: 5 ms .. 30 s. */
extern const double tb_hist_link_bounds_us[TB_HIST_BUCKETS];
/* An observation into a histogram with the link bounds. */
void tb_hist_observe_link(tb_hist *hist, int64_t value_us);

void tb_hist_observe(tb_hist *hist, int64_t value_us);
/* n observations of the same value at once */
void tb_hist_observe_n(tb_hist *hist, int64_t value_us, uint64_t n);
/* Value below which `q` (0..1) of the observations fall, by linear
 * interpolation inside the bucket (us); -1 when empty. */
double tb_hist_quantile(const tb_hist *hist, double q);

/* Client messages are rejected with a protocol error code (tb_proto.h
 * enum tb_proto_code); the counters are indexed by that code and labelled
 * with tb_proto_code_name(). */
#define TB_REJECT_COUNT 32
/* Why a connection or a join was refused. */
typedef enum tb_refuse_reason {
    TB_REFUSE_PER_ADDRESS,  /* too many connections from one address */
    TB_REFUSE_SHUTTING_DOWN,
    TB_REFUSE_MAX_ROOMS,
    TB_REFUSE_ROOM_FULL,
    TB_REFUSE_BAD_ROOM_ID,
    TB_REFUSE_BAD_SCENE,
    TB_REFUSE_ORIGIN,
    TB_REFUSE_SLOW_READER,  /* disconnected: did not read for 10 s */
    TB_REFUSE_ROOM_MISMATCH, /* hello for another room than the /ws/<room> URL */
    TB_REFUSE_FLOOD,        /* closed 1008: flooding, or too many refused messages */
    TB_REFUSE_SUBPROTOCOL,  /* WebSocket upgrade without tumble.v1 (HTTP 400) */
    TB_REFUSE_COUNT
} tb_refuse_reason;
extern const char *const tb_refuse_names[TB_REFUSE_COUNT];

/* Stream tiers (sim/room.h TB_ROOM_TIERS): snapshot rate / 1, 2, 3, 4, 6, 12. */
#define TB_METRICS_TIERS 6
extern const int tb_metrics_tier_strides[TB_METRICS_TIERS];

typedef struct tb_metrics {
    atomic_uint_fast64_t steps_total;
    atomic_uint_fast64_t overrun_steps_total;     /* steps dropped by the 0.25 s catch-up cap */
    atomic_uint_fast64_t snapshots_total;         /* snapshots encoded by workers */
    atomic_uint_fast64_t snapshots_sent_total;    /* snapshot frames written to sockets */
    atomic_uint_fast64_t snapshots_skipped_total; /* replaced in a slow client's slot before sending */
    atomic_uint_fast64_t snapshots_dropped_total; /* worker -> network ring full */
    atomic_uint_fast64_t messages_sent_total;     /* all frames written */
    atomic_uint_fast64_t messages_sent_direct_total; /* ... of them from the delivery path, not WRITEABLE */
    atomic_uint_fast64_t frames_batched_total;    /* ... of them written with others in one write */
    atomic_uint_fast64_t bytes_sent_total;
    atomic_uint_fast64_t messages_received_total;
    atomic_uint_fast64_t bytes_received_total;
    atomic_uint_fast64_t inputs_applied_total;
    atomic_uint_fast64_t inputs_rejected_total[TB_REJECT_COUNT];
    atomic_uint_fast64_t connections_total;
    atomic_uint_fast64_t connections_refused_total[TB_REFUSE_COUNT];
    atomic_uint_fast64_t http_requests_total;
    atomic_uint_fast64_t http_refused_paths_total;
    atomic_uint_fast64_t events_dropped_total;
    atomic_uint_fast64_t events_superseded_total; /* unsent room events replaced by a newer one */
    /* reliability (sim/persist.c, sim/record.c, the world check) */
    atomic_uint_fast64_t rooms_saved_total;
    atomic_uint_fast64_t rooms_restored_total;
    atomic_uint_fast64_t state_files_rejected_total;
    atomic_uint_fast64_t physics_faults_total;     /* bodies removed / worlds reset by the check */
    atomic_uint_fast64_t room_creations_refused_total; /* per-client room creation limit */
    atomic_int rooms;
    atomic_int clients;
    atomic_int worker_nice;   /* the nice value the workers run at (sim/sched.h) */
    atomic_int workers_pinned; /* workers on a CPU of their own (sim/sched.h) */
    tb_hist step_time;     /* one world step, us */
    tb_hist tick_lateness; /* wake-up time minus due time of the step, us */
    tb_hist input_latency; /* input received -> first snapshot encoded with it, us */
    /* client links (net/link.c), link bounds */
    tb_hist client_view_lag;    /* from link reports: how far behind the present a client's picture is, us */
    tb_hist client_queue_delay; /* ping to pong beyond the link's smallest: data waiting in buffers, us */
    atomic_int clients_by_tier[TB_METRICS_TIERS]; /* joined sessions streaming every 1st, 2nd, 3rd, ... snapshot */
    atomic_int snapshot_hz;     /* the rooms' snapshot rate, to label the tiers as rates */
    atomic_uint_fast64_t stream_rate_changes_total[2]; /* [0] down, [1] up */
    atomic_uint_fast64_t stream_budget_changes_total;  /* a client's snapshot budget set or changed by its link (net/link.c) */
} tb_metrics;

void tb_metrics_init(tb_metrics *m);

#define TB_COUNT(m, field) atomic_fetch_add_explicit(&(m)->field, 1, memory_order_relaxed)
#define TB_COUNT_N(m, field, n) atomic_fetch_add_explicit(&(m)->field, (n), memory_order_relaxed)

/* Prometheus text exposition into buf; returns bytes written (<= cap) or
 * the size needed when cap is too small (snprintf semantics). */
size_t tb_metrics_write(const tb_metrics *m, char *buf, size_t cap);

/* The same text in a malloc'ed buffer of *cap bytes (at least spare bytes
 * beyond the text, for the caller to append), *len bytes long; NULL when out
 * of memory. The workers keep counting while it is written, so the text may
 * come out longer than a measuring pass said (a counter gains a digit, a
 * %g sum another decimal): it is written again into a bigger buffer until
 * it fits. Never size a buffer with tb_metrics_write(NULL, 0) and trust the
 * second pass to fit: that overflowed the heap (issue 9's silent exits). */
char *tb_metrics_render(const tb_metrics *m, size_t spare, size_t *len, size_t *cap);

#endif
