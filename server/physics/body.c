/* body.c: rigid bodies: definitions, mass properties, adding and removing,
 * and the per-body calls the server makes (impulses, velocities, poses,
 * reading a die).
 *
 * Bodies live in fixed slots (world->bodies[id]); free slots form a LIFO list
 * so ids are reused deterministically. A sleeping body keeps its pose and has
 * zero velocity; every call that changes a body's motion wakes it.
 */
#include <string.h>

#include "physics/rigid_core.h"

tb_rigid_body_def tb_rigid_body_def_default(void)
{
    tb_rigid_body_def def;
    memset(&def, 0, sizeof def);
    def.shape = TB_RIGID_BOX;
    def.half_extents = tb_v3(0.25f, 0.25f, 0.25f);
    def.radius = 0.25f;
    def.density = 1.0f;
    def.rotation = tb_q_identity();
    def.look.kind = TB_LOOK_PLAIN;
    return def;
}

static bool size_ok(float s) { return isfinite(s) && s > 0.0f && s <= 50.0f; }

static bool speed_ok(tb_vec3 v, tb_vec3 w)
{
    return tb_v3_len_sq(v) <= TB_RIGID_MAX_SPEED * TB_RIGID_MAX_SPEED &&
           tb_v3_len_sq(w) <= TB_RIGID_MAX_SPIN * TB_RIGID_MAX_SPIN;
}

/* Mass properties from density.
 *   box, half extents (x, y, z):  m = 8 rho x y z,  I_xx = m (y^2 + z^2) / 3 (etc.)
 *     (the familiar m (b^2 + c^2) / 12 with full sizes b = 2y, c = 2z)
 *   sphere, radius r:             m = 4/3 pi r^3 rho,  I = 2/5 m r^2 about any axis */
static void mass_properties(const tb_rigid_body_def *def, tb_body *b)
{
    float mass;
    tb_vec3 inertia;
    if (def->shape == TB_RIGID_BOX) {
        tb_vec3 h = def->half_extents;
        mass = 8.0f * def->density * h.x * h.y * h.z;
        inertia = tb_v3(mass * (h.y * h.y + h.z * h.z) / 3.0f, mass * (h.x * h.x + h.z * h.z) / 3.0f,
                        mass * (h.x * h.x + h.y * h.y) / 3.0f);
        b->half_extents = h;
        b->radius = tb_v3_len(h);
    } else {
        float r = def->radius;
        mass = 4.0f / 3.0f * TB_PI * r * r * r * def->density;
        float i = 0.4f * mass * r * r;
        inertia = tb_v3(i, i, i);
        b->half_extents = tb_v3_zero();
        b->radius = r;
    }
    b->inv_mass = 1.0f / mass;
    b->inv_inertia = tb_v3(1.0f / inertia.x, 1.0f / inertia.y, 1.0f / inertia.z);
}

int tb_rigid_world_add_body(tb_rigid_world *world, const tb_rigid_body_def *def)
{
    assert(world && def);
    if (def->shape != TB_RIGID_BOX && def->shape != TB_RIGID_SPHERE) return TB_PHYS_ERR_INVALID;
    if (def->shape == TB_RIGID_BOX && !(size_ok(def->half_extents.x) && size_ok(def->half_extents.y) &&
                                        size_ok(def->half_extents.z)))
        return TB_PHYS_ERR_RANGE;
    if (def->shape == TB_RIGID_SPHERE && !size_ok(def->radius)) return TB_PHYS_ERR_RANGE;
    if (!(isfinite(def->density) && def->density > 0.0f && def->density <= 1e5f)) return TB_PHYS_ERR_RANGE;
    if (!tb_v3_finite(def->position) || !tb_q_finite(def->rotation) || !tb_v3_finite(def->linear_velocity) ||
        !tb_v3_finite(def->angular_velocity) || tb_q_dot(def->rotation, def->rotation) < 1e-12f)
        return TB_PHYS_ERR_INVALID;
    if (!speed_ok(def->linear_velocity, def->angular_velocity)) return TB_PHYS_ERR_RANGE;
    /* a body far outside any plausible room would overflow grid cells */
    if (fabsf(def->position.x) > 1e4f || fabsf(def->position.y) > 1e4f || fabsf(def->position.z) > 1e4f)
        return TB_PHYS_ERR_RANGE;
    if (world->free_head < 0) return TB_PHYS_ERR_FULL;

    int id = world->free_head;
    tb_body *b = &world->bodies[id];
    world->free_head = b->next_free;
    memset(b, 0, sizeof *b);
    b->position = def->position;
    b->rotation = tb_q_norm(def->rotation);
    b->linear_velocity = def->linear_velocity;
    b->angular_velocity = def->angular_velocity;
    b->shape = (uint8_t)def->shape;
    b->alive = 1;
    b->next_free = -1;
    b->look_kind = def->look.kind;
    b->look_color = def->look.color;
    mass_properties(def, b);
    world->body_count++;
    if (id + 1 > world->body_end) world->body_end = id + 1;
    /* a new body must not inherit impulses cached for an old body with its id */
    tb_rigid_world_forget_body_contacts(world, id);
    return id;
}

