/* ring.h: a bounded, lock-free queue of fixed-size records.
 *
 * This is how the threads talk: inputs go network thread -> room (one ring
 * per room), encoded snapshots and events go worker -> network thread (one
 * ring per worker). A ring never grows: a full ring refuses the push with
 * TB_RING_EFULL and the producer decides what that means (an input is
 * rejected with an error to the client; a snapshot is dropped because a
 * newer one will follow).
 *
 * The algorithm is Dmitry Vyukov's bounded MPMC queue: every cell carries a
 * sequence number that tells producers and consumers whose turn the cell is,
 * so a push or pop is one compare-and-swap on the shared index plus one
 * release store on the cell. Records are copied in and out by value, which
 * keeps ownership simple: a pointer inside a record belongs to whoever holds
 * the record.
 *
 * Lifecycle in the libuv style: tb_ring_init / tb_ring_push / tb_ring_pop /
 * tb_ring_close. Capacity is rounded up to a power of two.
 */
#ifndef TB_RING_H
#define TB_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TB_RING_EFULL (-1)
#define TB_RING_ENOMEM (-2)
#define TB_RING_EINVAL (-3)

typedef struct tb_ring {
    unsigned char *cells; /* capacity * stride bytes: [seq][record] */
    size_t stride;        /* bytes per cell, aligned */
    size_t record_size;
    size_t mask;          /* capacity - 1 */
    _Alignas(64) atomic_size_t head; /* next cell to push */
    _Alignas(64) atomic_size_t tail; /* next cell to pop */
} tb_ring;

int tb_ring_init(tb_ring *ring, size_t capacity, size_t record_size);
/* Copies record in. 0, or TB_RING_EFULL when the ring holds capacity records. */
int tb_ring_push(tb_ring *ring, const void *record);
/* Copies the oldest record out. 1 when a record was popped, 0 when empty. */
int tb_ring_pop(tb_ring *ring, void *record);
/* Approximate count (exact when no push or pop runs concurrently). */
size_t tb_ring_count(const tb_ring *ring);
size_t tb_ring_capacity(const tb_ring *ring);
/* Frees the cells; records still inside are dropped without inspection. */
void tb_ring_close(tb_ring *ring);

#endif
