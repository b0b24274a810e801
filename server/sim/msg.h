/* msg.h: an encoded message that several sessions can share.
 *
 * A worker encodes a room's snapshot once and every session of the room
 * sends the same bytes: the buffer is reference counted (atomically, since
 * it is made on a worker and released on the network thread). The bytes
 * start TB_MSG_HEADROOM bytes into the allocation so the network layer can
 * hand them to lws_write(), which needs LWS_PRE writable bytes in front
 * (net/ checks TB_MSG_HEADROOM >= LWS_PRE at compile time).
 */
#ifndef TB_MSG_H
#define TB_MSG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_MSG_HEADROOM 32

typedef struct tb_msg {
    atomic_int refs;
    size_t len;
    uint64_t tick;     /* the room tick this message describes (0: none) */
    int64_t made_ns;   /* monotonic time it was encoded, for latency figures */
    /* Snapshot blobs (a shared tail that each client's frame prefixes with
     * its own last input seq, see tb_snap_write): */
    int type;          /* TB_MSG_SNAP_KEY / TB_MSG_SNAP_DELTA, else 0 */
    uint32_t base_tick;/* delta: the tick the client must hold */
    uint32_t fields;   /* envelope length the prefix needs */
    uint64_t serial;   /* inputs of the room applied up to this arrival number */
    bool from_room;    /* a lane's delta whose base is the room's own stream's state at
                          base_tick: a client on that stream may move to the lane with it */
    /* Room events whose newest copy is all a client needs (PROTOCOL.md §8,
     * "What a client is sent"): a session keeps at most one unsent message
     * per (supersede, supersede_key) and replaces it with the newer one.
     * TB_SUPERSEDE_NONE: must arrive, in order, every one. */
    int supersede;
    uint32_t supersede_key; /* param: hash of its name; presence: the peer id */
    _Alignas(16) unsigned char storage[]; /* TB_MSG_HEADROOM + len bytes */
} tb_msg;

enum {
    TB_SUPERSEDE_NONE = 0,
    TB_SUPERSEDE_PARAM,       /* param_changed, per parameter name */
    TB_SUPERSEDE_PEER_JOINED, /* peer_joined, per peer id */
    TB_SUPERSEDE_PEER_LEFT,   /* peer_left, per peer id: cancels an unsent peer_joined of the same id */
    TB_SUPERSEDE_SCENE,       /* scene (static description + keyframe) */
    TB_SUPERSEDE_RESET,       /* reset / knock / rebuild / throw_dice announcements */
    TB_SUPERSEDE_DICE,        /* dice results */
    TB_SUPERSEDE_CONTACTS,    /* the contacts view of a tick */
    TB_SUPERSEDE_WATCHERS,    /* the room's watcher count */
};

/* A message of `len` bytes with one reference, or NULL. */
tb_msg *tb_msg_new(size_t len);
/* Copies `len` bytes into a new message. */
tb_msg *tb_msg_from(const void *data, size_t len);
tb_msg *tb_msg_ref(tb_msg *msg);
void tb_msg_unref(tb_msg *msg);

static inline unsigned char *tb_msg_data(tb_msg *msg) { return msg->storage + TB_MSG_HEADROOM; }

#endif
