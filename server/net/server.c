/* server.c: lws context on the foreign libuv loop, WebSocket sessions.
 *
 * A session is one `tumble.v1` WebSocket. What it sends is kept in two
 * places, and that split is the backpressure policy:
 *
 *   ctl[]  a small FIFO of messages that must all arrive, in order: the
 *          welcome, errors, parameter changes, room events, pongs. If it
 *          overflows the client is not keeping up at all and is closed.
 *   slots  at most TB__SNAP_SLOTS (8, 133 ms at 60/s) snapshots. When a new
 *          snapshot finds the slots full, the unsent ones are dropped
 *          (counted as skipped) and the client gets a keyframe next, so a
 *          slow reader gets the latest world and never a backlog. The few
 *          slots only absorb scheduling hiccups of the server itself (the
 *          network thread descheduled for a frame or two on a busy machine)
 *          so that a client that keeps up sees every tick.
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
 * way: ctl first, then the slots, one lws_write per frame, until lws had to
 * keep part of one because the kernel buffer is full
 * (lws_partial_buffered; at most TB__WRITES_PER_CALLBACK, for fairness);
 * what is left waits for a WRITEABLE callback. A session that has had data
 * waiting and written nothing for --slow-reader-timeout seconds is
 * disconnected by the housekeeping timer (see tb__housekeeping for the
 * three ways a slow reader shows; a due ping goes out alone in its own
 * WRITEABLE callback, before the queued frames).
 *
 * Data comes from the workers through their output rings; tb_server_wake
 * (uv_async_send, thread-safe) makes the loop drain them in on_wake().
 * Frames from clients may arrive fragmented: they are reassembled up to
 * --max-message-bytes, decoded (sim/wire.c on proto/c), rate limited and
 * pushed to the room's input ring.
 */
#define _GNU_SOURCE
#include "net/server.h"

#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/fleet.h" /* FLEET19 */
#include "net/log.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/wire.h"

_Static_assert(TB_MSG_HEADROOM >= LWS_PRE, "tb_msg headroom must hold LWS_PRE");

#define TB__CTL_CAP 128
#define TB__SNAP_SLOTS 8
#define TB__WRITES_PER_CALLBACK 32
#define TB__SEQ_FIFO 64
#define TB__ERROR_BURST 32.0
/* Messages taken from one socket per loop turn before its reading pauses
 * until the next turn: a flooding client cannot hold the network thread
 * while the other clients' snapshots wait. */
#define TB__RX_PER_TURN 32
#define TB__ERROR_RATE 16.0
#define TB__RX_CHUNK 4096
/* Kernel send buffer per WebSocket: with lws's own one-message partial
 * buffer this bounds what a client that stops reading costs the server. */
#define TB__SNDBUF (256 * 1024)
/* lws keeps opcode 4 (close) out of the public enum; lws_write() takes it. */
#define TB__LWS_WRITE_CLOSE ((enum lws_write_protocol)4)
/* A WebSocket ping per client this often: its pong tells the client has read
 * everything sent before it (see tb__housekeeping). */
#define TB__PING_INTERVAL_NS (1000 * TB_NS_PER_MS)

typedef struct tb_session {
    struct lws *wsi;
    tb_server *server;
    uint32_t id;
    char addr[48];        /* what per-address limits count: peer, or X-Forwarded-For via a trusted proxy */
    char path_room[40];   /* the room of a /ws/<room> URL; "" for any other path */
    struct tb_session *next, *prev;           /* server->sessions */
    tb_room *room;
    struct tb_session *room_next, *room_prev; /* room->net list */
    bool welcomed;

    tb_msg *ctl[TB__CTL_CAP];
    int ctl_head, ctl_count;
    tb_msg *slot[TB__SNAP_SLOTS]; /* oldest first */
    int slot_count;
    uint32_t sent_tick;   /* the state the client holds once ctl is written */
    uint32_t queued_tick; /* ... and once the slots are written too */
    int64_t last_write_ns;
    bool write_asked;     /* lws_callback_on_writable called, callback not yet run */
    bool flush_listed;    /* on server->flush */
    struct tb_session *flush_next;
    /* slow-reader watch (housekeeping): bytes handed to the socket, and what
     * the kernel still held unacknowledged at the last look */
    uint64_t wire_bytes, wire_bytes_checked;
    int prev_outq;
    int64_t last_progress_ns;
    /* read-through check: a ping goes out every TB__PING_INTERVAL_NS; once
     * the kernel has had it acknowledged (in the client's receive buffer) the
     * client has --slow-reader-timeout seconds to read up to it and pong */
    bool ping_wanted;
    int64_t ping_sent_ns;      /* 0: no ping outstanding */
    uint64_t ping_end;         /* wire_bytes just past the ping frame */
    int64_t ping_delivered_ns; /* when it was seen acknowledged; 0: not yet */
    int64_t last_ping_ns;
    unsigned char *tx;    /* LWS_PRE + composed snapshot frame */
    size_t tx_cap;

    /* inputs pushed, by room arrival number, to tell the client which of
     * them a snapshot includes */
    struct { uint64_t serial; uint32_t seq; } seqs[TB__SEQ_FIFO];
    int seq_head, seq_count;
    uint32_t acked_seq;
    uint32_t grab_pointers[64]; /* pointers held (--max-grabs-per-client) */
    int grab_count;

    unsigned char *rx;
    size_t rx_len, rx_cap;
    bool rx_text;
    bool rx_paused;
    int rx_turn_count;
    uint64_t rx_turn;     /* uv_now() of the turn rx_turn_count counts */

    double tokens, throw_tokens;
    int64_t tokens_ns, throw_ns;
    int64_t last_rate_error_ns;
    double error_tokens;
    int64_t error_ns;

    bool closing, close_sent;
    bool slow_counted;
    bool fleet_asked;     /* FLEET19: the fleet has answered this hello */
    int close_code;
    char close_reason[64];
} tb_session;

/* ---- small helpers ------------------------------------------------------ */

static bool tb__has_output(const tb_session *s) { return s->ctl_count > 0 || s->slot_count > 0; }

