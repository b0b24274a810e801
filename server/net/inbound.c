/* inbound.c: what a client sends (session.h: who owns what).
 *
 * Frames may arrive fragmented: they are reassembled up to
 * --max-message-bytes, decoded (sim/wire.c on proto/c), checked against the
 * connection's limits (token buckets, net/limits.h) and pushed to the room's
 * input ring; hello joins (and may create) a room. A refused message gets
 * what PROTOCOL.md §8 "What a flooder gets" says: its error while the error
 * allowance lasts, one rate_limited per 250 ms for rate-limited ones, and a
 * close with 1008 when either allowance is spent. At most TB__RX_PER_TURN
 * messages are taken from one socket per loop turn.
 */
#define _GNU_SOURCE
#include "net/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/fleet.h"
#include "net/log.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/registry.h"
#include "sim/wire.h"

/* Messages taken from one socket per loop turn before its reading pauses
 * until the next turn: a flooding client cannot hold the network thread
 * while the other clients' snapshots wait. */
#define TB__RX_PER_TURN 32

/* The code of an error message ([43, code, ...]), or 0 for another message. */
int tb_inbound_error_code(const tb_msg *msg)
{
    const unsigned char *d = tb_msg_data((tb_msg *)msg);
    if (msg->len < 3 || (d[0] & 0xf0) != 0x90 || d[1] != TB_MSG_ERROR || d[2] > 0x7f)
        return 0;
    return d[2];
}

/* The end of a client that floods or keeps sending refused messages
 * (PROTOCOL.md §8): a last `rate_limited` saying why, then close 1008. */
static void tb__flood_close(tb_session *s, const char *why)
{
    if (s->closing)
        return;
    TB_COUNT(s->server->metrics, connections_refused_total[TB_REFUSE_FLOOD]);
    tb_log_info("client %u (%s): %s: closing", s->id, s->addr, why);
    tb_outbox_push_ctl(s, tb_wire_error(TB_ERR_RATE_LIMITED, why, -1));
    tb_session_begin_close(s, LWS_CLOSE_STATUS_POLICY_VIOLATION, why);
}

/* Answer one refused message (decode errors, a refused hello, the room's
 * refusals of inputs): with its error while the connection's error
 * allowance lasts; the refusal that finds it empty closes the connection
 * instead. Fatal codes close anyway; projectile_cap is a warning about an
 * applied throw (at most --throw-rate a second) and is always sent. */
void tb_inbound_answer_refused(tb_session *s, tb_msg *error, int code)
{
    int close_code = tb_proto_close_code(code);
    if (close_code || code == TB_ERR_PROJECTILE_CAP ||
        tb_bucket_take(&s->errors, TB__ERROR_RATE, TB__ERROR_BURST, tb_clock_now_ns())) {
        tb_outbox_push_ctl(s, error);
        if (close_code)
            tb_session_begin_close(s, close_code, tb_proto_code_name(code));
        return;
    }
    tb_msg_unref(error);
    tb__flood_close(s, "too many refused messages");
}

/* An error to the client, counted by its protocol code (see above). */
void tb_inbound_send_error(tb_session *s, int code, const char *message, int64_t seq)
{
    if (code > 0 && code < TB_REJECT_COUNT)
        TB_COUNT(s->server->metrics, inputs_rejected_total[code]);
    tb_inbound_answer_refused(s, tb_wire_error(code, message, seq), code);
}

static void tb__refuse(tb_session *s, tb_refuse_reason reason, int code, const char *message)
{
    TB_COUNT(s->server->metrics, connections_refused_total[reason]);
    tb_inbound_answer_refused(s, tb_wire_error(code, message, -1), code);
}

/* ---- join ---------------------------------------------------------------- */

static const char *tb__default_scene(const char *kind)
{
    if (strcmp(kind, "rigid") == 0) return "tower";
    if (strcmp(kind, "cloth") == 0) return "flag";
    if (strcmp(kind, "soft") == 0) return "dough";
    return NULL;
}

/* A hello for a room nobody has: create it from the scene it names (or
 * its kind's default, or the scene of the room's own name), within the
 * address's creation rate. NULL when refused (the client is told). */
