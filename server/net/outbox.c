/* outbox.c: what a session sends, and when (session.h: who owns what).
 *
 * What a session sends is kept in three places, and that split is the
 * backpressure policy:
 *
 *   ctl[]  a small FIFO of messages that arrive in order: the welcome,
 *          errors, pongs, and the room's events. Room events that only
 *          say what is true now (a parameter's value, who is here, the
 *          scene, the last reset, the dice) supersede their own kind: an
 *          unsent one is dropped when a newer one of the same kind (and
 *          parameter, and peer) comes (tb_outbox_push_ctl), so what other
 *          players do can never fill a client's queue; only its own
 *          requests (pongs, lobby, errors) can. If it overflows the client
 *          is not keeping up at all and is closed.
 *   slots  at most TB__SNAP_SLOTS (8, 133 ms at 60/s) snapshots. When a new
 *          snapshot finds the slots full, the unsent ones are dropped
 *          (counted as skipped) and the client gets a keyframe next, so a
 *          slow reader gets the latest world and never a backlog. The few
 *          slots only absorb scheduling hiccups of the server itself (the
 *          network thread descheduled for a frame or two on a busy machine)
 *          so that a client that keeps up sees every tick.
 *   contacts  the newest contacts view, written after the slots, so the
 *          contacts of tick T come after the snapshot of T (PROTOCOL.md §5).
 *
 * Snapshots are deltas against the previous snapshot tick, encoded once per
 * room by its worker. A session knows the tick its client will hold once
 * everything queued is written (queued_tick); a delta whose base is that
 * tick is queued, otherwise the keyframe of the same tick if the worker made
 * one, otherwise the session asks the room for a keyframe next time
 * (room->key_wanted) and skips this one. Each client's frame is the shared
 * blob with a small per-client prefix (its last input seq the state
 * includes), composed at write time.
 *
 * Writing: output the workers deliver (on_wake) is written directly once
 * the whole batch is queued: each session that got some and has nothing
 * pending in lws (no WRITEABLE asked, no partial frame buffered) writes its
 * queued frames right there, so a client that keeps up costs no POLLOUT
 * round and no extra wake-up. Otherwise (and for output queued elsewhere)
 * a session asks lws for one WRITEABLE callback (write_asked: not again
 * until that callback came), and in it writes every queued frame. Either
 * way: ctl first, then the slots, then the contacts view, until lws had
 * to keep part of a write because the kernel buffer is full
 * (lws_partial_buffered; at most TB__WRITES_PER_CALLBACK frames, for
 * fairness); what is left waits for a WRITEABLE callback. One waiting
 * frame goes out as one lws_write; several (a network thread kept from its
 * CPU for a snapshot interval, a reply and a snapshot of one wake-up, a
 * client draining after a stall) are framed here and go out as one write
 * (tb__write_batch): one system call and one TCP segment instead of one
 * each, which is most of what a frame costs, so a network thread that
 * falls behind catches up for less instead of falling further. A session that has had data
 * waiting and written nothing for --slow-reader-timeout seconds is
 * disconnected by the housekeeping timer (see housekeeping.c for the
 * three ways a slow reader shows). A due ping goes before the queued
 * frames: written at once from on_wake or the housekeeping timer when
 * nothing waits in lws (tb_outbox_ping), else alone in its own WRITEABLE
 * callback.
 *
 * Data comes from the workers through their output rings; tb_server_wake
 * (uv_async_send, thread-safe) makes the loop drain them in on_wake().
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <stdlib.h>
#include <string.h>

#include "net/fleet.h"
#include "net/log.h"
#include "net/ws_frame.h"
#include "sim/clock.h"
#include "sim/wire.h"

_Static_assert(TB_MSG_HEADROOM >= LWS_PRE, "tb_msg headroom must hold LWS_PRE");
_Static_assert(TB_BATCH_PRE >= LWS_PRE, "the batch buffer must hold LWS_PRE");

#define TB__WRITES_PER_CALLBACK 32
/* lws keeps opcode 4 (close) out of the public enum; lws_write() takes it. */
#define TB__LWS_WRITE_CLOSE ((enum lws_write_protocol)4)