static void tb__clear_slots(tb_session *s)
{
    for (int i = 0; i < s->slot_count; i++)
        tb_msg_unref(s->slot[i]);
    s->slot_count = 0;
    s->queued_tick = s->sent_tick;
}

static void tb__clear_ctl(tb_session *s)
{
    while (s->ctl_count) {
        tb_msg_unref(s->ctl[s->ctl_head]);
        s->ctl_head = (s->ctl_head + 1) % TB__CTL_CAP;
        s->ctl_count--;
    }
}

static void tb__ask_writable(tb_session *s)
{
    if (s->write_asked)
        return;
    s->write_asked = true;
    lws_callback_on_writable(s->wsi);
}

static void tb__want_write(tb_session *s)
{
    if (!tb__has_output(s) && !s->closing)
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
    tb__ask_writable(s);
}

static void tb__begin_close(tb_session *s, int code, const char *reason)
{
    if (s->closing)
        return;
    s->closing = true;
    s->close_code = code;
    snprintf(s->close_reason, sizeof s->close_reason, "%s", reason);
    tb__ask_writable(s);
}

/* A slow reader is counted once, however it shows (a must-deliver queue that
 * overflows, then the cut of the connection that could not take the close). */
static void tb__count_slow_reader(tb_session *s)
{
    if (s->slow_counted)
        return;
    s->slow_counted = true;
    TB_COUNT(s->server->metrics, connections_refused_total[TB_REFUSE_SLOW_READER]);
}

/* Queue a must-deliver message (takes the caller's reference). */
static void tb__push_ctl(tb_session *s, tb_msg *msg)
{
    if (!msg)
        return;
    if (s->closing) {
        tb_msg_unref(msg);
        return;
    }
    if (s->ctl_count == TB__CTL_CAP) {
        tb_msg_unref(msg);
        tb__count_slow_reader(s);
        tb__begin_close(s, LWS_CLOSE_STATUS_POLICY_VIOLATION, "not reading fast enough");
        return;
    }
    s->ctl[(s->ctl_head + s->ctl_count) % TB__CTL_CAP] = msg;
    s->ctl_count++;
    tb__want_write(s);
}

/* An error message (envelope [43, ...]) rather than a contacts view? */
static bool tb__is_error(const tb_msg *msg)
{
    const unsigned char *d = tb_msg_data((tb_msg *)msg);
    return msg->len >= 2 && (d[0] & 0xf0) == 0x90 && d[1] == TB_MSG_ERROR;
}

/* May the client be sent one more error reply now? */
static bool tb__error_token(tb_session *s)
{
    int64_t now = tb_clock_now_ns();
    s->error_tokens += (double)(now - s->error_ns) * TB__ERROR_RATE / 1e9;
    s->error_ns = now;
    if (s->error_tokens > TB__ERROR_BURST)
        s->error_tokens = TB__ERROR_BURST;
    if (s->error_tokens < 1.0)
        return false;
    s->error_tokens -= 1.0;
    return true;
}

/* An error to the client, counted by its protocol code; fatal codes close.
 * Replies are themselves rate limited (bursts of TB__ERROR_BURST, then
 * TB__ERROR_RATE a second): a client spraying garbage is counted in full
 * but cannot make the server spray errors back. */
static void tb__send_error(tb_session *s, int code, const char *message, int64_t seq)
{
    if (code > 0 && code < TB_REJECT_COUNT)
        TB_COUNT(s->server->metrics, inputs_rejected_total[code]);
    int close_code = tb_proto_close_code(code);
    if (tb__error_token(s) || close_code)
        tb__push_ctl(s, tb_wire_error(code, message, seq));
    if (close_code)
        tb__begin_close(s, close_code, tb_proto_code_name(code));
}

static void tb__refuse(tb_session *s, tb_refuse_reason reason, int code, const char *message)
{
    TB_COUNT(s->server->metrics, connections_refused_total[reason]);
    tb__push_ctl(s, tb_wire_error(code, message, -1));
}

static tb_addr_count *tb__addr(tb_server *server, const char *addr, bool create)
{
    for (int i = 0; i < server->addr_count; i++)
        if (strcmp(server->addrs[i].addr, addr) == 0)
            return &server->addrs[i];
    if (!create)
        return NULL;
    if (server->addr_count == server->addr_cap) {
        int cap = server->addr_cap ? server->addr_cap * 2 : 16;
        tb_addr_count *a = realloc(server->addrs, (size_t)cap * sizeof *a);
        if (!a)
            return NULL;
        server->addrs = a;
        server->addr_cap = cap;
    }
    tb_addr_count *a = &server->addrs[server->addr_count++];
    snprintf(a->addr, sizeof a->addr, "%s", addr);
    a->count = 0;
    return a;
}

static void tb__addr_release(tb_server *server, const char *addr)
{
    tb_addr_count *a = tb__addr(server, addr, false);
    if (a && --a->count <= 0)
        *a = server->addrs[--server->addr_count];
}

/* ---- rooms -------------------------------------------------------------- */

/* A LEAVE must reach the worker (it ends the client's grabs and drops it
 * from the peers): if the room's ring is full it waits here and is retried
 * on every wake and housekeeping tick. */
typedef struct tb_pending_leave {
    tb_room *room;
    tb_input in;
} tb_pending_leave;

static void tb__retry_leaves(tb_server *server)
{
    for (int i = 0; i < server->leave_count;) {
        tb_pending_leave *p = &server->leaves[i];
        if (tb_room_push_input(p->room, &p->in) == 0) {
            tb_room_unref(p->room);
            *p = server->leaves[--server->leave_count];
        } else {
            i++;
        }
    }
}

static void tb__push_leave(tb_server *server, tb_room *room, const tb_input *in)
{
    if (server->leave_count == 0 && tb_room_push_input(room, in) == 0)
        return;
    if (server->leave_count == server->leave_cap) {
        int cap = server->leave_cap ? server->leave_cap * 2 : 16;
        tb_pending_leave *l = realloc(server->leaves, (size_t)cap * sizeof *l);
        if (!l)
            return; /* out of memory: the grabs stay until the room resets */
        server->leaves = l;
        server->leave_cap = cap;
    }
    server->leaves[server->leave_count++] = (tb_pending_leave){tb_room_ref(room), *in};
    tb__retry_leaves(server);
}

