/* ring.c: Vyukov's bounded MPMC queue (see ring.h for the why).
 *
 * Cell i starts with sequence i. A producer that reserved position pos may
 * write the cell when seq == pos, then publishes seq = pos + 1. A consumer
 * at position pos may read when seq == pos + 1, then frees the cell for the
 * producer one lap later with seq = pos + capacity. seq - pos < 0 for a
 * producer means the ring is full; for a consumer, empty.
 */
#include "sim/ring.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    atomic_size_t seq;
} tb__cell_head;

#define TB__CELL_ALIGN 16

static tb__cell_head *tb__cell(const tb_ring *ring, size_t pos)
{
    return (tb__cell_head *)(ring->cells + (pos & ring->mask) * ring->stride);
}

static void *tb__cell_data(tb__cell_head *cell)
{
    return (unsigned char *)cell + TB__CELL_ALIGN;
}

int tb_ring_init(tb_ring *ring, size_t capacity, size_t record_size)
{
    memset(ring, 0, sizeof *ring);
    if (capacity < 2 || capacity > ((size_t)1 << 24) || record_size == 0)
        return TB_RING_EINVAL;
    size_t cap = 2;
    while (cap < capacity)
        cap <<= 1;
    ring->record_size = record_size;
    ring->stride = (TB__CELL_ALIGN + record_size + TB__CELL_ALIGN - 1) / TB__CELL_ALIGN * TB__CELL_ALIGN;
    ring->mask = cap - 1;
    ring->cells = aligned_alloc(64, (cap * ring->stride + 63) / 64 * 64);
    if (!ring->cells)
        return TB_RING_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        atomic_init(&tb__cell(ring, i)->seq, i);
    atomic_init(&ring->head, 0);
    atomic_init(&ring->tail, 0);
    return 0;
}

int tb_ring_push(tb_ring *ring, const void *record)
{
    size_t pos = atomic_load_explicit(&ring->head, memory_order_relaxed);
    for (;;) {
        tb__cell_head *cell = tb__cell(ring, pos);
        size_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&ring->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                memcpy(tb__cell_data(cell), record, ring->record_size);
                atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
                return 0;
            }
        } else if (dif < 0) {
            return TB_RING_EFULL;
        } else {
            pos = atomic_load_explicit(&ring->head, memory_order_relaxed);
        }
    }
}

int tb_ring_pop(tb_ring *ring, void *record)
{
    size_t pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    for (;;) {
        tb__cell_head *cell = tb__cell(ring, pos);
        size_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&ring->tail, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                memcpy(record, tb__cell_data(cell), ring->record_size);
                atomic_store_explicit(&cell->seq, pos + ring->mask + 1, memory_order_release);
                return 1;
            }
        } else if (dif < 0) {
            return 0;
        } else {
            pos = atomic_load_explicit(&ring->tail, memory_order_relaxed);
        }
    }
}

size_t tb_ring_count(const tb_ring *ring)
{
    size_t head = atomic_load_explicit(&((tb_ring *)ring)->head, memory_order_acquire);
    size_t tail = atomic_load_explicit(&((tb_ring *)ring)->tail, memory_order_acquire);
    return head >= tail ? head - tail : 0;
}

size_t tb_ring_capacity(const tb_ring *ring)
{
    return ring->mask + 1;
}

void tb_ring_close(tb_ring *ring)
{
    free(ring->cells);
    ring->cells = NULL;
}
