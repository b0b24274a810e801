/* predict.c: the browser's prediction world for predicted grabs, in the
 * WebAssembly build (`make wasm`; client-web/src/physics/predict.js). Not part
 * of the server.
 *
 * The client keeps a rigid world of its own, reset to every snapshot it
 * receives (poses as sent, velocities it estimates from the previous snapshot,
 * bodies at rest put to sleep), and steps it forward with its own grab inputs
 * the server has not applied yet, so the body the player drags is drawn where
 * the server will have it when those inputs arrive. The kernel is the server's
 * (server/physics), so with the same inputs the grab servo moves the body as
 * the server's does; what differs is what the snapshot did not carry (exact
 * velocities, sleep timers, the contact cache), which each snapshot corrects.
 *
 * Bodies are named by their snapshot ids (uint16); the world's own ids are
 * whatever add_body gave. One grab at a time (the mouse or one finger).
 *
 *   tb_pred_create(capacity, friction, restitution)   a world, or 0
 *   tb_pred_add_plane(p, nx, ny, nz, offset)          the room's static planes
 *   tb_pred_begin(p); tb_pred_body(p, id, ...) per body; tb_pred_end(p)
 *   tb_pred_grab(p, id, x, y, z) / _grab_move(p, x, y, z) / _release(p)
 *   tb_pred_step(p)                                   one 1/120 s step
 *   tb_pred_pose(p, id)                               7 floats: position, rotation
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid.h"

#define TB__EXPORT __attribute__((visibility("default")))
#define TB__IDS 65536 /* snapshot body ids are uint16 */

typedef struct tb_pred {
    tb_rigid_world *world;
    int capacity;
    int32_t local[TB__IDS]; /* snapshot id -> world id, or -1 */
    int32_t *sid;           /* world id -> snapshot id, or -1 */
    uint8_t *seen;          /* world id: in the snapshot being loaded */
    float *shape;           /* world id: kind, size x, y, z (reuse the body while they match) */
    int grab, grab_sid;     /* the world's grab handle (or -1) and the body it holds */
    float pose[7];
} tb_pred;

TB__EXPORT void tb_pred_destroy(tb_pred *p)
{
    if (!p)
        return;
    if (p->world)
        tb_rigid_world_destroy(p->world);
    free(p->sid);
    free(p->seen);
    free(p->shape);
    free(p);
}

TB__EXPORT tb_pred *tb_pred_create(int capacity, float friction, float restitution)
{
    tb_pred *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    p->world = tb_rigid_world_create(&def);
    p->sid = malloc(sizeof *p->sid * (size_t)(capacity > 0 ? capacity : 1));
    p->seen = calloc((size_t)(capacity > 0 ? capacity : 1), 1);
    p->shape = calloc((size_t)(capacity > 0 ? capacity : 1) * 4, sizeof *p->shape);
    if (!p->world || !p->sid || !p->seen || !p->shape) {
        tb_pred_destroy(p);
        return NULL;
    }
    tb_rigid_world_set_friction(p->world, friction);
    tb_rigid_world_set_restitution(p->world, restitution);
    p->capacity = capacity;
    for (int i = 0; i < TB__IDS; i++)
        p->local[i] = -1;
    for (int i = 0; i < capacity; i++)
        p->sid[i] = -1;
    p->grab = -1;
    p->grab_sid = -1;
    return p;
}

TB__EXPORT int tb_pred_add_plane(tb_pred *p, float nx, float ny, float nz, float offset)
{
    return tb_rigid_world_add_plane(p->world, tb_v3(nx, ny, nz), offset);
}

TB__EXPORT void tb_pred_begin(tb_pred *p) { memset(p->seen, 0, (size_t)p->capacity); }

static void tb__remove(tb_pred *p, int id)
{
    if (p->sid[id] == p->grab_sid) {
        p->grab = -1; /* the world ends a removed body's grabs */
        p->grab_sid = -1;
    }
    p->local[p->sid[id]] = -1;
    p->sid[id] = -1;
    tb_rigid_world_remove_body(p->world, id);
}

/* Body `sid` as the snapshot has it: kind 0 box (half extents sx, sy, sz),
 * 1 sphere (radius sx). A body whose shape changed is made anew. Returns 0 or
 * a physics error (world full, a value out of range). */
