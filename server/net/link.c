/* link.c: what each client's link delivers, and the snapshot rate that fits it
 * (session.h: who owns what; issue 17, PROTOCOL.md §13).
 *
 * What the server learns of a link, per session:
 *   - round trips: a WebSocket ping every TB__LINK_PING_NS (one outstanding
 *     at a time; every second on a calm link of under 20 ms); its pong comes back once the client has read every byte
 *     written before it, so ping to pong is the round trip *plus the time
 *     the data waited in buffers* on the way (the server's socket, a proxy,
 *     a router queue). The smallest of the last 10-20 s is the path itself
 *     (rtt_min); the rest is the queueing delay. Every client answers pings
 *     (browsers and `ws` do so on their own), so this holds for old clients
 *     that send no link reports. While a ping is out, its age bounds the
 *     queueing delay from below, so a queue that builds is seen as it builds.
 *   - link reports (§13): the client's newest applied tick gives its view lag
 *     (how far behind the present its picture is: the metrics histogram), and
 *     recv_bytes the bytes delivered and still on the way (payload written -
 *     recv_bytes: the backlog outside the server).
 *   - delivered throughput: bytes known delivered (by pongs and reports)
 *     over time; the largest such sample of the last 5-10 s is what the link
 *     was seen to carry (capacity).
 *   - the kernel send queue (SIOCOUTQ): bytes not yet acknowledged.
 *
 * The stream tier (latency-bounded streaming). A client that cannot take
 * every snapshot gets every k-th one, k in tb_room_strides (60, 30, 20, 15,
 * 10, 5 a second at 60/s), from an encoder of that tier (sim/worker_room.c)
 * so its deltas chain with the predictor state of its own stream; changing
 * tier costs one keyframe of the new tier, and the session stays on its old
 * tier until that keyframe arrives (outbox.c).
 *
 * A queue alone does not say the link is slow. A client that stops reading
 * for a moment (a loaded machine, a tab in the background, a Wi-Fi hand-over)
 * builds the same queue as a slow link, at the same pace; what tells them
 * apart is delivery while the queue stands. A slow link keeps delivering, at
 * a rate below what is written, sample after sample; a stall delivers nothing
 * and then, once it ends, its whole backlog at once. So every delivery sample
 * (pong to pong by the server's clock, report to report by the client's) is
 * judged: read at 5-100% of the rate written while a queue stands is slow;
 * nothing (under 5%: a stall), a drain (150% or more) or no queue ends the
 * run of slow samples; 100-150% (a link near its limit, noise) leaves it.
 * The link is slow when such a run spans TB__SLOW_FOR_NS (1.5 s on a path
 * of under 2 ms: loopback or a LAN, where a slow reader is a client starved
 * of CPU for a while) with at least two samples, the newest under a second
 * old. A stall does not step the client
 * down: the queue it leaves drains by itself, faster than any keyframe of
 * another tier could arrive, and the client keeps its full rate.
 *
 * The rule, evaluated at most every 50 ms (on snapshots, pongs, reports and
 * the housekeeping timer):
 *   - the link is slow and the queueing delay is above TB__Q_HIGH_NS, once
 *     the last change had time to show (a round trip + 100 ms) and unless
 *     the queue is already draining: down, to the tier whose expected rate
 *     fits 80% of what the slow samples delivered (rate ~ stride^-0.55: a
 *     delta over k snapshots is a bit bigger than one over one), at least
 *     one tier; what they delivered is then the link's known capacity (30 s);
 *   - with a known capacity, the tier written now exceeds it: down one
 *     before the queue shows (the scene got busier);
 *   - below TB__Q_LOW_NS: up one tier every TB__UP_CALM_NS of calm while
 *     no capacity is known (after a stall, 30 s on, or once a sample shows
 *     the link carrying half as much again as the known capacity); with one, after 1 s
 *     of calm if the next tier fits 80% of it, otherwise after probe_hold
 *     (4 s), which doubles (to 64 s) each time a step up is followed by a
 *     slow link within 4 s: a link that cannot take the faster rate is
 *     probed rarely, since each probe costs two keyframes (at 64 kbit/s a
 *     cloth keyframe alone is half a second of the link).
 * The view lag then stays near one-way delay + the tier's interval + a
 * queue below TB__Q_HIGH_NS: about RTT/2 + 150 ms at the tiers that fit.
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <linux/sockios.h>
#include <math.h>
#include <sys/ioctl.h>

#include "net/log.h"
#include "sim/clock.h"

_Static_assert(TB_ROOM_TIERS == TB_METRICS_TIERS, "metrics count every stream tier");

#define TB__LINK_PING_NS (250 * TB_NS_PER_MS)
#define TB__LAN_RTT_NS (20 * TB_NS_PER_MS)
#define TB__LINK_CHECK_NS (50 * TB_NS_PER_MS)
#define TB__OUTQ_LOOK 16384 /* bytes: a kernel send queue past this counts as queueing delay */
#define TB__Q_HIGH_NS (120 * TB_NS_PER_MS)
#define TB__Q_LOW_NS (25 * TB_NS_PER_MS)
#define TB__RTT_WINDOW_NS (5 * TB_NS_PER_SEC)
#define TB__CAPACITY_KEEP_NS (30 * TB_NS_PER_SEC)
#define TB__CONGESTED_FOR_NS (250 * TB_NS_PER_MS)
#define TB__SLOW_FOR_NS (300 * TB_NS_PER_MS)
#define TB__SLOW_FOR_LAN_NS (1500 * TB_NS_PER_MS)
#define TB__SLOW_FOR_EARLY_NS (100 * TB_NS_PER_MS)
#define TB__START_KBPS 48u
#define TB__START_UP_NS (500 * TB_NS_PER_MS)
#define TB__EARLY_NS (2 * TB_NS_PER_SEC)
#define TB__SLOW_FRESH_NS (1 * TB_NS_PER_SEC)
#define TB__UP_CALM_NS (300 * TB_NS_PER_MS)
#define TB__UP_KNOWN_NS (1 * TB_NS_PER_SEC)
#define TB__PROBE_MIN_NS (4 * TB_NS_PER_SEC)
#define TB__PROBE_MAX_NS (64 * TB_NS_PER_SEC)
#define TB__RATE_EXPONENT 0.55

