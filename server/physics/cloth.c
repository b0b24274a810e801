/* cloth.c: the cloth world's lifecycle, scenes, parameters, inputs, reading
 * and save/load. The step itself is in cloth_solver.c, the figure in
 * cloth_figure.c.
 *
 * Scenes: the flag hangs from a pole (its first column pinned along the pole);
 * the cape hangs from a line across the figure's shoulders (its top row
 * pinned). A grid size change rebuilds that piece at the same physical size,
 * so the look stays and only the resolution changes. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "physics/cloth_internal.h"
#include "physics/state_image.h"

#define SAVE_MAGIC 0x4c434254u /* "TBCL" */
#define SAVE_VERSION 1u

_Static_assert(sizeof(tb_cloth_grab) == 32, "grab layout has no padding");
_Static_assert(sizeof(tb_cloth_state) ==
                   8 + 5 * 4 + sizeof(tb_cloth_figure_state) + 8 + TB_CLOTH_MAX_GRABS * sizeof(tb_cloth_grab) +
                       TB_CLOTH_MAX_PIECES * sizeof(tb_cloth_piece_state),
               "saved state has no padding, so its bytes (and hash) are fully defined");

/* The world keeps a second state for load to validate into, so a rejected
 * save leaves the world untouched. */
typedef struct tb_cloth_world_alloc {
    tb_cloth_world world;
    tb_cloth_state scratch;
} tb_cloth_world_alloc;

tb_cloth_def tb_cloth_def_default(void)
{
    tb_cloth_def d;
    d.scene = TB_CLOTH_SCENE_FLAG_AND_CAPE;
    d.iterations = 8;
    d.wind_strength = 6.0f;
    d.wind_direction = 0.0f;
    d.walking = true;
    d.flag_width = 16;
    d.flag_height = 10;
    d.cape_width = 12;
    d.cape_height = 17;
    return d;
}

static bool grid_ok(int w, int h)
{
    return w >= TB_CLOTH_GRID_MIN && w <= TB_CLOTH_GRID_MAX && h >= TB_CLOTH_GRID_MIN && h <= TB_CLOTH_GRID_MAX;
}

static int check_def(const tb_cloth_def *d)
{
    assert(d);
    if (!tb_finitef(d->wind_strength) || !tb_finitef(d->wind_direction)) return TB_PHYS_ERR_INVALID;
    if ((int)d->scene < 0 || (int)d->scene > TB_CLOTH_SCENE_FLAG_AND_CAPE) return TB_PHYS_ERR_RANGE;
    if (d->iterations < TB_CLOTH_ITERATIONS_MIN || d->iterations > TB_CLOTH_ITERATIONS_MAX) return TB_PHYS_ERR_RANGE;
    if (d->wind_strength < 0.0f || d->wind_strength > TB_CLOTH_WIND_MAX) return TB_PHYS_ERR_RANGE;
    if (fabsf(d->wind_direction) > 1000.0f) return TB_PHYS_ERR_RANGE;
    if (!grid_ok(d->flag_width, d->flag_height) || !grid_ok(d->cape_width, d->cape_height)) return TB_PHYS_ERR_RANGE;
    return TB_PHYS_OK;
}

/* ---- derived data ------------------------------------------------------------- */

/* Rest lengths come from the flat grid, not from the current positions, so
 * rebuilding after a load gives the same numbers. */
static void build_grid(const tb_cloth_piece_state *ps, tb_cloth_piece *p)
{
    int w = ps->width, h = ps->height;
    p->rest_x = p->size_x / (float)(w - 1);
    p->rest_y = p->size_y / (float)(h - 1);
    p->rest_diag = sqrtf(p->rest_x * p->rest_x + p->rest_y * p->rest_y);
    p->constraint_count = (w - 1) * h + w * (h - 1) /* structural */
                          + 2 * (w - 1) * (h - 1)   /* shear */
                          + (w - 2) * h + w * (h - 2); /* bend */
    p->triangle_count = 0;
    for (int j = 0; j + 1 < h; j++)
        for (int i = 0; i + 1 < w; i++) {
            int a = j * w + i, b = a + 1, c = a + w, d = c + 1;
            uint16_t *t = &p->triangles[3 * p->triangle_count];
            t[0] = (uint16_t)a; t[1] = (uint16_t)c; t[2] = (uint16_t)b;
            t[3] = (uint16_t)b; t[4] = (uint16_t)c; t[5] = (uint16_t)d;
            p->triangle_count += 2;
        }
}

