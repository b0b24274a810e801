/* rigid_grab.c: grabs, a velocity servo on held bodies (rigid.h "grabs").
 *
 * Slots are named by handle; grab_order lists the active ones in the order
 * they are applied, and an ended grab's place in it is taken by the last
 * (the order the room adapter applied its grabs in before they moved here). */
#include <assert.h>

#include "physics/rigid_core.h"

static int find(const tb_rigid_world *w, int grab)
{
    return grab >= 0 && grab < TB_RIGID_MAX_GRABS && w->grabs[grab].active ? grab : -1;
}

static void remove_at(tb_rigid_world *w, int k)
{
    w->grabs[w->grab_order[k]].active = 0;
    w->grab_order[k] = w->grab_order[--w->grab_count];
}

int tb_rigid_world_grab_start(tb_rigid_world *w, int body, tb_vec3 at)
{
    assert(w);
    if (!tb_v3_finite(at)) return TB_PHYS_ERR_INVALID;
    tb_vec3 pos;
    tb_quat rot;
    if (tb_rigid_body_get_pose(w, body, &pos, &rot) < 0) return TB_PHYS_ERR_NO_BODY;
    int slot = -1;
    for (int g = 0; g < TB_RIGID_MAX_GRABS && slot < 0; g++)
        if (!w->grabs[g].active) slot = g;
    if (slot < 0) return TB_PHYS_ERR_TOO_MANY_GRABS;
    tb_rigid_grab *g = &w->grabs[slot];
    g->active = 1;
    g->body = body;
    g->local = tb_q_inv_rotate(rot, tb_v3_sub(at, pos));
    g->target = at;
    w->grab_order[w->grab_count++] = slot;
    return slot;
}

int tb_rigid_world_grab_move(tb_rigid_world *w, int grab, tb_vec3 target)
{
    assert(w);
    if (!tb_v3_finite(target)) return TB_PHYS_ERR_INVALID;
    int g = find(w, grab);
    if (g < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    w->grabs[g].target = target;
    return TB_PHYS_OK;
}

int tb_rigid_world_grab_end(tb_rigid_world *w, int grab)
{
    assert(w);
    if (find(w, grab) < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    for (int k = 0; k < w->grab_count; k++)
        if (w->grab_order[k] == grab) {
            remove_at(w, k);
            break;
        }
    return TB_PHYS_OK;
}

int tb_rigid_world_grab_body(const tb_rigid_world *w, int grab)
{
    assert(w);
    int g = find(w, grab);
    return g < 0 ? TB_PHYS_ERR_UNKNOWN_GRAB : w->grabs[g].body;
}

void tb_rigid__apply_grabs(tb_rigid_world *w)
{
    for (int k = 0; k < w->grab_count; k++) {
        const tb_rigid_grab *g = &w->grabs[w->grab_order[k]];
        tb_vec3 pos;
        tb_quat rot;
        if (tb_rigid_body_get_pose(w, g->body, &pos, &rot) < 0)
            continue;
        tb_vec3 anchor = tb_v3_add(pos, tb_q_rotate(rot, g->local));
        tb_vec3 v = tb_v3_scale(tb_v3_sub(g->target, anchor), TB_RIGID_GRAB_GAIN);
        float speed = tb_v3_len(v);
        if (speed > TB_RIGID_GRAB_MAX_SPEED)
            v = tb_v3_scale(v, TB_RIGID_GRAB_MAX_SPEED / speed);
        tb_rigid_body_info info;
        tb_rigid_body_get_info(w, g->body, &info);
        tb_rigid_body_set_velocity(w, g->body, v, tb_v3_scale(info.angular_velocity, 0.9f));
    }
}

void tb_rigid__drop_grabs_of_body(tb_rigid_world *w, int body)
{
    for (int k = 0; k < w->grab_count;)
        if (w->grabs[w->grab_order[k]].body == body)
            remove_at(w, k);
        else
            k++;
}

void tb_rigid__drop_all_grabs(tb_rigid_world *w)
{
    while (w->grab_count > 0) remove_at(w, w->grab_count - 1);
}
