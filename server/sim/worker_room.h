/* worker_room.h: what a worker does to one room, between sched.c (the
 * worker threads: when rooms are due, adoption, the output rings) and
 * worker_room.c (a room's inputs applied, its steps, snapshots and state
 * images). Only a room's own worker calls these.
 */
#ifndef TB_WORKER_ROOM_H
#define TB_WORKER_ROOM_H

#include <stdint.h>

#include "sim/sched.h"

/* sched.c: hand a produced message to the network thread (takes the
 * references on msg and key; a snapshot may be dropped for a newer one,
 * any other kind always arrives). */
void tb_worker_emit2(tb_worker *w, int kind, uint32_t client, tb_room *room, tb_msg *msg, tb_msg *key);
void tb_worker_emit(tb_worker *w, int kind, uint32_t client, tb_room *room, tb_msg *msg);

/* worker_room.c */
/* The steps the room owes at now, each after its queued inputs, with its
 * snapshots every snapshot_every ticks. */
void tb_worker_step_room(tb_worker *w, tb_room *room, int64_t now);
/* The queued inputs, in arrival order, before the room's next step. */
void tb_worker_apply_inputs(tb_worker *w, tb_room *room);
/* (Re)build the encoder for the world's frame and prime it with the
 * current state, so welcome and scene messages have a keyframe. */
int tb_worker_start_encoder(tb_room *room);

#endif
