/* metrics.c: lock-free counters and histograms, and their Prometheus text. */
#include "sim/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double tb_hist_bounds_us[TB_HIST_BUCKETS] = {
    25, 50, 100, 250, 500, 1000, 2000, 4000, 6000, 8000, 12000, 16000, 32000, 50000, 100000, 250000,
};

const double tb_hist_link_bounds_us[TB_HIST_BUCKETS] = {
    5000, 10000, 20000, 35000, 50000, 75000, 100000, 150000, 200000, 300000, 500000, 750000,
    1000000, 2000000, 5000000, 30000000,
};
const int tb_metrics_tier_strides[TB_METRICS_TIERS] = {1, 2, 3, 4, 6, 12};

_Static_assert(TB_ERR__COUNT <= TB_REJECT_COUNT, "reject counters cover every protocol error code");

const char *const tb_refuse_names[TB_REFUSE_COUNT] = {
    "per_address", "shutting_down", "max_rooms", "room_full", "bad_room_id",
    "bad_scene", "origin", "slow_reader", "room_mismatch", "flood", "subprotocol",
};

void tb_metrics_init(tb_metrics *m)
{
    memset(m, 0, sizeof *m); /* all-zero is a valid state for lock-free atomics */
}

static void tb__observe(tb_hist *hist, const double *bounds, int64_t value_us, uint64_t n)
{
    if (value_us < 0)
        value_us = 0;
    int b = 0;
    while (b < TB_HIST_BUCKETS && (double)value_us > bounds[b])
        b++;
    atomic_fetch_add_explicit(&hist->bucket[b], n, memory_order_relaxed);
    atomic_fetch_add_explicit(&hist->count, n, memory_order_relaxed);
    if (value_us)
        atomic_fetch_add_explicit(&hist->sum_us, (uint_fast64_t)value_us * n, memory_order_relaxed);
}

void tb_hist_observe_n(tb_hist *hist, int64_t value_us, uint64_t n) { tb__observe(hist, tb_hist_bounds_us, value_us, n); }
void tb_hist_observe(tb_hist *hist, int64_t value_us) { tb__observe(hist, tb_hist_bounds_us, value_us, 1); }
void tb_hist_observe_link(tb_hist *hist, int64_t value_us) { tb__observe(hist, tb_hist_link_bounds_us, value_us, 1); }

double tb_hist_quantile(const tb_hist *hist, double q)
{
    uint64_t counts[TB_HIST_BUCKETS + 1], total = 0;
    for (int b = 0; b <= TB_HIST_BUCKETS; b++) {
        counts[b] = atomic_load_explicit(&((tb_hist *)hist)->bucket[b], memory_order_relaxed);
        total += counts[b];
    }
    if (total == 0)
        return -1.0;
    double rank = q * (double)total, seen = 0;
    for (int b = 0; b <= TB_HIST_BUCKETS; b++) {
        if (seen + (double)counts[b] >= rank && counts[b] > 0) {
            double lo = b == 0 ? 0.0 : tb_hist_bounds_us[b - 1];
            double hi = b == TB_HIST_BUCKETS ? lo * 2 : tb_hist_bounds_us[b];
            return lo + (hi - lo) * ((rank - seen) / (double)counts[b]);
        }
        seen += (double)counts[b];
    }
    return tb_hist_bounds_us[TB_HIST_BUCKETS - 1];
}

typedef struct {
    char *buf;
    size_t cap, len;
} tb__out;

static void tb__printf(tb__out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb__printf(tb__out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

#define LOAD(x) ((unsigned long long)atomic_load_explicit(&(x), memory_order_relaxed))

static void tb__counter(tb__out *o, const char *name, const char *help, unsigned long long v)
{
    tb__printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

static void tb__hist_b(tb__out *o, const char *name, const char *help, const tb_hist *h, const double *bounds)
{
    tb__printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int b = 0; b < TB_HIST_BUCKETS; b++) {
        cum += LOAD(h->bucket[b]);
        tb__printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[b] / 1e6, cum);
    }
    cum += LOAD(h->bucket[TB_HIST_BUCKETS]);
    tb__printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, cum);
    tb__printf(o, "%s_sum %g\n%s_count %llu\n", name, (double)LOAD(h->sum_us) / 1e6, name, LOAD(h->count));
}

