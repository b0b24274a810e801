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
    _Alignas(16) unsigned char storage[]; /* TB_MSG_HEADROOM + len bytes */
} tb_msg;

/* A message of `len` bytes with one reference, or NULL. */
tb_msg *tb_msg_new(size_t len);
/* Copies `len` bytes into a new message. */
tb_msg *tb_msg_from(const void *data, size_t len);
tb_msg *tb_msg_ref(tb_msg *msg);
void tb_msg_unref(tb_msg *msg);

static inline unsigned char *tb_msg_data(tb_msg *msg) { return msg->storage + TB_MSG_HEADROOM; }

#endif