static void tb__leave_room(tb_session *s)
{
    tb_room *room = s->room;
    if (!room)
        return;
    if (s->room_prev)
        s->room_prev->room_next = s->room_next;
    else
        room->net = s->room_next;
    if (s->room_next)
        s->room_next->room_prev = s->room_prev;
    s->room_next = s->room_prev = NULL;
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_LEAVE;
    in.client = s->id;
    in.target = -1;
    in.recv_ns = tb_clock_now_ns();
    in.serial = ++room->next_serial;
    tb__push_leave(s->server, room, &in);
    atomic_fetch_sub(&room->clients, 1);
    atomic_fetch_sub(&s->server->metrics->clients, 1);
    s->room = NULL;
    s->welcomed = false;
    tb__clear_slots(s);
    tb_room_unref(room);
}

static const char *tb__default_scene(const char *kind)
{
    if (strcmp(kind, "rigid") == 0) return "tower";
    if (strcmp(kind, "cloth") == 0) return "flag";
    if (strcmp(kind, "soft") == 0) return "dough";
    return NULL;
}

static void tb__join(tb_session *s, const tb_client_msg *m)
{
    tb_server *server = s->server;
    if (s->room) {
        tb__send_error(s, TB_ERR_ALREADY_JOINED, "this connection has joined a room already", -1);
        return;
    }
    if (!tb_room_id_valid(m->room)) {
        tb__refuse(s, TB_REFUSE_BAD_ROOM_ID, TB_ERR_BAD_ROOM, tb_strerror(TB_EBADID));
        return;
    }
    if (s->path_room[0] && strcmp(s->path_room, m->room) != 0) {
        /* A router placed this connection by the room in its URL: a hello
         * for another room would land it on a server that does not own it. */
        char why[192];
        snprintf(why, sizeof why, "hello names room '%s' but this WebSocket was opened for /ws/%s", m->room,
                 s->path_room);
        tb__refuse(s, TB_REFUSE_ROOM_MISMATCH, TB_ERR_BAD_ROOM, why);
        return;
    }
    tb_room *room = tb_registry_find(server->registry, m->room);
    /* FLEET19: another server may hold the room; the fleet answers later */
    if (!room && server->fleet && !s->fleet_asked && tb_fleet_claim(server->fleet, s->id, m))
        return;
    if (!room) {
        const char *scene = m->scene[0]                            ? m->scene
                            : m->wanted_kind[0]                    ? tb__default_scene(m->wanted_kind)
                            : tb_scene_find(m->room)               ? m->room
                                                                   : NULL;
        const tb_scene *sc = scene ? tb_scene_find(scene) : NULL;
        if (!sc || (m->wanted_kind[0] && strcmp(sc->kind, m->wanted_kind) != 0)) {
            tb__refuse(s, TB_REFUSE_BAD_SCENE, TB_ERR_BAD_ROOM,
                       "room does not exist; say which scene to create it with "
                       "(tower, dice, pile, flag, cape, dough)");
            return;
        }
        if (!tb_rate_take(&server->create_rates, s->addr, server->cfg->room_create_rate, tb_clock_now_ns())) {
            TB_COUNT(server->metrics, room_creations_refused_total);
            tb__send_error(s, TB_ERR_RATE_LIMITED, "room creation limit for this address; join an existing room", -1);
            return;
        }
        int rc = tb_registry_get_or_create(server->registry, m->room, sc->name, false, &room, NULL);
        if (rc < 0) {
            tb__refuse(s, rc == TB_EMAXROOMS ? TB_REFUSE_MAX_ROOMS : TB_REFUSE_BAD_SCENE, tb_wire_code(rc),
                       tb_strerror(rc));
            return;
        }
        tb_log_info("room %s created (%s) on worker %d", room->id, room->scene, room->worker);
    }
    if (atomic_load(&room->clients) >= server->cfg->max_clients_per_room) {
        tb_room_unref(room);
        tb__refuse(s, TB_REFUSE_ROOM_FULL, TB_ERR_ROOM_FULL, tb_strerror(TB_EROOMFULL));
        return;
    }
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_JOIN;
    in.client = s->id;
    in.target = -1;
    in.recv_ns = tb_clock_now_ns();
    in.serial = room->next_serial + 1;
    snprintf(in.by_name, sizeof in.by_name, "%s", m->name);
    if (tb_room_push_input(room, &in) < 0) {
        tb_room_unref(room);
        tb__send_error(s, TB_ERR_RATE_LIMITED, "room is busy, try again", -1);
        return;
    }
    room->next_serial++;
    s->room = room; /* keeps the registry's lookup reference */
    s->room_prev = NULL;
    s->room_next = room->net;
    if (s->room_next)
        s->room_next->room_prev = s;
    room->net = s;
    atomic_fetch_add(&room->clients, 1);
    atomic_fetch_add(&server->metrics->clients, 1);
    room->idle_since_ns = 0;
}

/* FLEET19: the fleet's answer to a hello it held back (server.h). */
void tb_server_fleet_join(tb_server *server, uint32_t client, const tb_client_msg *hello, int verdict,
                          const char *why)
{
    for (tb_session *s = server->sessions; s; s = s->next) {
        if (s->id != client)
            continue;
        if (s->closing || s->room)
            return;
        if (verdict == TB_ESHUTDOWN) {
            tb__send_error(s, TB_ERR_SHUTTING_DOWN, why, -1); /* closes with 1001: reconnect elsewhere */
        } else if (verdict < 0) {
            tb__send_error(s, TB_ERR_BAD_ROOM, why, -1);
        } else {
            s->fleet_asked = true;
            tb__join(s, hello);
            s->fleet_asked = false;
        }
        return;
    }
}

/* FLEET19: the room moves to another server (server.h). */
void tb_server_close_room(tb_server *server, tb_room *room, const char *reason)
{
    (void)server;
    for (tb_session *s = room->net; s; s = s->room_next) {
        tb__clear_ctl(s);
        tb__clear_slots(s);
        tb__push_ctl(s, tb_wire_error(TB_ERR_SHUTTING_DOWN, reason, -1));
        tb__begin_close(s, LWS_CLOSE_STATUS_GOINGAWAY, reason);
    }
}

