/* replay.h: re-simulating a record (sim/record.h) from its bytes in memory.
 *
 * One engine for both places a record is replayed: `tumble-server --replay
 * FILE` (sim/record.c reads the file and runs it to the end) and the
 * browser's replay viewer (the same C built for WebAssembly, which runs it
 * step by step and draws each state). The engine loads the record's start
 * state (sim/room_image.h) and walks its records the way the room's worker
 * lived them (sim/sched.c): inputs applied before the step of their tick,
 * a step = world step, tick + 1, fault check, events taken; every HASH
 * record is compared with the world's hash at its tick. No I/O, no threads,
 * no clock.
 */
#ifndef TB_REPLAY_H
#define TB_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/room.h"

#define TB_RECORD_MAGIC "TBREC001"
#define TB_RECORD_MAX_IMAGE (64u << 20)
/* The worker's rate (TB_STEP_HZ, sim/sched.h; record.c asserts they agree). */
#define TB_REPLAY_STEP_HZ 120

typedef struct tb_replay tb_replay;

/* One record's outcome, from tb_replay_next. */
typedef struct tb_replay_event {
    int kind;          /* 'I' an input applied, 'H' a hash compared */
    uint64_t tick;     /* the record's tick */
    tb_input input;    /* 'I': as recorded */
    int result;        /* 'I': what the room answered (0 or a TB_E* code) */
    uint64_t want;     /* 'H': the recorded hash */
    uint64_t got;      /* 'H': the replay's */
} tb_replay_event;

/* Parse a record held in buf (len bytes, copied: the caller may free it)
 * and load its start state. TB_EINVAL with a reason in why when it is not a
 * record; TB_ENOMEM. A record cut short (a crash) ends at its last whole
 * record. */
int tb_replay_open(const unsigned char *buf, size_t len, tb_replay **out, char *why, size_t cap);
void tb_replay_close(tb_replay *rp);

/* Apply the next record, stepping the world up to its tick first.
 * 1 and *ev filled; 0 at the end of the record; -1 when the record is
 * broken there (out of order, unknown kind: tb_replay_error says what). */
int tb_replay_next(tb_replay *rp, tb_replay_event *ev);
/* Step the world once, as the worker does between inputs. */
void tb_replay_step(tb_replay *rp);
/* The tick of the next record, or UINT64_MAX at the end. */
uint64_t tb_replay_peek_tick(const tb_replay *rp);

/* The room being replayed (its world, ops, scene and tick). */
tb_room *tb_replay_room(tb_replay *rp);
/* The tick the record starts at, and the last tick any record names. */
uint64_t tb_replay_start_tick(const tb_replay *rp);
uint64_t tb_replay_end_tick(const tb_replay *rp);
/* Records in the file, and of those hashes. */
uint64_t tb_replay_record_count(const tb_replay *rp);
uint64_t tb_replay_hash_count(const tb_replay *rp);
/* Times the world's static description changed (a scene select, a cloth
 * grid parameter): a viewer rebuilds what it draws when this moves. */
uint64_t tb_replay_static_changes(const tb_replay *rp);
const char *tb_replay_error(const tb_replay *rp);

#endif
