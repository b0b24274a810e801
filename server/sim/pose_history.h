/* pose_history.h: the last half second of a rigid room's body poses, for
 * lag compensation (PROTOCOL.md "Lag compensation").
 *
 * A player aims at the world as it was when the snapshot it shows left the
 * server. The rigid room records every body's pose every
 * TB_POSE_HISTORY_EVERY steps into a ring of TB_POSE_HISTORY_SLOTS slots
 * (0.53 s at 120 Hz), and an input that names the tick its player saw is
 * resolved against the poses of that step: the body-local point aimed at,
 * carried to where that point of the body is now. Memory is fixed at
 * creation: 14 bytes a body a slot (positions in 1/2048 m cells within
 * +-16 m, quaternions in 1/32767), 24 kB for a tower room.
 */
#ifndef TB_POSE_HISTORY_H
#define TB_POSE_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "physics/rigid.h"
#include "physics/tb_math.h"

#define TB_POSE_HISTORY_EVERY 2  /* steps between two recorded slots (the snapshot rate's cadence) */
#define TB_POSE_HISTORY_SLOTS 32 /* x 2 steps = 64 steps = 0.53 s */
#define TB_POSE_HISTORY_STEPS (TB_POSE_HISTORY_EVERY * TB_POSE_HISTORY_SLOTS)

typedef struct tb_pose_history tb_pose_history;

/* For body ids 0..bodies-1. NULL when out of memory. */
tb_pose_history *tb_pose_history_create(int bodies);
void tb_pose_history_destroy(tb_pose_history *h);
/* The scene was rebuilt: there is no past to look at. */
void tb_pose_history_clear(tb_pose_history *h);
/* A new body took this id: what the slots hold of it is another body's. */
void tb_pose_history_forget(tb_pose_history *h, int body);
/* Open the slot of `step` (> every step recorded before), overwriting the
 * oldest; every body is absent from it until put. */
void tb_pose_history_begin(tb_pose_history *h, uint64_t step);
void tb_pose_history_put(tb_pose_history *h, int body, tb_vec3 pos, tb_quat rot);
/* The pose of `body` at `step`: interpolated between the recorded slots
 * around it, or between the newest one and the pose now (now_step).
 * false when the history does not reach back to it (too old, or the body
 * came later). */
bool tb_pose_history_at(const tb_pose_history *h, int body, uint64_t step, uint64_t now_step, tb_vec3 now_pos,
                        tb_quat now_rot, tb_vec3 *pos, tb_quat *rot);

/* A rigid world's step: on every TB_POSE_HISTORY_EVERY-th, every body's pose
 * into a new slot. */
void tb_pose_history_record(tb_pose_history *h, const tb_rigid_world *world);
/* Lag compensation (PROTOCOL.md "Lag compensation"). The player aimed at
 * `seen`, a world point on `body` as it stood `age` steps ago (the state its
 * screen showed). With that pose (p_then, q_then) and the pose now:
 *     local = q_then^-1 (seen - p_then)       the point in the body's frame
 *     point = p_now + q_now local             where that point is now
 * so the input lands on the spot of the body the player clicked, however far
 * the body has moved since. An age beyond the history (0.53 s) is capped at
 * what it holds (0.5 s); without a pose then (a body newer than that),
 * `seen` is returned as it is. */
tb_vec3 tb_pose_history_point_now(const tb_pose_history *h, const tb_rigid_world *world, int body, tb_vec3 seen, int age);

#endif