static void flag_anchor(const tb_cloth_piece_state *ps, const tb_cloth_piece *p, int j, float *out)
{
    float sy = p->size_y / (float)(ps->height - 1);
    out[0] = TB_CLOTH_POLE_X + TB_CLOTH_POLE_RADIUS + 0.02f;
    out[1] = TB_CLOTH_FLAG_TOP - (float)j * sy;
    out[2] = TB_CLOTH_POLE_Z;
}

/* Recompute everything that is not saved: capsules, rest lengths, pins and
 * anchors, inverse masses (pins and grabs), normals. */
void tb_cloth__rebuild(tb_cloth_world *world)
{
    tb_cloth_state *st = &world->state;
    world->capsule_count = 0;
    world->figure_forward = tb_v3(0.0f, 0.0f, 1.0f);
    world->figure_torso_centre = tb_v3_zero();
    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth_piece_state *ps = &st->pieces[i];
        tb_cloth_piece *p = &world->pieces[i];
        int n = ps->width * ps->height;
        memset(p->pinned, 0, sizeof p->pinned);
        p->capsule_first = world->capsule_count;
        if (ps->kind == TB_CLOTH_KIND_FLAG) {
            p->size_x = TB_CLOTH_FLAG_SIZE_X;
            p->size_y = TB_CLOTH_FLAG_SIZE_Y;
            world->capsules[world->capsule_count++] = (tb_cloth_capsule){
                tb_v3(TB_CLOTH_POLE_X, 0.0f, TB_CLOTH_POLE_Z), tb_v3(TB_CLOTH_POLE_X, TB_CLOTH_POLE_HEIGHT, TB_CLOTH_POLE_Z),
                TB_CLOTH_POLE_RADIUS, TB_CLOTH_PART_POLE};
            p->capsule_count = 1;
            p->pin_count = ps->height;
            for (int j = 0; j < ps->height; j++) {
                p->pins[j] = (uint16_t)(j * ps->width);
                flag_anchor(ps, p, j, &p->anchors[3 * j]);
            }
        } else {
            p->size_x = TB_CLOTH_CAPE_SIZE_X;
            p->size_y = TB_CLOTH_CAPE_SIZE_Y;
            p->capsule_count = TB_CLOTH_FIGURE_CAPSULES;
            world->capsule_count += TB_CLOTH_FIGURE_CAPSULES;
            p->pin_count = ps->width;
            for (int i2 = 0; i2 < ps->width; i2++) p->pins[i2] = (uint16_t)i2;
            tb_cloth__figure_pose(&st->figure, &world->capsules[p->capsule_first], p->anchors, p->pin_count,
                                  &world->figure_forward, &world->figure_torso_centre);
        }
        for (int q = 0; q < p->pin_count; q++) p->pinned[p->pins[q]] = 1;
        for (int k = 0; k < n; k++) p->inv_mass[k] = p->pinned[k] ? 0.0f : 1.0f;
        build_grid(ps, p);
    }
    for (int g = 0; g < TB_CLOTH_MAX_GRABS; g++) {
        const tb_cloth_grab *gr = &st->grabs[g];
        if (gr->active) world->pieces[gr->piece].inv_mass[gr->point] = 0.0f;
    }
    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth__update_shares(&st->pieces[i], &world->pieces[i]);
        tb_cloth__to_columns(&st->pieces[i], &world->pieces[i]);
        tb_cloth__compute_normals(&st->pieces[i], &world->pieces[i]);
    }
}

/* Lay a piece out at rest: the flag flat out from the pole, the cape hanging
 * straight down from the shoulder line. Needs the anchors (rebuild first). */