static void tb__hist(tb__out *o, const char *name, const char *help, const tb_hist *h)
{
    tb__hist_b(o, name, help, h, tb_hist_bounds_us);
}

size_t tb_metrics_write(const tb_metrics *cm, char *buf, size_t cap)
{
    tb_metrics *m = (tb_metrics *)cm;
    tb__out o = {buf, cap, 0};
    tb__printf(&o, "# HELP tumble_rooms Rooms open.\n# TYPE tumble_rooms gauge\ntumble_rooms %d\n",
               atomic_load(&m->rooms));
    tb__printf(&o, "# HELP tumble_clients WebSocket clients joined to a room.\n# TYPE tumble_clients gauge\n"
               "tumble_clients %d\n", atomic_load(&m->clients));
    tb__printf(&o, "# HELP tumble_worker_nice Nice value the simulation workers run at.\n"
               "# TYPE tumble_worker_nice gauge\ntumble_worker_nice %d\n", atomic_load(&m->worker_nice));
    tb__printf(&o, "# HELP tumble_workers_pinned Simulation workers that run on a CPU of their own.\n"
               "# TYPE tumble_workers_pinned gauge\ntumble_workers_pinned %d\n", atomic_load(&m->workers_pinned));
    tb__counter(&o, "tumble_steps_total", "World steps taken (all rooms).", LOAD(m->steps_total));
    tb__counter(&o, "tumble_overrun_steps_total", "Steps skipped because a room fell more than 0.25 s behind.",
                LOAD(m->overrun_steps_total));
    tb__hist(&o, "tumble_step_seconds", "Time of one world step.", &m->step_time);
    tb__hist(&o, "tumble_tick_lateness_seconds", "How late a room's step started after its due time.",
             &m->tick_lateness);
    tb__hist(&o, "tumble_input_to_snapshot_seconds",
             "From an input's arrival on the network thread to the first snapshot encoded with it.",
             &m->input_latency);
    tb__hist_b(&o, "tumble_client_view_lag_seconds",
               "How far behind the server's present a client's picture was, from its link reports.",
               &m->client_view_lag, tb_hist_link_bounds_us);
    tb__hist_b(&o, "tumble_client_queue_delay_seconds",
               "WebSocket ping to pong beyond the smallest seen on that link: time a client's data waited in buffers.",
               &m->client_queue_delay, tb_hist_link_bounds_us);
    tb__printf(&o, "# HELP tumble_clients_by_stream_rate Joined clients by the snapshot rate streamed to them.\n"
               "# TYPE tumble_clients_by_stream_rate gauge\n");
    int hz = atomic_load(&m->snapshot_hz);
    for (int t = 0; t < TB_METRICS_TIERS; t++)
        tb__printf(&o, "tumble_clients_by_stream_rate{rate=\"%g\"} %d\n", (double)hz / tb_metrics_tier_strides[t],
                   atomic_load(&m->clients_by_tier[t]));
    tb__printf(&o, "# HELP tumble_stream_rate_changes_total A client's snapshot rate lowered (down) or raised (up) "
               "to fit its link.\n# TYPE tumble_stream_rate_changes_total counter\n"
               "tumble_stream_rate_changes_total{direction=\"down\"} %llu\n"
               "tumble_stream_rate_changes_total{direction=\"up\"} %llu\n",
               LOAD(m->stream_rate_changes_total[0]), LOAD(m->stream_rate_changes_total[1]));
    tb__printf(&o, "# HELP tumble_stream_budget_changes_total A client's snapshot budget set or changed to fit its link "
               "(PROTOCOL.md \"Bandwidth budgets\").\n# TYPE tumble_stream_budget_changes_total counter\n"
               "tumble_stream_budget_changes_total %llu\n", LOAD(m->stream_budget_changes_total));
    tb__counter(&o, "tumble_snapshots_total", "Snapshots encoded by the workers.", LOAD(m->snapshots_total));
    tb__counter(&o, "tumble_snapshots_sent_total", "Snapshot frames written to clients.",
                LOAD(m->snapshots_sent_total));
    tb__counter(&o, "tumble_snapshots_skipped_total",
                "Snapshots replaced by a newer one before a slow client could take them.",
                LOAD(m->snapshots_skipped_total));
    tb__counter(&o, "tumble_snapshots_dropped_total", "Snapshots dropped because the worker queue was full.",
                LOAD(m->snapshots_dropped_total));
    tb__counter(&o, "tumble_messages_sent_total", "WebSocket messages written.", LOAD(m->messages_sent_total));
    tb__counter(&o, "tumble_messages_sent_direct_total",
                "WebSocket messages written as soon as delivered, without waiting for a WRITEABLE round.",
                LOAD(m->messages_sent_direct_total));
    tb__counter(&o, "tumble_frames_batched_total",
                "WebSocket messages written together with others in one write (one system call and one TCP "
                "segment for the lot: frames that waited together, as after a late wake-up).",
                LOAD(m->frames_batched_total));
    tb__counter(&o, "tumble_bytes_sent_total", "WebSocket payload bytes written.", LOAD(m->bytes_sent_total));
    tb__counter(&o, "tumble_messages_received_total", "WebSocket messages received.",
                LOAD(m->messages_received_total));
    tb__counter(&o, "tumble_bytes_received_total", "WebSocket payload bytes received.",
                LOAD(m->bytes_received_total));
    tb__counter(&o, "tumble_inputs_applied_total", "Inputs applied to a world.", LOAD(m->inputs_applied_total));
    tb__printf(&o, "# HELP tumble_inputs_rejected_total Client messages rejected, by reason.\n"
               "# TYPE tumble_inputs_rejected_total counter\n");
    for (int r = 1; r < TB_ERR__COUNT; r++)
        tb__printf(&o, "tumble_inputs_rejected_total{reason=\"%s\"} %llu\n", tb_proto_code_name(r),
                   LOAD(m->inputs_rejected_total[r]));
    tb__counter(&o, "tumble_connections_total", "WebSocket connections accepted.", LOAD(m->connections_total));
    tb__printf(&o, "# HELP tumble_connections_refused_total Connections or joins refused, by reason.\n"
               "# TYPE tumble_connections_refused_total counter\n");
    for (int r = 0; r < TB_REFUSE_COUNT; r++)
        tb__printf(&o, "tumble_connections_refused_total{reason=\"%s\"} %llu\n", tb_refuse_names[r],
                   LOAD(m->connections_refused_total[r]));
    tb__counter(&o, "tumble_http_requests_total", "HTTP requests served.", LOAD(m->http_requests_total));
    tb__counter(&o, "tumble_http_refused_paths_total", "HTTP paths refused (traversal, symlinks out, bad bytes).",
                LOAD(m->http_refused_paths_total));
    tb__counter(&o, "tumble_events_dropped_total", "Room events dropped because a queue was full.",
                LOAD(m->events_dropped_total));
    tb__counter(&o, "tumble_events_superseded_total",
                "Unsent room events (parameter values, presence, scene, reset, dice) replaced by a newer one.",
                LOAD(m->events_superseded_total));
    tb__counter(&o, "tumble_rooms_saved_total", "Rooms written to the state folder on shutdown.",
                LOAD(m->rooms_saved_total));
    tb__counter(&o, "tumble_rooms_restored_total", "Rooms restored from the state folder at start.",
                LOAD(m->rooms_restored_total));
    tb__counter(&o, "tumble_state_files_rejected_total", "State files refused at start (corrupt, truncated).",
                LOAD(m->state_files_rejected_total));
    tb__counter(&o, "tumble_physics_faults_total",
                "Bodies removed or worlds reset because their state went non-finite or left the room.",
                LOAD(m->physics_faults_total));
    tb__counter(&o, "tumble_room_creations_refused_total",
                "Room creations refused by the per-connection limit (--max-room-creations).",
                LOAD(m->room_creations_refused_total));
    return o.len;
}

char *tb_metrics_render(const tb_metrics *m, size_t spare, size_t *len, size_t *cap)
{
    size_t size = tb_metrics_write(m, NULL, 0) + spare + 256;
    for (;;) {
        char *buf = malloc(size);
        if (!buf)
            return NULL;
        size_t n = tb_metrics_write(m, buf, size);
        if (n + spare < size) {
            *len = n;
            *cap = size;
            return buf;
        }
        free(buf); /* grew past the slack meanwhile: again, bigger */
        size = n + spare + 1024;
    }
}