static int64_t tb__max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t tb__queue_now(tb_session *s, int64_t now);
static int64_t tb__rtt_min(const tb_link *l);
static uint32_t tb__budget(const tb_link *l);

/* What the link carries: the delivery rate seen while it was the limit,
 * for 30 s; otherwise what it delivers now (a lower bound). */
static double tb__capacity(const tb_link *l, int64_t now)
{
    if (l->capacity_at_ns && now - l->capacity_at_ns < TB__CAPACITY_KEEP_NS)
        return l->capacity_bps;
    return l->delivered_bps;
}

/* Is the link the limit: a run of slow delivery samples (the file comment),
 * long enough and recent? */
static bool tb__link_slow(const tb_link *l, int64_t now)
{
    /* a path of under 2 ms (loopback, a LAN) is not what limits a stream of
     * at most a few hundred kbit/s: a client there that reads slowly is
     * starved of CPU, which passes; only a long run says otherwise */
    int64_t rtt_min = tb__rtt_min(l);
    int64_t span = rtt_min > 0 && rtt_min < 2 * TB_NS_PER_MS ? TB__SLOW_FOR_LAN_NS : TB__SLOW_FOR_NS;
    /* the first seconds of a remote client: the welcome's keyframe and the
     * full stream arrive at once; every 100 ms it waits there is a second of
     * queue to drain on a link a third of the stream (a stall this early,
     * taken for a slow link, costs a budget that comes back up in seconds) */
    if (span == TB__SLOW_FOR_NS && now - l->joined_ns < TB__EARLY_NS)
        span = TB__SLOW_FOR_EARLY_NS;
    return l->slow_samples >= 2 && now - l->slow_since_ns >= span &&
           now - l->slow_last_ns < TB__SLOW_FRESH_NS;
}

static int64_t tb__rtt_min(const tb_link *l)
{
    int64_t a = l->rtt_min_ns, b = l->rtt_min_next_ns;
    int64_t m = a < b ? a : b;
    return m == INT64_MAX ? 0 : m;
}

void tb_link_init(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    memset(l, 0, sizeof *l);
    l->rtt_min_ns = l->rtt_min_next_ns = INT64_MAX;
    l->rtt_min_since_ns = l->rate_since_ns = now;
    l->view_lag_ns = -1;
    l->probe_hold_ns = TB__PROBE_MIN_NS;
}

void tb_link_written(tb_session *s, size_t payload, bool snapshot)
{
    tb_link *l = &s->link;
    l->payload_sent += payload;
    l->rate_bytes += payload;
    if (snapshot)
        l->frame_bytes = l->frame_bytes > 0 ? 0.9 * l->frame_bytes + 0.1 * (double)payload : (double)payload;
}