bool tb_outbox_has_output(const tb_session *s) { return s->ctl_count > 0 || s->slot_count > 0 || s->contacts; }

void tb_outbox_clear_contacts(tb_session *s)
{
    tb_msg_unref(s->contacts);
    s->contacts = NULL;
}

void tb_outbox_clear_slots(tb_session *s)
{
    for (int i = 0; i < s->slot_count; i++)
        tb_msg_unref(s->slot[i]);
    s->slot_count = 0;
    s->queued_tick = s->sent_tick;
}

void tb_outbox_clear_ctl(tb_session *s)
{
    while (s->ctl_count) {
        tb_msg_unref(s->ctl[s->ctl_head]);
        s->ctl_head = (s->ctl_head + 1) % TB__CTL_CAP;
        s->ctl_count--;
    }
}

void tb_outbox_ask_writable(tb_session *s)
{
    if (s->write_asked)
        return;
    s->write_asked = true;
    lws_callback_on_writable(s->wsi);
}

void tb_outbox_want_write(tb_session *s)
{
    if (!tb_outbox_has_output(s) && !s->closing)
        return;
    tb_server *server = s->server;
    if (server->delivering && !s->write_asked && !s->closing) {
        if (!s->flush_listed) { /* written at the end of on_wake */
            s->flush_listed = true;
            s->flush_next = server->flush;
            server->flush = s;
        }
        return;
    }
    tb_outbox_ask_writable(s);
}

void tb_session_begin_close(tb_session *s, int code, const char *reason)
{
    if (s->closing)
        return;
    s->closing = true;
    s->close_code = code;
    snprintf(s->close_reason, sizeof s->close_reason, "%s", reason);
    /* A closing session reads on (and ignores) what the client still sends:
     * a socket closed with unread data is reset, and a reset makes the
     * client's kernel drop the close frame (and the rate_limited before it)
     * that the client has not read yet: a flooder paused for fairness would
     * see 1006 instead of 1008. */
    if (s->rx_paused) {
        s->rx_paused = false;
        lws_rx_flow_control(s->wsi, 1);
    }
    tb_outbox_ask_writable(s);
}

/* A slow reader is counted once, however it shows (a must-deliver queue that
 * overflows, then the cut of the connection that could not take the close). */
void tb_session_count_slow_reader(tb_session *s)
{
    if (s->slow_counted)
        return;
    s->slow_counted = true;
    TB_COUNT(s->server->metrics, connections_refused_total[TB_REFUSE_SLOW_READER]);
}

/* Drops ctl's i-th unsent message (0 = the oldest), keeping the order. */
static void tb__ctl_remove(tb_session *s, int i)
{
    tb_msg_unref(s->ctl[(s->ctl_head + i) % TB__CTL_CAP]);
    for (; i + 1 < s->ctl_count; i++)
        s->ctl[(s->ctl_head + i) % TB__CTL_CAP] = s->ctl[(s->ctl_head + i + 1) % TB__CTL_CAP];
    s->ctl_count--;
}

/* The unsent message of this supersede class and key, or -1. */
static int tb__ctl_find(const tb_session *s, int supersede, uint32_t key)
{
    for (int i = 0; i < s->ctl_count; i++) {
        const tb_msg *m = s->ctl[(s->ctl_head + i) % TB__CTL_CAP];
        if (m->supersede == supersede && m->supersede_key == key)
            return i;
    }
    return -1;
}

/* A newer room event replaces an unsent one of its kind: the old one is
 * dropped and the new one queued at the end, so it still follows whatever
 * came between (a `scene` carrying the older value). A peer that left
 * before the client was told it came is not mentioned at all. true when
 * msg was consumed here. */
