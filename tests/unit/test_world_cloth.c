/* test_world_cloth.c: the cloth rooms' adapter (sim/world_cloth.c) as the
 * protocol sees it: capsules described in their body's local frame
 * (PROTOCOL.md §6), and the `grid` parameter (range, rebuild, save/load). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/cloth.h"
#include "sim/error.h"
#include "sim/world.h"

extern const tb_world_ops tb_world_cloth_ops;
extern const tb_world_ops tb_world_soft_ops;
static const tb_world_ops *ops = &tb_world_cloth_ops;
static tb_proto_welcome desc; /* large: static storage */

static void *room_world(const char *scene)
{
    void *w = NULL;
    assert_int_equal(ops->create(scene, 1, NULL, &w), 0);
    return w;
}

static const tb_proto_param *param(const tb_proto_welcome *d, const char *name)
{
    for (uint32_t i = 0; i < d->param_count; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return &d->params[i];
    fail_msg("no parameter %s", name);
    return NULL;
}

/* Every static capsule names its body and, put through that body's pose,
 * lands on the physics capsule's end points: a thin client needs nothing
 * but the pose. Checked after the figure has walked a while. */
static void capsules_are_body_local_and_follow_their_bodies(void **state)
{
    (void)state;
    const char *scenes[] = {"flag", "cape"};
    for (int s = 0; s < 2; s++) {
        void *w = room_world(scenes[s]);
        tb_cloth_def def = tb_cloth_def_default();
        def.scene = s == 0 ? TB_CLOTH_SCENE_FLAG : TB_CLOTH_SCENE_CAPE;
        tb_cloth_world *twin = tb_cloth_world_create(&def, NULL); /* the same scene, stepped alongside */
        assert_non_null(twin);
        for (int k = 0; k < 240; k++) {
            ops->step(w, 1.0f / 120.0f);
            tb_cloth_world_step(twin, TB_CLOTH_DT);
        }
        ops->describe(w, &desc);
        tb_snap_input in;
        ops->fill_snapshot(w, &in);
        int n = tb_cloth_world_capsule_count(twin);
        const tb_cloth_capsule *caps = tb_cloth_world_capsules(twin);
        assert_int_equal(desc.st.capsule_count, n);
        assert_int_equal(in.body_count, n);
        for (int i = 0; i < n; i++) {
            const tb_proto_capsule *c = &desc.st.capsules[i];
            assert_true(c->has_body);
            const tb_proto_body *b = &in.bodies[c->body];
            assert_int_equal(b->id, c->body);
            tb_quat q = tb_q(b->rot[0], b->rot[1], b->rot[2], b->rot[3]);
            tb_vec3 pos = tb_v3(b->pos[0], b->pos[1], b->pos[2]);
            tb_vec3 a = tb_v3_add(pos, tb_q_rotate(q, tb_v3((float)c->a[0], (float)c->a[1], (float)c->a[2])));
            tb_vec3 e = tb_v3_add(pos, tb_q_rotate(q, tb_v3((float)c->b[0], (float)c->b[1], (float)c->b[2])));
            /* sizes are snapped to 1/1024 m for the encoder */
            assert_true(tb_v3_dist(a, caps[i].a) < 2e-3f);
            assert_true(tb_v3_dist(e, caps[i].b) < 2e-3f);
            assert_float_equal(c->radius, caps[i].radius, 1e-3);
        }
        tb_cloth_world_destroy(twin);
        ops->destroy(w);
    }
}

static void grid_is_a_parameter_with_the_scene_default(void **state)
{
    (void)state;
    void *flag = room_world("flag"), *cape = room_world("cape");
    ops->describe(flag, &desc);
    const tb_proto_param *g = param(&desc, "grid");
    assert_float_equal(g->min, 6, 0);
    assert_float_equal(g->max, TB_CLOTH_GRID_MAX, 0);
    assert_float_equal(g->step, 1, 0);
    assert_float_equal(g->def, 16, 0); /* 16 x 10 */
    assert_float_equal(g->value, 16, 0);
    ops->describe(cape, &desc);
    g = param(&desc, "grid");
    assert_float_equal(g->def, 17, 0); /* 12 x 17 */
    assert_float_equal(g->value, 17, 0);
    ops->destroy(flag);
    ops->destroy(cape);
}

/* A new grid rebuilds the cloth at that resolution, keeping the scene's
 * proportions, and tells the room its static description changed. */
static void grid_change_rebuilds_the_mesh_and_changes_the_static_description(void **state)
{
    (void)state;
    void *w = room_world("flag");
    assert_int_equal(ops->param_set(w, "grid", 24), TB_WORLD_STATIC_CHANGED);
    ops->describe(w, &desc);
    assert_int_equal(desc.st.mesh_count, 1);
    assert_int_equal(desc.st.meshes[0].grid_w, 24);
    assert_int_equal(desc.st.meshes[0].grid_h, 15);
    assert_int_equal(desc.st.meshes[0].verts, 24 * 15);
    assert_int_equal(desc.st.meshes[0].pin_count, 15); /* the flag's first column */
    double v = 0;
    assert_int_equal(ops->param_get(w, "grid", &v), 0);
    assert_float_equal(v, 24, 0);
    /* the same value again changes nothing */
    assert_int_equal(ops->param_set(w, "grid", 24), 0);
    for (int k = 0; k < 120; k++)
        ops->step(w, 1.0f / 120.0f);
    tb_snap_input in;
    ops->fill_snapshot(w, &in);
    for (int i = 0; i < 3 * 24 * 15; i++)
        assert_true(isfinite(in.verts[0][i]));
    ops->destroy(w);

    w = room_world("cape");
    assert_int_equal(ops->param_set(w, "grid", 34), TB_WORLD_STATIC_CHANGED);
    ops->describe(w, &desc);
    assert_int_equal(desc.st.meshes[0].grid_w, 24);
    assert_int_equal(desc.st.meshes[0].grid_h, 34);
    ops->destroy(w);
}

static void grid_out_of_range_or_not_finite_is_refused_and_changes_nothing(void **state)
{
    (void)state;
    void *w = room_world("flag");
    const double bad[] = {5, 49, -16, 1e9, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ops->param_set(w, "grid", bad[i]), TB_ERANGE);
    ops->describe(w, &desc);
    assert_int_equal(desc.st.meshes[0].grid_w, 16);
    assert_int_equal(desc.st.meshes[0].grid_h, 10);
    ops->destroy(w);
}

/* A restart keeps the room's resolution. */
static void grid_survives_save_and_load(void **state)
{
    (void)state;
    void *w = room_world("flag");
    assert_int_equal(ops->param_set(w, "grid", 9), TB_WORLD_STATIC_CHANGED);
    ops->step(w, 1.0f / 120.0f);
    unsigned char *buf = NULL;
    size_t len = 0;
    assert_int_equal(ops->save(w, &buf, &len), 0);
    void *back = NULL;
    assert_int_equal(ops->load("flag", 1, NULL, buf, len, &back), 0);
    ops->describe(back, &desc);
    assert_int_equal(desc.st.meshes[0].grid_w, 9);
    assert_int_equal(desc.st.meshes[0].grid_h, 6);
    assert_int_equal(ops->hash(back), ops->hash(w));
    free(buf);
    ops->destroy(back);
    ops->destroy(w);
}

static int grab_input(const tb_world_ops *o, void *w, uint8_t type, uint32_t client, uint32_t pointer, const float *at)
{
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = type;
    in.client = client;
    in.pointer = pointer;
    in.target = -1;
    if (at) memcpy(in.pos, at, sizeof in.pos);
    return o->apply_input(w, &in);
}

/* One grab model: physics hands out opaque handles, and the (client,
 * pointer) -> handle map is sim's (tb_world_grabs), the same for cloth and
 * soft: a pointer holds one grab, another client's same pointer is another
 * grab, a leave ends exactly that client's grabs. */
static void grabs_are_keyed_by_client_and_pointer_in_sim(void **state)
{
    (void)state;
    const tb_world_ops *kinds[2] = {&tb_world_cloth_ops, &tb_world_soft_ops};
    const char *scenes[2] = {"flag", "dough"};
    for (int k = 0; k < 2; k++) {
        const tb_world_ops *o = kinds[k];
        void *w = NULL;
        assert_int_equal(o->create(scenes[k], 1, NULL, &w), 0);
        tb_snap_input snap;
        memset(&snap, 0, sizeof snap);
        o->fill_snapshot(w, &snap);
        /* two free points: the flag's top and bottom free corners (column 0 is pinned), two dough vertices */
        tb_proto_welcome *d = &desc;
        o->describe(w, d);
        uint32_t a = k == 0 ? d->st.meshes[0].grid_w - 1 : 0;
        uint32_t b = k == 0 ? d->st.meshes[0].verts - 1 : 3;
        const float *pa = &snap.verts[0][3 * a], *pb = &snap.verts[0][3 * b];
        const float move[3] = {pa[0], pa[1] + 0.2f, pa[2]};
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_START, 1, 1, pa), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_START, 1, 1, pb), TB_EBUSY);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_START, 2, 1, pb), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_MOVE, 3, 1, move), TB_ENOBODY);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_MOVE, 1, 1, move), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_LEAVE, 1, 0, NULL), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_MOVE, 1, 1, move), TB_ENOBODY);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_MOVE, 2, 1, move), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_END, 2, 1, NULL), 0);
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_END, 2, 1, NULL), TB_ENOBODY);
        /* every handle was given back: the kernel's slots are all free again */
        assert_int_equal(grab_input(o, w, TB_INPUT_GRAB_START, 4, 1, pa), 0);
        o->destroy(w);
    }
}

