/* pose_history.c: a ring of recent body poses (pose_history.h).
 *
 * Slot k holds, for every body id, its pose at step stamp[k] (stamp 0: the
 * slot is unused), packed in int16s: the position in 1/2048 m cells (error
 * 0.25 mm, range +-16 m, clamped beyond) and the quaternion's four
 * components in 1/32767 (an all-zero quaternion marks a body absent from
 * the slot). A lookup walks the at most 32 stamps for the two slots around
 * the step asked for and interpolates between them: positions linearly,
 * orientations by normalised lerp on the short way, which is what a client
 * interpolating between two snapshots draws too.
 */
#include "sim/pose_history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TB__POS_SCALE 2048.0f
#define TB__ROT_SCALE 32767.0f

typedef struct {
    int16_t p[3];
    int16_t q[4];
} tb__pose;
_Static_assert(sizeof(tb__pose) == 14, "a packed pose is 14 bytes");

struct tb_pose_history {
    int bodies;
    int newest;                              /* slot of the newest stamp, -1 when empty */
    uint64_t stamp[TB_POSE_HISTORY_SLOTS];   /* step of each slot; 0: unused */
    tb__pose *poses;                         /* [slot][body] */
};

/* roundf(v * scale) clamped to +-32767, 7 times per body per recorded step.
 * Below 32767 in magnitude without the libm call or the clamp: x + 1/2
 * (x - 1/2 below zero) is exact as a double (a float has 24 significant
 * bits, a double 53), and truncating it is rounding x half away from zero,
 * as roundf() does, to at most 32767. Beyond, and for NaN, roundf() itself.
 * (The same int16 for every float: checked over all 2^32 of them.) */
static inline int16_t tb__pack(float v, float scale)
{
    float x = v * scale;
    if (fabsf(x) < 32767.0f)
        return (int16_t)(int32_t)((double)x + (x < 0.0f ? -0.5 : 0.5));
    float c = roundf(x);
    return (int16_t)(c > 32767.0f ? 32767.0f : c < -32767.0f ? -32767.0f : c);
}

tb_pose_history *tb_pose_history_create(int bodies)
{
    tb_pose_history *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->bodies = bodies > 0 ? bodies : 1;
    h->poses = calloc((size_t)h->bodies * TB_POSE_HISTORY_SLOTS, sizeof *h->poses);
    if (!h->poses) {
        free(h);
        return NULL;
    }
    h->newest = -1;
    return h;
}

void tb_pose_history_destroy(tb_pose_history *h)
{
    if (!h)
        return;
    free(h->poses);
    free(h);
}

void tb_pose_history_clear(tb_pose_history *h)
{
    memset(h->stamp, 0, sizeof h->stamp);
    h->newest = -1;
}

void tb_pose_history_forget(tb_pose_history *h, int body)
{
    if (body < 0 || body >= h->bodies)
        return;
    for (int k = 0; k < TB_POSE_HISTORY_SLOTS; k++)
        memset(&h->poses[(size_t)k * h->bodies + body], 0, sizeof(tb__pose));
}

void tb_pose_history_begin(tb_pose_history *h, uint64_t step)
{
    h->newest = (h->newest + 1) % TB_POSE_HISTORY_SLOTS;
    h->stamp[h->newest] = step;
    memset(&h->poses[(size_t)h->newest * h->bodies], 0, (size_t)h->bodies * sizeof(tb__pose));
}

void tb_pose_history_put(tb_pose_history *h, int body, tb_vec3 pos, tb_quat rot)
{
    if (h->newest < 0 || body < 0 || body >= h->bodies)
        return;
    tb__pose *e = &h->poses[(size_t)h->newest * h->bodies + body];
    e->p[0] = tb__pack(pos.x, TB__POS_SCALE);
    e->p[1] = tb__pack(pos.y, TB__POS_SCALE);
    e->p[2] = tb__pack(pos.z, TB__POS_SCALE);
    e->q[0] = tb__pack(rot.x, TB__ROT_SCALE);
    e->q[1] = tb__pack(rot.y, TB__ROT_SCALE);
    e->q[2] = tb__pack(rot.z, TB__ROT_SCALE);
    e->q[3] = tb__pack(rot.w, TB__ROT_SCALE);
}

/* The body's packed pose in slot k, or NULL when it is absent there. */
static const tb__pose *tb__get(const tb_pose_history *h, int k, int body)
{
    const tb__pose *e = &h->poses[(size_t)k * h->bodies + body];
    return (e->q[0] | e->q[1] | e->q[2] | e->q[3]) ? e : NULL;
}

