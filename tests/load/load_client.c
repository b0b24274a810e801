/* load_client.c: one simulated player.
 *
 * A tl_client is one WebSocket (tumble.v1) on the run's lws context. It sends
 * `hello` when the socket opens (creating the room with kind and scene if it is
 * the first), applies the welcome and every snapshot with the real decoder
 * (tb_snap_decoder: a wrong delta is an error here exactly as in a browser,
 * and is answered with `resync`), and from then on sends the input a person in
 * that room would send. The protocol needs no acknowledgements (TCP keeps
 * order; the baseline is simply the last snapshot applied), so a client
 * answers nothing.
 *
 * Who sends what (client 0 of a room drives the scene, the others are lighter):
 *   tower   knock every 5 s, rebuild 2.5 s after each knock   | poke a plank every 3 s
 *   dice    throw_dice every 4 s                                | poke a body every 3 s
 *   pile    throw a ball every 3 s                              | poke a body every 3 s
 *   flag,   wind change every 4 s, and a 1 s drag (grab_start,  | poke a vertex every 3 s
 *   cape    20 grab_move, grab_end) 1 s after it
 *   dough   grab a vertex, pull it out for 0.75 s, release,     | client 1: a press (inward poke)
 *           every 3 s                                           | every 3 s (one press at a time per
 *                                                               | room); 2+: a 0.5 s drag with its
 *                                                               | own pointer every 3 s
 * Every client pings every 5 s (round trip through the server's network thread),
 * with a link report (PROTOCOL.md §13: newest applied tick, last RTT, bytes received).
 *
 * Measured here, while the run's window is open: snapshot inter-arrival jitter
 * (|gap - 1/snap_rate|), input-to-effect latency (tower: knock until a
 * snapshot shows the ball moved; dice: throw_dice until a die moved), input to
 * acknowledgement latency (first snapshot whose last_seq covers the input),
 * ping round trips; counted always: snapshots, messages and payload bytes. */
#define _GNU_SOURCE
#include "load/load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const tl_scene_names[TL_SCENE_COUNT] = {"tower", "dice", "pile", "flag", "cape", "dough"};
const char *const tl_scene_kinds[TL_SCENE_COUNT] = {"rigid", "rigid", "rigid", "cloth", "cloth", "soft"};
const char *const tl_err_names[TL_ERR_COUNT] = {"connect", "closed", "server_error", "bad_frame",
                                               "bad_snapshot", "join_timeout"};

#define TL_PROBE_TIMEOUT 3.0   /* s: an input whose effect is not seen by then counts as a timeout */
#define TL_MOVED_CELLS 2       /* a body moved when a position cell changed by more than this (~1 mm) */

double tl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool tl__measuring(const tl_run *run) { return run->window_start > 0 && run->window_end == 0; }

bool tl_note_limit(tl_run *run, enum tl_limit limit, int http_status)
{
    if (run->limits_told & (1u << limit))
        return false;
    run->limits_told |= 1u << limit;
    int clients = run->opt.rooms * run->opt.clients_per_room;
    const char *why = "", *how = "";
    char buf[160];
    switch (limit) {
    case TL_LIMIT_CONNS_PER_ADDRESS:
        why = "HTTP 429: its connection limit per address (--max-conns-per-address, default 32)";
        snprintf(buf, sizeof buf, "start it with --max-conns-per-address %d or more, or spread the clients over "
                 "loopback addresses with --source-addrs %d", clients, clients / 32 + 1);
        how = buf;
        break;
    case TL_LIMIT_ROOM_CREATE_RATE:
        why = "rate_limited: its room creations per address (--room-create-rate, default 10 a minute)";
        snprintf(buf, sizeof buf, "start it with --room-create-rate %d or more, or spread the clients with "
                 "--source-addrs %d", run->opt.rooms, run->opt.rooms / 10 + 1);
        how = buf;
        break;
    case TL_LIMIT_MAX_ROOMS:
        why = "too_many_rooms: its room limit (--max-rooms, default 256)";
        snprintf(buf, sizeof buf, "start it with --max-rooms %d or more (its default rooms count too)", run->opt.rooms + 8);
        how = buf;
        break;
    case TL_LIMIT_CLIENTS_PER_ROOM:
        why = "room_full: its clients per room (--max-clients-per-room, default 32)";
        snprintf(buf, sizeof buf, "start it with --max-clients-per-room %d, or use fewer --clients per room",
                 run->opt.clients_per_room);
        how = buf;
        break;
    case TL_LIMIT_INPUT_RATE:
        why = "rate_limited: its input rate per client (--input-rate, default 120 a second)";
        how = "start it with a higher --input-rate";
        break;
    case TL_LIMIT_ORIGIN:
        why = "HTTP 403: its origin allow-list (--allowed-origins)";
        how = "add this tool's origin to --allowed-origins, or start it without the flag";
        break;
    default:
        snprintf(buf, sizeof buf, "HTTP %d at the WebSocket upgrade", http_status);
        why = buf;
        how = "see the server's log";
        break;
    }
    fprintf(stderr, "tumble-load: the server refused clients: %s.\ntumble-load:   to load it: %s.\n", why, how);
    return true;
}

