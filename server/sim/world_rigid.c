/* world_rigid.c: the rigid world (physics/rigid.h) as a room: the tower,
 * dice and pile scenes, throws with a projectile cap, pokes, grabs, the dice
 * result, contacts for the debug view.
 *
 * Grabs: physics holds a body at a point and drives it (tb_rigid_world_grab_*,
 * a velocity servo); which client's pointer holds which grab handle is the
 * shared map of sim (tb_world_grabs), as for cloth and soft.
 *
 * Lag compensation: every second step the poses go into a half-second ring
 * (sim/pose_history.h); a poke or grab that names the tick its player saw
 * is applied at the body-local point it aimed at, where that point is now.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "sim/error.h"
#include "sim/pose_history.h"
#include "sim/world.h"

enum { TB__TOWER, TB__DICE, TB__PILE };
#define TB__PILE_BODIES 96
#define TB__PROJECTILE_CAP 24
#define TB__POKE_MAX_DV 1.5f     /* m/s: the most a poke changes a body's speed */

typedef struct {
    tb_rigid_world *world;
    const tb_world_env *env; /* the scheduler's tower memo, or NULL: settle at every build */
    int scene;
    uint64_t seed;
    tb_rigid_rng rng;
    int dice[TB_DICE_COUNT];
    bool dice_pending; /* a throw whose result has not been told */
    int projectiles[TB__PROJECTILE_CAP]; /* oldest first */
    int projectile_count;
    uint8_t next_color;
    tb_world_grabs grabs; /* (client, pointer) -> the physics world's grab handle */
    int capacity;
    tb_proto_body *bodies;        /* snapshot scratch, capacity */
    tb_rigid_contact_info *contacts_scratch;  /* TB_PROTO_MAX_CONTACTS: the physics' contacts */
    tb_proto_contact *contacts;               /* TB_PROTO_MAX_CONTACTS: the contacts overlay */
    bool last_step_idle; /* the last step found every body asleep and moved nothing */
    tb_pose_history *history; /* the last 0.53 s of poses, for lag compensation */
    /* the last poke or grab start on a body and where it landed, told once (rigid_poll_event) */
    struct { bool pending; uint8_t type; uint32_t client; int body; uint16_t age; tb_vec3 point; } poked;
    bool checked;        /* rigid_check has looked at every body at least once */
} tb__rigid;

static const tb_world_param tb__params[] = {
    {"restitution", 0.0, TB_RIGID_RESTITUTION_MAX, 0.3, 0.05},
    {"friction", 0.0, TB_RIGID_FRICTION_MAX, 0.5, 0.05},
    {"iterations", TB_RIGID_ITERATIONS_MIN, TB_RIGID_ITERATIONS_MAX, 10, 1},
};
#define TB__NPARAMS (int)(sizeof tb__params / sizeof tb__params[0])

/* Looks -> colours (0xRRGGBB) for the client. */
static const uint32_t tb__wood[4] = {0xC8A06B, 0xB88A55, 0xD4B483, 0xA97C4F};
static const uint32_t tb__balls[8] = {0xF2C14E, 0x3D7DD8, 0xD8423D, 0x4CAF50, 0x9C5BD0, 0xF28C28, 0x2BB3C0, 0xE05FA0};

static int tb__scene_id(const char *scene)
{
    if (strcmp(scene, "tower") == 0) return TB__TOWER;
    if (strcmp(scene, "dice") == 0) return TB__DICE;
    if (strcmp(scene, "pile") == 0) return TB__PILE;
    return -1;
}

static int tb__build(tb__rigid *r)
{
    r->projectile_count = 0;
    r->grabs.count = 0; /* every scene clears the world, which ends its grabs */
    r->dice_pending = false;
    r->checked = false; /* new poses: the next fault check looks at every body even after an idle step */
    tb_pose_history_clear(r->history); /* poses from before the rebuild name other bodies */
    int rc; /* every scene clears the world and puts in the tray itself */
    switch (r->scene) {
    case TB__TOWER:
        /* the tower as it stands once settled (memoised per parameter set):
         * the rebuilt room starts asleep instead of stepping 0.5 s of settle */
        rc = r->env && r->env->tower_memo ? r->env->tower_memo_build(r->env->tower_memo, r->world, NULL)
                                          : tb_rigid_scene_tower_settled(r->world, NULL);
        break;
    case TB__DICE:
        rc = tb_rigid_scene_dice(r->world, &r->rng, r->dice, NULL);
        r->dice_pending = rc >= 0;
        break;
    default: rc = tb_rigid_scene_pile(r->world, TB__PILE_BODIES); break;
    }
    return rc < 0 ? TB_ENOMEM : 0;
}