bool tb_rigid_world_body_valid(const tb_rigid_world *world, int id)
{
    assert(world);
    return id >= 0 && id < world->capacity && world->bodies[id].alive;
}

int tb_rigid_world_remove_body(tb_rigid_world *world, int id)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    tb_rigid__drop_grabs_of_body(world, id);
    tb_body *b = &world->bodies[id];
    /* what rested on it must fall: wake every body near enough to touch it
     * (sleeping pairs have no contacts to tell us who that is) */
    for (int i = 0; i < world->body_end; i++) {
        tb_body *o = &world->bodies[i];
        if (i == id || !o->alive || !o->sleeping) continue;
        float reach = b->radius + o->radius + 2.0f * TB_SPECULATIVE_MARGIN;
        if (tb_v3_len_sq(tb_v3_sub(o->position, b->position)) <= reach * reach) tb_body_wake(o);
    }
    tb_rigid_world_forget_body_contacts(world, id);
    memset(b, 0, sizeof *b);
    b->next_free = world->free_head;
    world->free_head = id;
    world->body_count--;
    while (world->body_end > 0 && !world->bodies[world->body_end - 1].alive) world->body_end--;
    return TB_PHYS_OK;
}

void tb_body_wake(tb_body *body)
{
    body->sleeping = 0;
    body->sleep_time = 0.0f;
}

bool tb_body_is_slow(const tb_body *body)
{
    return tb_v3_len_sq(body->linear_velocity) <= TB_SLEEP_LINEAR_SQ &&
           tb_v3_len_sq(body->angular_velocity) <= TB_SLEEP_ANGULAR_SQ;
}

void tb_body_compute_frame(const tb_body *body, tb_body_frame *frame, float dt, float margin)
{
    tb_mat3 r = tb_m3_from_q(body->rotation);
    tb_vec3 *axis = frame->box.axis;
    for (int i = 0; i < 3; i++) axis[i] = tb_m3_col(r, i);
    frame->box.center = body->position;
    frame->box.half[0] = body->half_extents.x;
    frame->box.half[1] = body->half_extents.y;
    frame->box.half[2] = body->half_extents.z;
    tb_vec3 extent;
    if (body->shape == TB_RIGID_BOX) {
        tb_vec3 h = body->half_extents;
        /* world AABB half size: sum over axes of h_i |axis_i| */
        extent = tb_v3_add(tb_v3_add(tb_v3_scale(tb_v3_abs(axis[0]), h.x), tb_v3_scale(tb_v3_abs(axis[1]), h.y)),
                           tb_v3_scale(tb_v3_abs(axis[2]), h.z));
    } else {
        extent = tb_v3(body->radius, body->radius, body->radius);
    }
    frame->speculative = body->sleeping ? 0.0f
                                        : (tb_v3_len(body->linear_velocity) + tb_v3_len(body->angular_velocity) * body->radius) * dt;
    float grow = 0.5f * margin + frame->speculative;
    extent = tb_v3_add(extent, tb_v3(grow, grow, grow));
    frame->aabb_min = tb_v3_sub(body->position, extent);
    frame->aabb_max = tb_v3_add(body->position, extent);
}

/* ---- per-body calls ----------------------------------------------------------------- */

static tb_vec3 world_inv_inertia_mul(const tb_body *b, tb_vec3 v)
{
    /* I_world^-1 v = R diag(inv_inertia) R^T v */
    tb_vec3 local = tb_q_inv_rotate(b->rotation, v);
    return tb_q_rotate(b->rotation, tb_v3_mul(b->inv_inertia, local));
}