static bool tb__supersede(tb_session *s, tb_msg *msg)
{
    if (msg->supersede == TB_SUPERSEDE_PEER_LEFT) {
        int joined = tb__ctl_find(s, TB_SUPERSEDE_PEER_JOINED, msg->supersede_key);
        if (joined >= 0) {
            tb__ctl_remove(s, joined);
            tb_msg_unref(msg);
            return true;
        }
    }
    int old = tb__ctl_find(s, msg->supersede, msg->supersede_key);
    if (old >= 0) {
        tb__ctl_remove(s, old);
        TB_COUNT(s->server->metrics, events_superseded_total);
    }
    return false;
}

/* Queue a message for ctl (takes the caller's reference). */
void tb_outbox_push_ctl(tb_session *s, tb_msg *msg)
{
    if (!msg)
        return;
    if (s->closing) {
        tb_msg_unref(msg);
        return;
    }
    if (msg->supersede != TB_SUPERSEDE_NONE && tb__supersede(s, msg))
        return;
    if (s->ctl_count == TB__CTL_CAP) {
        tb_msg_unref(msg);
        tb_session_count_slow_reader(s);
        tb_session_begin_close(s, LWS_CLOSE_STATUS_POLICY_VIOLATION, "not reading fast enough");
        return;
    }
    s->ctl[(s->ctl_head + s->ctl_count) % TB__CTL_CAP] = msg;
    s->ctl_count++;
    tb_outbox_want_write(s);
}

/* ---- worker output -> sessions ------------------------------------------ */

static tb_session *tb__room_session(tb_room *room, uint32_t client)
{
    for (tb_session *s = room->net; s; s = s->room_next)
        if (s->id == client)
            return s;
    return NULL;
}

static void tb__put_snapshot(tb_session *s, tb_msg *msg)
{
    s->slot[s->slot_count++] = tb_msg_ref(msg);
    s->queued_tick = (uint32_t)msg->tick;
    tb_outbox_want_write(s);
}

void tb_outbox_want_key(tb_session *s)
{
    if (!s->room)
        return;
    unsigned bits = tb_link_streams(s);
    if (bits & 1u)
        atomic_store_explicit(&s->room->key_wanted, true, memory_order_release);
    if (bits & ~1u)
        atomic_fetch_or_explicit(&s->room->tier_keys_wanted, bits & ~1u, memory_order_acq_rel);
}

/* Newest wins, and deltas must chain (see the file comment). */
static void tb__offer_snapshot(tb_server *server, tb_session *s, tb_msg *msg, tb_msg *key)
{
    if (s->slot_count == TB__SNAP_SLOTS) {
        TB_COUNT_N(server->metrics, snapshots_skipped_total, s->slot_count);
        tb_outbox_clear_slots(s);
    }
    if (msg->type == TB_MSG_SNAP_DELTA && msg->base_tick == s->queued_tick)
        tb__put_snapshot(s, msg);
    else if (key)
        tb__put_snapshot(s, key);
    else if (msg->type == TB_MSG_SNAP_KEY)
        tb__put_snapshot(s, msg);
    else {
        TB_COUNT(server->metrics, snapshots_skipped_total);
        tb_outbox_want_key(s);
    }
}

/* A snapshot of stream `stream` (TB_ROOM_STREAM(lane, tier); 0: the room's
 * own; net/link.c): to the sessions on that stream, and as the first of the
 * new stream to a session moving to it once it carries a keyframe. */