static void rigid_destroy(void *world)
{
    tb__rigid *r = world;
    if (!r)
        return;
    tb_rigid_world_destroy(r->world);
    tb_pose_history_destroy(r->history);
    free(r->bodies);
    free(r->contacts_scratch);
    free(r->contacts);
    free(r);
}

static int rigid_create(const char *scene, uint64_t seed, const tb_world_env *env, void **out)
{
    int id = tb__scene_id(scene);
    if (id < 0)
        return TB_EBADSCENE;
    tb__rigid *r = calloc(1, sizeof *r);
    if (!r)
        return TB_ENOMEM;
    r->env = env;
    r->scene = id;
    r->seed = seed;
    r->rng = tb_rigid_rng_seed(seed);
    int scene_bodies = id == TB__TOWER ? TB_SCENE_TOWER_BODIES : id == TB__DICE ? TB_SCENE_DICE_BODIES : TB__PILE_BODIES;
    r->capacity = scene_bodies + TB__PROJECTILE_CAP + 4;
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = r->capacity;
    r->world = tb_rigid_world_create(&def);
    r->bodies = calloc((size_t)r->capacity, sizeof *r->bodies);
    r->contacts_scratch = calloc(TB_PROTO_MAX_CONTACTS, sizeof *r->contacts_scratch);
    r->contacts = calloc(TB_PROTO_MAX_CONTACTS, sizeof *r->contacts);
    r->history = tb_pose_history_create(r->capacity);
    if (!r->world || !r->bodies || !r->contacts_scratch || !r->contacts || !r->history || tb__build(r) < 0) {
        rigid_destroy(r);
        return TB_ENOMEM;
    }
    *out = r;
    return 0;
}

static tb_vec3 tb__v(const float f[3]) { return tb_v3(f[0], f[1], f[2]); }

/* Keep thrown bodies inside the tray: the walls are infinite planes, and a
 * body spawned behind one would be shot back through the room. */
static tb_vec3 tb__inside_tray(tb_vec3 p)
{
    p.x = tb_clampf(p.x, -TB_TRAY_HALF_X + 0.3f, TB_TRAY_HALF_X - 0.3f);
    p.z = tb_clampf(p.z, -TB_TRAY_HALF_Z + 0.3f, TB_TRAY_HALF_Z - 0.3f);
    p.y = tb_clampf(p.y, 0.3f, 12.0f);
    return p;
}

/* After a body was removed (physics ended its grabs): forget the handles
 * that hold nothing now, in the order physics dropped them. */
static void tb__forget_ended_grabs(tb__rigid *r)
{
    tb_world_grabs *g = &r->grabs;
    for (int i = 0; i < g->count;) {
        int handle;
        if (tb_rigid_world_grab_body(r->world, g->handle[i]) < 0)
            tb_world_grabs_forget(g, g->client[i], g->pointer[i], &handle);
        else
            i++;
    }
}

/* Where a poke or grab landed, told after the next step (rigid_poll_event). */
static void tb__note(tb__rigid *r, const tb_input *in, int body, tb_vec3 point)
{
    r->poked.pending = true;
    r->poked.type = in->type;
    r->poked.client = in->client;
    r->poked.body = body;
    r->poked.age = in->view_age;
    r->poked.point = point;
}

/* Projectile slot i (oldest first) is free again. */
static void tb__drop_projectile(tb__rigid *r, int i)
{
    memmove(r->projectiles + i, r->projectiles + i + 1, (size_t)(r->projectile_count - i - 1) * sizeof r->projectiles[0]);
    r->projectile_count--;
}

/* An aimed throw with the tick its player was looking at (PROTOCOL.md "Lag
 * compensation") starts where it would be now had it left then (at most
 * 60 steps, 0.5 s, of its free flight: tb_rigid_world_fly), so it meets what
 * it was aimed at, which moved on by the same time, as in that world. */