void tl_count_error(tl_run *run, int err)
{
    if (err >= 0 && err < TL_ERR_COUNT)
        run->win.errors[err]++;
}

/* xorshift32: reproducible behaviour per run seed, no libc state. */
static uint32_t tl__rng_state = 2463534242u;
static double tl__rand(void)
{
    uint32_t x = tl__rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    tl__rng_state = x;
    return (double)(x >> 8) / (double)(1u << 24);
}

/* ---- sending -------------------------------------------------------------------- */

static void tl__send(tl_client *c, tb_proto_client_msg *m)
{
    if (!c->wsi || c->closing)
        return;
    if (m->type != TB_MSG_HELLO && m->type != TB_MSG_PING && m->type != TB_MSG_RESYNC &&
        m->type != TB_MSG_LOBBY_REQ) {
        m->seq = ++c->seq;
        if (tl__measuring(c->run)) {
            c->run->win.inputs_sent_by_scene[c->room->scene]++;
            if (m->type == TB_MSG_POKE) {
                c->poke_seq = m->seq;
                c->run->win.pokes_sent_by_scene[c->room->scene]++;
            }
        }
    }
    static msgpack_sbuffer sb;
    static bool sb_ready;
    if (!sb_ready) {
        msgpack_sbuffer_init(&sb);
        sb_ready = true;
    }
    sb.size = 0;
    if (tb_proto_encode_client(&sb, m) != TB_OK || sb.size > TL_OUT_MAX) {
        fprintf(stderr, "tumble-load: cannot encode a %s\n", tb_proto_type_name(m->type));
        return;
    }
    if (c->out_count == TL_OUTQ)
        return; /* the socket is not draining; inputs are dropped like a browser would skip frames */
    int slot = (c->out_head + c->out_count) % TL_OUTQ;
    memcpy(c->out[slot] + LWS_PRE, sb.data, sb.size);
    c->out_len[slot] = sb.size;
    c->out_count++;
    lws_callback_on_writable(c->wsi);
}

static void tl__probe_start(tl_client *c, int kind);

static void tl__action(tl_client *c, const char *action)
{
    tl_run *run = c->run;
    if (run->rebuild_as_reset && strcmp(action, "rebuild") == 0)
        action = "reset";
    if (run->throw_dice_as_roll && strcmp(action, "throw_dice") == 0)
        action = "roll";
    tb_proto_client_msg m = {.type = TB_MSG_ACTION};
    snprintf(m.u.action.action, sizeof m.u.action.action, "%s", action);
    tl__send(c, &m);
    int slot = c->action_next++ % 4;
    snprintf(c->action_name[slot], sizeof c->action_name[slot], "%s", action);
    c->action_seq[slot] = c->seq;
}

/* A server that refuses PROTOCOL.md's `rebuild` / `throw_dice` by name (bad_value)
 * may know them as `reset` / `roll`: switch once for the whole run, resend, and
 * report the deviation instead of counting an error per room. */
static bool tl__action_fallback(tl_client *c, uint32_t seq)
{
    tl_run *run = c->run;
    const char *name = NULL;
    for (int i = 0; i < 4; i++)
        if (c->action_seq[i] == seq && seq != 0)
            name = c->action_name[i];
    if (!name)
        return false;
    bool *flag = strcmp(name, "rebuild") == 0 ? &run->rebuild_as_reset
                 : strcmp(name, "throw_dice") == 0 ? &run->throw_dice_as_roll
                                                   : NULL;
    if (!flag)
        return false;
    if (!*flag && !run->opt.quiet)
        fprintf(stderr, "tumble-load: the server refuses action '%s' (PROTOCOL.md 4); using '%s'\n", name,
                flag == &run->rebuild_as_reset ? "reset" : "roll");
    *flag = true;
    bool probe = c->probe_kind != TL_PROBE_NONE && c->probe_seq == seq;
    tl__action(c, name);
    if (probe) {
        c->probe_kind = TL_PROBE_NONE;
        tl__probe_start(c, TL_PROBE_DICE);
    }
    return true;
}

static void tl__probe_start(tl_client *c, int kind)
{
    if (c->probe_kind != TL_PROBE_NONE)
        return; /* one at a time: the previous one is still waiting */
    c->probe_kind = kind;
    c->probe_seq = c->seq;
    c->probe_sent_at = tl_now();
    c->probe_acked = false;
    c->probe_ref_count = 0;
    if (kind == TL_PROBE_BALL || kind == TL_PROBE_DICE) {
        uint32_t n = tb_snap_decoder_body_count(c->dec);
        for (uint32_t i = 0; i < n && c->probe_ref_count < 8; i++) {
            tb_proto_body b;
            tb_snap_decoder_body(c->dec, i, &b);
            bool watch = kind == TL_PROBE_BALL ? b.shape.kind == TB_SHAPE_SPHERE : b.shape.material == 2;
            if (!watch)
                continue;
            int32_t q[3], rc[3], vp[3], vr[3];
            int ri;
            tb_snap_decoder_body_q(c->dec, i, q, &ri, rc, vp, vr);
            memcpy(c->probe_ref[c->probe_ref_count++], q, sizeof q);
        }
    }
}