static tb_room *tb__create_room(tb_session *s, const tb_client_msg *m)
{
    tb_server *server = s->server;
    const char *scene = m->scene[0]              ? m->scene
                        : m->wanted_kind[0]      ? tb__default_scene(m->wanted_kind)
                        : tb_scene_find(m->room) ? m->room
                                                 : NULL;
    const tb_scene *sc = scene ? tb_scene_find(scene) : NULL;
    if (!sc || (m->wanted_kind[0] && strcmp(sc->kind, m->wanted_kind) != 0)) {
        tb__refuse(s, TB_REFUSE_BAD_SCENE, TB_ERR_BAD_ROOM,
                   "room does not exist; say which scene to create it with "
                   "(tower, dice, pile, flag, cape, dough)");
        return NULL;
    }
    if (!tb_rate_take(&server->create_rates, s->addr, server->cfg->room_create_rate, tb_clock_now_ns())) {
        TB_COUNT(server->metrics, room_creations_refused_total);
        tb_inbound_send_error(s, TB_ERR_RATE_LIMITED, "room creation limit for this address; join an existing room", -1);
        return NULL;
    }
    tb_room *room = NULL;
    int rc = tb_registry_get_or_create(server->registry, m->room, sc->name, false, &room, NULL);
    if (rc < 0) {
        tb__refuse(s, rc == TB_EMAXROOMS ? TB_REFUSE_MAX_ROOMS : TB_REFUSE_BAD_SCENE, tb_wire_code(rc),
                   tb_strerror(rc));
        return NULL;
    }
    tb_log_info("room %s created (%s) on worker %d", room->id, room->scene, room->worker);
    return room;
}

/* Players count against --max-clients-per-room, watchers against
 * --max-watchers-per-room, and neither against the other's: a room full of
 * players can still be watched, and watchers never keep a player out.
 * false when refused (the client is told which limit it met). */
static bool tb__room_has_place(tb_session *s, tb_room *room, bool watch)
{
    const tb_config *cfg = s->server->cfg;
    if (!watch && atomic_load(&room->clients) >= cfg->max_clients_per_room) {
        tb__refuse(s, TB_REFUSE_ROOM_FULL, TB_ERR_ROOM_FULL, tb_strerror(TB_EROOMFULL));
        return false;
    }
    if (watch && atomic_load(&room->watchers) >= cfg->max_watchers_per_room) {
        char why[160];
        snprintf(why, sizeof why, "room has its %d watchers (--max-watchers-per-room); join as a player or try later",
                 cfg->max_watchers_per_room);
        tb__refuse(s, TB_REFUSE_ROOM_FULL, TB_ERR_ROOM_FULL, why);
        return false;
    }
    return true;
}