static int tb__throw(tb__rigid *r, const tb_input *in)
{
    int recycled = 0;
    if (r->projectile_count == TB__PROJECTILE_CAP) {
        int oldest = r->projectiles[0];
        tb_rigid_world_remove_body(r->world, oldest);
        tb__forget_ended_grabs(r);
        tb__drop_projectile(r, 0);
        recycled = 1;
    }
    tb_vec3 v = tb__v(in->vec);
    if (tb_v3_len(v) > 60.0f)
        return TB_ERANGE;
    tb_vec3 spin = in->flags == TB_THROW_DIE ? tb_v3(3.0f, -2.0f, 4.0f) : tb_v3_zero();
    tb_vec3 from = tb__inside_tray(tb__v(in->pos));
    if (in->view_age) {
        tb_rigid_world_fly(r->world, in->flags == TB_THROW_DIE ? 0.25f : 0.22f,
                           (float)(in->view_age < 60 ? in->view_age : 60) / 120.0f, &from, &v);
        from = tb__inside_tray(from);
    }
    int id = tb_rigid_throw(r->world, in->flags == TB_THROW_DIE ? TB_THROW_DIE : TB_THROW_BALL, from, v, spin,
                            r->next_color++ % 8);
    if (id < 0)
        return tb_world_error(id);
    if (in->view_age) /* where it started, for the server's debug log (tests read it) */
        tb__note(r, in, id, from);
    tb_pose_history_forget(r->history, id); /* the id may have been a recycled projectile's */
    r->projectiles[r->projectile_count++] = id;
    return recycled ? TB_ECAP : 0;
}

static int tb__nearest_body(const tb__rigid *r, tb_vec3 p, float reach)
{
    int best = -1;
    float best_d = reach;
    for (int id = tb_rigid_world_next_body(r->world, -1); id >= 0; id = tb_rigid_world_next_body(r->world, id)) {
        tb_rigid_body_info info;
        if (tb_rigid_body_get_info(r->world, id, &info) < 0)
            continue;
        float d = tb_v3_dist(info.position, p) - info.radius;
        if (d < best_d) {
            best_d = d;
            best = id;
        }
    }
    return best;
}

/* A poke on a body (lag compensated), or along a ray from `pos` when it names none. */
static int tb__poke(tb__rigid *r, const tb_input *in)
{
    tb_vec3 point = tb__v(in->pos), impulse = tb__v(in->vec);
    int body = in->target;
    if (body < 0) {
        tb_rigid_ray_hit hit;
        tb_vec3 dir = tb_v3_len(impulse) > 1e-6f ? impulse : tb_v3(0, -1, 0);
        if (tb_rigid_world_ray_cast(r->world, tb_v3_mad(point, tb_v3_norm(dir), -0.5f), dir, 20.0f, &hit) != 1)
            return TB_ENOBODY;
        body = hit.body;
        point = hit.point;
    } else {
        point = tb_pose_history_point_now(r->history, r->world, body, point, in->view_age);
    }
    /* A poke nudges: it changes the body's speed by at most TB__POKE_MAX_DV
     * whatever its mass (a 3 N s tap sent a 0.4 kg plank from the top of
     * the tower to 7.6 m); the impulse keeps its direction. */
    tb_rigid_body_info info;
    if (tb_rigid_body_get_info(r->world, body, &info) == 0 && info.mass > 0.0f) {
        float dv = tb_v3_len(impulse) / info.mass;
        if (dv > TB__POKE_MAX_DV)
            impulse = tb_v3_scale(impulse, TB__POKE_MAX_DV / dv);
    }
    int rc = tb_rigid_body_apply_impulse(r->world, body, impulse, point);
    if (rc >= 0)
        tb__note(r, in, body, point);
    return rc < 0 ? tb_world_error(rc) : 0;
}