static void place_piece(tb_cloth_world *world, int index)
{
    tb_cloth_piece_state *ps = &world->state.pieces[index];
    const tb_cloth_piece *p = &world->pieces[index];
    int w = ps->width, h = ps->height;
    float sx = p->size_x / (float)(w - 1), sy = p->size_y / (float)(h - 1);
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            float *x = &ps->pos[3 * (j * w + i)];
            if (ps->kind == TB_CLOTH_KIND_FLAG) {
                flag_anchor(ps, p, j, x);
                x[0] += (float)i * sx;
                /* A slight curl out of the plane: a perfectly flat sheet hung
                 * from a vertical edge holds itself up in-plane and never falls. */
                float u = (float)i / (float)(w - 1);
                x[2] += 0.05f * u * u;
            } else {
                x[0] = p->anchors[3 * i];
                x[1] = p->anchors[3 * i + 1] - (float)j * sy;
                x[2] = p->anchors[3 * i + 2];
            }
        }
    memcpy(ps->prev, ps->pos, sizeof(float) * 3 * (size_t)(w * h));
}

static void end_grabs_on(tb_cloth_state *st, int piece)
{
    for (int g = 0; g < TB_CLOTH_MAX_GRABS; g++)
        if (st->grabs[g].active && (piece < 0 || st->grabs[g].piece == piece)) memset(&st->grabs[g], 0, sizeof st->grabs[g]);
}

/* Fresh state for world->def, keeping nothing but the def. */
static void init_state(tb_cloth_world *world)
{
    const tb_cloth_def *d = &world->def;
    tb_cloth_state *st = &world->state;
    memset(st, 0, sizeof *st);
    st->scene = d->scene;
    st->iterations = d->iterations;
    st->walking = d->walking ? 1 : 0;
    st->wind_strength = d->wind_strength;
    st->wind_direction = d->wind_direction;
    if (d->scene == TB_CLOTH_SCENE_FLAG || d->scene == TB_CLOTH_SCENE_FLAG_AND_CAPE) {
        tb_cloth_piece_state *ps = &st->pieces[st->piece_count++];
        ps->kind = TB_CLOTH_KIND_FLAG;
        ps->width = d->flag_width;
        ps->height = d->flag_height;
    }
    if (d->scene == TB_CLOTH_SCENE_CAPE || d->scene == TB_CLOTH_SCENE_FLAG_AND_CAPE) {
        tb_cloth_piece_state *ps = &st->pieces[st->piece_count++];
        ps->kind = TB_CLOTH_KIND_CAPE;
        ps->width = d->cape_width;
        ps->height = d->cape_height;
    }
    tb_cloth__rebuild(world);
    for (int i = 0; i < st->piece_count; i++) place_piece(world, i);
    tb_cloth__rebuild(world);
}

/* ---- lifecycle ------------------------------------------------------------------ */

tb_cloth_world *tb_cloth_world_create(const tb_cloth_def *def, int *err)
{
    int r = check_def(def);
    if (r != TB_PHYS_OK) {
        if (err) *err = r;
        return NULL;
    }
    tb_cloth_world_alloc *mem = calloc(1, sizeof *mem);
    if (!mem) {
        if (err) *err = TB_PHYS_ERR_NO_MEMORY;
        return NULL;
    }
    tb_cloth_world *world = &mem->world;
    world->def = *def;
    init_state(world);
    if (err) *err = TB_PHYS_OK;
    return world;
}

void tb_cloth_world_destroy(tb_cloth_world *world)
{
    free(world); /* the world is the first member of its allocation */
}

void tb_cloth_world_reset(tb_cloth_world *world)
{
    assert(world);
    /* Keep the parameters as they are now. */
    world->def.iterations = world->state.iterations;
    world->def.walking = world->state.walking != 0;
    world->def.wind_strength = world->state.wind_strength;
    world->def.wind_direction = world->state.wind_direction;
    init_state(world);
}

int tb_cloth_world_step(tb_cloth_world *world, float dt)
{
    assert(world);
    if (dt != TB_CLOTH_DT) /* NaN too: the solver's constants are derived for this one step */
        return isnan(dt) ? TB_PHYS_ERR_INVALID : TB_PHYS_ERR_RANGE;
    tb_cloth__solve_step(world);
    return TB_PHYS_OK;
}

/* ---- parameters ------------------------------------------------------------------ */

int tb_cloth_world_set_wind(tb_cloth_world *world, float strength, float direction)
{
    assert(world);
    if (!tb_finitef(strength) || !tb_finitef(direction)) return TB_PHYS_ERR_INVALID;
    if (strength < 0.0f || strength > TB_CLOTH_WIND_MAX || fabsf(direction) > 1000.0f) return TB_PHYS_ERR_RANGE;
    world->state.wind_strength = strength;
    world->state.wind_direction = direction;
    return TB_PHYS_OK;
}