static void tb__unpack(const tb__pose *e, tb_vec3 *pos, tb_quat *rot)
{
    *pos = tb_v3(e->p[0] / TB__POS_SCALE, e->p[1] / TB__POS_SCALE, e->p[2] / TB__POS_SCALE);
    *rot = tb_q_norm(tb_q(e->q[0] / TB__ROT_SCALE, e->q[1] / TB__ROT_SCALE, e->q[2] / TB__ROT_SCALE,
                          e->q[3] / TB__ROT_SCALE));
}

/* Pose at fraction t between (pa, qa) and (pb, qb): lerp, and nlerp the short way. */
static void tb__blend(tb_vec3 pa, tb_quat qa, tb_vec3 pb, tb_quat qb, float t, tb_vec3 *pos, tb_quat *rot)
{
    if (tb_q_dot(qa, qb) < 0.0f)
        qb = tb_q(-qb.x, -qb.y, -qb.z, -qb.w);
    *pos = tb_v3_add(pa, tb_v3_scale(tb_v3_sub(pb, pa), t));
    *rot = tb_q_norm(tb_q(qa.x + (qb.x - qa.x) * t, qa.y + (qb.y - qa.y) * t, qa.z + (qb.z - qa.z) * t,
                          qa.w + (qb.w - qa.w) * t));
}

bool tb_pose_history_at(const tb_pose_history *h, int body, uint64_t step, uint64_t now_step, tb_vec3 now_pos,
                        tb_quat now_rot, tb_vec3 *pos, tb_quat *rot)
{
    if (body < 0 || body >= h->bodies || h->newest < 0)
        return false;
    int before = -1, after = -1; /* newest slot at or before step, oldest after it, holding the body */
    for (int k = 0; k < TB_POSE_HISTORY_SLOTS; k++) {
        uint64_t s = h->stamp[k];
        if (s == 0 || !tb__get(h, k, body))
            continue;
        if (s <= step && (before < 0 || s > h->stamp[before]))
            before = k;
        if (s > step && (after < 0 || s < h->stamp[after]))
            after = k;
    }
    if (before < 0)
        return false;
    tb_vec3 pa, pb = now_pos;
    tb_quat qa, qb = now_rot;
    tb__unpack(tb__get(h, before, body), &pa, &qa);
    uint64_t sa = h->stamp[before], sb = now_step;
    if (after >= 0) {
        tb__unpack(tb__get(h, after, body), &pb, &qb);
        sb = h->stamp[after];
    }
    if (sb <= sa || step <= sa) {
        *pos = pa;
        *rot = qa;
        return true;
    }
    float t = (float)(step - sa) / (float)(sb - sa);
    tb__blend(pa, qa, pb, qb, t > 1.0f ? 1.0f : t, pos, rot);
    return true;
}

void tb_pose_history_record(tb_pose_history *h, const tb_rigid_world *world)
{
    uint64_t step = tb_rigid_world_step_count(world);
    if (step % TB_POSE_HISTORY_EVERY != 0)
        return;
    tb_pose_history_begin(h, step);
    for (int id = tb_rigid_world_next_body(world, -1); id >= 0; id = tb_rigid_world_next_body(world, id)) {
        tb_vec3 p;
        tb_quat q;
        if (tb_rigid_body_get_pose(world, id, &p, &q) == 0)
            tb_pose_history_put(h, id, p, q);
    }
}

tb_vec3 tb_pose_history_point_now(const tb_pose_history *h, const tb_rigid_world *world, int body, tb_vec3 seen, int age)
{
    tb_vec3 p_now, p_then;
    tb_quat q_now, q_then;
    if (age <= 0 || tb_rigid_body_get_pose(world, body, &p_now, &q_now) < 0)
        return seen;
    if (age > TB_POSE_HISTORY_STEPS - 4)
        age = TB_POSE_HISTORY_STEPS - 4;
    uint64_t now = tb_rigid_world_step_count(world);
    if ((uint64_t)age >= now || !tb_pose_history_at(h, body, now - (uint64_t)age, now, p_now, q_now, &p_then, &q_then))
        return seen;
    tb_vec3 local = tb_q_inv_rotate(q_then, tb_v3_sub(seen, p_then));
    return tb_v3_add(p_now, tb_q_rotate(q_now, local));
}