static int rigid_apply_input(void *world, const tb_input *in)
{
    tb__rigid *r = world;
    switch (in->type) {
    case TB_INPUT_THROW:
        return tb__throw(r, in);
    case TB_INPUT_POKE:
        return tb__poke(r, in);
    case TB_INPUT_GRAB_START: {
        int grab;
        if (tb_world_grabs_find(&r->grabs, in->client, in->pointer, &grab))
            return TB_EBUSY;
        tb_vec3 at = tb__v(in->pos);
        int body = in->target >= 0 ? in->target : tb__nearest_body(r, at, 0.6f);
        if (body < 0)
            return TB_ENOBODY;
        at = tb_pose_history_point_now(r->history, r->world, body, at, in->view_age);
        grab = tb_rigid_world_grab_start(r->world, body, at);
        if (grab < 0)
            return tb_world_error(grab);
        tb__note(r, in, body, at);
        tb_world_grabs_add(&r->grabs, in->client, in->pointer, grab);
        return 0;
    }
    case TB_INPUT_GRAB_MOVE: {
        int grab;
        if (!tb_world_grabs_find(&r->grabs, in->client, in->pointer, &grab))
            return TB_ENOBODY;
        return tb_world_error(tb_rigid_world_grab_move(r->world, grab, tb__v(in->pos)));
    }
    case TB_INPUT_GRAB_END: {
        int grab;
        if (!tb_world_grabs_forget(&r->grabs, in->client, in->pointer, &grab))
            return TB_ENOBODY;
        return tb_world_error(tb_rigid_world_grab_end(r->world, grab));
    }
    case TB_INPUT_LEAVE: {
        int grab;
        while (tb_world_grabs_take(&r->grabs, in->client, &grab))
            tb_rigid_world_grab_end(r->world, grab);
        return 0;
    }
    case TB_INPUT_RESET:
        /* tower: flags = knock launches the ball into the standing tower */
        if (in->flags && r->scene == TB__TOWER) {
            int id = tb_rigid_scene_tower_launch_ball(r->world);
            return id < 0 ? tb_world_error(id) : 0;
        }
        if (in->flags && r->scene != TB__TOWER && r->scene != TB__DICE)
            return TB_ENOTSUP;
        return tb__build(r); /* dice: a new random throw */
    case TB_INPUT_CONTACTS:
        return 0;
    default:
        return TB_ENOTSUP;
    }
}

static void rigid_step(void *world, float dt)
{
    tb__rigid *r = world;
    tb_rigid_scratch *s = r->env && r->env->rigid_scratch ? r->env->rigid_scratch() : NULL;
    if (s) /* at once if the world is on it already; short of memory, it keeps its own */
        tb_rigid_world_use_scratch(r->world, s);
    uint64_t idle = tb_rigid_world_idle_steps(r->world);
    tb_rigid_world_step(r->world, dt);
    r->last_step_idle = tb_rigid_world_idle_steps(r->world) != idle;
    if (!r->last_step_idle) /* an idle step moved nothing: the newest slot still holds the truth */
        tb_pose_history_record(r->history, r->world);
}

static void rigid_info(const void *world, tb_world_info *out)
{
    const tb__rigid *r = world;
    out->bodies = tb_rigid_world_body_count(r->world);
    out->awake = tb_rigid_world_awake_count(r->world);
}

static void tb__shape(const tb_rigid_body_info *info, tb_proto_shape *s)
{
    memset(s, 0, sizeof *s);
    s->material = info->look.kind;
    if (info->shape == TB_RIGID_SPHERE) {
        s->kind = TB_SHAPE_SPHERE;
        s->size[0] = info->radius;
    } else {
        s->kind = TB_SHAPE_BOX;
        s->size[0] = info->half_extents.x;
        s->size[1] = info->half_extents.y;
        s->size[2] = info->half_extents.z;
    }
    switch (info->look.kind) {
    case TB_LOOK_WOOD_PLANK: s->color = tb__wood[info->look.color % 4]; break;
    case TB_LOOK_BALL: s->color = tb__balls[info->look.color % 8]; break;
    case TB_LOOK_DIE: s->color = 0xF5F2EA; break;
    default: s->color = 0x9AA0A6; break;
    }
}