/* Token bucket: rate per second, bursts of 2 * rate. */
static bool tb__take_token(double *tokens, int64_t *last_ns, int64_t now, int rate)
{
    *tokens += (double)(now - *last_ns) * rate / 1e9;
    *last_ns = now;
    if (*tokens > 2.0 * rate)
        *tokens = 2.0 * rate;
    if (*tokens < 1.0)
        return false;
    *tokens -= 1.0;
    return true;
}

static void tb__rate_error(tb_session *s, const char *msg, uint32_t seq, int64_t now)
{
    if (now - s->last_rate_error_ns < 250 * TB_NS_PER_MS) { /* count, but do not flood replies */
        TB_COUNT(s->server->metrics, inputs_rejected_total[TB_ERR_RATE_LIMITED]);
        return;
    }
    s->last_rate_error_ns = now;
    tb__send_error(s, TB_ERR_RATE_LIMITED, msg, seq);
}

static void tb__remember_seq(tb_session *s, uint64_t serial, uint32_t seq)
{
    if (s->seq_count == TB__SEQ_FIFO) { /* oldest falls out: it is surely applied by now */
        s->acked_seq = s->seqs[s->seq_head].seq;
        s->seq_head = (s->seq_head + 1) % TB__SEQ_FIFO;
        s->seq_count--;
    }
    int i = (s->seq_head + s->seq_count) % TB__SEQ_FIFO;
    s->seqs[i].serial = serial;
    s->seqs[i].seq = seq;
    s->seq_count++;
}

/* The seq of the client's latest input that the room had applied when it
 * produced a snapshot with this serial. */
static uint32_t tb__acked_seq(tb_session *s, uint64_t serial)
{
    while (s->seq_count && s->seqs[s->seq_head].serial <= serial) {
        s->acked_seq = s->seqs[s->seq_head].seq;
        s->seq_head = (s->seq_head + 1) % TB__SEQ_FIFO;
        s->seq_count--;
    }
    return s->acked_seq;
}

static void tb__on_message(tb_session *s, const unsigned char *data, size_t len)
{
    tb_server *server = s->server;
    TB_COUNT(server->metrics, messages_received_total);
    TB_COUNT_N(server->metrics, bytes_received_total, len);
    static tb_client_msg m; /* network thread only */
    tb_proto_err err;
    int rc = tb_wire_decode(data, len, &m, &err);
    if (rc != TB_OK) {
        tb__send_error(s, rc, err.msg, m.input.seq ? (int64_t)m.input.seq : -1);
        return;
    }
    int64_t now = tb_clock_now_ns();
    /* Everything but hello costs a token: pings and lobby requests are
     * answered, so they must not be free either. */
    if (m.kind != TB_CLIENT_JOIN && !tb__take_token(&s->tokens, &s->tokens_ns, now, server->cfg->input_rate)) {
        tb__rate_error(s, "input rate limit", m.input.seq, now);
        return;
    }
    switch (m.kind) {
    case TB_CLIENT_JOIN:
        tb__join(s, &m);
        return;
    case TB_CLIENT_PING:
        tb__push_ctl(s, tb_wire_pong(m.ping_time, (double)now / 1e6));
        return;
    case TB_CLIENT_LOBBY: {
        /* a lobby message lists at most TB_PROTO_MAX_ROOMS: copy only those,
         * whatever the number of rooms open */
        static tb_room_row rows[TB_PROTO_MAX_ROOMS]; /* network thread only */
        int n = tb_registry_rows(server->registry, rows, TB_PROTO_MAX_ROOMS);
        tb__push_ctl(s, tb_wire_lobby(rows, n < TB_PROTO_MAX_ROOMS ? n : TB_PROTO_MAX_ROOMS));
        return;
    }
    case TB_CLIENT_RESYNC:
        if (s->room) {
            tb__clear_slots(s);
            s->sent_tick = s->queued_tick = 0; /* no delta fits: the next snapshot is a keyframe */
            atomic_store(&s->room->key_wanted, true);
        }
        return;
    default:
        break;
    }
    if (!s->room) {
        tb__send_error(s, TB_ERR_NOT_JOINED, "send hello first", m.input.seq);
        return;
    }
    if (m.input.type == TB_INPUT_THROW && !tb__take_token(&s->throw_tokens, &s->throw_ns, now, server->cfg->throw_rate)) {
        tb__rate_error(s, "throw rate limit", m.input.seq, now);
        return;
    }
    if (m.input.type == TB_INPUT_GRAB_START || m.input.type == TB_INPUT_GRAB_END) {
        /* One client may hold a few pointers (multi-touch), not every grab of the room. */
        int at = -1;
        for (int i = 0; i < s->grab_count; i++)
            if (s->grab_pointers[i] == m.input.pointer)
                at = i;
        if (m.input.type == TB_INPUT_GRAB_END && at >= 0) {
            s->grab_pointers[at] = s->grab_pointers[--s->grab_count];
        } else if (m.input.type == TB_INPUT_GRAB_START && at < 0) {
            int cap = server->cfg->max_grabs_per_client;
            if (s->grab_count >= cap || s->grab_count >= (int)(sizeof s->grab_pointers / sizeof s->grab_pointers[0])) {
                tb__rate_error(s, "grab limit: release a pointer first", m.input.seq, now);
                return;
            }
            s->grab_pointers[s->grab_count++] = m.input.pointer;
        }
    }
    m.input.client = s->id;
    m.input.recv_ns = now;
    m.input.serial = s->room->next_serial + 1;
    if (tb_room_push_input(s->room, &m.input) < 0) {
        tb__send_error(s, TB_ERR_RATE_LIMITED, "room input queue full", m.input.seq);
        return;
    }
    s->room->next_serial++;
    tb__remember_seq(s, m.input.serial, m.input.seq);
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
    tb__want_write(s);
}