TB__EXPORT int tb_pred_body(tb_pred *p, int sid, int kind, float sx, float sy, float sz, float density,
                            float px, float py, float pz, float qx, float qy, float qz, float qw,
                            float vx, float vy, float vz, float wx, float wy, float wz, int asleep)
{
    if (sid < 0 || sid >= TB__IDS)
        return TB_PHYS_ERR_INVALID;
    int id = p->local[sid];
    if (id >= 0 && (p->shape[id * 4] != (float)kind || p->shape[id * 4 + 1] != sx || p->shape[id * 4 + 2] != sy ||
                    p->shape[id * 4 + 3] != sz)) {
        tb__remove(p, id);
        id = -1;
    }
    tb_vec3 pos = tb_v3(px, py, pz);
    tb_quat rot = {qx, qy, qz, qw};
    if (id < 0) {
        tb_rigid_body_def d = tb_rigid_body_def_default();
        d.shape = kind == 1 ? TB_RIGID_SPHERE : TB_RIGID_BOX;
        d.half_extents = tb_v3(sx, sy, sz);
        d.radius = sx;
        d.density = density;
        d.position = pos;
        d.rotation = rot;
        id = tb_rigid_world_add_body(p->world, &d);
        if (id < 0)
            return id;
        p->local[sid] = id;
        p->sid[id] = sid;
        p->shape[id * 4] = (float)kind;
        p->shape[id * 4 + 1] = sx;
        p->shape[id * 4 + 2] = sy;
        p->shape[id * 4 + 3] = sz;
    } else {
        int rc = tb_rigid_body_set_pose(p->world, id, pos, rot);
        if (rc < 0)
            return rc;
    }
    p->seen[id] = 1;
    if (asleep)
        return tb_rigid_body_sleep(p->world, id);
    return tb_rigid_body_set_velocity(p->world, id, tb_v3(vx, vy, vz), tb_v3(wx, wy, wz));
}

/* Every body the snapshot just loaded did not name is gone. */
TB__EXPORT void tb_pred_end(tb_pred *p)
{
    for (int id = 0; id < p->capacity; id++)
        if (p->sid[id] >= 0 && !p->seen[id])
            tb__remove(p, id);
}

TB__EXPORT void tb_pred_release(tb_pred *p)
{
    if (p->grab >= 0)
        tb_rigid_world_grab_end(p->world, p->grab);
    p->grab = -1;
    p->grab_sid = -1;
}

/* Holds body `sid` at the world point (x, y, z), target there: as the server's
 * grab_start. Replaces the grab held before. */
TB__EXPORT int tb_pred_grab(tb_pred *p, int sid, float x, float y, float z)
{
    tb_pred_release(p);
    if (sid < 0 || sid >= TB__IDS || p->local[sid] < 0)
        return TB_PHYS_ERR_NO_BODY;
    int g = tb_rigid_world_grab_start(p->world, p->local[sid], tb_v3(x, y, z));
    if (g < 0)
        return g;
    p->grab = g;
    p->grab_sid = sid;
    return 0;
}

TB__EXPORT int tb_pred_grab_move(tb_pred *p, float x, float y, float z)
{
    return p->grab < 0 ? TB_PHYS_ERR_UNKNOWN_GRAB : tb_rigid_world_grab_move(p->world, p->grab, tb_v3(x, y, z));
}

TB__EXPORT int tb_pred_step(tb_pred *p) { return tb_rigid_world_step(p->world, 1.0f / 120.0f); }

TB__EXPORT int tb_pred_awake(const tb_pred *p) { return tb_rigid_world_awake_count(p->world); }

/* Position and rotation (x, y, z, w) of body `sid`, or NULL when the world has no such body. */
TB__EXPORT const float *tb_pred_pose(tb_pred *p, int sid)
{
    if (sid < 0 || sid >= TB__IDS || p->local[sid] < 0)
        return NULL;
    tb_vec3 pos;
    tb_quat rot;
    if (tb_rigid_body_get_pose(p->world, p->local[sid], &pos, &rot) < 0)
        return NULL;
    p->pose[0] = pos.x;
    p->pose[1] = pos.y;
    p->pose[2] = pos.z;
    p->pose[3] = rot.x;
    p->pose[4] = rot.y;
    p->pose[5] = rot.z;
    p->pose[6] = rot.w;
    return p->pose;
}