static void rigid_describe(const void *world, tb_proto_welcome *out)
{
    const tb__rigid *r = world;
    out->param_count = TB__NPARAMS;
    double values[TB__NPARAMS] = {tb_rigid_world_restitution(r->world), tb_rigid_world_friction(r->world),
                                  tb_rigid_world_iterations(r->world)};
    for (int i = 0; i < TB__NPARAMS; i++)
        tb_world_param_describe(&tb__params[i], values[i], &out->params[i]);
    tb_proto_static *st = &out->st;
    memset(st, 0, sizeof *st);
    const double hx = TB_TRAY_HALF_X, hz = TB_TRAY_HALF_Z;
    st->bounds_min[0] = -hx - 0.5;
    st->bounds_min[1] = -0.5;
    st->bounds_min[2] = -hz - 0.5;
    st->bounds_max[0] = hx + 0.5;
    st->bounds_max[1] = 14.0;
    st->bounds_max[2] = hz + 0.5;
    const double planes[5][4] = {{0, 1, 0, 0}, {1, 0, 0, -hx}, {-1, 0, 0, -hx}, {0, 0, 1, -hz}, {0, 0, -1, -hz}};
    st->plane_count = 5;
    for (int i = 0; i < 5; i++) {
        for (int a = 0; a < 3; a++)
            st->planes[i].normal[a] = planes[i][a];
        st->planes[i].offset = planes[i][3];
    }
    /* Low rims along the walls so the tray reads as a tray. */
    const double rims[4][6] = {{-hx - 0.05, 0.15, 0, 0.05, 0.15, hz},
                               {hx + 0.05, 0.15, 0, 0.05, 0.15, hz},
                               {0, 0.15, -hz - 0.05, hx + 0.1, 0.15, 0.05},
                               {0, 0.15, hz + 0.05, hx + 0.1, 0.15, 0.05}};
    st->box_count = 4;
    for (int i = 0; i < 4; i++) {
        tb_proto_box *b = &st->boxes[i];
        for (int a = 0; a < 3; a++) {
            b->center[a] = rims[i][a];
            b->half[a] = rims[i][3 + a];
        }
        b->rot[3] = 1.0;
        b->color = 0x6B4F3A;
        b->material = TB_LOOK_WOOD_PLANK;
    }
}

static void rigid_fill_snapshot(void *world, tb_snap_input *in)
{
    tb__rigid *r = world;
    uint32_t n = 0;
    for (int id = tb_rigid_world_next_body(r->world, -1); id >= 0 && n < (uint32_t)r->capacity;
         id = tb_rigid_world_next_body(r->world, id)) {
        tb_rigid_body_info info;
        if (tb_rigid_body_get_info(r->world, id, &info) < 0)
            continue;
        tb_proto_body *b = &r->bodies[n++];
        b->id = (uint16_t)id;
        tb__shape(&info, &b->shape);
        b->pos[0] = info.position.x;
        b->pos[1] = info.position.y;
        b->pos[2] = info.position.z;
        b->rot[0] = info.rotation.x;
        b->rot[1] = info.rotation.y;
        b->rot[2] = info.rotation.z;
        b->rot[3] = info.rotation.w;
    }
    memset(in, 0, sizeof *in);
    in->awake = (uint32_t)tb_rigid_world_awake_count(r->world);
    in->bodies = r->bodies;
    in->body_count = n;
}

static uint32_t rigid_max_bodies(const void *world) { return (uint32_t)((const tb__rigid *)world)->capacity; }

static int tb__param_index(const char *name) { return tb_world_param_find(tb__params, TB__NPARAMS, name); }

static int rigid_param_set(void *world, const char *name, double value)
{
    tb__rigid *r = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    if (tb_world_param_check(&tb__params[i], value) < 0)
        return TB_ERANGE;
    int rc = i == 0   ? tb_rigid_world_set_restitution(r->world, (float)value)
             : i == 1 ? tb_rigid_world_set_friction(r->world, (float)value)
                      : tb_rigid_world_set_iterations(r->world, (int)lround(value));
    return rc < 0 ? TB_ERANGE : 0;
}

static int rigid_param_get(const void *world, const char *name, double *value)
{
    const tb__rigid *r = world;
    int i = tb__param_index(name);
    if (i < 0)
        return TB_EUNKNOWN;
    *value = i == 0 ? tb_rigid_world_restitution(r->world)
             : i == 1 ? tb_rigid_world_friction(r->world)
                      : tb_rigid_world_iterations(r->world);
    return 0;
}