int tb_cloth_world_set_iterations(tb_cloth_world *world, int iterations)
{
    assert(world);
    if (iterations < TB_CLOTH_ITERATIONS_MIN || iterations > TB_CLOTH_ITERATIONS_MAX) return TB_PHYS_ERR_RANGE;
    world->state.iterations = iterations;
    return TB_PHYS_OK;
}

int tb_cloth_world_set_walking(tb_cloth_world *world, bool walking)
{
    assert(world);
    world->state.walking = walking ? 1 : 0;
    return TB_PHYS_OK;
}

int tb_cloth_world_set_grid(tb_cloth_world *world, tb_cloth_kind kind, int width, int height)
{
    assert(world);
    if (!grid_ok(width, height)) return TB_PHYS_ERR_RANGE;
    int index = tb_cloth_world_find_piece(world, kind);
    if (index < 0) return TB_PHYS_ERR_NO_PIECE;
    tb_cloth_piece_state *ps = &world->state.pieces[index];
    if (kind == TB_CLOTH_KIND_FLAG) {
        world->def.flag_width = width;
        world->def.flag_height = height;
    } else {
        world->def.cape_width = width;
        world->def.cape_height = height;
    }
    end_grabs_on(&world->state, index);
    ps->width = width;
    ps->height = height;
    memset(ps->pos, 0, sizeof ps->pos);
    memset(ps->prev, 0, sizeof ps->prev);
    tb_cloth__rebuild(world);
    place_piece(world, index);
    tb_cloth__rebuild(world);
    return TB_PHYS_OK;
}

/* ---- inputs ------------------------------------------------------------------------ */

/* The slot a grab handle names, or -1 when it holds nothing. */
static int find_grab(const tb_cloth_state *st, int grab)
{
    return grab >= 0 && grab < TB_CLOTH_MAX_GRABS && st->grabs[grab].active ? grab : -1;
}

static bool vec_ok(tb_vec3 v) { return tb_v3_finite(v); }
static bool vec_in_room(tb_vec3 v) { return fabsf(v.x) <= 1000.0f && fabsf(v.y) <= 1000.0f && fabsf(v.z) <= 1000.0f; }

int tb_cloth_world_grab_start(tb_cloth_world *world, tb_vec3 at)
{
    assert(world);
    if (!vec_ok(at)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(at)) return TB_PHYS_ERR_RANGE;
    tb_cloth_state *st = &world->state;
    int slot = -1;
    for (int g = 0; g < TB_CLOTH_MAX_GRABS && slot < 0; g++)
        if (!st->grabs[g].active) slot = g;
    if (slot < 0) return TB_PHYS_ERR_TOO_MANY_GRABS;

    /* Nearest free point (not pinned, not already held); ties go to the lower index. */
    int best_piece = -1, best_point = -1;
    float best = TB_CLOTH_GRAB_REACH * TB_CLOTH_GRAB_REACH;
    for (int i = 0; i < st->piece_count; i++) {
        const tb_cloth_piece_state *ps = &st->pieces[i];
        const tb_cloth_piece *p = &world->pieces[i];
        for (int k = 0; k < ps->width * ps->height; k++) {
            if (p->inv_mass[k] == 0.0f) continue;
            tb_vec3 q = tb_v3(ps->pos[3 * k], ps->pos[3 * k + 1], ps->pos[3 * k + 2]);
            float d2 = tb_v3_len_sq(tb_v3_sub(q, at));
            if (d2 < best) {
                best = d2;
                best_piece = i;
                best_point = k;
            }
        }
    }
    if (best_piece < 0) return TB_PHYS_ERR_NOTHING_THERE;
    tb_cloth_grab *gr = &st->grabs[slot];
    const float *q = &st->pieces[best_piece].pos[3 * best_point];
    gr->active = 1;
    gr->piece = best_piece;
    gr->point = best_point;
    gr->target = tb_v3(q[0], q[1], q[2]);
    world->pieces[best_piece].inv_mass[best_point] = 0.0f;
    tb_cloth__update_shares(&st->pieces[best_piece], &world->pieces[best_piece]);
    return slot;
}