static void tb__join(tb_session *s, const tb_client_msg *m)
{
    tb_server *server = s->server;
    if (s->room) {
        tb_inbound_send_error(s, TB_ERR_ALREADY_JOINED, "this connection has joined a room already", -1);
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
    const tb_scene *held = room ? atomic_load(&room->scene_def) : NULL;
    if (held && m->wanted_kind[0] && strcmp(held->kind, m->wanted_kind) != 0) {
        /* Asked to create a room of another kind under a name in use: say so
         * (it would otherwise land in that room without a word). */
        char why[160];
        snprintf(why, sizeof why, "the name '%s' is taken by a %s room (%s); join it or pick another name", m->room,
                 held->name, held->kind);
        tb_room_unref(room);
        tb__refuse(s, TB_REFUSE_BAD_SCENE, TB_ERR_BAD_ROOM, why);
        return;
    }
    /* another server of the fleet may hold the room: the fleet answers later
     * (tb_server_fleet_join) */
    if (!room && server->fleet && !s->fleet_asked && tb_fleet_claim(server->fleet, s->id, m))
        return;
    if (!room && !(room = tb__create_room(s, m)))
        return;
    if (!tb__room_has_place(s, room, m->watch)) {
        tb_room_unref(room);
        return;
    }
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_JOIN;
    in.flags = m->watch ? 1 : 0;
    in.client = s->id;
    in.target = -1;
    in.recv_ns = tb_clock_now_ns();
    in.serial = room->next_serial + 1;
    snprintf(in.by_name, sizeof in.by_name, "%s", m->name);
    if (tb_room_push_input(room, &in) < 0) {
        tb_room_unref(room);
        tb_inbound_send_error(s, TB_ERR_RATE_LIMITED, "room is busy, try again", -1);
        return;
    }
    room->next_serial++;
    s->room = room; /* keeps the registry's lookup reference */
    s->room_prev = NULL;
    s->room_next = room->net;
    if (s->room_next)
        s->room_next->room_prev = s;
    room->net = s;
    s->watcher = m->watch;
    /* its budget (PROTOCOL.md "Bandwidth budgets"): the server's, lowered by the hello's */
    uint32_t kbps = (uint32_t)server->cfg->client_kbps;
    s->link.kbps = m->kbps && (!kbps || m->kbps < kbps) ? m->kbps : kbps;
    atomic_fetch_add(m->watch ? &room->watchers : &room->clients, 1);
    atomic_fetch_add(&server->metrics->clients, 1);
    room->idle_since_ns = 0;
}

/* The fleet's answer to a hello it held back (server.h). */
void tb_server_fleet_join(tb_server *server, uint32_t client, const tb_client_msg *hello, int verdict,
                          const char *why)
{
    for (tb_session *s = server->sessions; s; s = s->next) {
        if (s->id != client)
            continue;
        if (s->closing || s->room)
            return;
        if (verdict == TB_ESHUTDOWN) {
            tb_inbound_send_error(s, TB_ERR_SHUTTING_DOWN, why, -1); /* closes with 1001: reconnect elsewhere */
        } else if (verdict < 0) {
            tb_inbound_send_error(s, TB_ERR_BAD_ROOM, why, -1);
        } else {
            s->fleet_asked = true;
            tb__join(s, hello);
            s->fleet_asked = false;
        }
        return;
    }
}

/* ---- messages --------------------------------------------------------------- */

/* A message refused by a rate limit (input, throws, grabs held, the room's
 * queue): one `rate_limited` reply per 250 ms, not one per message; each
 * refusal takes a token of the flood allowance (as big as the input
 * bucket), and the one that finds it empty closes the connection: it has
 * sent more than twice the input rate for a while (PROTOCOL.md §8). */
static void tb__rate_error(tb_session *s, const char *msg, uint32_t seq, int64_t now)
{
    int rate = s->server->cfg->input_rate;
    TB_COUNT(s->server->metrics, inputs_rejected_total[TB_ERR_RATE_LIMITED]);
    if (!tb_bucket_take(&s->flood, rate, 2.0 * rate, now)) {
        tb__flood_close(s, "flooding: messages far over the input rate");
        return;
    }
    if (now - s->last_rate_error_ns < 250 * TB_NS_PER_MS)
        return;
    s->last_rate_error_ns = now;
    tb_outbox_push_ctl(s, tb_wire_error(TB_ERR_RATE_LIMITED, msg, seq));
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
uint32_t tb_inbound_acked_seq(tb_session *s, uint64_t serial)
{
    while (s->seq_count && s->seqs[s->seq_head].serial <= serial) {
        s->acked_seq = s->seqs[s->seq_head].seq;
        s->seq_head = (s->seq_head + 1) % TB__SEQ_FIFO;
        s->seq_count--;
    }
    return s->acked_seq;
}

/* One client may hold a few pointers (multi-touch), not every grab of the
 * room: a grab_start for a new pointer beyond --max-grabs-per-client is
 * rate limited; grab_end frees the pointer. */
static bool tb__grab_allowed(tb_session *s, const tb_input *in, int64_t now)
{
    if (in->type != TB_INPUT_GRAB_START && in->type != TB_INPUT_GRAB_END)
        return true;
    int at = -1;
    for (int i = 0; i < s->grab_count; i++)
        if (s->grab_pointers[i] == in->pointer)
            at = i;
    if (in->type == TB_INPUT_GRAB_END && at >= 0) {
        s->grab_pointers[at] = s->grab_pointers[--s->grab_count];
    } else if (in->type == TB_INPUT_GRAB_START && at < 0) {
        int cap = s->server->cfg->max_grabs_per_client;
        if (s->grab_count >= cap || s->grab_count >= (int)(sizeof s->grab_pointers / sizeof s->grab_pointers[0])) {
            tb__rate_error(s, "grab limit: release a pointer first", in->seq, now);
            return false;
        }
        s->grab_pointers[s->grab_count++] = in->pointer;
    }
    return true;
}

/* A lobby message lists at most TB_PROTO_MAX_ROOMS: only those are copied,
 * whatever the number of rooms open (30 kB of rows, on the stack). */
static void tb__send_lobby(tb_session *s)
{
    tb_room_row rows[TB_PROTO_MAX_ROOMS];
    int n = tb_registry_rows(s->server->registry, rows, TB_PROTO_MAX_ROOMS);
    tb_outbox_push_ctl(s, tb_wire_lobby(rows, n < TB_PROTO_MAX_ROOMS ? n : TB_PROTO_MAX_ROOMS));
}

static void tb__on_message(tb_session *s, const unsigned char *data, size_t len)
{
    tb_server *server = s->server;
    TB_COUNT(server->metrics, messages_received_total);
    TB_COUNT_N(server->metrics, bytes_received_total, len);
    tb_client_msg m;
    tb_proto_err err;
    int rc = tb_wire_decode(data, len, &m, &err);
    if (rc != TB_OK) {
        tb_inbound_send_error(s, rc, err.msg, m.input.seq ? (int64_t)m.input.seq : -1);
        return;
    }
    int64_t now = tb_clock_now_ns();
    /* Everything but hello costs a token: pings and lobby requests are
     * answered, so they must not be free either. */
    int rate = server->cfg->input_rate;
    if (m.kind != TB_CLIENT_JOIN && !tb_bucket_take(&s->input, rate, 2.0 * rate, now)) {
        tb__rate_error(s, "input rate limit", m.input.seq, now);
        return;
    }
    switch (m.kind) {
    case TB_CLIENT_JOIN:
        tb__join(s, &m);
        return;
    case TB_CLIENT_PING:
        tb_link_report(s, &m, now);
        tb_outbox_push_ctl(s, tb_wire_pong(m.ping_time, (double)now / 1e6));
        return;
    case TB_CLIENT_LOBBY:
        tb__send_lobby(s);
        return;
    case TB_CLIENT_RESYNC:
        if (s->room) {
            tb_outbox_clear_slots(s);
            s->sent_tick = s->queued_tick = 0; /* no delta fits: the next snapshot is a keyframe */
            tb_outbox_want_key(s);
        }
        return;
    default:
        break;
    }
    if (!s->room) {
        tb_inbound_send_error(s, TB_ERR_NOT_JOINED, "send hello first", m.input.seq);
        return;
    }
    if (s->watcher) { /* it watches: refused, not applied, and it stays (PROTOCOL.md "Watchers") */
        tb_inbound_send_error(s, TB_ERR_WATCH_ONLY, "this connection watches the room: it sends no inputs", m.input.seq);
        return;
    }
    int throw_rate = server->cfg->throw_rate;
    if (m.input.type == TB_INPUT_THROW && !tb_bucket_take(&s->throws, throw_rate, 2.0 * throw_rate, now)) {
        tb__rate_error(s, "throw rate limit", m.input.seq, now);
        return;
    }
    if (!tb__grab_allowed(s, &m.input, now))
        return;
    m.input.client = s->id;
    m.input.recv_ns = now;
    m.input.serial = s->room->next_serial + 1;
    if (tb_room_push_input(s->room, &m.input) < 0) {
        tb__rate_error(s, "room input queue full", m.input.seq, now);
        return;
    }
    s->room->next_serial++;
    tb__remember_seq(s, m.input.serial, m.input.seq);
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

int tb_inbound_receive(tb_session *s, const void *in, size_t len)
{
    if (s->closing)
        return 0;
    if (lws_is_first_fragment(s->wsi)) {
        s->rx_len = 0;
        s->rx_text = !lws_frame_is_binary(s->wsi);
    }
    if (s->rx_len + len > (size_t)s->server->cfg->max_message_bytes) {
        s->rx_len = 0;
        char why[96];
        snprintf(why, sizeof why, "message larger than %d bytes", s->server->cfg->max_message_bytes);
        tb_inbound_send_error(s, TB_ERR_TOO_BIG, why, -1);
        tb_session_begin_close(s, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too big");
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
    if (!lws_is_final_fragment(s->wsi) || lws_remaining_packet_payload(s->wsi) > 0)
        return 0;
    if (s->rx_text)
        tb_inbound_send_error(s, TB_ERR_TEXT_FRAME, "binary msgpack frames only", -1);
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