static void tb__deliver_snapshot(tb_server *server, tb_room *room, int stream, tb_msg *msg, tb_msg *key)
{
    int64_t now = tb_clock_now_ns();
    if (stream == 0)
        room->net_tick = (uint32_t)msg->tick;
    for (tb_session *s = room->net; s; s = s->room_next) {
        if (!s->welcomed || s->closing)
            continue;
        if (TB_ROOM_STREAM(s->link.lane_now, s->link.tier) == stream) {
            tb__offer_snapshot(server, s, msg, key);
        } else if (TB_ROOM_STREAM(s->link.lane, s->link.next) == stream) {
            /* its keyframe, or a delta from the very state it holds: a lane's
             * stream that still holds the room's own state (sim/worker_room.c)
             * to a session on the room's own stream. (The tick alone is not
             * enough: a lane whose budget held something back holds another
             * state of the same tick, and its delta would apply to the wrong
             * one, silently or refused.) */
            bool chains = msg->type == TB_MSG_SNAP_DELTA && msg->from_room && s->link.lane_now == 0 && s->link.tier == 0 &&
                          msg->base_tick == s->queued_tick && s->slot_count < TB__SNAP_SLOTS;
            tb_msg *k = chains ? msg : key ? key : msg->type == TB_MSG_SNAP_KEY ? msg : NULL;
            if (k) {
                if (s->slot_count == TB__SNAP_SLOTS) {
                    TB_COUNT_N(server->metrics, snapshots_skipped_total, s->slot_count);
                    tb_outbox_clear_slots(s);
                }
                tb__put_snapshot(s, k);
                tb_link_switched(s, k->len);
            } else {
                tb_outbox_want_key(s);
            }
        }
        tb_link_check(s, now);
    }
}

static void tb__deliver(tb_server *server, tb_out *out)
{
    tb_room *room = out->room;
    switch (out->kind) {
    case TB_OUT_SNAPSHOT:
        if (out->client < TB_ROOM_STREAMS)
            tb__deliver_snapshot(server, room, (int)out->client, out->msg, out->key);
        break;
    case TB_OUT_WELCOME: {
        tb_session *s = tb__room_session(room, out->client);
        if (s && !s->welcomed) {
            s->welcomed = true;
            tb_link_joined(s);
            tb_outbox_clear_slots(s);
            s->sent_tick = s->queued_tick = (uint32_t)out->msg->tick;
            tb_outbox_push_ctl(s, tb_msg_ref(out->msg));
        }
        break;
    }
    case TB_OUT_SCENE:
        for (tb_session *s = room->net; s; s = s->room_next)
            if (s->welcomed) {
                tb_outbox_clear_slots(s);
                s->sent_tick = s->queued_tick = (uint32_t)out->msg->tick;
                if (s->link.tier || s->link.lane) {
                    /* the scene is lane 0 tier 0's state; its stream starts afresh (sim/worker_room.c) */
                    s->link.next = s->link.tier;
                    s->link.tier = 0;
                    s->link.lane_now = 0;
                    atomic_fetch_sub(&server->metrics->clients_by_tier[s->link.next], 1);
                    atomic_fetch_add(&server->metrics->clients_by_tier[0], 1);
                    tb_outbox_want_key(s);
                }
                tb_outbox_push_ctl(s, tb_msg_ref(out->msg));
            }
        break;
    case TB_OUT_CLIENT: {
        /* The world's refusals (no such body, ...) are refused messages
         * like the decoder's (tb_inbound_answer_refused); a contacts view waits
         * in its own slot, behind the snapshots. */
        tb_session *s = tb__room_session(room, out->client);
        int code = tb_inbound_error_code(out->msg);
        if (!s || s->closing)
            break;
        if (code)
            tb_inbound_answer_refused(s, tb_msg_ref(out->msg), code);
        else if (out->msg->supersede == TB_SUPERSEDE_CONTACTS) {
            tb_outbox_clear_contacts(s);
            s->contacts = tb_msg_ref(out->msg);
            tb_outbox_want_write(s);
        } else
            tb_outbox_push_ctl(s, tb_msg_ref(out->msg));
        break;
    }
    case TB_OUT_BROADCAST:
        for (tb_session *s = room->net; s; s = s->room_next)
            if (s->welcomed && s->id != out->client)
                tb_outbox_push_ctl(s, tb_msg_ref(out->msg));
        break;
    case TB_OUT_CHECKPOINT: /* the room's state image, for Redis (net/fleet.h) */
        if (server->fleet)
            tb_fleet_on_checkpoint(server->fleet, room, out->msg, out->client == 1);
        break;
    }
    tb_msg_unref(out->msg);
    tb_msg_unref(out->key);
    tb_room_unref(room);
}

static void tb__flush(tb_server *server);