int tb_cloth_world_grab_move(tb_cloth_world *world, int grab, tb_vec3 target)
{
    assert(world);
    if (!vec_ok(target)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(target)) return TB_PHYS_ERR_RANGE;
    int g = find_grab(&world->state, grab);
    if (g < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    world->state.grabs[g].target = target;
    return TB_PHYS_OK;
}

int tb_cloth_world_grab_end(tb_cloth_world *world, int grab)
{
    assert(world);
    tb_cloth_state *st = &world->state;
    int g = find_grab(st, grab);
    if (g < 0) return TB_PHYS_ERR_UNKNOWN_GRAB;
    int piece = st->grabs[g].piece, point = st->grabs[g].point;
    memset(&st->grabs[g], 0, sizeof st->grabs[g]);
    tb_cloth_piece *p = &world->pieces[piece];
    p->inv_mass[point] = p->pinned[point] ? 0.0f : 1.0f;
    tb_cloth__update_shares(&st->pieces[piece], p);
    return TB_PHYS_OK;
}

int tb_cloth_world_poke(tb_cloth_world *world, tb_vec3 at, tb_vec3 velocity_change, float radius)
{
    assert(world);
    if (!vec_ok(at) || !vec_ok(velocity_change) || !tb_finitef(radius)) return TB_PHYS_ERR_INVALID;
    if (!vec_in_room(at) || !(radius > 0.0f) || radius > 3.0f || tb_v3_len(velocity_change) > 20.0f)
        return TB_PHYS_ERR_RANGE;
    tb_cloth_state *st = &world->state;
    for (int i = 0; i < st->piece_count; i++) {
        tb_cloth_piece_state *ps = &st->pieces[i];
        const tb_cloth_piece *p = &world->pieces[i];
        for (int k = 0; k < ps->width * ps->height; k++) {
            if (p->inv_mass[k] == 0.0f) continue;
            float *x = &ps->pos[3 * k], *o = &ps->prev[3 * k];
            float d = tb_v3_dist(tb_v3(x[0], x[1], x[2]), at);
            if (d >= radius) continue;
            /* Velocity is (p - o) / h: moving o back by dv h adds dv. */
            float s = (1.0f - d / radius) * TB_CLOTH_DT;
            o[0] -= velocity_change.x * s;
            o[1] -= velocity_change.y * s;
            o[2] -= velocity_change.z * s;
        }
    }
    return TB_PHYS_OK;
}

/* ---- reading ---------------------------------------------------------------------------- */

int tb_cloth_world_piece_count(const tb_cloth_world *world) { assert(world); return world->state.piece_count; }

int tb_cloth_world_find_piece(const tb_cloth_world *world, tb_cloth_kind kind)
{
    assert(world);
    for (int i = 0; i < world->state.piece_count; i++)
        if (world->state.pieces[i].kind == (int32_t)kind) return i;
    return -1;
}

int tb_cloth_world_get_cloth(const tb_cloth_world *world, int index, tb_cloth_view *out)
{
    assert(world && out);
    if (index < 0 || index >= world->state.piece_count) return TB_PHYS_ERR_NO_PIECE;
    const tb_cloth_piece_state *ps = &world->state.pieces[index];
    const tb_cloth_piece *p = &world->pieces[index];
    out->kind = (tb_cloth_kind)ps->kind;
    out->width = ps->width;
    out->height = ps->height;
    out->point_count = ps->width * ps->height;
    out->positions = ps->pos;
    out->normals = p->normals;
    out->triangle_count = p->triangle_count;
    out->triangles = p->triangles;
    out->pin_count = p->pin_count;
    out->pins = p->pins;
    out->anchors = p->anchors;
    out->constraint_count = p->constraint_count;
    return TB_PHYS_OK;
}

int tb_cloth_world_capsule_count(const tb_cloth_world *world) { assert(world); return world->capsule_count; }
const tb_cloth_capsule *tb_cloth_world_capsules(const tb_cloth_world *world) { assert(world); return world->capsules; }
tb_vec3 tb_cloth_world_figure_forward(const tb_cloth_world *world) { return world->figure_forward; }
tb_vec3 tb_cloth_world_figure_torso_centre(const tb_cloth_world *world) { return world->figure_torso_centre; }
double tb_cloth_world_time(const tb_cloth_world *world) { return (double)world->state.step_count / 120.0; }
int tb_cloth_world_iterations(const tb_cloth_world *world) { return world->state.iterations; }

/* ---- save / load ------------------------------------------------------------------------- */

size_t tb_cloth_world_save_size(const tb_cloth_world *world)
{
    (void)world;
    return tb_state_image_size(sizeof(tb_cloth_state));
}

int tb_cloth_world_save(const tb_cloth_world *world, void *buffer, size_t capacity, size_t *written)
{
    assert(world && buffer);
    if (!tb_state_image_write(buffer, capacity, SAVE_MAGIC, SAVE_VERSION, &world->state, sizeof world->state, written))
        return TB_PHYS_ERR_NO_SPACE;
    return TB_PHYS_OK;
}

/* A save may come from disk: check every count, index and number before use. */
static bool state_valid(const tb_cloth_state *s)
{
    if (s->scene < 0 || s->scene > TB_CLOTH_SCENE_FLAG_AND_CAPE) return false;
    if (s->iterations < TB_CLOTH_ITERATIONS_MIN || s->iterations > TB_CLOTH_ITERATIONS_MAX) return false;
    if (!tb_finitef(s->wind_strength) || !tb_finitef(s->wind_direction)) return false;
    if (s->wind_strength < 0.0f || s->wind_strength > TB_CLOTH_WIND_MAX || fabsf(s->wind_direction) > 1000.0f) return false;
    if (!tb_floats_finite(&s->figure.loop_angle, 1) || !tb_floats_finite(&s->figure.stride_phase, 1) ||
        !tb_floats_finite(&s->figure.blend, 1))
        return false;
    int want = s->scene == TB_CLOTH_SCENE_FLAG_AND_CAPE ? 2 : 1;
    if (s->piece_count != want) return false;
    for (int i = 0; i < s->piece_count; i++) {
        const tb_cloth_piece_state *ps = &s->pieces[i];
        int kind_want = (s->scene == TB_CLOTH_SCENE_CAPE || i == 1) ? TB_CLOTH_KIND_CAPE : TB_CLOTH_KIND_FLAG;
        if (ps->kind != kind_want || !grid_ok(ps->width, ps->height)) return false;
        int n3 = 3 * ps->width * ps->height;
        if (!tb_floats_finite(ps->pos, n3) || !tb_floats_finite(ps->prev, n3)) return false;
    }
    for (int g = 0; g < TB_CLOTH_MAX_GRABS; g++) {
        const tb_cloth_grab *gr = &s->grabs[g];
        if (!gr->active) continue;
        if (gr->active != 1 || gr->piece < 0 || gr->piece >= s->piece_count) return false;
        const tb_cloth_piece_state *ps = &s->pieces[gr->piece];
        if (gr->point < 0 || gr->point >= ps->width * ps->height || !tb_v3_finite(gr->target)) return false;
        /* a pinned point cannot be held: cape pins are row 0, flag pins column 0 */
        if (ps->kind == TB_CLOTH_KIND_CAPE ? gr->point < ps->width : gr->point % ps->width == 0) return false;
        for (int h = 0; h < g; h++)
            if (s->grabs[h].active && s->grabs[h].piece == gr->piece && s->grabs[h].point == gr->point)
                return false;
    }
    return true;
}

int tb_cloth_world_load(tb_cloth_world *world, const void *buffer, size_t size)
{
    assert(world && buffer);
    tb_cloth_state *scratch = &((tb_cloth_world_alloc *)world)->scratch;
    if (!tb_state_image_read(buffer, size, SAVE_MAGIC, SAVE_VERSION, scratch, sizeof *scratch) || !state_valid(scratch))
        return TB_PHYS_ERR_FORMAT;
    world->state = *scratch;
    world->def.scene = (tb_cloth_scene)scratch->scene;
    for (int i = 0; i < scratch->piece_count; i++) {
        const tb_cloth_piece_state *ps = &scratch->pieces[i];
        if (ps->kind == TB_CLOTH_KIND_FLAG) {
            world->def.flag_width = ps->width;
            world->def.flag_height = ps->height;
        } else {
            world->def.cape_width = ps->width;
            world->def.cape_height = ps->height;
        }
    }
    tb_cloth__rebuild(world);
    return TB_PHYS_OK;
}

uint64_t tb_cloth_world_hash(const tb_cloth_world *world)
{
    return tb_state_image_hash(&world->state, sizeof world->state);
}