/* The dice result, once all dice have come to rest after a throw. */
static int rigid_poll_event(void *world, tb_world_event *out)
{
    _Static_assert(TB_DICE_COUNT <= TB_WORLD_EVENT_VALUES, "dice fit an event");
    tb__rigid *r = world;
    if (r->poked.pending) { /* a poke and where it landed: for the server's debug log */
        r->poked.pending = false;
        float p[3] = {r->poked.point.x, r->poked.point.y, r->poked.point.z};
        out->kind = TB_WORLD_EVENT_POKE;
        out->count = 7;
        out->values[6] = r->poked.type;
        out->values[0] = r->poked.client;
        out->values[1] = (uint32_t)r->poked.body;
        out->values[2] = r->poked.age;
        memcpy(&out->values[3], p, sizeof p);
        return 1;
    }
    if (!r->dice_pending || r->scene != TB__DICE)
        return 0;
    for (int i = 0; i < TB_DICE_COUNT; i++)
        if (!tb_rigid_world_body_valid(r->world, r->dice[i]) || tb_rigid_body_is_awake(r->world, r->dice[i]))
            return 0;
    out->kind = TB_WORLD_EVENT_DICE;
    out->count = TB_DICE_COUNT;
    for (int i = 0; i < TB_DICE_COUNT; i++) {
        int face = tb_rigid_body_die_top_face(r->world, r->dice[i], NULL);
        out->values[i] = face > 0 ? (uint32_t)face : 0;
    }
    r->dice_pending = false;
    return 1;
}

/* The contacts overlay: the last step's contacts, converted into r->contacts. */
static void rigid_overlay(void *world, int kind, tb_world_overlay *out)
{
    tb__rigid *r = world;
    out->kind = kind;
    out->count = 0;
    out->contacts = r->contacts;
    if (kind != TB_WORLD_OVERLAY_CONTACTS)
        return;
    int n = tb_rigid_world_get_contacts(r->world, r->contacts_scratch, TB_PROTO_MAX_CONTACTS);
    for (int i = 0; i < n; i++) {
        const tb_rigid_contact_info *c = &r->contacts_scratch[i];
        tb_proto_contact *o = &r->contacts[i];
        o->point[0] = c->point.x;
        o->point[1] = c->point.y;
        o->point[2] = c->point.z;
        o->normal[0] = c->normal.x;
        o->normal[1] = c->normal.y;
        o->normal[2] = c->normal.z;
        o->impulse = c->normal_impulse;
    }
    out->count = n > 0 ? (uint32_t)n : 0;
}

/* ---- persistence, replay hash, fault check ---------------------------------
 *
 * A save is the adapter's own state (scene, seed, rng, dice, projectiles,
 * colour counter) in a fixed header, then the physics world's image
 * (physics/rigid_save.c: bodies with sleep state, the warm-start cache,
 * parameters). Grabs are not saved. Load builds the scene's adapter, then
 * swaps in the loaded physics world after checking the header against it. */
#define TB__SAVE_MAGIC 0x31524254u /* "TBR1" */

typedef struct {
    uint32_t magic, header_size;
    int32_t scene, capacity;
    uint64_t seed, rng_state;
    int32_t dice[TB_DICE_COUNT];
    int32_t dice_pending, projectile_count, next_color, pad;
    int32_t projectiles[TB__PROJECTILE_CAP];
    uint64_t world_len;
} tb__rigid_save;
TB_WORLD_SAVE_HEADER_OK(tb__rigid_save);

static int rigid_save(const void *world, unsigned char **buf, size_t *len)
{
    const tb__rigid *r = world;
    tb__rigid_save h;
    memset(&h, 0, sizeof h);
    h.scene = r->scene;
    h.capacity = r->capacity;
    h.seed = r->seed;
    h.rng_state = r->rng.state;
    for (int i = 0; i < TB_DICE_COUNT; i++)
        h.dice[i] = r->dice[i];
    h.dice_pending = r->dice_pending;
    h.projectile_count = r->projectile_count;
    h.next_color = r->next_color;
    for (int i = 0; i < r->projectile_count; i++)
        h.projectiles[i] = r->projectiles[i];
    size_t wlen = tb_rigid_world_save_size(r->world), written = 0;
    unsigned char *out = tb_world_save_begin(&h, sizeof h, TB__SAVE_MAGIC, wlen);
    if (!out)
        return TB_ENOMEM;
    bool ok = tb_rigid_world_save(r->world, out + sizeof h, wlen, &written) == TB_PHYS_OK && written == wlen;
    return tb_world_save_end(out, ok, sizeof h + wlen, buf, len);
}