void tb_outbox_on_wake(uv_async_t *handle)
{
    tb_server *server = handle->data;
    tb_out out;
    int n = 0;
    server->delivering = server->writing_direct = true;
    while (n < 20000 && tb_sched_poll(server->sched, &out)) {
        tb__deliver(server, &out);
        n++;
    }
    server->delivering = false;
    tb__flush(server);
    server->writing_direct = false;
    if (n == 20000) /* leave the loop some air; come back for the rest */
        uv_async_send(&server->wake);
    if (server->leave_count)
        tb_session_retry_leaves(server);
}

void tb_server_wake(void *data)
{
    tb_server *server = data;
    uv_async_send(&server->wake);
}

/* ---- writing ------------------------------------------------------------ */

/* A snapshot's frame for this client (the shared blob behind its own
 * prefix: at most TB__SNAP_PREFIX_MAX bytes more), composed in
 * s->tx + LWS_PRE: its length, or 0. */
#define TB__SNAP_PREFIX_MAX 32
static size_t tb__compose_snapshot(tb_session *s, tb_msg *msg)
{
    size_t need = LWS_PRE + msg->len + TB__SNAP_PREFIX_MAX;
    if (need > s->tx_cap) {
        unsigned char *tx = realloc(s->tx, need);
        if (!tx)
            return 0;
        s->tx = tx;
        s->tx_cap = need;
    }
    return tb_wire_snap_frame(msg, tb_inbound_acked_seq(s, msg->serial), s->tx + LWS_PRE, s->tx_cap - LWS_PRE);
}

