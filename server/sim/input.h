/* input.h: one client input, as the room's worker receives it.
 *
 * The network thread decodes a client message (treating it as hostile),
 * checks its numbers are finite, stamps the client id and arrival time, and
 * pushes one of these records into the room's input ring. The worker applies
 * them at the start of the next step, in arrival order. The record is plain
 * data (no pointers) so the ring can copy it.
 */
#ifndef TB_INPUT_H
#define TB_INPUT_H

#include <stdint.h>

typedef enum tb_input_type {
    TB_INPUT_JOIN = 1,   /* client enters: the worker answers with welcome */
    TB_INPUT_LEAVE,      /* client left: release its grabs */
    TB_INPUT_THROW,      /* pos = origin, vec = velocity, flags = shape */
    TB_INPUT_POKE,       /* target = body/vertex (-1: ray), pos = point, vec = impulse */
    TB_INPUT_GRAB_START, /* pointer, target, pos = grab point */
    TB_INPUT_GRAB_MOVE,  /* pointer, pos = new target point */
    TB_INPUT_GRAB_END,   /* pointer */
    TB_INPUT_PARAM,      /* name = value */
    TB_INPUT_RESET,      /* rebuild the scene; flags = 1: knock-down (tower); name = action */
    TB_INPUT_SCENE,      /* name = scene to load (same kind) */
    TB_INPUT_CONTACTS,   /* flags = 1 on, 0 off: contacts view for this client */
    /* internal (never decoded from a client): the network thread asks the
     * worker for the room's state image (net/fleet.h); flags = 1: the last
     * one, the room stops stepping after it (a drain) */
    TB_INPUT_CHECKPOINT = 100,
} tb_input_type;

#define TB_INPUT_NAME_MAX 40 /* protocol names are up to 32 bytes */

typedef struct tb_input {
    uint8_t type;   /* tb_input_type */
    uint8_t flags;
    uint16_t _pad;
    uint32_t client;  /* session id */
    uint32_t pointer; /* grab pointer id, unique per client */
    uint32_t seq;     /* client's sequence number (echoed in acks) */
    int32_t target;   /* body or vertex index; -1: none */
    float pos[3];
    float vec[3];
    double value_d;   /* PARAM: the value as sent */
    char name[TB_INPUT_NAME_MAX]; /* parameter or scene, NUL terminated */
    int64_t recv_ns;  /* arrival, monotonic (input-to-snapshot latency) */
    uint64_t serial;  /* per-room arrival number (network thread), so a snapshot can
                         tell each client which of its inputs it already contains */
    char by_name[33]; /* JOIN: the player's display name */
} tb_input;

#endif