/* Did the watched bodies move (or appear) since the probe started? */
static bool tl__probe_effect(tl_client *c)
{
    uint32_t n = tb_snap_decoder_body_count(c->dec), k = 0;
    for (uint32_t i = 0; i < n && k <= 8; i++) {
        tb_proto_body b;
        tb_snap_decoder_body(c->dec, i, &b);
        bool watch = c->probe_kind == TL_PROBE_BALL ? b.shape.kind == TB_SHAPE_SPHERE : b.shape.material == 2;
        if (!watch)
            continue;
        if (k >= c->probe_ref_count)
            return true; /* a watched body appeared (e.g. the ball spawned by the knock) */
        int32_t q[3], rc[3], vp[3], vr[3];
        int ri;
        tb_snap_decoder_body_q(c->dec, i, q, &ri, rc, vp, vr);
        for (int a = 0; a < 3; a++)
            if (abs(q[a] - c->probe_ref[k][a]) > TL_MOVED_CELLS)
                return true;
        k++;
    }
    return false;
}

static void tl__probe_check(tl_client *c, double now)
{
    if (c->probe_kind == TL_PROBE_NONE)
        return;
    tl_run *run = c->run;
    bool measuring = tl__measuring(run);
    if (!c->probe_acked && tb_snap_decoder_last_seq(c->dec) >= c->probe_seq) {
        c->probe_acked = true;
        if (measuring)
            tl_hist_add(&run->win.ack_latency, (now - c->probe_sent_at) * 1e6);
        if (c->probe_kind == TL_PROBE_ACK)
            c->probe_kind = TL_PROBE_NONE;
    }
    if (c->probe_acked && c->probe_kind != TL_PROBE_NONE && tl__probe_effect(c)) {
        if (measuring)
            tl_hist_add(&run->win.latency, (now - c->probe_sent_at) * 1e6);
        c->probe_kind = TL_PROBE_NONE;
    }
}

/* ---- behaviour ------------------------------------------------------------------ */

static bool tl__random_vertex(tl_client *c, double p[3])
{
    static float verts[TB_PROTO_MAX_VERTS * 3];
    const tb_proto_frame *f = tb_snap_decoder_frame(c->dec);
    if (!f || f->mesh_count == 0)
        return false;
    uint32_t n = tb_snap_decoder_verts(c->dec, 0, verts, TB_PROTO_MAX_VERTS);
    if (!n)
        return false;
    uint32_t i = (uint32_t)(tl__rand() * n) % n;
    double cx = 0, cy = 0, cz = 0;
    for (uint32_t k = 0; k < n; k++) {
        cx += verts[3 * k];
        cy += verts[3 * k + 1];
        cz += verts[3 * k + 2];
    }
    cx /= n;
    cy /= n;
    cz /= n;
    p[0] = verts[3 * i];
    p[1] = verts[3 * i + 1];
    p[2] = verts[3 * i + 2];
    /* the direction a drag pulls: away from the mesh centre, slightly up */
    double d[3] = {p[0] - cx, p[1] - cy + 0.2, p[2] - cz};
    double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int a = 0; a < 3; a++)
        c->grab_dir[a] = len > 1e-6 ? d[a] / len : (a == 1);
    return true;
}

/* A random box body (planks, dice): never removed, unlike balls and projectiles,
 * so a poke cannot name a body the server has just dropped (unknown_body). */
static bool tl__random_box(tl_client *c, tb_proto_body *b)
{
    uint32_t n = tb_snap_decoder_body_count(c->dec);
    for (int tries = 0; n && tries < 16; tries++) {
        tb_snap_decoder_body(c->dec, (uint32_t)(tl__rand() * n) % n, b);
        if (b->shape.kind == TB_SHAPE_BOX)
            return true;
    }
    return false;
}

/* The lighter input of the clients that do not drive the scene. */
static void tl__poke(tl_client *c)
{
    tb_proto_client_msg m = {.type = TB_MSG_POKE};
    enum tl_scene s = c->room->scene;
    if (s == TL_TOWER || s == TL_DICE || s == TL_PILE) {
        tb_proto_body b;
        if (!tl__random_box(c, &b))
            return;
        m.u.poke.has_body = true;
        m.u.poke.body = b.id;
        for (int a = 0; a < 3; a++)
            m.u.poke.point[a] = b.pos[a];
        m.u.poke.impulse[0] = (tl__rand() - 0.5) * 0.6;
        m.u.poke.impulse[1] = 0.3;
        m.u.poke.impulse[2] = (tl__rand() - 0.5) * 0.6;
    } else {
        if (!tl__random_vertex(c, m.u.poke.point))
            return;
        double k = s == TL_DOUGH ? -0.05 : 0.01; /* dough: a press inwards; cloth: a flick */
        for (int a = 0; a < 3; a++)
            m.u.poke.impulse[a] = k * c->grab_dir[a];
    }
    tl__send(c, &m);
    tl__probe_start(c, TL_PROBE_ACK);
}