/* A delivery sample: bytes delivered over dt while the queue was q,
 * judged against what is written (the file comment). Slower than written
 * while a queue stands extends the run of slow samples; nothing delivered
 * (a stall), a drain (half as fast again as written) or no queue ends it;
 * in between (a link near its limit, noise) leaves it. A sample of under
 * 50 ms can only end a run. */
static void tb__delivered(tb_link *l, double bytes, int64_t dt, int64_t q, int64_t now)
{
    if (dt < TB_NS_PER_MS || bytes < 0)
        return;
    double bps = bytes * 1e9 / (double)dt;
    if (dt >= 20 * TB_NS_PER_MS)
        l->delivered_bps = l->delivered_bps > 0 ? 0.7 * l->delivered_bps + 0.3 * bps : bps;
    /* the link carried far more than its known capacity (a drain after a
     * stall that was read as a slow link, or a link that got faster): the
     * capacity is no longer known, and the rate may climb at once */
    if (l->capacity_at_ns && bytes >= 2048 && bps > 1.5 * l->capacity_bps)
        l->capacity_at_ns = 0;
    /* the budget was used and the link kept up: only that says it carries
     * this level (a budget a quiet scene leaves unspent proves nothing) */
    uint32_t budget = tb__budget(l);
    if (budget && dt >= 100 * TB_NS_PER_MS && bps * 8e-3 >= 0.75 * budget && q <= TB__Q_LOW_NS) {
        l->used_ns = now;
        l->used_bps = bps;
    }
    double ratio = l->sent_bps > 0 ? bps / l->sent_bps : 1.0;
    if (ratio >= 1.5 || ratio < 0.05 || q <= TB__Q_HIGH_NS) {
        l->slow_samples = 0;
        return;
    }
    if (ratio >= 1.0 || dt < 50 * TB_NS_PER_MS)
        return;
    if (l->slow_samples++ == 0) {
        l->slow_since_ns = now;
        l->slow_bps = bps;
    } else {
        l->slow_bps += (bps - l->slow_bps) / (l->slow_samples < 8 ? l->slow_samples : 8);
    }
    l->slow_last_ns = now;
}

void tb_link_pong(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    if (!s->ping_sent_ns)
        return;
    l->rtt_ns = now - s->ping_sent_ns;
    if (now - l->rtt_min_since_ns >= TB__RTT_WINDOW_NS) {
        l->rtt_min_ns = l->rtt_min_next_ns;
        l->rtt_min_next_ns = INT64_MAX;
        l->rtt_min_since_ns = now;
    }
    if (l->rtt_ns < l->rtt_min_next_ns)
        l->rtt_min_next_ns = l->rtt_ns;
    l->queue_prev_ns = l->queue_ns;
    l->queue_ns = l->rtt_ns - tb__rtt_min(l);
    if (s->welcomed)
        tb_hist_observe_link(&s->server->metrics->client_queue_delay, l->queue_ns / TB_NS_PER_US);
    if (l->pong_at_ns && s->ping_end >= l->pong_delivered)
        tb__delivered(l, (double)(s->ping_end - l->pong_delivered), now - l->pong_at_ns, l->queue_ns, now);
    l->pong_delivered = s->ping_end;
    l->pong_at_ns = now;
    tb_link_check(s, now);
}