size_t tb_ws_frame_header(unsigned char *p, size_t n)
{
    p[0] = 0x82; /* FIN, binary */
    if (n < 126) {
        p[1] = (unsigned char)n;
        return 2;
    }
    if (n < 65536) {
        p[1] = 126;
        p[2] = (unsigned char)(n >> 8);
        p[3] = (unsigned char)n;
        return 4;
    }
    p[1] = 127;
    for (int i = 0; i < 8; i++)
        p[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    return 10;
}

size_t tb_ws_frame_size(size_t n) { return n + (n < 126 ? 2 : n < 65536 ? 4 : 10); }

/* One frame taken off the queues, in sending order: the ctl FIFO, then the
 * oldest snapshot, then the contacts view. */
typedef struct tb__frame {
    tb_msg *msg;               /* the reference to drop once written */
    const unsigned char *data; /* the payload: the message's, or s->tx + LWS_PRE */
    size_t len;                /* 0: a snapshot that could not be composed */
    bool snapshot;
} tb__frame;

/* How many frames wait: the ctl FIFO, and while not closing the snapshots
 * and the contacts view. */
static int tb__frames_queued(const tb_session *s)
{
    return s->ctl_count + (s->closing ? 0 : s->slot_count + (s->contacts != NULL));
}

/* The payload bytes of the next frame, at most (a snapshot's prefix is
 * composed when it is taken). */
static size_t tb__next_frame_bound(const tb_session *s)
{
    if (s->ctl_count)
        return s->ctl[s->ctl_head]->len;
    if (s->slot_count)
        return s->slot[0]->len + TB__SNAP_PREFIX_MAX;
    return s->contacts ? s->contacts->len : 0;
}

/* The next frame (one must be queued). */
static void tb__take_frame(tb_session *s, tb__frame *f)
{
    memset(f, 0, sizeof *f);
    if (s->ctl_count) {
        f->msg = s->ctl[s->ctl_head];
        s->ctl_head = (s->ctl_head + 1) % TB__CTL_CAP;
        s->ctl_count--;
    } else if (s->slot_count) {
        f->msg = s->slot[0];
        memmove(s->slot, s->slot + 1, (TB__SNAP_SLOTS - 1) * sizeof s->slot[0]);
        s->slot_count--;
        f->snapshot = true;
        f->len = tb__compose_snapshot(s, f->msg);
        f->data = s->tx + LWS_PRE;
        return;
    } else {
        f->msg = s->contacts;
        s->contacts = NULL;
    }
    f->data = tb_msg_data(f->msg);
    f->len = f->msg->len;
}

/* A frame written, alone or in a batch: the accounting, and its reference
 * dropped. */
static void tb__frame_written(tb_session *s, tb__frame *f, bool direct)
{
    tb_metrics *m = s->server->metrics;
    TB_COUNT_N(m, bytes_sent_total, f->len);
    s->wire_bytes += tb_ws_frame_size(f->len);
    tb_link_written(s, f->len, f->snapshot);
    if (f->snapshot) {
        TB_COUNT(m, snapshots_sent_total);
        s->sent_tick = (uint32_t)f->msg->tick;
    }
    TB_COUNT(m, messages_sent_total);
    if (direct)
        TB_COUNT(m, messages_sent_direct_total);
    s->last_write_ns = tb_clock_now_ns();
    tb_msg_unref(f->msg);
}

/* The next frame alone: one lws_write, lws framing it. 1, or -1 (the
 * connection is gone). */
static int tb__write_one(tb_session *s, bool direct)
{
    tb__frame f;
    tb__take_frame(s, &f);
    if (f.len == 0 || lws_write(s->wsi, (unsigned char *)f.data, f.len, LWS_WRITE_BINARY) < (int)f.len) {
        tb_msg_unref(f.msg);
        return -1;
    }
    tb__frame_written(s, &f, direct);
    return 1;
}

/* Up to `max` waiting frames framed one after the other (tb_ws_frame_header)
 * in the server's batch buffer and handed to lws as raw bytes: lws_write
 * with LWS_WRITE_RAW goes to lws_issue_raw, which keeps what the kernel did
 * not take and writes it first once the socket drains, as for one frame.
 * (No WebSocket extension is ever negotiated here, so the frames are what
 * lws would have written.) A frame that does not fit ends the batch; one
 * too big for any batch goes alone. Returns the frames written, or -1. */
static int tb__write_batch(tb_session *s, int max, bool direct)
{
    tb__frame batch[TB__WRITES_PER_CALLBACK];
    unsigned char *out = s->server->batch + LWS_PRE;
    size_t len = 0;
    int count = 0;
    while (count < max && tb__frames_queued(s) > 0) {
        size_t bound = tb__next_frame_bound(s);
        if (len + tb_ws_frame_size(bound) > TB_BATCH_BYTES) {
            if (count == 0)
                return tb__write_one(s, direct);
            break;
        }
        tb__frame *f = &batch[count];
        tb__take_frame(s, f);
        if (f->len == 0) {
            tb_msg_unref(f->msg);
            for (int i = 0; i < count; i++)
                tb_msg_unref(batch[i].msg);
            return -1;
        }
        len += tb_ws_frame_header(out + len, f->len);
        memcpy(out + len, f->data, f->len);
        len += f->len;
        count++;
    }
    int rc = lws_write(s->wsi, out, len, LWS_WRITE_RAW) < (int)len ? -1 : 0;
    for (int i = 0; i < count; i++) {
        if (rc == 0)
            tb__frame_written(s, &batch[i], direct);
        else
            tb_msg_unref(batch[i].msg);
    }
    if (rc == 0 && count > 1)
        TB_COUNT_N(s->server->metrics, frames_batched_total, (uint64_t)count);
    return rc < 0 ? -1 : count;
}

/* Every queued frame, ctl first: one frame in one lws_write, several in a
 * batch (tb__write_batch), until lws keeps part of a write (kernel buffer
 * full) or TB__WRITES_PER_CALLBACK frames were written. */
static int tb__write_queued(tb_session *s, bool direct)
{
    int n = 0;
    while (tb__frames_queued(s) > 0 && n < TB__WRITES_PER_CALLBACK) {
        int wrote = tb__frames_queued(s) > 1 ? tb__write_batch(s, TB__WRITES_PER_CALLBACK - n, direct)
                                             : tb__write_one(s, direct);
        if (wrote < 0)
            return -1;
        n += wrote;
        if (lws_partial_buffered(s->wsi))
            break;
    }
    return 0;
}

/* A direct write failed: the socket is gone, lws closes it (CLOSED frees
 * the session). */
static void tb__write_failed(tb_session *s)
{
    s->closing = s->close_sent = true;
    tb_outbox_clear_ctl(s);
    tb_outbox_clear_slots(s);
    tb_outbox_clear_contacts(s);
    lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/* End of on_wake: write what was delivered directly where lws has nothing
 * pending, else ask for WRITEABLE (see the file comment). */
static void tb__flush(tb_server *server)
{
    tb_session *s;
    while ((s = server->flush)) {
        server->flush = s->flush_next;
        s->flush_listed = false;
        if (!s->write_asked && !s->closing && !lws_partial_buffered(s->wsi) && tb__write_queued(s, true) < 0) {
            tb__write_failed(s);
            continue;
        }
        tb_outbox_want_write(s);
    }
}

/* A due ping goes out alone, before the queued frames (housekeeping.c). */
static int tb__put_ping(tb_session *s)
{
    unsigned char ping[LWS_PRE + 4] = {0};
    memcpy(ping + LWS_PRE, "tb\0\0", 4);
    s->ping_wanted = false;
    if (lws_write(s->wsi, ping + LWS_PRE, 4, LWS_WRITE_PING) < 4)
        return -1;
    s->wire_bytes += 2 + 4;
    s->ping_end = s->wire_bytes;
    s->ping_sent_ns = tb_clock_now_ns();
    s->ping_delivered_ns = 0;
    return 0;
}

static int tb__write_ping(tb_session *s)
{
    if (tb__put_ping(s) < 0)
        return -1;
    if (tb_outbox_has_output(s) || s->closing)
        tb_outbox_ask_writable(s);
    return 0;
}

/* Written at once where that is safe (outside lws's callbacks) and nothing
 * waits in lws: no WRITEABLE round for it, which is two epoll_ctl calls
 * (some 4 us in a VM) a ping, every client every second. The frames queued
 * behind it go as they would have: at the end of on_wake, or in a
 * WRITEABLE callback. */
void tb_outbox_ping(tb_session *s)
{
    s->ping_wanted = true;
    if (!s->server->writing_direct || s->write_asked || s->closing || lws_partial_buffered(s->wsi)) {
        tb_outbox_ask_writable(s);
        return;
    }
    if (tb__put_ping(s) < 0) {
        tb__write_failed(s);
        return;
    }
    tb_outbox_want_write(s);
}

/* lws 4.1.6 on the libuv loop drops the connection without a close frame
 * when a WRITEABLE handler returns -1 after lws_close_reason(), so the frame
 * is written here and the connection ends when the peer answers (or after
 * 1 s). */
static int tb__write_close(tb_session *s)
{
    unsigned char frame[LWS_PRE + 2 + sizeof s->close_reason];
    size_t n = strlen(s->close_reason);
    frame[LWS_PRE] = (unsigned char)(s->close_code >> 8);
    frame[LWS_PRE + 1] = (unsigned char)(s->close_code & 0xff);
    memcpy(frame + LWS_PRE + 2, s->close_reason, n);
    s->close_sent = true;
    tb_log_debug("client %u: sending close %d", s->id, s->close_code);
    if (lws_write(s->wsi, frame + LWS_PRE, 2 + n, TB__LWS_WRITE_CLOSE) < 0)
        return -1;
    lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_ACK, 1);
    return 0;
}

int tb_outbox_writeable(tb_session *s)
{
    s->write_asked = false;
    if (s->ping_wanted && !s->closing)
        return tb__write_ping(s);
    if (tb__frames_queued(s) > 0) {
        if (tb__write_queued(s, false) < 0)
            return -1;
        if (tb_outbox_has_output(s) || s->closing)
            tb_outbox_ask_writable(s);
        return 0;
    }
    if (s->closing && !s->close_sent)
        return tb__write_close(s);
    return 0;
}