static void tl__grab(tl_client *c, int type, uint32_t pointer)
{
    tb_proto_client_msg m = {.type = type};
    m.u.grab.pointer = pointer;
    memcpy(m.u.grab.point, c->grab_point, sizeof c->grab_point);
    tl__send(c, &m);
}

/* Seconds between the starts of a client's input cycles (the table at the top). */
static double tl__cycle_s(const tl_client *c)
{
    if (c->index != 0)
        return 3.0; /* a poke, press or drag every 3 s */
    switch (c->room->scene) {
    case TL_TOWER: return 5.0;
    case TL_DICE: return 4.0;
    case TL_FLAG:
    case TL_CAPE: return 4.0;
    default: return 3.0; /* pile, dough */
    }
}

/* Drive the scene (client 0): see the table at the top of the file. */
static void tl__drive(tl_client *c, double now)
{
    switch (c->room->scene) {
    case TL_TOWER:
        if (c->phase == 0) {
            tl__action(c, "knock");
            tl__probe_start(c, TL_PROBE_BALL);
        } else {
            tl__action(c, "rebuild");
        }
        c->phase ^= 1;
        c->next_at += 2.5;
        break;
    case TL_DICE:
        tl__action(c, "throw_dice");
        tl__probe_start(c, TL_PROBE_DICE);
        c->next_at += 4.0;
        break;
    case TL_PILE: {
        tb_proto_client_msg m = {.type = TB_MSG_THROW};
        m.u.throw_.origin[0] = (tl__rand() - 0.5) * 2;
        m.u.throw_.origin[1] = 2.0;
        m.u.throw_.origin[2] = 6.0;
        m.u.throw_.velocity[2] = -8.0;
        m.u.throw_.velocity[1] = 1.0;
        snprintf(m.u.throw_.shape, sizeof m.u.throw_.shape, "ball");
        tl__send(c, &m);
        tl__probe_start(c, TL_PROBE_ACK);
        c->next_at += 3.0;
        break;
    }
    case TL_FLAG:
    case TL_CAPE:
    case TL_DOUGH: {
        bool cloth = c->room->scene != TL_DOUGH;
        /* phase 0: (cloth) wind change; 1: grab_start; 2..: moves; then grab_end */
        int moves = cloth ? 20 : 15;
        if (c->phase == 0) {
            if (cloth && c->wind_param >= 0) {
                tb_proto_client_msg m = {.type = TB_MSG_PARAM};
                snprintf(m.u.param.name, sizeof m.u.param.name, "%s", c->wind_name);
                m.u.param.value = c->wind_min + (c->wind_max - c->wind_min) * tl__rand();
                m.u.param.value = round(m.u.param.value * 100) / 100;
                tl__send(c, &m);
                tl__probe_start(c, TL_PROBE_ACK);
            }
            c->phase = 1;
            c->next_at += cloth ? 1.0 : 0.0;
        } else if (c->phase == 1) {
            if (tl__random_vertex(c, c->grab_point)) {
                tl__grab(c, TB_MSG_GRAB_START, 0);
                tl__probe_start(c, TL_PROBE_ACK);
                c->phase = 2;
                c->step = 0;
                c->next_at += 0.05;
            } else {
                c->phase = 0;
                c->next_at += 1.0;
            }
        } else if (c->step < moves) {
            for (int a = 0; a < 3; a++)
                c->grab_point[a] += c->grab_dir[a] * 0.02;
            tl__grab(c, TB_MSG_GRAB_MOVE, 0);
            c->step++;
            c->next_at += 0.05;
        } else {
            tl__grab(c, TB_MSG_GRAB_END, 0);
            c->phase = 0;
            c->next_at += cloth ? 2.0 : 2.25; /* cycle: 4 s cloth, 3 s dough */
        }
        break;
    }
    default:
        c->next_at += 5.0;
    }
    if (c->next_at < now)
        c->next_at = now; /* a stalled loop does not fire a burst afterwards */
}

/* Dough clients other than 0 and 1: a short drag with their own pointer
 * (several grabs at once are allowed, one per pointer), every 3 s. */
static void tl__pull(tl_client *c, double now)
{
    uint32_t pointer = (uint32_t)c->index;
    if (c->phase == 0) {
        if (tl__random_vertex(c, c->grab_point)) {
            tl__grab(c, TB_MSG_GRAB_START, pointer);
            tl__probe_start(c, TL_PROBE_ACK);
            c->phase = 1;
            c->step = 0;
        }
        c->next_at = now + 0.05;
    } else if (c->step < 10) {
        for (int a = 0; a < 3; a++)
            c->grab_point[a] += c->grab_dir[a] * 0.015;
        tl__grab(c, TB_MSG_GRAB_MOVE, pointer);
        c->step++;
        c->next_at = now + 0.05;
    } else {
        tl__grab(c, TB_MSG_GRAB_END, pointer);
        c->phase = 0;
        c->next_at = now + 2.5;
    }
}