static int rigid_load(const char *scene, uint64_t seed, const tb_world_env *env, const unsigned char *buf, size_t len,
                      void **out)
{
    tb__rigid_save h;
    const unsigned char *image = tb_world_load_begin(buf, len, TB__SAVE_MAGIC, &h, sizeof h);
    if (!image || h.scene != tb__scene_id(scene) || h.projectile_count < 0 || h.projectile_count > TB__PROJECTILE_CAP)
        return TB_EINVAL;
    void *made = NULL;
    int rc = rigid_create(scene, h.seed, env, &made);
    if (rc < 0)
        return rc;
    tb__rigid *r = made;
    int err = 0;
    tb_rigid_world *loaded = tb_rigid_world_load(image, h.world_len, &err);
    if (!loaded || tb_rigid_world_body_capacity(loaded) != r->capacity) {
        tb_rigid_world_destroy(loaded);
        rigid_destroy(r);
        return err == TB_PHYS_ERR_NO_MEMORY ? TB_ENOMEM : TB_EINVAL;
    }
    for (int i = 0; i < h.projectile_count; i++)
        if (!tb_rigid_world_body_valid(loaded, h.projectiles[i])) {
            tb_rigid_world_destroy(loaded);
            rigid_destroy(r);
            return TB_EINVAL;
        }
    tb_rigid_world_destroy(r->world);
    r->world = loaded;
    r->seed = h.seed;
    (void)seed;
    r->rng.state = h.rng_state;
    for (int i = 0; i < TB_DICE_COUNT; i++)
        r->dice[i] = h.dice[i];
    r->dice_pending = h.dice_pending != 0;
    r->projectile_count = h.projectile_count;
    for (int i = 0; i < h.projectile_count; i++)
        r->projectiles[i] = h.projectiles[i];
    r->next_color = (uint8_t)h.next_color;
    r->grabs.count = 0; /* the loaded physics world holds none */
    *out = r;
    return 0;
}

static uint64_t rigid_hash(const void *world)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    if (rigid_save(world, &buf, &len) < 0)
        return 0;
    uint64_t h = tb_fnv1a(TB_FNV_OFFSET, buf, len);
    free(buf);
    return h;
}

/* A body whose state is not finite or that has left the room (fell through
 * the floor, tunnelled through a wall, flew far above it) is removed, with
 * its grabs and its projectile slot: one bad body must not poison the
 * solver for the rest. The margins are generous: a ball thrown high comes
 * back down and is left alone. */
static int rigid_check(void *world)
{
    tb__rigid *r = world;
    /* An idle step moved nothing: the poses are the ones the last full check
     * passed (a resting room then costs no per-body work each step). */
    if (r->last_step_idle && r->checked)
        return 0;
    r->checked = true;
    int removed = 0;
    const float mx = TB_TRAY_HALF_X + 2.0f, mz = TB_TRAY_HALF_Z + 2.0f;
    for (int id = tb_rigid_world_next_body(r->world, -1); id >= 0;) {
        int next = tb_rigid_world_next_body(r->world, id);
        tb_rigid_body_info info;
        if (tb_rigid_body_get_info(r->world, id, &info) == 0) {
            tb_vec3 p = info.position, v = info.linear_velocity, w = info.angular_velocity;
            bool finite = tb_v3_finite(p) && tb_v3_finite(v) && tb_v3_finite(w) && tb_q_finite(info.rotation);
            bool inside = finite && fabsf(p.x) <= mx && fabsf(p.z) <= mz && p.y >= -2.0f && p.y <= 500.0f &&
                          tb_v3_len(v) <= 1000.0f;
            if (!inside) {
                for (int i = 0; i < r->projectile_count; i++)
                    if (r->projectiles[i] == id) {
                        tb__drop_projectile(r, i);
                        break;
                    }
                tb_rigid_world_remove_body(r->world, id);
                tb__forget_ended_grabs(r);
                removed++;
            }
        }
        id = next;
    }
    return removed;
}

const tb_world_ops tb_world_rigid_ops = {
    .kind = "rigid",
    .create = rigid_create,
    .destroy = rigid_destroy,
    .apply_input = rigid_apply_input,
    .step = rigid_step,
    .info = rigid_info,
    .describe = rigid_describe,
    .fill_snapshot = rigid_fill_snapshot,
    .max_bodies = rigid_max_bodies,
    .param_set = rigid_param_set,
    .param_get = rigid_param_get,
    .poll_event = rigid_poll_event,
    .overlays = 1u << TB_WORLD_OVERLAY_CONTACTS,
    .overlay = rigid_overlay,
    .save = rigid_save,
    .load = rigid_load,
    .hash = rigid_hash,
    .check = rigid_check,
};