/* The iterations slider, set through the room as a client's param message
 * is: fewer solver iterations leave the flag's structural edges (grid
 * neighbours) stretched further from their length at rest under gravity and
 * wind. Measured with the streamed vertices over 2 s of flapping. */
static double flag_stretch(int iterations)
{
    void *w = room_world("flag");
    assert_int_equal(ops->param_set(w, "iterations", iterations), 0);
    double got = 0.0;
    assert_int_equal(ops->param_get(w, "iterations", &got), 0);
    assert_float_equal(got, iterations, 0);
    ops->describe(w, &desc);
    const tb_proto_mesh *m = &desc.st.meshes[0];
    int gw = (int)m->grid_w, gh = (int)m->grid_h;
    assert_int_equal(gw * gh, (int)m->verts);
    static tb_snap_input in;
    ops->fill_snapshot(w, &in);
    float *rest = malloc(sizeof(float) * 2 * (size_t)(gw * gh));
    assert_non_null(rest);
    const float *p = in.verts[0];
#define TB__LEN(a, b) sqrtf((p[3 * (a)] - p[3 * (b)]) * (p[3 * (a)] - p[3 * (b)]) + \
                            (p[3 * (a) + 1] - p[3 * (b) + 1]) * (p[3 * (a) + 1] - p[3 * (b) + 1]) + \
                            (p[3 * (a) + 2] - p[3 * (b) + 2]) * (p[3 * (a) + 2] - p[3 * (b) + 2]))
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++) {
            int i = y * gw + x;
            rest[2 * i] = x + 1 < gw ? TB__LEN(i, i + 1) : 0.0f;
            rest[2 * i + 1] = y + 1 < gh ? TB__LEN(i, i + gw) : 0.0f;
        }
    double stretch = 0.0;
    int samples = 0;
    for (int s = 1; s <= 240; s++) {
        ops->step(w, 1.0f / 120.0f);
        if (s % 12) continue;
        ops->fill_snapshot(w, &in);
        p = in.verts[0];
        for (int y = 0; y < gh; y++)
            for (int x = 0; x < gw; x++) {
                int i = y * gw + x;
                if (x + 1 < gw) { stretch += fabs(TB__LEN(i, i + 1) / rest[2 * i] - 1.0); samples++; }
                if (y + 1 < gh) { stretch += fabs(TB__LEN(i, i + gw) / rest[2 * i + 1] - 1.0); samples++; }
            }
    }
