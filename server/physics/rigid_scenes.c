/* rigid_scenes.c: the seed's scenes as data, plus throws.
 *
 * Numbers come straight from the seed (demosSim.ts makeRigidDemo): tray
 * 8 x 5 m, dice thrown from the left, the plank tower with 1.5 mm gaps
 * between layers (so nothing starts overlapping and nothing is pushed apart
 * on the first step), and the heavy ball that knocks it down.
 *
 * The settled tower is computed here (a pure function of the world's def);
 * remembering it between builds is the caller's business (sim/tower_memo.c
 * keeps one memo per scheduler), so physics holds no state of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "physics/rigid_scenes.h"

/* ---- splitmix64 ------------------------------------------------------------------- */

tb_rigid_rng tb_rigid_rng_seed(uint64_t seed)
{
    tb_rigid_rng r = {seed};
    return r;
}

uint64_t tb_rigid_rng_next(tb_rigid_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tb_rigid_rng_float(tb_rigid_rng *rng)
{
    return (float)(tb_rigid_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
}

/* ---- scenes ------------------------------------------------------------------------------ */

int tb_rigid_scene_tray(tb_rigid_world *w)
{
    int r;
    if ((r = tb_rigid_world_add_plane(w, tb_v3(0, 1, 0), 0.0f)) < 0) return r;
    if ((r = tb_rigid_world_add_plane(w, tb_v3(1, 0, 0), -TB_TRAY_HALF_X)) < 0) return r;
    if ((r = tb_rigid_world_add_plane(w, tb_v3(-1, 0, 0), -TB_TRAY_HALF_X)) < 0) return r;
    if ((r = tb_rigid_world_add_plane(w, tb_v3(0, 0, 1), -TB_TRAY_HALF_Z)) < 0) return r;
    if ((r = tb_rigid_world_add_plane(w, tb_v3(0, 0, -1), -TB_TRAY_HALF_Z)) < 0) return r;
    return TB_PHYS_OK;
}

/* three.js Euler (order XYZ) to quaternion: q = qx * qy * qz. */
static tb_quat quat_from_euler_xyz(float x, float y, float z)
{
    tb_quat qx = tb_q_axis_angle(tb_v3(1, 0, 0), x);
    tb_quat qy = tb_q_axis_angle(tb_v3(0, 1, 0), y);
    tb_quat qz = tb_q_axis_angle(tb_v3(0, 0, 1), z);
    return tb_q_mul(tb_q_mul(qx, qy), qz);
}

static tb_rigid_body_def die_def(void)
{
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.shape = TB_RIGID_BOX;
    d.half_extents = tb_v3(0.25f, 0.25f, 0.25f);
    d.density = 1.0f;
    d.look.kind = TB_LOOK_DIE;
    return d;
}

int tb_rigid_scene_dice(tb_rigid_world *w, tb_rigid_rng *rng, int dice_ids[TB_DICE_COUNT], int ball_ids[TB_DICE_BALLS])
{
    tb_rigid_world_clear(w);
    int r = tb_rigid_scene_tray(w);
    if (r < 0) return r;
    const float tau = 2.0f * TB_PI;
    for (int i = 0; i < TB_DICE_COUNT; i++) {
        tb_rigid_body_def d = die_def();
        /* the seed's order of random draws: euler x, y, z; position x, z;
         * velocity x, y, z; spin x, y, z */
        float ex = tb_rigid_rng_float(rng) * tau, ey = tb_rigid_rng_float(rng) * tau, ez = tb_rigid_rng_float(rng) * tau;
        d.rotation = quat_from_euler_xyz(ex, ey, ez);
        float px = -3.1f + tb_rigid_rng_float(rng) * 0.3f;
        float pz = -1.0f + (float)i * 1.0f + (tb_rigid_rng_float(rng) - 0.5f) * 0.3f;
        d.position = tb_v3(px, 1.2f + (float)i * 0.6f, pz);
        float vx = 5.0f + tb_rigid_rng_float(rng) * 2.5f;
        float vy = 0.6f + tb_rigid_rng_float(rng) * 1.2f;
        float vz = (tb_rigid_rng_float(rng) - 0.5f) * 2.4f;
        d.linear_velocity = tb_v3(vx, vy, vz);
        float wx = (tb_rigid_rng_float(rng) - 0.5f) * 24.0f;
        float wy = (tb_rigid_rng_float(rng) - 0.5f) * 24.0f;
        float wz = (tb_rigid_rng_float(rng) - 0.5f) * 24.0f;
        d.angular_velocity = tb_v3(wx, wy, wz);
        d.look.color = (uint8_t)i;
        int id = tb_rigid_world_add_body(w, &d);
        if (id < 0) return id;
        if (dice_ids) dice_ids[i] = id;
    }
    for (int i = 0; i < TB_DICE_BALLS; i++) {
        tb_rigid_body_def d = tb_rigid_body_def_default();
        d.shape = TB_RIGID_SPHERE;
        d.radius = 0.18f;
        d.density = 0.8f;
        d.position = tb_v3(0.6f + (float)i * 1.2f, 2.2f + (float)i * 0.4f, (i ? 1.0f : -1.0f) * 0.9f);
        float vx = -1.0f + tb_rigid_rng_float(rng) * 2.0f;
        float vz = (tb_rigid_rng_float(rng) - 0.5f) * 2.0f;
        d.linear_velocity = tb_v3(vx, 0.0f, vz);
        d.look.kind = TB_LOOK_BALL;
        d.look.color = (uint8_t)i; /* 0 yellow, 1 blue */
        int id = tb_rigid_world_add_body(w, &d);
        if (id < 0) return id;
        if (ball_ids) ball_ids[i] = id;
    }
    return TB_PHYS_OK;
}

int tb_rigid_scene_tower(tb_rigid_world *w, int plank_ids[TB_TOWER_PLANKS])
{
    tb_rigid_world_clear(w);
    int r = tb_rigid_scene_tray(w);
    if (r < 0) return r;
    const float cx = 1.7f, gap = 0.0015f, height = 0.3f;
    const tb_quat yaw = tb_q_axis_angle(tb_v3(0, 1, 0), 0.5f * TB_PI);
    for (int layer = 0; layer < TB_TOWER_PLANKS / 3; layer++) {
        for (int k = 0; k < 3; k++) {
            tb_rigid_body_def d = tb_rigid_body_def_default();
            d.shape = TB_RIGID_BOX;
            d.half_extents = tb_v3(0.75f, 0.15f, 0.24f);
            d.density = 0.6f;
            float o = (float)(k - 1) * 0.5f;
            float y = height / 2.0f + (float)layer * (height + gap) + gap;
            if (layer % 2 == 0) {
                d.position = tb_v3(cx, y, o);
            } else {
                d.position = tb_v3(cx + o, y, 0.0f);
                d.rotation = yaw;
            }
            d.look.kind = TB_LOOK_WOOD_PLANK;
            d.look.color = (uint8_t)((layer * 3 + k) * 7 % 4);
            int id = tb_rigid_world_add_body(w, &d);
            if (id < 0) return id;
            if (plank_ids) plank_ids[layer * 3 + k] = id;
        }
    }
    return TB_PHYS_OK;
}

/* ---- the settled tower -------------------------------------------------------------- */

int tb_rigid_scene_tower_settle(const tb_rigid_world_def *def, unsigned char **image, size_t *len)
{
    *image = NULL;
    *len = 0;
    tb_rigid_world *w = tb_rigid_world_create(def);
    if (!w) return TB_PHYS_ERR_NO_MEMORY;
    int rc = tb_rigid_scene_tower(w, NULL);
    for (int s = 0; rc == TB_PHYS_OK && s < TB_TOWER_SETTLE_MAX_STEPS; s++) {
        rc = tb_rigid_world_step(w, 1.0f / 120.0f);
        if (rc == TB_PHYS_OK && tb_rigid_world_awake_count(w) == 0) {
            size_t n = tb_rigid_world_bodies_size(w);
            *image = malloc(n);
            if (!*image) rc = TB_PHYS_ERR_NO_MEMORY;
            else rc = tb_rigid_world_save_bodies(w, *image, n, len);
            break;
        }
    }
    tb_rigid_world_destroy(w);
    if (rc != TB_PHYS_OK) {
        free(*image);
        *image = NULL;
        *len = 0;
    }
    return rc;
}

int tb_rigid_scene_tower_restore(tb_rigid_world *w, const unsigned char *image, size_t len,
                                 int plank_ids[TB_TOWER_PLANKS])
{
    if (!image) {
        int rc = tb_rigid_scene_tower(w, plank_ids);
        return rc < 0 ? rc : 0;
    }
    tb_rigid_world_clear(w);
    int rc = tb_rigid_scene_tray(w);
    if (rc < 0) return rc;
    rc = tb_rigid_world_restore_bodies(w, image, len);
    if (rc < 0) return rc;
    /* the scratch world built the planks into a cleared world: ids 0..23 */
    if (plank_ids)
        for (int i = 0; i < TB_TOWER_PLANKS; i++) plank_ids[i] = i;
    return 1;
}

int tb_rigid_scene_tower_settled(tb_rigid_world *w, int plank_ids[TB_TOWER_PLANKS])
{
    tb_rigid_world_def def;
    tb_rigid_world_get_def(w, &def);
    unsigned char *image;
    size_t len;
    int rc = tb_rigid_scene_tower_settle(&def, &image, &len);
    if (rc < 0) {
        /* short of memory, or a world too small for the tower: the plain
         * build, with its own error if it has one */
        rc = tb_rigid_scene_tower(w, plank_ids);
        return rc < 0 ? rc : 0;
    }
    rc = tb_rigid_scene_tower_restore(w, image, len, plank_ids);
    free(image);
    return rc;
}

int tb_rigid_scene_tower_launch_ball(tb_rigid_world *w)
{
    tb_rigid_body_def d = tb_rigid_body_def_default();
    d.shape = TB_RIGID_SPHERE;
    d.radius = 0.38f;
    d.density = 7.0f;
    d.position = tb_v3(-3.3f, 0.95f, 0.1f);
    d.linear_velocity = tb_v3(12.0f, 1.6f, 0.0f);
    d.look.kind = TB_LOOK_BALL;
    d.look.color = 2; /* red */
    return tb_rigid_world_add_body(w, &d);
}

int tb_rigid_scene_pile(tb_rigid_world *w, int n)
{
    if (n < 0 || n > tb_rigid_world_body_capacity(w)) return TB_PHYS_ERR_RANGE;
    tb_rigid_world_clear(w);
    int r = tb_rigid_scene_tray(w);
    if (r < 0) return r;
    for (int i = 0; i < n; i++) {
        int ix = i % 13, iz = (i / 13) % 8, iy = i / (13 * 8);
        tb_rigid_body_def d = tb_rigid_body_def_default();
        d.half_extents = tb_v3(0.25f, 0.25f, 0.25f);
        d.density = 1.0f;
        d.position = tb_v3(-3.6f + 0.6f * (float)ix, 0.5f + 0.6f * (float)iy, -2.1f + 0.6f * (float)iz);
        d.look.color = (uint8_t)(i % 8);
        int id = tb_rigid_world_add_body(w, &d);
        if (id < 0) return id;
    }
    return TB_PHYS_OK;
}

int tb_rigid_throw(tb_rigid_world *w, tb_rigid_throw_kind kind, tb_vec3 origin, tb_vec3 velocity,
                   tb_vec3 angular_velocity, uint8_t color)
{
    tb_rigid_body_def d;
    if (kind == TB_THROW_DIE) {
        d = die_def();
    } else if (kind == TB_THROW_BALL) {
        d = tb_rigid_body_def_default();
        d.shape = TB_RIGID_SPHERE;
        d.radius = 0.22f;
        d.density = 1.2f;
        d.look.kind = TB_LOOK_BALL;
    } else {
        return TB_PHYS_ERR_INVALID;
    }
    d.position = origin;
    d.linear_velocity = velocity;
    d.angular_velocity = angular_velocity;
    d.look.color = color;
    return tb_rigid_world_add_body(w, &d);
}