void tb_link_report(tb_session *s, const tb_client_msg *m, int64_t now)
{
    tb_link *l = &s->link;
    if (m->link.has_rtt)
        l->client_rtt_ns = (int64_t)(m->link.rtt_ms * 1e6);
    int64_t rtt = l->client_rtt_ns ? l->client_rtt_ns : tb__rtt_min(l);
    if (m->link.has_ack_tick && s->room && s->welcomed) {
        /* the report left the client rtt/2 ago; the room was at net_tick then */
        int32_t behind = (int32_t)(s->room->net_tick - m->link.ack_tick);
        int64_t lag = (int64_t)behind * TB_STEP_NS - rtt / 2;
        l->view_lag_ns = lag > 0 ? lag : 0;
        l->ack_tick = m->link.ack_tick;
        tb_hist_observe_link(&s->server->metrics->client_view_lag, l->view_lag_ns / TB_NS_PER_US);
    }
    if (m->link.has_recv_bytes) {
        if (l->has_report_bytes) {
            uint32_t got = m->link.recv_bytes - l->report_bytes;
            /* timed by the client's clock when it is plausible: reports held
             * up on the way (a stall both ways) arrive together, but were
             * sent apart and say what arrived between their sending */
            double client_ms = m->ping_time - l->report_client_ms;
            int64_t dt = now - l->report_at_ns;
            if (isfinite(client_ms) && client_ms > 0 && client_ms < 10000)
                dt = (int64_t)(client_ms * 1e6);
            tb__delivered(l, (double)got, dt, tb__queue_now(s, now), now);
            if (got > 0) {
                /* the client reads, however slowly: the outstanding ping is
                 * behind data it is still taking in, not a stalled reader */
                s->last_progress_ns = now;
                if (s->ping_delivered_ns)
                    s->ping_delivered_ns = now;
            }
        }
        l->report_bytes = m->link.recv_bytes;
        l->report_at_ns = now;
        l->report_client_ms = m->ping_time;
        l->has_report_bytes = true;
    }
    tb_link_check(s, now);
}

/* ---- the stream tier ---------------------------------------------------- */

void tb_link_room_tiers(tb_room *room)
{
    unsigned wanted = 0;
    for (tb_session *s = room->net; s; s = s->room_next)
        if (s->welcomed)
            wanted |= tb_link_streams(s);
    atomic_store_explicit(&room->tiers_wanted, wanted & ~1u, memory_order_release);
}

unsigned tb_link_streams(const tb_session *s)
{
    return (1u << TB_ROOM_STREAM(s->link.lane_now, s->link.tier)) | (1u << TB_ROOM_STREAM(s->link.lane, s->link.next));
}

/* ---- the bandwidth lane ------------------------------------------------- */

/* The lane of a client with a budget of kbps: the lane of that budget, else
 * a free one (it takes the budget), else the one nearest below (or the
 * smallest): a client never gets more than it asked for, unless every lane
 * is smaller... then the smallest, the nearest to what it can take. */
static int tb__take_lane(tb_room *room, uint32_t kbps)
{
    if (!kbps)
        return 0;
    int free_lane = 0, below = 0, lowest = 0;
    uint32_t k[TB_ROOM_LANES];
    for (int l = 1; l < TB_ROOM_LANES; l++) {
        k[l] = atomic_load_explicit(&room->lane_kbps[l], memory_order_relaxed);
        if (room->lane_users[l] == 0) {
            free_lane = free_lane ? free_lane : l;
            continue;
        }
        if (k[l] == kbps) {
            room->lane_users[l]++;
            return l;
        }
        if (k[l] < kbps && (!below || k[l] > k[below]))
            below = l;
        if (!lowest || k[l] < k[lowest])
            lowest = l;
    }
    int l = free_lane ? free_lane : below ? below : lowest;
    if (free_lane)
        atomic_store_explicit(&room->lane_kbps[l], kbps, memory_order_relaxed);
    room->lane_users[l]++;
    return l;
}

/* The budget levels a slow link is given (kbit/s): clients on links alike
 * share a lane. */