void tl_client_tick(tl_client *c, double now)
{
    tl_run *run = c->run;
    if (c->state == TL_WAITING) {
        if (now >= c->reconnect_at && !run->stopping)
            tl_client_connect(c);
        return;
    }
    if ((c->state == TL_CONNECTING || c->state == TL_OPEN) && !c->closing &&
        now - c->connect_at > run->opt.join_timeout) {
        tl_count_error(run, TL_ERR_JOIN_TIMEOUT);
        c->state = TL_FAILED;
        tl_client_close(c);
        return;
    }
    if (c->state != TL_JOINED || c->closing)
        return;
    if (c->probe_kind != TL_PROBE_NONE && now - c->probe_sent_at > TL_PROBE_TIMEOUT) {
        if (tl__measuring(run))
            run->win.latency_timeouts++;
        c->probe_kind = TL_PROBE_NONE;
    }
    if (run->opt.idle)
        return;
    if (now >= c->next_ping_at) {
        tb_proto_client_msg m = {.type = TB_MSG_PING};
        m.u.ping.client_time = floor(now * 1e6) / 1e3; /* ms with microsecond digits */
        /* the link report (PROTOCOL.md §13): newest applied tick, RTT, bytes received */
        m.u.ping.has_ack_tick = true;
        m.u.ping.ack_tick = tb_snap_decoder_tick(c->dec);
        m.u.ping.has_rtt = c->last_rtt_ms >= 0;
        m.u.ping.rtt_ms = m.u.ping.has_rtt ? floor(c->last_rtt_ms * 10 + 0.5) / 10 : 0;
        m.u.ping.has_recv_bytes = true;
        m.u.ping.recv_bytes = (uint32_t)c->bytes;
        tl__send(c, &m);
        c->next_ping_at = now + 5.0;
    }
    if (now < c->next_at)
        return;
    if (c->index == 0) {
        tl__drive(c, now);
    } else if (c->room->scene == TL_DOUGH && c->index >= 2) {
        tl__pull(c, now);
    } else {
        /* dough: only client 1 presses (one press at a time per room, else not_allowed) */
        tl__poke(c);
        c->next_at = now + 3.0;
    }
}

/* ---- receiving ------------------------------------------------------------------ */

static void tl__joined(tl_client *c, const tb_proto_welcome *w)
{
    if (c->reconnect_tries) { /* back in the room after its server went away */
        c->run->win.reconnects++;
        c->reconnect_tries = 0;
    }
    c->state = TL_JOINED;
    c->joined_at = tl_now();
    c->client_id = w->client_id;
    c->snap_rate = w->snap_rate ? w->snap_rate : 60;
    c->tick_rate = w->tick_rate ? w->tick_rate : 120;
    c->wind_param = -1;
    for (uint32_t i = 0; i < w->param_count; i++)
        if (strstr(w->params[i].name, "wind")) {
            c->wind_param = (int)i;
            snprintf(c->wind_name, sizeof c->wind_name, "%s", w->params[i].name);
            c->wind_min = w->params[i].min;
            c->wind_max = w->params[i].max;
            break;
        }
    /* Spread the rooms' schedules over a whole cycle of the scene's input (the
     * table at the top), as independent rooms would be: not every tower falls
     * on the same tick, and rooms joined at once are no denser in one part of
     * the cycle than in another. */
    c->next_at = c->joined_at + 1.0 + tl__rand() * tl__cycle_s(c);
    c->next_ping_at = c->joined_at + tl__rand() * 5.0;
    c->last_snap_at = c->joined_at;
    if (c->run->opt.leave)
        tl_client_close(c);
}

static void tl__snapshot(tl_client *c, const uint8_t *buf, size_t len, bool key)
{
    tl_run *run = c->run;
    if (c->awaiting_key && !key)
        return; /* PROTOCOL.md 7.6: deltas are ignored until the keyframe that answers resync */
    tb_proto_err err;
    int rc = tb_snap_decoder_apply(c->dec, buf, len, &err);
    if (rc != TB_OK) {
        tl_count_error(run, TL_ERR_BAD_SNAPSHOT);
        if (!run->opt.quiet)
            fprintf(stderr, "tumble-load: %s client %d: %s (%s); resync\n", c->room->id, c->index,
                    tb_proto_code_name(rc), err.msg);
        tb_proto_client_msg m = {.type = TB_MSG_RESYNC};
        tl__send(c, &m);
        c->awaiting_key = true;
        return;
    }
    c->awaiting_key = false;
    double now = tl_now();
    if (c->snaps > 0 && tl__measuring(run)) {
        double expect = 1.0 / c->snap_rate;
        tl_hist_add(&run->win.jitter, fabs((now - c->last_snap_at) - expect) * 1e6);
    }
    c->snaps++;
    c->last_snap_at = now;
    tl__probe_check(c, now);
}

