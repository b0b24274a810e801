/* rigid_scenes.h: the rigid world's scenes as data (from the seed), and the
 * inputs users give them (throwing, knocking the tower down).
 *
 * Every scene clears the world first, then adds the tray and its bodies, so a
 * room resets a scene by calling its function again. Body ids come out in the
 * order documented per scene. Randomness comes from a seeded splitmix64
 * generator owned by the caller: same seed, same scene, same result.
 */
#ifndef TB_RIGID_SCENES_H
#define TB_RIGID_SCENES_H

#include <stdint.h>

#include "physics/rigid.h"

/* The tray: floor y = 0, walls x = +-4 and z = +-2.5 (planes facing inward). */
#define TB_TRAY_HALF_X 4.0f
#define TB_TRAY_HALF_Z 2.5f

/* Tower: 24 planks (8 layers of 3) at x = 1.7; the ball waits at
 * TB_TOWER_BALL_START and is launched at TB_TOWER_LAUNCH_TIME in the demo. */
#define TB_TOWER_PLANKS 24
#define TB_TOWER_LAUNCH_TIME 1.6f
#define TB_DICE_COUNT 3
#define TB_DICE_BALLS 2

/* Body capacity each scene needs (a room adds room for throws). */
#define TB_SCENE_TOWER_BODIES (TB_TOWER_PLANKS + 1)
#define TB_SCENE_DICE_BODIES (TB_DICE_COUNT + TB_DICE_BALLS)

typedef struct tb_rigid_rng {
    uint64_t state;
} tb_rigid_rng;

tb_rigid_rng tb_rigid_rng_seed(uint64_t seed);
uint64_t tb_rigid_rng_next(tb_rigid_rng *rng);
/* uniform in [0, 1) with 24 random bits */
float tb_rigid_rng_float(tb_rigid_rng *rng);

/* Floor and four walls. Returns TB_PHYS_OK or an error. */
int tb_rigid_scene_tray(tb_rigid_world *world);

/* Three 0.5 m dice (density 1, ids 0..2, thrown from the left with random
 * velocity and spin) and two small balls r = 0.18 (ids 3, 4). dice_ids and
 * ball_ids may be NULL. */
int tb_rigid_scene_dice(tb_rigid_world *world, tb_rigid_rng *rng, int dice_ids[TB_DICE_COUNT],
                        int ball_ids[TB_DICE_BALLS]);

/* 24 planks 1.5 x 0.3 x 0.48 (density 0.6), ids 0..23 bottom layer first. */
int tb_rigid_scene_tower(tb_rigid_world *world, int plank_ids[TB_TOWER_PLANKS]);

/* The tower as it is once it has settled: what tb_rigid_scene_tower followed
 * by 1/120 s steps until every plank sleeps gives (poses, zero velocities,
 * asleep, sleep timers and the warm-start cache of that last step).
 *
 * settle: simulates that in a scratch world made from `def` and gives its
 * body image (malloc'ed, the caller frees it) in *image, or NULL when the
 * tower does not sleep within TB_TOWER_SETTLE_MAX_STEPS. Returns an error
 * only when the scene cannot be built (a world too small) or memory is short.
 * The result depends on nothing but `def` and TB_TOWER_SCENE_VERSION, so a
 * caller may remember it keyed by them (sim/tower_memo.h does).
 *
 * restore: puts such an image into a world made from the same def at once
 * (cleared, the tray, the planks); its parameters, time and step count are
 * not touched otherwise. A NULL image gives the plain build. Returns 1 when
 * the settled tower was put in, 0 for the plain build, or an error; plank
 * ids as tb_rigid_scene_tower.
 *
 * settled: settle (with the world's own def, tb_rigid_world_get_def) then
 * restore, remembering nothing; a settle that cannot run gives the plain
 * build and its error. */
#define TB_TOWER_SCENE_VERSION 1 /* bump when tb_rigid_scene_tower builds anything else */
#define TB_TOWER_SETTLE_MAX_STEPS 360 /* 3 s at 1/120 s */
int tb_rigid_scene_tower_settle(const tb_rigid_world_def *def, unsigned char **image, size_t *len);
int tb_rigid_scene_tower_restore(tb_rigid_world *world, const unsigned char *image, size_t len,
                                 int plank_ids[TB_TOWER_PLANKS]);
int tb_rigid_scene_tower_settled(tb_rigid_world *world, int plank_ids[TB_TOWER_PLANKS]);

/* The knock-down input: adds the heavy ball (r = 0.38, density 7) at
 * (-3.3, 0.95, 0.1) moving (12, 1.6, 0). Returns its id or an error. */
int tb_rigid_scene_tower_launch_ball(tb_rigid_world *world);

/* n cubes of 0.5 m on a 0.6 m grid: 13 along x from x = -3.6, 8 along z from
 * z = -2.1, layers 0.6 m apart from y = 0.5. Ids 0..n-1. */
int tb_rigid_scene_pile(tb_rigid_world *world, int n);

typedef enum tb_rigid_throw_kind {
    TB_THROW_BALL = 0, /* sphere r = 0.22, density 1.2 (the seed's poke balls) */
    TB_THROW_DIE = 1,  /* 0.5 m die, density 1 */
} tb_rigid_throw_kind;

/* A user throw: spawns a ball or a die at origin with the given velocities.
 * color picks the ball's palette entry. Returns the id or an error. */
int tb_rigid_throw(tb_rigid_world *world, tb_rigid_throw_kind kind, tb_vec3 origin, tb_vec3 velocity,
                   tb_vec3 angular_velocity, uint8_t color);

#endif /* TB_RIGID_SCENES_H */