static const uint32_t tb__ladder[] = {16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
#define TB__LADDER_N ((int)(sizeof tb__ladder / sizeof tb__ladder[0]))

/* The largest level at or below kbps (0 below the first). */
static uint32_t tb__ladder_floor(double kbps)
{
    uint32_t k = 0;
    for (int i = 0; i < TB__LADDER_N && tb__ladder[i] <= kbps; i++)
        k = tb__ladder[i];
    return k;
}

/* What the session may be sent: its own budget, lowered by the link's. */
static uint32_t tb__budget(const tb_link *l)
{
    if (!l->auto_kbps)
        return l->kbps;
    return l->kbps && l->kbps < l->auto_kbps ? l->kbps : l->auto_kbps;
}

/* The budget changed: another lane, which the session streams once its
 * keyframe arrives (outbox.c), like a change of tier. */
static void tb__relane(tb_session *s, int64_t now)
{
    tb_room *room = s->room;
    int old = s->link.lane;
    if (old)
        room->lane_users[old]--;
    s->link.lane = tb__take_lane(room, tb__budget(&s->link));
    s->link.changed_ns = s->link.budget_ns = now;
    s->link.calm_since_ns = 0;
    tb_log_debug("client %u: snapshot budget %u kbit/s (asked %u, link %u): lane %d -> %d", s->id, tb__budget(&s->link),
                 s->link.kbps, s->link.auto_kbps, old, s->link.lane);
    TB_COUNT(s->server->metrics, stream_budget_changes_total);
    tb_link_room_tiers(room);
    tb_outbox_want_key(s);
}

void tb_link_joined(tb_session *s)
{
    s->link.tier = s->link.next = 0;
    s->link.auto_kbps = 0;
    s->link.joined_ns = tb_clock_now_ns();
    s->link.start_checked = s->link.ramping = false;
    /* the welcome's keyframe is lane 0's: a client with a budget moves to
     * its lane with the lane's first keyframe */
    s->link.lane_now = 0;
    s->link.lane = tb__take_lane(s->room, s->link.kbps);
    if (s->link.lane) {
        tb_log_info("client %u: streams under a budget of %u kbit/s (lane %d at %u)", s->id, s->link.kbps, s->link.lane,
                    atomic_load(&s->room->lane_kbps[s->link.lane]));
        atomic_fetch_or_explicit(&s->room->tier_keys_wanted, 1u << TB_ROOM_STREAM(s->link.lane, 0), memory_order_acq_rel);
        tb_link_room_tiers(s->room);
    }
    /* a ping just ahead of the welcome: its round trip is the path's own,
     * before the welcome's keyframe queues anything (on a slow link, every
     * later one waits behind snapshots and would read as the path) */
    int64_t now = tb_clock_now_ns();
    if (!s->ping_sent_ns && !s->ping_wanted && !s->closing) {
        s->last_ping_ns = now;
        s->ping_wanted = true;
        tb_outbox_ask_writable(s);
    }
    s->link.pong_delivered = s->wire_bytes;
    s->link.pong_at_ns = now;
    atomic_store(&s->server->metrics->snapshot_hz, s->server->cfg->snapshot_rate);
    atomic_fetch_add(&s->server->metrics->clients_by_tier[0], 1);
}

void tb_link_left(tb_session *s)
{
    if (!s->welcomed)
        return;
    atomic_fetch_sub(&s->server->metrics->clients_by_tier[s->link.tier], 1);
    if (s->room && s->link.lane)
        s->room->lane_users[s->link.lane]--;
    s->link.tier = s->link.next = 0;
    s->link.lane = s->link.lane_now = 0;
    if (s->room)
        tb_link_room_tiers(s->room);
}

void tb_link_switched(tb_session *s, size_t key_bytes)
{
    tb_metrics *m = s->server->metrics;
    tb_link *l = &s->link;
    int64_t now = tb_clock_now_ns();
    double capacity = tb__capacity(l, now);
    l->changed_ns = now;
    /* the keyframe crosses in key/capacity and the queue it leaves drains at
     * the headroom (a quarter of the link, or so): give it four times that */
    l->settle_ns = capacity > 1000 ? (int64_t)(4.0 * (double)key_bytes / capacity * 1e9) : 0;
    if (l->settle_ns > 2 * TB_NS_PER_SEC)
        l->settle_ns = 2 * TB_NS_PER_SEC;
    atomic_fetch_sub(&m->clients_by_tier[s->link.tier], 1);
    atomic_fetch_add(&m->clients_by_tier[s->link.next], 1);
    s->link.tier = s->link.next;
    s->link.lane_now = s->link.lane;
    tb_link_room_tiers(s->room);
}

static void tb__switch(tb_session *s, int tier, int64_t now, int64_t q, int64_t frame_ns)
{
    tb_link *l = &s->link;
    tb_log_debug("client %u: stream every %d%s snapshot -> every %d (queue %.0f ms, frame %.0f ms, rtt_min %.0f ms, "
                 "sent %.1f, delivered %.1f, slow %.1f kbit/s x %d, capacity %.1f kbit/s, probe hold %.0f s)",
                 s->id, tb_room_strides[l->tier], l->tier ? "th" : "", tb_room_strides[tier], (double)q / 1e6,
                 (double)frame_ns / 1e6, (double)tb__rtt_min(l) / 1e6, l->sent_bps * 8e-3, l->delivered_bps * 8e-3,
                 l->slow_bps * 8e-3, l->slow_samples, tb__capacity(l, now) * 8e-3,
                 (double)l->probe_hold_ns / 1e9);
    TB_COUNT(s->server->metrics, stream_rate_changes_total[tier > l->tier ? 0 : 1]);
    if (tier < l->tier)
        l->last_up_ns = now;
    l->next = tier;
    l->changed_ns = now;
    l->calm_since_ns = 0;
    tb_link_room_tiers(s->room);
    tb_outbox_want_key(s);
}

/* The queueing delay now: the newest pong's, or the age of the outstanding
 * ping beyond the path's round trip if larger; a kernel send queue that
 * holds more than it should. (A report's backlog, bytes written - received,
 * is not used: on a slow stream one frame the client has not counted yet is
 * a large part of a second's bytes, and reads as a queue it is not.) */
static int64_t tb__queue_now(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    /* two pongs in a row: one late pong is a hiccup (of either end), not a queue */
    int64_t rtt_min = tb__rtt_min(l), q = l->queue_ns < l->queue_prev_ns ? l->queue_ns : l->queue_prev_ns;
    if (s->ping_sent_ns)
        q = tb__max64(q, now - s->ping_sent_ns - rtt_min);
    double rate = l->delivered_bps > l->sent_bps ? l->delivered_bps : l->sent_bps;
    if (rate < 1000)
        rate = 1000;
    /* the kernel's send queue, when it may hold more than 16 kB: a look costs a
     * system call (some 1.7 us in a VM), 20 a second for every client. (Over
     * TLS the kernel holds more bytes than were written: always look.) */
    if ((uint64_t)s->outq_seen + (s->wire_bytes - s->outq_wire) <= TB__OUTQ_LOOK && !s->server->cfg->tls_cert[0])
        return q;
    int fd = lws_get_socket_fd(s->wsi), outq = 0;
    if (fd < 0 || ioctl(fd, SIOCOUTQ, &outq) != 0)
        return q;
    s->outq_seen = outq;
    s->outq_wire = s->wire_bytes;
    if (outq > TB__OUTQ_LOOK)
        q = tb__max64(q, (int64_t)((double)outq / rate * 1e9) - rtt_min);
    return q;
}

void tb_link_check(tb_session *s, int64_t now)
{
    tb_link *l = &s->link;
    if (!s->welcomed || s->closing || !s->room || now - l->last_check_ns < TB__LINK_CHECK_NS)
        return;
    l->last_check_ns = now;
    /* 4 pings a second where the link matters (a remote client, a queue, a
     * lowered rate); a calm client on a LAN or loopback keeps the
     * housekeeping's one a second (load tests: no extra writes) */
    bool remote = tb__rtt_min(l) > TB__LAN_RTT_NS || l->queue_ns > TB__Q_LOW_NS || l->tier || l->next;
    if (!s->ping_sent_ns && !s->ping_wanted && now - s->last_ping_ns >= (remote ? TB__LINK_PING_NS : TB_NS_PER_SEC)) {
        s->last_ping_ns = now;
        tb_outbox_ping(s);
    }
    if (now - l->rate_since_ns >= 250 * TB_NS_PER_MS) {
        double bps = (double)l->rate_bytes * 1e9 / (double)(now - l->rate_since_ns);
        l->sent_bps = l->sent_bps > 0 ? 0.5 * l->sent_bps + 0.5 * bps : bps;
        l->rate_bytes = 0;
        l->rate_since_ns = now;
    }
    /* A remote client (its first round trip over 20 ms) starts under a
     * budget of 48 kbit/s that goes up a level every second of calm (every
     * 500 ms past 128 kbit/s) while it binds and once the link has
     * delivered 3/4 of it with no queue (a level a quiet scene leaves
     * unspent says nothing of the link: a dough pulled in bursts would
     * otherwise climb between pulls past what the link carries) until
     * its link is seen to be the limit (or it has none past 1 Mbit/s), as
     * a video call starts low and ramps: the full stream at once, on top of
     * the welcome's keyframe, would put seconds of queue on a slow link
     * before anything could tell. A client on a LAN or loopback streams as
     * it always did. */
    if (!l->start_checked && l->rtt_ns > 0) {
        l->start_checked = true;
        if (tb__rtt_min(l) > TB__LAN_RTT_NS && !l->auto_kbps && (!l->kbps || l->kbps > TB__START_KBPS)) {
            l->auto_kbps = TB__START_KBPS;
            l->ramping = true;
            l->ramp_from = 0;
            tb__relane(s, now);
            return;
        }
    }
    if (l->tier != l->next || l->lane != l->lane_now)
        return; /* a change is on its way (its keyframe): judge it once it shows */
    int64_t q = tb__queue_now(s, now), rtt_min = tb__rtt_min(l);
    /* a ping sent just behind a snapshot waits while that frame crosses the
     * bottleneck: that much queue is the frame's, not a backlog */
    double capacity = tb__capacity(l, now);
    /* (a quiet scene delivers little; what the link was seen to carry under
     * a budget in the last 10 s is a better bound of how fast a frame crosses) */
    double crossing = l->used_ns && now - l->used_ns < 10 * TB_NS_PER_SEC && l->used_bps > capacity ? l->used_bps : capacity;
    int64_t frame_ns = crossing > 1000 ? (int64_t)(l->frame_bytes / crossing * 1e9) : 0;
    if (frame_ns > 250 * TB_NS_PER_MS)
        frame_ns = 250 * TB_NS_PER_MS;
    int64_t settle = tb__max64(rtt_min + 100 * TB_NS_PER_MS, 300 * TB_NS_PER_MS) + l->settle_ns;
    int stride = tb_room_strides[l->tier];
    /* known capacity, and what is written now does not fit it: step down
     * before the queue shows (the scene got busier) */
    bool known = l->capacity_at_ns && now - l->capacity_at_ns < TB__CAPACITY_KEEP_NS;
    bool budget_fresh = l->auto_kbps && now - l->budget_ns < 3 * TB_NS_PER_SEC;
    if (known && !budget_fresh && l->tier < TB_ROOM_TIERS - 1 && l->sent_bps > l->capacity_bps && now - l->changed_ns >= settle) {
        l->queue_at_change_ns = q;
        tb__switch(s, l->tier + 1, now, q, frame_ns);
        return;
    }
    /* a step of the start ramp that a queue follows within 2 s: back to the
     * level before, which the link carried, and no further ramp (the usual
     * rules take it from there) */
    if (l->ramping && l->ramp_from && now - l->last_up_ns < 2 * TB_NS_PER_SEC && q > 2 * TB__Q_LOW_NS + frame_ns) {
        double carried = l->ramp_from * 1000.0 / 8;
        /* a queue past the high mark would not drain at a level the link
         * just carries: the one below it until it has */
        uint32_t below = tb__ladder_floor(l->ramp_from - 1.0);
        l->auto_kbps = q > TB__Q_HIGH_NS + frame_ns && below ? below : l->ramp_from;
        l->ramping = false;
        l->capacity_bps = l->delivered_bps > carried ? l->delivered_bps : carried; /* what it carries, for 30 s */
        l->capacity_at_ns = now;
        tb__relane(s, now);
        return;
    }
    if (q > TB__Q_HIGH_NS + frame_ns) {
        l->calm_since_ns = 0;
        if (!l->congested_since_ns)
            l->congested_since_ns = now;
        /* a queue and no slow delivery (yet): a stall, or too early to say */
        if (!tb__link_slow(l, now) || l->tier == TB_ROOM_TIERS - 1 || now - l->changed_ns < settle ||
            now - l->congested_since_ns < (now - l->joined_ns < TB__EARLY_NS ? TB__SLOW_FOR_EARLY_NS : TB__CONGESTED_FOR_NS))
            return;
        /* still draining what the last change left: give it time */
        if (l->changed_ns && now - l->changed_ns < 3 * TB_NS_PER_SEC && q < l->queue_at_change_ns)
            return;
        /* to the tier that fits what the slow samples delivered */
        double target = 0.8 * l->slow_bps;
        double ratio = target > 0 && l->sent_bps > 1.5 * target ? l->sent_bps / target : 1.0;
        double want = stride * pow(ratio, 1.0 / TB__RATE_EXPONENT);
        int tier = l->tier + 1;
        while (tier < TB_ROOM_TIERS - 1 && tb_room_strides[tier] < want)
            tier++;
        /* a long queue at the start (the welcome's keyframe on top): a tier
         * more for each further threshold the queue is over */
        for (int64_t over = q - 2 * (TB__Q_HIGH_NS + frame_ns); over > 0 && tier < TB_ROOM_TIERS - 1;
             over -= TB__Q_HIGH_NS + frame_ns)
            tier++;
        l->capacity_bps = l->slow_bps; /* the link is the limit: remember what it carries */
        l->capacity_at_ns = now;
        if (l->last_up_ns && now - l->last_up_ns < 4 * TB_NS_PER_SEC) /* a step up that failed */
            l->probe_hold_ns = l->probe_hold_ns * 2 < TB__PROBE_MAX_NS ? l->probe_hold_ns * 2 : TB__PROBE_MAX_NS;
        l->queue_at_change_ns = q;
        /* at the full rate, less detail first: a budget of 70 % of what the
         * link delivered keeps every snapshot (the view lag is the path's)
         * and leaves the rest to drain the queue, less by a tenth for each
         * 100 ms of queue (the welcome's keyframe and the full stream at
         * the start: half a second of queue drains in about a second, then
         * the budget comes back up a level a second); lower rates once even
         * the smallest budget does not fit */
        double share = 0.7 - (double)q / 1e9;
        uint32_t fit = tb__ladder_floor(share * l->slow_bps * 8e-3);
        if (!fit && l->slow_bps * 8e-3 >= 2 * tb__ladder[0])
            fit = tb__ladder[0]; /* a long queue on a link that carries the smallest budget twice */
        uint32_t now_budget = tb__budget(l);
        l->ramping = false;
        if (l->tier == 0 && fit && (!now_budget || fit < now_budget)) {
            l->auto_kbps = fit;
            tb__relane(s, now);
            return;
        }
        /* a budget just set drains the queue in a few seconds; a keyframe of
         * another tier now would only add to it */
        if (budget_fresh)
            return;
        tb__switch(s, tier, now, q, frame_ns);
        return;
    }
    l->congested_since_ns = 0;
    if (q > TB__Q_LOW_NS + frame_ns) {
        l->calm_since_ns = 0;
        return;
    }
    if (!l->calm_since_ns)
        l->calm_since_ns = now;
    int64_t calm = now - tb__max64(l->calm_since_ns, l->changed_ns);
    if (l->tier == 0) {
        /* a budget the link set: a level up after a second of calm if it
         * fits 80 % of the link's known capacity; beyond that only once the
         * capacity is forgotten (30 s after the link was last the limit)
         * and after the probe hold of calm (a failed step doubles it, as for
         * tiers); past the top, none */
        int i = 0;
        while (l->auto_kbps && i < TB__LADDER_N && tb__ladder[i] <= l->auto_kbps)
            i++;
        uint32_t up = i < TB__LADDER_N ? tb__ladder[i] : 0;
        bool up_fits = known && up && up * 1000.0 / 8 <= 0.8 * capacity;
        /* slowly where slow links are (a second of calm up to 128 kbit/s:
         * a level over the link fills its queue slowly, and must be seen
         * before the next), then faster */
        uint32_t cut = atomic_load_explicit(&s->room->lane_cut_tick[l->lane], memory_order_relaxed);
        /* it left something out in the last second (the worker stamps the
         * tick it steps, which may be a tick or two past net_tick) */
        bool binds = cut && (int32_t)((uint32_t)s->room->net_tick - cut) < TB_STEP_HZ;
        /* and the link carried the budget since it was set, with calm after */
        bool used = l->used_ns > l->budget_ns;
        bool ramp = l->ramping && binds && used && !known && calm >= (l->auto_kbps <= 128 ? TB_NS_PER_SEC : TB__START_UP_NS);
        if (l->auto_kbps && (ramp || (up_fits && calm >= TB__UP_KNOWN_NS) || (!known && used && calm >= l->probe_hold_ns))) {
            l->ramp_from = l->auto_kbps;
            l->auto_kbps = up;
            if (l->last_up_ns && now - l->last_up_ns > 30 * TB_NS_PER_SEC)
                l->probe_hold_ns = TB__PROBE_MIN_NS; /* long calm: the link may have changed */
            l->last_up_ns = now;
            tb__relane(s, now);
        }
        return;
    }
    /* up a tier every TB__UP_CALM_NS of calm when no capacity is known
     * (after a stall, or 30 s on); with one, after a second of calm (the
     * written rate is then this tier's, not the last one's) if the next
     * tier's rate fits it, else after the probe hold */
    double expected = l->sent_bps * pow((double)stride / tb_room_strides[l->tier - 1], TB__RATE_EXPONENT);
    bool fits = !known || expected <= 0.8 * capacity;
    if ((fits && calm >= (known ? TB__UP_KNOWN_NS : TB__UP_CALM_NS)) || calm >= l->probe_hold_ns) {
        if (!fits && l->last_up_ns && now - l->last_up_ns > 30 * TB_NS_PER_SEC)
            l->probe_hold_ns = TB__PROBE_MIN_NS; /* long calm: the link may have changed */
        l->queue_at_change_ns = 0;
        tb__switch(s, l->tier - 1, now, q, frame_ns);
    }
}