static void tl__message(tl_client *c, const uint8_t *buf, size_t len)
{
    tl_run *run = c->run;
    c->msgs++;
    c->bytes += len;
    /* Fast path: [33|34, ...] go straight to the decoder (which checks everything). */
    if (len >= 2 && buf[0] >= 0x92 && buf[0] <= 0x9f && (buf[1] == TB_MSG_SNAP_KEY || buf[1] == TB_MSG_SNAP_DELTA)) {
        if (c->state == TL_JOINED)
            tl__snapshot(c, buf, len, buf[1] == TB_MSG_SNAP_KEY);
        return;
    }
    static tb_proto_server_msg msg; /* ~40 KB; one thread */
    tb_proto_err err;
    int rc = tb_proto_decode_server(buf, len, &msg, &err);
    if (rc != TB_OK) {
        if (rc == TB_ERR_UNKNOWN_TYPE)
            return; /* PROTOCOL.md 10: clients ignore unknown server types */
        tl_count_error(run, TL_ERR_BAD_FRAME);
        if (!run->opt.quiet)
            fprintf(stderr, "tumble-load: %s client %d: undecodable frame: %s\n", c->room->id, c->index, err.msg);
        return;
    }
    switch (msg.type) {
    case TB_MSG_WELCOME:
    case TB_MSG_SCENE:
        rc = tb_snap_decoder_apply(c->dec, buf, len, &err);
        if (rc != TB_OK) {
            tl_count_error(run, TL_ERR_BAD_SNAPSHOT);
            if (!run->opt.quiet)
                fprintf(stderr, "tumble-load: %s client %d: bad %s state: %s\n", c->room->id, c->index,
                        tb_proto_type_name(msg.type), err.msg);
            break;
        }
        c->awaiting_key = false;
        if (msg.type == TB_MSG_WELCOME) {
            if (msg.u.welcome.version != TB_PROTO_VERSION) {
                tl_count_error(run, TL_ERR_BAD_FRAME);
                tl_client_close(c);
                break;
            }
            tl__joined(c, &msg.u.welcome);
        }
        break;
    case TB_MSG_PONG: {
        double rtt_ms = tl_now() * 1e3 - msg.u.pong.client_time;
        if (rtt_ms >= 0 && rtt_ms < 60000) {
            c->last_rtt_ms = rtt_ms;
            if (tl__measuring(run))
                tl_hist_add(&run->win.rtt, rtt_ms * 1e3);
        }
        break;
    }
    case TB_MSG_ERROR: {
        uint32_t code = msg.u.error.code;
        if (code == TB_ERR_BAD_VALUE && msg.u.error.has_seq && tl__action_fallback(c, msg.u.error.seq))
            break;
        run->win.server_errors_by_code[code <= TB_ERR__COUNT ? code : TB_ERR__COUNT]++;
        /* Not errors: projectile_cap is "applied (warning)"; unknown_body (a poke on a
         * cloth vertex that has moved on since the snapshot the client saw) and
         * not_allowed (a press while one is under way) are the world saying no to a
         * well-formed input, as it would to a lagging player. They are counted apart. */
        if (code == TB_ERR_UNKNOWN_BODY || code == TB_ERR_NOT_ALLOWED) {
            run->win.inputs_refused++;
            run->win.inputs_refused_by_scene[c->room->scene]++;
            if (msg.u.error.has_seq && c->poke_seq && msg.u.error.seq == c->poke_seq)
                run->win.pokes_refused_by_scene[c->room->scene]++;
        } else if (code == TB_ERR_SHUTTING_DOWN)
            ; /* the server goes away: the close (1001) that follows makes the client reconnect */
        else if (code != TB_ERR_PROJECTILE_CAP)
            tl_count_error(run, TL_ERR_SERVER_ERROR);
        /* A server limit is explained once, with the flag to raise, not per client. */
        int limit = code == TB_ERR_TOO_MANY_ROOMS ? TL_LIMIT_MAX_ROOMS
                    : code == TB_ERR_ROOM_FULL    ? TL_LIMIT_CLIENTS_PER_ROOM
                    : code != TB_ERR_RATE_LIMITED ? -1
                    : strstr(msg.u.error.text, "room creation") ? TL_LIMIT_ROOM_CREATE_RATE
                                                                 : TL_LIMIT_INPUT_RATE;
        if (limit >= 0) {
            if (!run->opt.quiet)
                tl_note_limit(run, (enum tl_limit)limit, 0);
        } else if (!run->opt.quiet && run->win.server_errors_by_code[code <= TB_ERR__COUNT ? code : TB_ERR__COUNT] <= 3)
            fprintf(stderr, "tumble-load: %s client %d: server error %s: %s\n", c->room->id, c->index,
                    msg.u.error.name, msg.u.error.text);
        if (c->probe_kind != TL_PROBE_NONE && msg.u.error.has_seq && msg.u.error.seq == c->probe_seq)
            c->probe_kind = TL_PROBE_NONE; /* refused: no effect to wait for */
        break;
    }
    default:
        break; /* dice results, param_changed, peers, resets, contacts, lobby: nothing to answer */
    }
}