#undef TB__LEN
    free(rest);
    ops->destroy(w);
    return stretch / samples;
}

static void iterations_slider_through_the_room_changes_the_stretch(void **state)
{
    (void)state;
    double few = flag_stretch(TB_CLOTH_ITERATIONS_MIN), many = flag_stretch(TB_CLOTH_ITERATIONS_MAX);
    print_message("mean structural stretch over 2 s: %d iterations %.4f, %d iterations %.4f\n", TB_CLOTH_ITERATIONS_MIN, few,
                  TB_CLOTH_ITERATIONS_MAX, many);
    assert_true(few >= 2.0 * many);
    assert_true(many <= 0.05); /* at 20 iterations the flag barely stretches */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iterations_slider_through_the_room_changes_the_stretch),
        cmocka_unit_test(capsules_are_body_local_and_follow_their_bodies),
        cmocka_unit_test(grid_is_a_parameter_with_the_scene_default),
        cmocka_unit_test(grid_change_rebuilds_the_mesh_and_changes_the_static_description),
        cmocka_unit_test(grid_out_of_range_or_not_finite_is_refused_and_changes_nothing),
        cmocka_unit_test(grid_survives_save_and_load),
        cmocka_unit_test(grabs_are_keyed_by_client_and_pointer_in_sim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