/* Newest wins, and deltas must chain (see the file comment). */
static void tb__offer_snapshot(tb_server *server, tb_session *s, tb_room *room, tb_msg *msg, tb_msg *key)
{
    if (s->slot_count == TB__SNAP_SLOTS) {
        TB_COUNT_N(server->metrics, snapshots_skipped_total, s->slot_count);
        tb__clear_slots(s);
    }
    if (msg->type == TB_MSG_SNAP_DELTA && msg->base_tick == s->queued_tick)
        tb__put_snapshot(s, msg);
    else if (key)
        tb__put_snapshot(s, key);
    else if (msg->type == TB_MSG_SNAP_KEY)
        tb__put_snapshot(s, msg);
    else {
        TB_COUNT(server->metrics, snapshots_skipped_total);
        atomic_store_explicit(&room->key_wanted, true, memory_order_release);
    }
}

static void tb__deliver(tb_server *server, tb_out *out)
{
    tb_room *room = out->room;
    switch (out->kind) {
    case TB_OUT_SNAPSHOT:
        for (tb_session *s = room->net; s; s = s->room_next)
            if (s->welcomed && !s->closing)
                tb__offer_snapshot(server, s, room, out->msg, out->key);
        break;
    case TB_OUT_WELCOME: {
        tb_session *s = tb__room_session(room, out->client);
        if (s && !s->welcomed) {
            s->welcomed = true;
            tb__clear_slots(s);
            s->sent_tick = s->queued_tick = (uint32_t)out->msg->tick;
            tb__push_ctl(s, tb_msg_ref(out->msg));
        }
        break;
    }
    case TB_OUT_SCENE:
        for (tb_session *s = room->net; s; s = s->room_next)
            if (s->welcomed) {
                tb__clear_slots(s);
                s->sent_tick = s->queued_tick = (uint32_t)out->msg->tick;
                tb__push_ctl(s, tb_msg_ref(out->msg));
            }
        break;
    case TB_OUT_CLIENT: {
        /* The world's refusals (no such body, ...) share the error reply
         * budget: a flood of bad inputs must not overflow ctl and get a
         * client closed before the rate limiter has told it anything. */
        tb_session *s = tb__room_session(room, out->client);
        if (s && (!tb__is_error(out->msg) || tb__error_token(s)))
            tb__push_ctl(s, tb_msg_ref(out->msg));
        break;
    }
    case TB_OUT_BROADCAST:
        for (tb_session *s = room->net; s; s = s->room_next)
            if (s->welcomed && s->id != out->client)
                tb__push_ctl(s, tb_msg_ref(out->msg));
        break;
    case TB_OUT_CHECKPOINT: /* FLEET19 */
        if (server->fleet)
            tb_fleet_on_checkpoint(server->fleet, room, out->msg, out->client == 1);
        break;
    }
    tb_msg_unref(out->msg);
    tb_msg_unref(out->key);
    tb_room_unref(room);
}

static void tb__flush(tb_server *server);

static void tb__on_wake(uv_async_t *handle)
{
    tb_server *server = handle->data;
    tb_out out;
    int n = 0;
    server->delivering = true;
    while (n < 20000 && tb_sched_poll(server->sched, &out)) {
        tb__deliver(server, &out);
        n++;
    }
    server->delivering = false;
    tb__flush(server);
    if (n == 20000) /* leave the loop some air; come back for the rest */
        uv_async_send(&server->wake);
    if (server->leave_count)
        tb__retry_leaves(server);
}

void tb_server_wake(void *data)
{
    tb_server *server = data;
    uv_async_send(&server->wake);
}

/* ---- the tumble.v1 protocol callback ------------------------------------ */

static int tb__write_snapshot(tb_session *s, tb_msg *msg)
{
    size_t need = LWS_PRE + msg->len + 32;
    if (need > s->tx_cap) {
        unsigned char *tx = realloc(s->tx, need);
        if (!tx)
            return -1;
        s->tx = tx;
        s->tx_cap = need;
    }
    size_t n = tb_wire_snap_frame(msg, tb__acked_seq(s, msg->serial), s->tx + LWS_PRE, s->tx_cap - LWS_PRE);
    if (n == 0)
        return -1;
    if (lws_write(s->wsi, s->tx + LWS_PRE, n, LWS_WRITE_BINARY) < (int)n)
        return -1;
    s->wire_bytes += n + (n < 126 ? 2 : n < 65536 ? 4 : 10);
    tb_metrics *m = s->server->metrics;
    TB_COUNT(m, snapshots_sent_total);
    TB_COUNT_N(m, bytes_sent_total, n);
    s->sent_tick = (uint32_t)msg->tick;
    return 0;
}

static int tb__write_one(tb_session *s)
{
    tb_msg *msg = NULL;
    int rc = 0;
    tb_metrics *m = s->server->metrics;
    if (s->ctl_count) {
        msg = s->ctl[s->ctl_head];
        s->ctl_head = (s->ctl_head + 1) % TB__CTL_CAP;
        s->ctl_count--;
        if (lws_write(s->wsi, tb_msg_data(msg), msg->len, LWS_WRITE_BINARY) < (int)msg->len) {
            rc = -1;
        } else {
            TB_COUNT_N(m, bytes_sent_total, msg->len);
            s->wire_bytes += msg->len + (msg->len < 126 ? 2 : msg->len < 65536 ? 4 : 10);
        }
    } else if (s->slot_count) {
        msg = s->slot[0];
        memmove(s->slot, s->slot + 1, (TB__SNAP_SLOTS - 1) * sizeof s->slot[0]);
        s->slot_count--;
        rc = tb__write_snapshot(s, msg);
    }
    if (!msg)
        return 0;
    if (rc == 0) {
        TB_COUNT(m, messages_sent_total);
        s->last_write_ns = tb_clock_now_ns();
    }
    tb_msg_unref(msg);
    return rc;
}

/* Every queued frame, ctl first, one lws_write each, until lws keeps part
 * of one (kernel buffer full) or TB__WRITES_PER_CALLBACK were written. */
static int tb__write_queued(tb_session *s, bool direct)
{
    int n = 0;
    while ((s->ctl_count || (s->slot_count && !s->closing)) && n++ < TB__WRITES_PER_CALLBACK) {
        if (tb__write_one(s) < 0)
            return -1;
        if (direct)
            TB_COUNT(s->server->metrics, messages_sent_direct_total);
        if (lws_partial_buffered(s->wsi))
            break;
    }
    return 0;
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
            /* the socket failed: lws closes it (CLOSED frees the session) */
            s->closing = s->close_sent = true;
            tb__clear_ctl(s);
            tb__clear_slots(s);
            lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
            continue;
        }
        tb__want_write(s);
    }
}