/* ---- lws --------------------------------------------------------------------------- */

/* Going away (1001: a server stopping or draining, its room moving to
 * another server) is not an error: the client reconnects, with backoff,
 * through the same URL (a router sends it to the room's new server) and
 * continues in its room. TL_RECONNECT_TRIES failed attempts make it one. */
#define TL_RECONNECT_TRIES 20
static bool tl__reconnect(tl_client *c, bool failed)
{
    tl_run *run = c->run;
    if (c->closing || run->stopping || !(c->close_code == 1001 || (failed && c->reconnect_tries)))
        return false;
    if (c->reconnect_tries >= TL_RECONNECT_TRIES)
        return false;
    c->reconnect_tries++;
    c->close_code = 0;
    double backoff = 0.05 * (1 << (c->reconnect_tries < 5 ? c->reconnect_tries - 1 : 4)); /* 50 ms .. 0.8 s */
    c->reconnect_at = tl_now() + backoff * (0.5 + tl__rand());
    c->state = TL_WAITING;
    return true;
}

static void tl__closed(tl_client *c, bool failed)
{
    tl_run *run = c->run;
    if (tl__reconnect(c, failed)) {
        c->wsi = NULL;
        c->out_count = 0;
        c->probe_kind = TL_PROBE_NONE;
        tl_client_free(c); /* tl_client_connect makes a new decoder */
        return;
    }
    if (failed) {
        if (c->state != TL_FAILED)
            tl_count_error(run, TL_ERR_CONNECT);
        c->state = TL_FAILED;
    } else {
        if (!c->closing && !run->stopping && c->state != TL_FAILED)
            tl_count_error(run, TL_ERR_CLOSED);
        if (c->state != TL_FAILED)
            c->state = TL_CLOSED;
    }
    c->wsi = NULL;
    c->out_count = 0;
    c->probe_kind = TL_PROBE_NONE;
    tl_client_free(c); /* a closed client is never reopened: its decoder and buffers go now */
}

static int tl__callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    tl_client *c = lws_get_opaque_user_data(wsi);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        if (!c)
            break;
        /* An upgrade the server answered in HTTP (a limit, PROTOCOL.md §1) is
         * explained once; other failures are shown for the first few clients. */
        int status = in && strstr((const char *)in, "not 101") ? (int)lws_http_client_http_response(wsi) : 0;
        if (c->run->opt.quiet) {
        } else if (status == 429) {
            tl_note_limit(c->run, TL_LIMIT_CONNS_PER_ADDRESS, status);
        } else if (status == 403) {
            tl_note_limit(c->run, TL_LIMIT_ORIGIN, status);
        } else if (status) {
            tl_note_limit(c->run, TL_LIMIT_OTHER_HTTP, status);
        } else if (c->run->win.errors[TL_ERR_CONNECT] < 3) {
            fprintf(stderr, "tumble-load: %s client %d: connection failed: %s\n", c->room->id, c->index,
                    in ? (const char *)in : "?");
        }
        tl__closed(c, true);
        break;
    case LWS_CALLBACK_CLIENT_ESTABLISHED: {
        if (!c)
            return -1;
        c->wsi = wsi;
        c->state = TL_OPEN;
        tb_proto_client_msg m = {.type = TB_MSG_HELLO};
        m.u.hello.version = TB_PROTO_VERSION;
        snprintf(m.u.hello.room, sizeof m.u.hello.room, "%s", c->room->id);
        snprintf(m.u.hello.kind, sizeof m.u.hello.kind, "%s", tl_scene_kinds[c->room->scene]);
        snprintf(m.u.hello.scene, sizeof m.u.hello.scene, "%s", tl_scene_names[c->room->scene]);
        snprintf(m.u.hello.name, sizeof m.u.hello.name, "load %d.%d", c->room->index, c->index);
        m.u.hello.has_kind = m.u.hello.has_scene = true;
        tl__send(c, &m);
        break;
    }
    case LWS_CALLBACK_CLIENT_RECEIVE: {
        if (!c)
            return -1;
        if (lws_is_first_fragment(wsi))
            c->rx_len = 0;
        /* A whole message in one piece (every snapshot of these scenes) is
         * decoded where lws holds it: no copy into rx per snapshot. */
        if (c->rx_len == 0 && lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) {
            if (!lws_frame_is_binary(wsi))
                tl_count_error(c->run, TL_ERR_BAD_FRAME); /* the server sends binary frames only */
            else
                tl__message(c, in, len);
            break;
        }
        if (c->rx_len + len > TB_PROTO_MAX_SERVER_MSG) {
            tl_count_error(c->run, TL_ERR_BAD_FRAME);
            c->rx_len = 0;
            return -1;
        }
        if (c->rx_len + len > c->rx_cap) {
            size_t cap = c->rx_cap ? c->rx_cap : 4096;
            while (cap < c->rx_len + len)
                cap *= 2;
            uint8_t *rx = realloc(c->rx, cap);
            if (!rx)
                return -1;
            c->rx = rx;
            c->rx_cap = cap;
        }
        memcpy(c->rx + c->rx_len, in, len);
        c->rx_len += len;
        if (lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) {
            if (!lws_frame_is_binary(wsi)) {
                tl_count_error(c->run, TL_ERR_BAD_FRAME); /* the server sends binary frames only */
            } else {
                tl__message(c, c->rx, c->rx_len);
            }
            c->rx_len = 0;
            /* Large buffers (a dough welcome) are not kept for the rest of the run. */
            if (c->rx_cap > 65536) {
                free(c->rx);
                c->rx = NULL;
                c->rx_cap = 0;
            }
        }
        break;
    }
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (!c)
            return -1;
        if (c->closing) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"done", 4);
            return -1;
        }
        if (c->out_count) {
            int slot = c->out_head;
            int n = lws_write(wsi, c->out[slot] + LWS_PRE, c->out_len[slot], LWS_WRITE_BINARY);
            if (n < (int)c->out_len[slot])
                return -1;
            c->out_head = (c->out_head + 1) % TL_OUTQ;
            c->out_count--;
            if (c->out_count)
                lws_callback_on_writable(wsi);
        }
        break;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (c && len >= 2)
            c->close_code = ((const uint8_t *)in)[0] << 8 | ((const uint8_t *)in)[1];
        if (c && !c->closing && !c->run->stopping && !c->run->opt.quiet && len >= 2) {
            const uint8_t *p = in;
            fprintf(stderr, "tumble-load: %s client %d: server closed with %d %.*s\n", c->room->id, c->index,
                    p[0] << 8 | p[1], (int)(len - 2), (const char *)in + 2);
        }
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (c)
            tl__closed(c, false);
        break;
    default:
        break;
    }
    return 0;
}

