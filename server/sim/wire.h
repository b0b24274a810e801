/* wire.h: the server's side of the tumble.v1 wire format (proto/c).
 *
 * The one place in the server that turns protocol messages into the
 * server's own records and back. The network thread decodes every client
 * frame here (hostile input: proto/c's decoder checks it) into a
 * tb_client_msg, and encodes errors, pongs and the lobby. Workers encode
 * welcome/scene, room events and snapshot blobs.
 */
#ifndef TB_WIRE_H
#define TB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/input.h"
#include "sim/msg.h"
#include "tb_proto.h"

struct tb_room;
struct tb_room_row;

typedef enum tb_client_kind {
    TB_CLIENT_JOIN = 1, /* hello */
    TB_CLIENT_PING,
    TB_CLIENT_RESYNC,   /* the client lost its baseline: send a keyframe */
    TB_CLIENT_LOBBY,    /* lobby request */
    TB_CLIENT_INPUT,    /* everything a room applies: see tb_input */
} tb_client_kind;

typedef struct tb_client_msg {
    int kind;               /* tb_client_kind */
    char room[TB_PROTO_NAME_MAX + 1];
    char scene[TB_PROTO_NAME_MAX + 1]; /* "" when the hello names none */
    char wanted_kind[TB_PROTO_NAME_MAX + 1];
    char name[TB_PROTO_NAME_MAX + 1];
    bool watch;             /* JOIN as a watcher (PROTOCOL.md "Watchers") */
    uint32_t kbps;          /* the bandwidth cap the hello asks for, kbit/s (0: none; PROTOCOL.md "Bandwidth budgets") */
    double ping_time;
    /* PING's link report (PROTOCOL.md "Link reports"); has_* false when the client sent none.
     * Decoded here; net/link.c acts on it. */
    struct { bool has_ack_tick, has_rtt, has_recv_bytes; uint32_t ack_tick, recv_bytes; double rtt_ms; } link;
    tb_input input;         /* INPUT (and seq for every message) */
} tb_client_msg;

/* TB_OK (0) and *out filled, or a tb_proto_code with a reason in err. */
int tb_wire_decode(const void *data, size_t len, tb_client_msg *out, tb_proto_err *err);

/* Encoders return a new message with one reference, or NULL (no memory). */

/* Welcome (type TB_MSG_WELCOME) or scene change (TB_MSG_SCENE) with the
 * room's static description and a keyframe of its encoder's current state. */
tb_msg *tb_wire_welcome(struct tb_room *room, uint32_t client, const char *instance, int type);
/* The calling thread's welcome builder (large: one per worker thread, not
 * one per room); tb_wire_welcome fills it too. */
tb_proto_welcome *tb_wire_scratch(void);
/* A snapshot blob of the room's encoder as a shared message. */
tb_msg *tb_wire_snap_blob(const tb_snap_blob *blob, uint64_t serial);
/* One client's frame for a blob message: bytes written into out (with
 * room for LWS_PRE in front decided by the caller), 0 if cap is short. */
size_t tb_wire_snap_frame(const tb_msg *blob, uint32_t last_seq, uint8_t *out, size_t cap);

tb_msg *tb_wire_error(int code, const char *message, int64_t seq);
tb_msg *tb_wire_pong(double client_time, double server_time);
tb_msg *tb_wire_param_changed(const char *name, double value, uint32_t by, const char *by_name);
tb_msg *tb_wire_reset(const char *action, uint32_t by, const char *by_name);
tb_msg *tb_wire_dice(uint32_t tick, const uint32_t *faces, uint32_t n);
tb_msg *tb_wire_peer_joined(uint32_t id, const char *name);
tb_msg *tb_wire_peer_left(uint32_t id);
tb_msg *tb_wire_watchers(uint32_t count);
tb_msg *tb_wire_contacts(uint32_t tick, const tb_proto_contact *contacts, uint32_t n);
tb_msg *tb_wire_lobby(const struct tb_room_row *rows, int n);

/* The protocol error code for a server error (sim/error.h). */
int tb_wire_code(int tb_error);

#endif
