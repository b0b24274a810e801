/* wire.h: the messages the server sends and receives, as bytes.
 *
 * The one place that knows the wire format. Workers call the encoders for
 * welcome, snapshots and room events; the network thread calls the decoder
 * on every client frame and the encoders for errors and pongs. The format
 * itself is specified in proto/PROTOCOL.md; this file adapts it to the
 * server's records (tb_input, tb_msg).
 *
 * Every decoder treats its input as hostile: lengths and types are checked
 * before use, numbers must be finite, strings bounded.
 */
#ifndef TB_WIRE_H
#define TB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/input.h"
#include "sim/metrics.h"
#include "sim/msg.h"

#define TB_WIRE_VERSION 1

struct tb_room;

typedef enum tb_client_kind {
    TB_CLIENT_JOIN = 1,
    TB_CLIENT_PING,
    TB_CLIENT_INPUT, /* everything a room applies: see tb_input */
    TB_CLIENT_ACK,   /* snapshot acknowledgement */
} tb_client_kind;

typedef struct tb_client_msg {
    int kind;                 /* tb_client_kind */
    char room[40];            /* JOIN: room id (validated later) */
    char scene[24];           /* JOIN: scene for a room that does not exist yet */
    char name[32];            /* JOIN: player name (optional) */
    double ping_time;         /* PING: client clock, echoed */
    uint64_t ack_tick;        /* ACK */
    tb_input input;           /* INPUT */
} tb_client_msg;

/* 0 and *out filled, or a negative tb_reject_reason-coded failure:
 * returns -(TB_REJECT_xxx + 1) and writes a human reason into why. */
int tb_wire_decode(const void *data, size_t len, tb_client_msg *out, char *why, size_t why_cap);

/* Encoders return a new message with one reference, or NULL (no memory). */
tb_msg *tb_wire_welcome(const struct tb_room *room, uint32_t client, const char *instance);
tb_msg *tb_wire_snapshot(const struct tb_room *room);
tb_msg *tb_wire_param(const char *name, float value, uint32_t author, uint64_t tick);
/* A world event (already packed msgpack object) wrapped for broadcast. */
tb_msg *tb_wire_event(const void *packed, size_t len, uint64_t tick);
tb_msg *tb_wire_error(const char *code, const char *message, uint32_t seq);
tb_msg *tb_wire_pong(double client_time, int64_t server_ns, uint64_t tick);
tb_msg *tb_wire_ack(uint32_t seq, uint64_t tick);

#endif