const struct lws_protocols tl_protocols[] = {
    {TB_PROTO_SUBPROTOCOL, tl__callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* lws 4.1.6 has no LWS_PROTOCOL_LIST_TERM */
};

int tl_client_connect(tl_client *c)
{
    tl_run *run = c->run;
    /* capacity is allocated up front (3 x 76 bytes per body): the pile needs many,
     * every other scene a few dozen plus projectiles */
    if (!c->dec)
        c->dec = tb_snap_decoder_create(c->room->scene == TL_PILE ? TB_PROTO_MAX_BODIES : 256);
    if (!c->dec)
        return -1;
    c->last_rtt_ms = -1;
    struct lws_client_connect_info info;
    memset(&info, 0, sizeof info);
    info.context = run->context;
    info.address = run->opt.host;
    info.port = run->opt.port;
    /* A router hashes the room id from the URL (ws://router/ws/{room}): substitute it. */
    char path[sizeof run->opt.path + TB_PROTO_NAME_MAX];
    const char *mark = strstr(run->opt.path, "{room}");
    if (mark)
        snprintf(path, sizeof path, "%.*s%s%s", (int)(mark - run->opt.path), run->opt.path, c->room->id, mark + 6);
    else
        snprintf(path, sizeof path, "%s", run->opt.path);
    info.path = path; /* lws copies it */
    info.host = run->host_header;
    info.origin = run->origin;
    info.protocol = TB_PROTO_SUBPROTOCOL;
    info.opaque_user_data = c;
    /* Loopback is all of 127/8: several source addresses get past a server's
     * connections-per-address limit without changing its settings. */
    char iface[32];
    if (run->opt.source_addrs > 1) {
        int n = (c->room->index * run->opt.clients_per_room + c->index) % run->opt.source_addrs;
        snprintf(iface, sizeof iface, "127.0.%d.%d", (n + 1) / 256, (n + 1) % 256);
        info.iface = iface;
    }
    info.pwsi = &c->wsi;
    c->state = TL_CONNECTING;
    c->connect_at = tl_now();
    if (!lws_client_connect_via_info(&info)) {
        if (c->state == TL_CONNECTING)
            tl__closed(c, true);
        return -1;
    }
    return 0;
}

void tl_client_close(tl_client *c)
{
    c->closing = true;
    if (!c->wsi)
        return;
    if (c->state == TL_OPEN || c->state == TL_JOINED)
        lws_callback_on_writable(c->wsi); /* a normal close (1000) from the writable callback */
    else {
        /* Still in the handshake: have lws kill it. lws may free such a wsi without
         * a CLOSED callback, so forget the pointer now; it must not be used again. */
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        c->wsi = NULL;
    }
}

void tl_client_free(tl_client *c)
{
    tb_snap_decoder_destroy(c->dec);
    c->dec = NULL;
    free(c->rx);
    c->rx = NULL;
    c->rx_len = c->rx_cap = 0; /* a reconnecting client reuses the struct */
}

void tl_client_seed(uint32_t seed) { tl__rng_state = seed ? seed : 2463534242u; }
