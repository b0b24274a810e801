/* tower_memo.h: the settled towers a scheduler has computed, so a tower room
 * rebuilt every 5 s does not spend 0.5 s of every cycle at the most
 * expensive steps re-deriving the same bits.
 *
 * physics/ computes a settled tower (tb_rigid_scene_tower_settle: a pure
 * function of the world's def) and holds nothing; this memo remembers the
 * results keyed by everything the settle depends on (gravity, restitution,
 * friction, iterations, capacities, TB_TOWER_SCENE_VERSION). At most
 * TB_TOWER_MEMO_ENTRIES keys, the least recently used one evicted. The
 * scheduler owns one (tb_sched.tower_memo) and hands it to the rigid adapter
 * through tb_world_env; rooms are created on the network thread and rebuilt
 * on their worker, so it is shared behind a mutex: the settle runs outside
 * the lock (two threads missing the same key both compute it, with the same
 * result), lookups and restores inside it.
 */
#ifndef TB_TOWER_MEMO_H
#define TB_TOWER_MEMO_H

#include <pthread.h>
#include <stdint.h>

#include "physics/rigid_scenes.h"

#define TB_TOWER_MEMO_ENTRIES 8

typedef struct tb_tower_memo_stats {
    int entries;        /* keys held (<= TB_TOWER_MEMO_ENTRIES) */
    uint64_t hits;      /* builds served from the memo */
    uint64_t settles;   /* settles simulated */
    uint64_t unsettled; /* of those, settles that did not sleep in time */
} tb_tower_memo_stats;

typedef struct tb_tower_memo_key {
    float gravity[3], restitution, friction;
    int32_t iterations, capacity, contact_capacity, version;
} tb_tower_memo_key;

typedef struct tb_tower_memo_entry {
    tb_tower_memo_key key;
    uint64_t last_use;    /* memo clock at the last lookup; 0 = empty slot */
    unsigned char *image; /* body image of the settled tower; NULL = never settles */
    size_t image_len;
} tb_tower_memo_entry;

typedef struct tb_tower_memo {
    pthread_mutex_t lock;
    tb_tower_memo_entry entries[TB_TOWER_MEMO_ENTRIES];
    uint64_t clock;
    tb_tower_memo_stats counts;
} tb_tower_memo;

void tb_tower_memo_init(tb_tower_memo *memo);
/* Frees every image; init again before reuse. */
void tb_tower_memo_close(tb_tower_memo *memo);

/* tb_rigid_scene_tower_settled with the settle remembered: the world gets
 * the settled tower of its current def (from the memo, or settled now and
 * remembered). A settle that does not end within TB_TOWER_SETTLE_MAX_STEPS
 * gives the plain build, and its key remembers that; one that cannot run
 * (memory short, a world too small for the tower) gives the plain build and
 * its error, and is not remembered. Returns 1 (settled), 0 (plain build) or a
 * TB_RIGID_ERR_*; plank ids as tb_rigid_scene_tower. */
int tb_tower_memo_build(tb_tower_memo *memo, tb_rigid_world *world, int plank_ids[TB_TOWER_PLANKS]);

void tb_tower_memo_get_stats(tb_tower_memo *memo, tb_tower_memo_stats *out);

#endif