static void tb__rx_resume(uv_timer_t *timer)
{
    tb_server *server = timer->data;
    server->rx_resume_armed = false;
    for (tb_session *s = server->sessions; s; s = s->next)
        if (s->rx_paused && !s->closing) {
            s->rx_paused = false;
            s->rx_turn_count = 0;
            lws_rx_flow_control(s->wsi, 1);
        }
}

static void tb__rx_fairness(tb_session *s)
{
    tb_server *server = s->server;
    uint64_t turn = uv_now(server->loop);
    if (turn != s->rx_turn) {
        s->rx_turn = turn;
        s->rx_turn_count = 0;
    }
    if (++s->rx_turn_count < TB__RX_PER_TURN || s->rx_paused || server->stopping)
        return;
    s->rx_paused = true;
    lws_rx_flow_control(s->wsi, 0);
    if (!server->rx_resume_armed) {
        server->rx_resume_armed = true;
        uv_timer_start(&server->rx_resume, tb__rx_resume, 1, 0);
    }
}

static bool tb__origin_allowed(tb_server *server, struct lws *wsi)
{
    const char *list = server->cfg->allowed_origins;
    if (!list[0])
        return true;
    char origin[256];
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return false;
    size_t olen = strlen(origin);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && *p == ' ') {
            p++;
            n--;
        }
        while (n && p[n - 1] == ' ')
            n--;
        if (n == olen && strncmp(p, origin, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

/* The address per-address limits count this connection as (net/proxy.h). */
static void tb__client_addr(tb_server *server, struct lws *wsi, char *out, size_t cap)
{
    char peer[48] = "", xff[256] = "";
    lws_get_peer_simple(wsi, peer, sizeof peer);
    if (server->proxies.count && lws_hdr_copy(wsi, xff, sizeof xff, WSI_TOKEN_X_FORWARDED_FOR) <= 0)
        xff[0] = 0;
    tb_proxy_client_addr(&server->proxies, peer, xff, out, cap);
}

/* "/ws/<room>" or "/ws/<room>/" -> room; anything else -> "" (any room). */
static void tb__path_room(struct lws *wsi, char *out, size_t cap)
{
    char uri[128];
    out[0] = 0;
    if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strncmp(uri, "/ws/", 4) != 0)
        return;
    size_t n = strcspn(uri + 4, "/?");
    if (n == 0 || n >= cap)
        return;
    memcpy(out, uri + 4, n);
    out[n] = 0;
}

static int tb__ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    tb_server *server = lws_context_user(lws_get_context(wsi));
    tb_session *s = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        char addr[48] = "";
        tb__client_addr(server, wsi, addr, sizeof addr);
        /* FLEET19: a draining server refuses too, so a router tries the next one */
        if (server->stopping || (server->fleet && tb_fleet_draining(server->fleet))) {
            TB_COUNT(server->metrics, connections_refused_total[TB_REFUSE_SHUTTING_DOWN]);
            return 1;
        }
        if (!tb__origin_allowed(server, wsi)) {
            TB_COUNT(server->metrics, connections_refused_total[TB_REFUSE_ORIGIN]);
            tb_log_info("refused WebSocket from %s: origin not allowed", addr);
            return 1;
        }
        tb_addr_count *a = tb__addr(server, addr, false);
        if (a && a->count >= server->cfg->max_conns_per_address) {
            TB_COUNT(server->metrics, connections_refused_total[TB_REFUSE_PER_ADDRESS]);
            return 1;
        }
        return 0;
    }
    case LWS_CALLBACK_ESTABLISHED: {
        memset(s, 0, sizeof *s);
        s->wsi = wsi;
        s->server = server;
        s->id = ++server->next_client_id;
        int sndbuf = TB__SNDBUF, fd = lws_get_socket_fd(wsi);
        if (fd >= 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        tb__client_addr(server, wsi, s->addr, sizeof s->addr);
        tb__path_room(wsi, s->path_room, sizeof s->path_room);
        tb_addr_count *a = tb__addr(server, s->addr, true);
        if (a)
            a->count++;
        int64_t now = tb_clock_now_ns();
        s->last_write_ns = now;
        s->last_progress_ns = now;
        s->tokens_ns = now;
        s->throw_ns = now;
        s->tokens = 2.0 * server->cfg->input_rate;
        s->throw_tokens = 2.0 * server->cfg->throw_rate;
        s->error_tokens = TB__ERROR_BURST;
        s->error_ns = now;
        s->next = server->sessions;
        if (s->next)
            s->next->prev = s;
        server->sessions = s;
        server->session_count++;
        TB_COUNT(server->metrics, connections_total);
        tb_log_debug("client %u connected from %s", s->id, s->addr);
        return 0;
    }
    case LWS_CALLBACK_RECEIVE: {
        if (s->closing)
            return 0;
        if (lws_is_first_fragment(wsi)) {
            s->rx_len = 0;
            s->rx_text = !lws_frame_is_binary(wsi);
        }
        if (s->rx_len + len > (size_t)server->cfg->max_message_bytes) {
            s->rx_len = 0;
            char why[96];
            snprintf(why, sizeof why, "message larger than %d bytes", server->cfg->max_message_bytes);
            tb__send_error(s, TB_ERR_TOO_BIG, why, -1);
            tb__begin_close(s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too big");
            return 0;
        }
        if (s->rx_len + len > s->rx_cap) {
            size_t cap = s->rx_cap ? s->rx_cap : TB__RX_CHUNK;
            while (cap < s->rx_len + len)
                cap *= 2;
            unsigned char *rx = realloc(s->rx, cap);
            if (!rx)
                return -1;
            s->rx = rx;
            s->rx_cap = cap;
        }
        memcpy(s->rx + s->rx_len, in, len);
        s->rx_len += len;
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0)
            return 0;
        if (s->rx_text)
            tb__send_error(s, TB_ERR_TEXT_FRAME, "binary msgpack frames only", -1);
        else
            tb__on_message(s, s->rx, s->rx_len);
        s->rx_len = 0;
        tb__rx_fairness(s);
        if (s->rx_cap > 4 * TB__RX_CHUNK) { /* do not keep a big buffer for one big message */
            free(s->rx);
            s->rx = NULL;
            s->rx_cap = 0;
        }
        return 0;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE:
        s->write_asked = false;
        if (s->ping_wanted && !s->closing) {
            unsigned char ping[LWS_PRE + 4] = {0};
            memcpy(ping + LWS_PRE, "tb\0\0", 4);
            s->ping_wanted = false;
            if (lws_write(wsi, ping + LWS_PRE, 4, LWS_WRITE_PING) < 4)
                return -1;
            s->wire_bytes += 2 + 4;
            s->ping_end = s->wire_bytes;
            s->ping_sent_ns = tb_clock_now_ns();
            s->ping_delivered_ns = 0;
            if (tb__has_output(s) || s->closing)
                tb__ask_writable(s);
            return 0;
        }
        if (s->ctl_count || (s->slot_count && !s->closing)) {
            if (tb__write_queued(s, false) < 0)
                return -1;
            if (tb__has_output(s) || s->closing)
                tb__ask_writable(s);
            return 0;
        }
        if (s->closing && !s->close_sent) {
            /* lws 4.1.6 on the libuv loop drops the connection without a
             * close frame when a WRITEABLE handler returns -1 after
             * lws_close_reason(), so the frame is written here and the
             * connection ends when the peer answers (or after 1 s). */
            unsigned char frame[LWS_PRE + 2 + sizeof s->close_reason];
            size_t n = strlen(s->close_reason);
            frame[LWS_PRE] = (unsigned char)(s->close_code >> 8);
            frame[LWS_PRE + 1] = (unsigned char)(s->close_code & 0xff);
            memcpy(frame + LWS_PRE + 2, s->close_reason, n);
            s->close_sent = true;
            tb_log_debug("client %u: sending close %d", s->id, s->close_code);
            if (lws_write(wsi, frame + LWS_PRE, 2 + n, TB__LWS_WRITE_CLOSE) < 0)
                return -1;
            lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, 1);
        }
        return 0;
    case LWS_CALLBACK_RECEIVE_PONG:
        if (s->ping_sent_ns) { /* read everything up to the ping */
            s->ping_sent_ns = 0;
            s->ping_delivered_ns = 0;
            s->last_progress_ns = tb_clock_now_ns();
        }
        return 0;
    case LWS_CALLBACK_CLOSED: {
        if (!s->server)
            return 0;
        tb__leave_room(s);
        tb__clear_ctl(s);
        tb__clear_slots(s);
        free(s->rx);
        s->rx = NULL;
        free(s->tx);
        s->tx = NULL;
        if (s->prev)
            s->prev->next = s->next;
        else
            server->sessions = s->next;
        if (s->next)
            s->next->prev = s->prev;
        server->session_count--;
        tb__addr_release(server, s->addr);
        tb_log_debug("client %u closed", s->id);
        s->server = NULL;
        return 0;
    }
    default:
        return 0;
    }
}