int tb_rigid_body_apply_impulse(tb_rigid_world *world, int id, tb_vec3 impulse, tb_vec3 world_point)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    if (!tb_v3_finite(impulse) || !tb_v3_finite(world_point)) return TB_PHYS_ERR_INVALID;
    tb_body *b = &world->bodies[id];
    tb_vec3 dv = tb_v3_scale(impulse, b->inv_mass);
    tb_vec3 dw = world_inv_inertia_mul(b, tb_v3_cross(tb_v3_sub(world_point, b->position), impulse));
    tb_vec3 v = tb_v3_add(b->linear_velocity, dv), w = tb_v3_add(b->angular_velocity, dw);
    if (!speed_ok(v, w)) return TB_PHYS_ERR_RANGE;
    b->linear_velocity = v;
    b->angular_velocity = w;
    tb_body_wake(b);
    return TB_PHYS_OK;
}

int tb_rigid_body_set_velocity(tb_rigid_world *world, int id, tb_vec3 linear, tb_vec3 angular)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    if (!tb_v3_finite(linear) || !tb_v3_finite(angular)) return TB_PHYS_ERR_INVALID;
    if (!speed_ok(linear, angular)) return TB_PHYS_ERR_RANGE;
    tb_body *b = &world->bodies[id];
    b->linear_velocity = linear;
    b->angular_velocity = angular;
    tb_body_wake(b);
    return TB_PHYS_OK;
}

int tb_rigid_body_sleep(tb_rigid_world *world, int id)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    tb_body *b = &world->bodies[id];
    b->linear_velocity = b->angular_velocity = tb_v3_zero();
    b->sleeping = 1;
    b->sleep_time = 0.0f;
    return TB_PHYS_OK;
}

int tb_rigid_body_set_pose(tb_rigid_world *world, int id, tb_vec3 position, tb_quat rotation)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    if (!tb_v3_finite(position) || !tb_q_finite(rotation) || tb_q_dot(rotation, rotation) < 1e-12f)
        return TB_PHYS_ERR_INVALID;
    if (fabsf(position.x) > 1e4f || fabsf(position.y) > 1e4f || fabsf(position.z) > 1e4f) return TB_PHYS_ERR_RANGE;
    tb_body *b = &world->bodies[id];
    b->position = position;
    b->rotation = tb_q_norm(rotation);
    tb_body_wake(b);
    return TB_PHYS_OK;
}

int tb_rigid_body_get_info(const tb_rigid_world *world, int id, tb_rigid_body_info *out)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    const tb_body *b = &world->bodies[id];
    out->position = b->position;
    out->rotation = b->rotation;
    out->linear_velocity = b->linear_velocity;
    out->angular_velocity = b->angular_velocity;
    out->shape = (tb_rigid_shape)b->shape;
    out->half_extents = b->half_extents;
    out->radius = b->radius;
    out->mass = 1.0f / b->inv_mass;
    out->awake = !b->sleeping;
    out->look.kind = b->look_kind;
    out->look.color = b->look_color;
    return TB_PHYS_OK;
}

int tb_rigid_body_get_pose(const tb_rigid_world *world, int id, tb_vec3 *position, tb_quat *rotation)
{
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    if (position) *position = world->bodies[id].position;
    if (rotation) *rotation = world->bodies[id].rotation;
    return TB_PHYS_OK;
}

bool tb_rigid_body_is_awake(const tb_rigid_world *world, int id)
{
    return tb_rigid_world_body_valid(world, id) && !world->bodies[id].sleeping;
}

/* Standard die: opposite faces sum to 7. Face value of +axis i is
 * kFacePlus[i], of -axis i is 7 - kFacePlus[i]:  +x 1 / -x 6, +y 2 / -y 5, +z 3 / -z 4. */
int tb_rigid_body_die_top_face(const tb_rigid_world *world, int id, float *up_cos)
{
    static const int face_plus[3] = {1, 2, 3};
    if (!tb_rigid_world_body_valid(world, id)) return TB_PHYS_ERR_NO_BODY;
    tb_mat3 r = tb_m3_from_q(world->bodies[id].rotation);
    /* world-up component of body axis i is row y, column i of R */
    int best = 0;
    float best_abs = -1.0f, best_val = 0.0f;
    for (int i = 0; i < 3; i++) {
        float up = tb_v3_comp(r.r[1], i);
        if (fabsf(up) > best_abs) { best_abs = fabsf(up); best_val = up; best = i; }
    }
    if (up_cos) *up_cos = best_abs;
    return best_val >= 0.0f ? face_plus[best] : 7 - face_plus[best];
}
