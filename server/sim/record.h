/* record.h: per-room input logs with state hashes, and their replay.
 *
 * With --record DIR, each room writes DIR/<room>-<unix ms>.rec while it
 * lives on its worker: a header with the room's full saved state at the
 * moment recording began (sim/persist.h image), then in order
 *
 *   INPUT  the tick it was applied before, and the tb_input as applied
 *          (client, pointer, numbers: everything but arrival time matters)
 *   HASH   a tick and the world's state hash after that tick's step,
 *          every TB_RECORD_HASH_EVERY ticks
 *
 * `tumble-server --replay FILE` loads the header's state and re-simulates
 * headless the way the worker does (apply inputs, step, fault check, dice
 * poll), comparing every hash. The worlds are deterministic, so a recorded
 * session replays bit-identically: any mismatch is a bug (or a changed
 * build), reported with the first tick that differs.
 *
 * Only the room's worker writes its record (buffered, flushed with every
 * hash record); a record ends when the room is dropped.
 */
#ifndef TB_RECORD_H
#define TB_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/input.h"

#define TB_RECORD_HASH_EVERY 60

struct tb_room;
typedef struct tb_record tb_record;

/* NULL when the file cannot be made (reported in why). */
tb_record *tb_record_open(const char *dir, const struct tb_room *room, char *why, size_t cap);
void tb_record_input(tb_record *rec, uint64_t tick, const tb_input *in);
void tb_record_hash(tb_record *rec, uint64_t tick, uint64_t hash);
void tb_record_close(tb_record *rec);
const char *tb_record_path(const tb_record *rec);

typedef struct tb_replay_result {
    uint64_t inputs, hashes, matched, ticks;
    uint64_t first_bad_tick; /* valid when matched < hashes */
    char room[40], scene[24];
    char error[200];         /* file unreadable or not a record */
} tb_replay_result;

/* Re-simulate a record. 0 when every hash matched, 1 when one did not,
 * -1 when the file is not a valid record (result->error says why). */
int tb_replay_file(const char *path, tb_replay_result *result);

#endif