static int tb__http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    tb_server *server = lws_context_user(lws_get_context(wsi));
    return tb_http_callback(server, wsi, (int)reason, user, in, len);
}

static struct lws_protocols tb__protocols[] = {
    {"http", tb__http_callback, sizeof(tb_http_session), 0, 0, NULL, 0},
    {"tumble.v1", tb__ws_callback, sizeof(tb_session), TB__RX_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* 4.1.6 has no LWS_PROTOCOL_LIST_TERM */
};

/* ---- housekeeping and lifecycle ----------------------------------------- */

/* Has the client read anything lately, by the kernel send queue? The kernel
 * acknowledges data into the client's receive buffer even when the
 * application does not read, so this only sees a stalled client once that
 * buffer is full: a send queue that no longer drains (its receive window
 * closed). Each look: drained = what the queue held last time + what we
 * wrote since - what it holds now. Also notes when an outstanding ping has
 * been acknowledged (everything up to ping_end left the queue while lws
 * itself holds nothing back). */
static bool tb__reader_progressed(tb_session *s, int64_t now)
{
    int fd = lws_get_socket_fd(s->wsi), outq = 0;
    if (fd < 0 || ioctl(fd, SIOCOUTQ, &outq) != 0)
        return true;
    long long written = (long long)(s->wire_bytes - s->wire_bytes_checked);
    long long drained = (long long)s->prev_outq + written - outq;
    s->wire_bytes_checked = s->wire_bytes;
    s->prev_outq = outq;
    if (s->ping_sent_ns && !s->ping_delivered_ns && !lws_send_pipe_choked(s->wsi) &&
        s->wire_bytes - (uint64_t)outq >= s->ping_end)
        s->ping_delivered_ns = now;
    return outq == 0 || drained > 0;
}

static void tb__housekeeping(uv_timer_t *timer)
{
    tb_server *server = timer->data;
    int64_t now = tb_clock_now_ns();
    int64_t limit = (int64_t)server->cfg->slow_reader_timeout * TB_NS_PER_SEC;
    if (server->leave_count)
        tb__retry_leaves(server);
    for (tb_session *s = server->sessions; s; s = s->next) {
        if (s->write_asked && tb__has_output(s) && now - s->last_write_ns >= TB_NS_PER_SEC)
            lws_callback_on_writable(s->wsi); /* ask again: a request lws dropped must not stall it */
        if (tb__reader_progressed(s, now))
            s->last_progress_ns = now;
        if (!s->ping_sent_ns && !s->ping_wanted && !s->closing && now - s->last_ping_ns >= TB__PING_INTERVAL_NS) {
            s->last_ping_ns = now;
            s->ping_wanted = true;
            tb__ask_writable(s);
        }
        /* stuck, one of:
         *  - a ping reached the client's kernel (acknowledged) the timeout ago
         *    and no pong came: the application has not read that far. This
         *    sees a stalled reader while its receive buffer is still filling,
         *    even from a room that sends a trickle;
         *  - nothing drained from the send queue for the timeout;
         *  - lws holds data it could not write at all (no WRITEABLE) as long. */
        bool stuck = (s->ping_delivered_ns && now - s->ping_delivered_ns >= limit) ||
                     now - s->last_progress_ns >= limit ||
                     ((tb__has_output(s) || s->closing) && now - s->last_write_ns >= limit);
        if (!stuck)
            continue;
        tb_log_info("client %u (%s) has not read for %d s: disconnecting", s->id, s->addr,
                    server->cfg->slow_reader_timeout);
        tb__count_slow_reader(s);
        s->last_write_ns = s->last_progress_ns = now; /* once */
        s->ping_sent_ns = s->ping_delivered_ns = 0;
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    }
    if (!server->stopping) {
        int retired = tb_registry_sweep(server->registry, now);
        if (retired)
            tb_log_info("retired %d idle room(s)", retired);
    }
}

int tb_server_init(tb_server *server, uv_loop_t *loop, const tb_config *cfg, tb_metrics *metrics)
{
    memset(server, 0, sizeof *server);
    server->loop = loop;
    server->cfg = cfg;
    server->metrics = metrics;
    server->started_ns = tb_clock_now_ns();
    if (!realpath(cfg->client_dir, server->root_real))
        server->root_real[0] = 0;
    char err[160];
    if (tb_proxy_parse(&server->proxies, cfg->trusted_proxies, err, sizeof err) < 0) /* checked by config */
        server->proxies.count = 0;
    uv_async_init(loop, &server->wake, tb__on_wake);
    server->wake.data = server;
    uv_timer_init(loop, &server->housekeeping);
    server->housekeeping.data = server;
    uv_timer_init(loop, &server->stop_timer);
    server->stop_timer.data = server;
    uv_timer_init(loop, &server->rx_resume);
    server->rx_resume.data = server;
    server->handles_open = 4;
    return 0;
}

void tb_server_attach(tb_server *server, tb_sched *sched, tb_registry *registry)
{
    server->sched = sched;
    server->registry = registry;
}

static void tb__lws_log(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    tb_log(level == LLL_ERR ? TB_LOG_ERROR : level == LLL_WARN ? TB_LOG_WARN : TB_LOG_DEBUG, "lws: %.*s",
           (int)n, line);
}

int tb_server_start(tb_server *server)
{
    const tb_config *cfg = server->cfg;
    lws_set_log_level(cfg->log_level >= TB_LOG_DEBUG ? (LLL_ERR | LLL_WARN | LLL_NOTICE) : (LLL_ERR | LLL_WARN),
                      tb__lws_log);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *foreign_loops[1] = {server->loop};
    info.foreign_loops = foreign_loops;
    info.options = LWS_SERVER_OPTION_LIBUV;
    if (!strchr(cfg->bind, ':'))
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    info.port = cfg->port;
    info.iface = strcmp(cfg->bind, "0.0.0.0") == 0 ? NULL : cfg->bind;
    info.protocols = tb__protocols;
    info.user = server;
    info.gid = -1;
    info.uid = -1;
    info.timeout_secs = 20;
    if (cfg->tls_cert[0]) { /* FLEET19: https and wss on the same port */
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = cfg->tls_cert;
        info.ssl_private_key_filepath = cfg->tls_key;
    }
    info.pcontext = &server->context;
    server->context = lws_create_context(&info);
    if (!server->context) {
        tb_log_error("cannot listen on %s:%d", cfg->bind, cfg->port);
        return TB_EINVAL;
    }
    server->vhost = lws_get_vhost_by_name(server->context, "default");
    server->port = server->vhost ? lws_get_vhost_listen_port(server->vhost) : cfg->port;
    uv_timer_start(&server->housekeeping, tb__housekeeping, 500, 500);
    server->started = true;
    return 0;
}

static void tb__handle_closed(uv_handle_t *handle)
{
    tb_server *server = handle->data;
    if (--server->handles_open == 0) {
        free(server->addrs);
        server->addrs = NULL;
        for (int i = 0; i < server->leave_count; i++)
            tb_room_unref(server->leaves[i].room);
        free(server->leaves);
        server->leaves = NULL;
        server->leave_count = 0;
        tb_rate_table_free(&server->create_rates);
        if (server->close_cb)
            server->close_cb(server);
    }
}

/* Second half of stop: every client has gone (or the deadline passed). */
static void tb__finish_stop(tb_server *server)
{
    uv_timer_stop(&server->stop_timer);
    tb_sched_stop(server->sched); /* no more uv_async_send after this */
    server->workers_stopped = true;
    tb_out out;
    while (tb_sched_poll(server->sched, &out)) {
        tb_msg_unref(out.msg);
        tb_msg_unref(out.key);
        tb_room_unref(out.room);
    }
    if (server->context) {
        /* Drop session state of anything lws still holds; CLOSED follows. */
        lws_context_destroy(server->context);
    }
    uv_close((uv_handle_t *)&server->wake, tb__handle_closed);
    uv_close((uv_handle_t *)&server->housekeeping, tb__handle_closed);
    uv_close((uv_handle_t *)&server->stop_timer, tb__handle_closed);
    uv_close((uv_handle_t *)&server->rx_resume, tb__handle_closed);
}

static void tb__stop_tick(uv_timer_t *timer)
{
    tb_server *server = timer->data;
    if (server->session_count == 0 || tb_clock_now_ns() >= server->stop_deadline_ns)
        tb__finish_stop(server);
}

void tb_server_stop(tb_server *server, tb_server_close_cb close_cb)
{
    if (server->stopping)
        return;
    server->stopping = true;
    server->close_cb = close_cb;
    server->stop_deadline_ns = tb_clock_now_ns() + 700 * TB_NS_PER_MS;
    tb_log_info("stopping: closing %d client(s) with 1001", server->session_count);
    for (tb_session *s = server->sessions; s; s = s->next) {
        /* Going away beats anything still queued for the client. */
        tb__clear_ctl(s);
        tb__clear_slots(s);
        tb__push_ctl(s, tb_wire_error(TB_ERR_SHUTTING_DOWN, "server shutting down", -1));
        tb__begin_close(s, LWS_CLOSE_STATUS_GOINGAWAY, "server shutting down");
    }
    uv_timer_stop(&server->housekeeping);
    if (!server->started) {
        tb__finish_stop(server);
        return;
    }
    uv_timer_start(&server->stop_timer, tb__stop_tick, 10, 10);
}
