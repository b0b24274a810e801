/* test_soft.c: the dough (server/physics/soft.h) against the seed's success
 * criteria, turned into numbers (issue 3). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/icosphere.h"
#include "physics/soft.h"

/* The tests name grabs by (client, pointer) as a room does; the kernel gives
 * handles. This table maps one to the other, as sim's tb_world_grabs does. */
typedef struct held_grab { const tb_soft_world *world; uint32_t client, pointer; int handle; } held_grab;
static held_grab held[64];
static int held_count;

static held_grab *held_find(const tb_soft_world *w, uint32_t client, uint32_t pointer)
{
    for (int i = 0; i < held_count; i++)
        if (held[i].world == w && held[i].client == client && held[i].pointer == pointer) return &held[i];
    return NULL;
}

/* A world loaded from another's save holds its grabs under the same handles. */
static void held_copy(const tb_soft_world *from, const tb_soft_world *to)
{
    for (int i = 0, n = held_count; i < n; i++)
        if (held[i].world == from) {
            held_grab *g = held_find(to, held[i].client, held[i].pointer);
            if (!g) {
                assert_true(held_count < 64);
                g = &held[held_count++];
            }
            *g = (held_grab){to, held[i].client, held[i].pointer, held[i].handle};
        }
}

static int grab_start(tb_soft_world *w, uint32_t client, uint32_t pointer, tb_vec3 at)
{
    int handle = tb_soft_world_grab_start(w, at);
    if (handle < 0) return handle;
    held_grab *g = held_find(w, client, pointer);
    if (!g) {
        assert_true(held_count < 64);
        g = &held[held_count++];
    }
    *g = (held_grab){w, client, pointer, handle};
    return TB_PHYS_OK;
}

static int grab_move(tb_soft_world *w, uint32_t client, uint32_t pointer, tb_vec3 target)
{
    held_grab *g = held_find(w, client, pointer);
    return tb_soft_world_grab_move(w, g ? g->handle : -1, target);
}

static int grab_end(tb_soft_world *w, uint32_t client, uint32_t pointer)
{
    held_grab *g = held_find(w, client, pointer);
    int handle = g ? g->handle : -1;
    if (g) *g = held[--held_count];
    return tb_soft_world_grab_end(w, handle);
}

#define DT (1.0f / 120.0f)
#define STEPS_PER_SECOND 120

static tb_soft_world *make_world(void)
{
    tb_soft_def def = tb_soft_def_default();
    int r;
    tb_soft_world *w = tb_soft_world_create(&def, &r);
    assert_non_null(w);
    assert_int_equal(r, TB_PHYS_OK);
    return w;
}

static void run(tb_soft_world *w, int steps)
{
    for (int s = 0; s < steps; s++) assert_int_equal(tb_soft_world_step(w, DT), TB_PHYS_OK);
}

static tb_vec3 vertex(const tb_soft_world *w, int i)
{
    const float *p = tb_soft_world_positions(w);
    return tb_v3(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
}

static float fastest(const tb_soft_world *w)
{
    const float *v = tb_soft_world_velocities(w);
    float worst = 0.0f;
    for (int i = 0; i < tb_soft_world_vertex_count(w); i++)
        worst = tb_maxf(worst, tb_v3_len(tb_v3(v[3 * i], v[3 * i + 1], v[3 * i + 2])));
    return worst;
}

/* The vertex farthest along dir. */
static int extreme_vertex(const tb_soft_world *w, tb_vec3 dir)
{
    int best = 0;
    for (int i = 1; i < tb_soft_world_vertex_count(w); i++)
        if (tb_v3_dot(vertex(w, i), dir) > tb_v3_dot(vertex(w, best), dir)) best = i;
    return best;
}

static bool all_finite(const tb_soft_world *w)
{
    const float *p = tb_soft_world_positions(w);
    for (int k = 0; k < 3 * tb_soft_world_vertex_count(w); k++)
        if (!isfinite(p[k])) return false;
    return true;
}

/* ---- the mesh --------------------------------------------------------------------- */

static void icosphere_has_812_vertices_2430_edges_1620_triangles(void **state)
{
    (void)state;
    assert_int_equal(TB_ICOSPHERE_VERTICES, 812);
    assert_int_equal(TB_ICOSPHERE_EDGES, 2430);
    assert_int_equal(TB_ICOSPHERE_TRIANGLES, 1620);
    static float pos[TB_ICOSPHERE_VERTICES * 3], pos2[TB_ICOSPHERE_VERTICES * 3];
    static uint16_t tri[TB_ICOSPHERE_TRIANGLES * 3], tri2[TB_ICOSPHERE_TRIANGLES * 3];
    static uint16_t edges[TB_ICOSPHERE_EDGES * 2], edges2[TB_ICOSPHERE_EDGES * 2];
    assert_int_equal(tb_icosphere_build(pos, tri, edges), 0);
    assert_int_equal(tb_icosphere_build(pos2, tri2, edges2), 0);
    assert_memory_equal(pos, pos2, sizeof pos);
    assert_memory_equal(tri, tri2, sizeof tri);
    assert_memory_equal(edges, edges2, sizeof edges);
    for (int i = 0; i < TB_ICOSPHERE_VERTICES; i++)
        assert_float_equal(tb_v3_len(tb_v3(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2])), 1.0f, 1e-5f);
    /* Shared vertices, closed surface: each vertex in 5 or 6 triangles (12 of
     * them 5), Euler V - E + F = 2, each edge distinct. */
    static int uses[TB_ICOSPHERE_VERTICES];
    memset(uses, 0, sizeof uses);
    for (int k = 0; k < 3 * TB_ICOSPHERE_TRIANGLES; k++) uses[tri[k]]++;
    int fives = 0;
    for (int i = 0; i < TB_ICOSPHERE_VERTICES; i++) {
        assert_true(uses[i] == 5 || uses[i] == 6);
        fives += uses[i] == 5;
    }
    assert_int_equal(fives, 12);
    assert_int_equal(TB_ICOSPHERE_VERTICES - TB_ICOSPHERE_EDGES + TB_ICOSPHERE_TRIANGLES, 2);
    for (int e = 0; e < TB_ICOSPHERE_EDGES; e++) assert_true(edges[2 * e] < edges[2 * e + 1]);
    /* Wound outward: the world's volume is positive and close to 4/3 pi. */
    tb_soft_world *w = make_world();
    assert_int_equal(tb_soft_world_vertex_count(w), 812);
    assert_int_equal(tb_soft_world_edge_count(w), 2430);
    assert_int_equal(tb_soft_world_triangle_count(w), 1620);
    float v = tb_soft_world_volume(w);
    assert_true(v > 0.97f * 4.18879f && v < 4.18879f);
    tb_soft_world_destroy(w);
}

/* ---- plasticity ------------------------------------------------------------------------ */

static void pulled_vertex_stays_out_after_release(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    int v = extreme_vertex(w, tb_v3(0.3f, 1.0f, 0.2f));
    tb_vec3 start = vertex(w, v), out = tb_v3_norm(start);
    float r0 = tb_v3_dot(start, out);
    assert_int_equal(grab_start(w, 1, 1, start), TB_PHYS_OK);
    for (int s = 1; s <= STEPS_PER_SECOND; s++) {
        assert_int_equal(grab_move(w, 1, 1, tb_v3_mad(start, out, (float)s / STEPS_PER_SECOND)), TB_PHYS_OK);
        run(w, 1);
    }
    float released = tb_v3_dot(vertex(w, v), out) - r0;
    assert_int_equal(grab_end(w, 1, 1), TB_PHYS_OK);
    run(w, 2 * STEPS_PER_SECOND);
    float later = tb_v3_dot(vertex(w, v), out) - r0;
    print_message("pulled out %.3f m; 2 s after release %.3f m (%.1f %%), fastest vertex %.5f m/s\n", released, later,
                  100.0f * later / released, fastest(w));
    assert_true(released > 0.9f);
    assert_true(later >= 0.95f * released);
    assert_true(fastest(w) < 0.01f);
    tb_soft_world_destroy(w);
}

static void without_plasticity_dough_springs_back(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    assert_int_equal(tb_soft_world_set_plasticity(w, false), TB_PHYS_OK);
    int v = extreme_vertex(w, tb_v3(0, 1, 0));
    tb_vec3 start = vertex(w, v);
    assert_int_equal(grab_start(w, 1, 1, start), TB_PHYS_OK);
    for (int s = 1; s <= STEPS_PER_SECOND / 2; s++) {
        grab_move(w, 1, 1, tb_v3_mad(start, tb_v3(0, 1, 0), (float)s / STEPS_PER_SECOND));
        run(w, 1);
    }
    float pulled = vertex(w, v).y - start.y;
    grab_end(w, 1, 1);
    run(w, 3 * STEPS_PER_SECOND);
    float left = vertex(w, v).y - start.y;
    print_message("no plasticity: pulled %.3f m, %.3f m left after 3 s\n", pulled, left);
    assert_true(pulled > 0.2f);
    assert_true(left < 0.2f * pulled);
    tb_soft_world_destroy(w);
}

/* ---- volume and the press ----------------------------------------------------------------- */

static void press_keeps_volume_and_swells_the_far_side(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    int pressed = extreme_vertex(w, tb_v3(1, 0, 0)), far = extreme_vertex(w, tb_v3(-1, 0, 0));
    float v0 = tb_soft_world_volume(w), far0 = tb_v3_len(vertex(w, far));
    assert_int_equal(tb_soft_world_press(w, vertex(w, pressed), 0.3f), TB_PHYS_OK);
    assert_int_equal(tb_soft_world_press(w, vertex(w, pressed), 0.3f), TB_PHYS_ERR_BUSY);
    float worst = 0.0f;
    while (tb_soft_world_pressing(w)) {
        run(w, 1);
        worst = tb_maxf(worst, fabsf(tb_soft_world_volume(w) - v0) / v0);
    }
    run(w, STEPS_PER_SECOND / 2);
    worst = tb_maxf(worst, fabsf(tb_soft_world_volume(w) - v0) / v0);
    float depth = 1.0f - tb_v3_len(vertex(w, pressed));
    float far1 = tb_v3_len(vertex(w, far));
    print_message("dent %.3f m deep, volume off by at most %.2f %%, far side %.4f -> %.4f from the centre\n", depth,
                  100.0f * worst, far0, far1);
    assert_true(depth > 0.25f);
    assert_true(worst <= 0.02f);
    assert_true(far1 > far0 + 0.005f);
    tb_soft_world_destroy(w);
}

static void dent_stays_after_press_ends(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    int pressed = extreme_vertex(w, tb_v3(0, 0, 1));
    assert_int_equal(tb_soft_world_press(w, vertex(w, pressed), 0.3f), TB_PHYS_OK);
    while (tb_soft_world_pressing(w)) run(w, 1);
    float depth = 1.0f - tb_v3_len(vertex(w, pressed));
    run(w, 2 * STEPS_PER_SECOND);
    float later = 1.0f - tb_v3_len(vertex(w, pressed));
    print_message("dent %.3f m deep when the press ends, %.3f m 2 s later\n", depth, later);
    assert_true(depth > 0.25f);
    assert_true(later >= 0.8f * depth);
    tb_soft_world_destroy(w);
}

/* ---- limits ------------------------------------------------------------------------------------ */

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static float unit(uint32_t *s) { return (float)(lcg(s) & 0xffff) / 65535.0f; }

static void random_pulls_stay_within_size_limits(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    uint32_t seed = 12345;
    const float *rest = tb_soft_world_rest_lengths(w), *orig = tb_soft_world_original_rest_lengths(w);
    float worst_ratio = 0.0f;
    int over = 0; /* rest lengths above 3x their original, compared exactly */
    for (int pull = 0; pull < 50; pull++) {
        tb_vec3 dir = tb_v3_norm(tb_v3(unit(&seed) - 0.5f, unit(&seed) - 0.5f, unit(&seed) - 0.5f));
        int v = extreme_vertex(w, dir);
        tb_vec3 start = vertex(w, v);
        float reach = 0.5f + 2.5f * unit(&seed);
        assert_int_equal(grab_start(w, 9, (uint32_t)pull, start), TB_PHYS_OK);
        for (int s = 1; s <= 36; s++) {
            grab_move(w, 9, (uint32_t)pull, tb_v3_mad(start, dir, reach * (float)s / 36.0f));
            run(w, 1);
        }
        assert_int_equal(grab_end(w, 9, (uint32_t)pull), TB_PHYS_OK);
        run(w, 12);
        for (int e = 0; e < tb_soft_world_edge_count(w); e++) {
            worst_ratio = tb_maxf(worst_ratio, rest[e] / orig[e]);
            over += rest[e] > TB_SOFT_MAX_STRETCH * orig[e];
        }
        assert_true(all_finite(w));
    }
    run(w, STEPS_PER_SECOND);
    float far = 0.0f;
    tb_vec3 com = tb_v3_zero();
    for (int i = 0; i < tb_soft_world_vertex_count(w); i++) {
        far = tb_maxf(far, tb_v3_len(vertex(w, i)));
        com = tb_v3_add(com, vertex(w, i));
    }
    com = tb_v3_scale(com, 1.0f / (float)tb_soft_world_vertex_count(w));
    print_message("after 50 pulls: farthest vertex %.3f, largest rest length %.2fx, centre of mass %.2g m off\n", far,
                  worst_ratio, tb_v3_len(com));
    assert_true(far <= TB_SOFT_MAX_RADIUS * 1.01f);
    assert_true(far > 1.5f); /* the pulls did stretch it */
    assert_int_equal(over, 0);
    assert_true(tb_v3_len(com) <= 0.001f);
    tb_soft_world_destroy(w);
}

/* ---- guards ------------------------------------------------------------------------------------ */

static void bad_dt_and_nan_inputs_change_nothing(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    int v = extreme_vertex(w, tb_v3(0, 1, 0));
    assert_int_equal(grab_start(w, 1, 1, vertex(w, v)), TB_PHYS_OK);
    grab_move(w, 1, 1, tb_v3(0, 1.5f, 0));
    run(w, 10);
    uint64_t before = tb_soft_world_hash(w);
    float nan = NAN;
    assert_int_equal(tb_soft_world_step(w, 0.0f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_soft_world_step(w, -DT), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_soft_world_step(w, 10.0f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_soft_world_step(w, nan), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_soft_world_step(w, INFINITY), TB_PHYS_ERR_INVALID);
    assert_int_equal(grab_move(w, 1, 1, tb_v3(nan, 0, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(grab_move(w, 1, 1, tb_v3(0, INFINITY, 0)), TB_PHYS_ERR_INVALID);
    assert_int_equal(grab_start(w, 2, 1, tb_v3(0, 0, nan)), TB_PHYS_ERR_INVALID);
    assert_int_equal(grab_move(w, 2, 1, tb_v3(0, 2, 0)), TB_PHYS_ERR_UNKNOWN_GRAB);
    assert_int_equal(grab_end(w, 2, 1), TB_PHYS_ERR_UNKNOWN_GRAB);
    assert_int_equal(grab_start(w, 2, 1, tb_v3(5, 5, 5)), TB_PHYS_ERR_NOTHING_THERE);
    assert_int_equal(tb_soft_world_press(w, vertex(w, v), nan), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_soft_world_press(w, vertex(w, v), 0.0f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_soft_world_press(w, vertex(w, v), 1.0f), TB_PHYS_ERR_RANGE);
    assert_int_equal(tb_soft_world_set_stiffness(w, nan), TB_PHYS_ERR_INVALID);
    assert_int_equal(tb_soft_world_set_stiffness(w, 1.5f), TB_PHYS_ERR_RANGE);
    unsigned char junk[32] = {0};
    assert_int_equal(tb_soft_world_load(w, junk, sizeof junk), TB_PHYS_ERR_FORMAT);
    assert_true(tb_soft_world_hash(w) == before);

    /* More grabs than the limit. */
    for (uint32_t p = 2; p <= TB_SOFT_MAX_GRABS; p++)
        assert_int_equal(grab_start(w, 1, p, vertex(w, v)), TB_PHYS_OK);
    assert_int_equal(grab_start(w, 3, 1, vertex(w, v)), TB_PHYS_ERR_TOO_MANY_GRABS);
    assert_int_equal(tb_soft_world_grab_count(w), TB_SOFT_MAX_GRABS);

    /* Wild but finite targets are fine and never produce a NaN. */
    for (int s = 0; s < 60; s++) {
        for (uint32_t p = 1; p <= TB_SOFT_MAX_GRABS; p++)
            grab_move(w, 1, p, tb_v3(s % 2 ? 900.0f : -900.0f, (float)p * 50.0f, 0));
        run(w, 1);
        assert_true(all_finite(w));
    }
    /* dt at the edges of the accepted range is clamped, not refused. */
    assert_int_equal(tb_soft_world_step(w, 1e-6f), TB_PHYS_OK);
    assert_int_equal(tb_soft_world_step(w, TB_SOFT_DT_MAX), TB_PHYS_OK);
    assert_true(all_finite(w));
    tb_soft_def bad = tb_soft_def_default();
    bad.substeps = 0;
    int r = TB_PHYS_OK;
    assert_null(tb_soft_world_create(&bad, &r));
    assert_int_equal(r, TB_PHYS_ERR_RANGE);
    assert_string_equal(tb_phys_strerror(TB_PHYS_ERR_UNKNOWN_GRAB), "no such grab");
    tb_soft_world_destroy(w);
}

/* ---- several hands --------------------------------------------------------------------------------- */

static void two_grabs_pull_both_sides_and_commit_only_when_both_end(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    int left = extreme_vertex(w, tb_v3(-1, 0, 0)), right = extreme_vertex(w, tb_v3(1, 0, 0));
    tb_vec3 l0 = vertex(w, left), r0 = vertex(w, right);
    assert_int_equal(grab_start(w, 1, 0, l0), TB_PHYS_OK);
    assert_int_equal(grab_start(w, 2, 0, r0), TB_PHYS_OK);
    for (int s = 1; s <= 60; s++) {
        float d = 0.6f * (float)s / 60.0f;
        grab_move(w, 1, 0, tb_v3(l0.x - d, l0.y, l0.z));
        grab_move(w, 2, 0, tb_v3(r0.x + d, r0.y, r0.z));
        run(w, 1);
    }
    float width = vertex(w, right).x - vertex(w, left).x;
    assert_int_equal(grab_end(w, 1, 0), TB_PHYS_OK);
    assert_int_equal(tb_soft_world_grab_count(w), 1);
    /* One hand still holds: no commit yet, velocities are not zeroed. */
    assert_true(fastest(w) > 0.0f);
    assert_int_equal(grab_end(w, 2, 0), TB_PHYS_OK);
    assert_true(fastest(w) == 0.0f);
    run(w, STEPS_PER_SECOND);
    float later = vertex(w, right).x - vertex(w, left).x;
    print_message("stretched to %.3f m wide, %.3f m 1 s after both let go\n", width, later);
    assert_true(width > 3.0f);
    assert_true(later >= 0.95f * width);
    tb_soft_world_destroy(w);
}

/* ---- determinism and save/load ------------------------------------------------------------------------ */

static void scripted(tb_soft_world *w, int from, int to)
{
    for (int s = from; s < to; s++) {
        if (s == 5) grab_start(w, 4, 2, vertex(w, 100));
        if (s > 5 && s < 80) grab_move(w, 4, 2, tb_v3(0.5f, 1.5f + 0.01f * (float)s, 0.2f));
        if (s == 30) grab_start(w, 5, 1, vertex(w, 600));
        if (s > 30 && s < 90) grab_move(w, 5, 1, tb_v3(-1.5f, -0.4f, 0.1f * (float)(s - 30)));
        if (s == 80) grab_end(w, 4, 2);
        if (s == 90) grab_end(w, 5, 1);
        if (s == 100) tb_soft_world_press(w, vertex(w, 300), 0.25f);
        if (s == 150) tb_soft_world_set_stiffness(w, 0.3f);
        assert_int_equal(tb_soft_world_step(w, DT), TB_PHYS_OK);
    }
}

static void same_dough_inputs_give_identical_results(void **state)
{
    (void)state;
    tb_soft_world *a = make_world(), *b = make_world();
    scripted(a, 0, 200);
    scripted(b, 0, 200);
    assert_memory_equal(tb_soft_world_positions(a), tb_soft_world_positions(b), sizeof(float) * 3 * 812);
    assert_true(tb_soft_world_hash(a) == tb_soft_world_hash(b));
    tb_soft_world_destroy(a);
    tb_soft_world_destroy(b);
}

static void saved_dough_continues_identically(void **state)
{
    (void)state;
    tb_soft_world *a = make_world();
    scripted(a, 0, 50); /* two grabs held */
    size_t size = tb_soft_world_save_size(a), written = 0;
    unsigned char *buf = malloc(size);
    assert_non_null(buf);
    assert_int_equal(tb_soft_world_save(a, buf, size, &written), TB_PHYS_OK);
    assert_int_equal(written, size);
    tb_soft_world *b = make_world();
    run(b, 7); /* whatever it was doing is replaced */
    assert_int_equal(tb_soft_world_load(b, buf, size), TB_PHYS_OK);
    assert_int_equal(tb_soft_world_grab_count(b), 2);
    held_copy(a, b);
    scripted(a, 50, 200);
    scripted(b, 50, 200);
    assert_memory_equal(tb_soft_world_positions(a), tb_soft_world_positions(b), sizeof(float) * 3 * 812);
    assert_true(tb_soft_world_hash(a) == tb_soft_world_hash(b));
    uint64_t kept = tb_soft_world_hash(b);
    buf[8] ^= 0xff; /* the header's state size */
    assert_int_equal(tb_soft_world_load(b, buf, size), TB_PHYS_ERR_FORMAT);
    buf[8] ^= 0xff;
    assert_int_equal(tb_soft_world_load(b, buf, size - 1), TB_PHYS_ERR_FORMAT);
    float nan = NAN;
    memcpy(buf + 16 + 72, &nan, sizeof nan); /* the first position (72-byte state head, see soft_internal.h) */
    assert_int_equal(tb_soft_world_load(b, buf, size), TB_PHYS_ERR_FORMAT);
    assert_true(tb_soft_world_hash(b) == kept);
    free(buf);
    tb_soft_world_destroy(a);
    tb_soft_world_destroy(b);
}

/* ---- sleep ---------------------------------------------------------------------------------------------- */

static void run_until_asleep(tb_soft_world *w, int max_steps)
{
    for (int s = 0; s < max_steps && !tb_soft_world_asleep(w); s++) assert_int_equal(tb_soft_world_step(w, DT), TB_PHYS_OK);
    assert_true(tb_soft_world_asleep(w));
}

static void idle_dough_falls_asleep_and_stops_being_stepped(void **state)
{
    (void)state;
    tb_soft_world *w = make_world();
    /* deformed and let go: it settles, then sleeps */
    assert_int_equal(grab_start(w, 1, 1, vertex(w, 0)), TB_PHYS_OK);
    tb_vec3 p0 = vertex(w, 0);
    assert_int_equal(grab_move(w, 1, 1, tb_v3_scale(p0, 1.6f)), TB_PHYS_OK);
    run(w, 240);
    assert_false(tb_soft_world_asleep(w)); /* a held grab never sleeps */
    assert_int_equal(grab_end(w, 1, 1), TB_PHYS_OK);
    run(w, TB_SOFT_SLEEP_STEPS - 1);
    assert_false(tb_soft_world_asleep(w)); /* not before SLEEP_STEPS slow steps */
    run_until_asleep(w, 5 * STEPS_PER_SECOND);
    assert_true(fastest(w) == 0.0f);
    assert_int_equal(tb_soft_world_idle_steps(w), 0);
    static float pos[3 * 812];
    memcpy(pos, tb_soft_world_positions(w), sizeof pos);
    uint64_t h = tb_soft_world_hash(w);
    run(w, STEPS_PER_SECOND);
    assert_int_equal(tb_soft_world_idle_steps(w), STEPS_PER_SECOND);
    assert_memory_equal(pos, tb_soft_world_positions(w), sizeof pos);
    assert_true(tb_soft_world_hash(w) != h); /* the step count still advances */
    tb_soft_world_destroy(w);
}

static void every_input_wakes_a_sleeping_dough_and_bad_input_does_not(void **state)
{
    (void)state;
    for (int input = 0; input < 7; input++) {
        tb_soft_world *w = make_world();
        run_until_asleep(w, 2 * STEPS_PER_SECOND);
        uint64_t idle = tb_soft_world_idle_steps(w);
        assert_int_equal(tb_soft_world_press(w, tb_v3(NAN, 0, 0), 0.2f), TB_PHYS_ERR_INVALID);
        assert_int_equal(grab_move(w, 9, 9, tb_v3(0, 0, 0)), TB_PHYS_ERR_UNKNOWN_GRAB);
        assert_true(tb_soft_world_asleep(w));
        tb_vec3 top = vertex(w, extreme_vertex(w, tb_v3(0, 1, 0)));
        switch (input) {
        case 0: assert_int_equal(grab_start(w, 1, 1, top), TB_PHYS_OK); break;
        case 1: assert_int_equal(tb_soft_world_press(w, top, 0.2f), TB_PHYS_OK); break;
        case 2: assert_int_equal(tb_soft_world_set_stiffness(w, 0.3f), TB_PHYS_OK); break;
        case 3: assert_int_equal(tb_soft_world_set_plasticity(w, false), TB_PHYS_OK); break;
        case 4: assert_int_equal(tb_soft_world_set_volume_preservation(w, false), TB_PHYS_OK); break;
        case 5: tb_soft_world_reset(w); break;
        case 6:
            assert_int_equal(grab_start(w, 1, 1, top), TB_PHYS_OK);
            run(w, 2 * TB_SOFT_SLEEP_STEPS);
            assert_false(tb_soft_world_asleep(w));
            assert_int_equal(grab_end(w, 1, 1), TB_PHYS_OK);
            break;
        }
        assert_false(tb_soft_world_asleep(w));
        run(w, 1);
        assert_int_equal(tb_soft_world_idle_steps(w), idle); /* a full step */
        if (input == 0) {   /* and the grab moves the dough */
            assert_int_equal(grab_move(w, 1, 1, tb_v3_add(top, tb_v3(0, 0.5f, 0))), TB_PHYS_OK);
            run(w, 30);
            assert_true(vertex(w, extreme_vertex(w, tb_v3(0, 1, 0))).y > top.y + 0.2f);
        }
        tb_soft_world_destroy(w);
    }
}

/* Saved while settling and while asleep: the copy sleeps, wakes and moves
 * exactly as the original. A sleep count out of range is a bad save. */
static void sleep_state_is_saved_and_loaded(void **state)
{
    (void)state;
    tb_soft_world *a = make_world();
    scripted(a, 0, 200);
    size_t size = tb_soft_world_save_size(a);
    unsigned char *buf = malloc(size);
    assert_non_null(buf);
    for (int when = 0; when < 2; when++) {
        if (when == 1) run_until_asleep(a, 10 * STEPS_PER_SECOND);
        assert_int_equal(tb_soft_world_save(a, buf, size, NULL), TB_PHYS_OK);
        tb_soft_world *b = make_world();
        assert_int_equal(tb_soft_world_load(b, buf, size), TB_PHYS_OK);
        assert_true(tb_soft_world_asleep(b) == tb_soft_world_asleep(a));
        assert_true(tb_soft_world_hash(b) == tb_soft_world_hash(a));
        tb_soft_world *ab[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            run_until_asleep(ab[k], 10 * STEPS_PER_SECOND);
            run(ab[k], 30);
            assert_int_equal(tb_soft_world_press(ab[k], vertex(ab[k], 500), 0.2f), TB_PHYS_OK);
            run(ab[k], 40);
        }
        assert_true(tb_soft_world_hash(a) == tb_soft_world_hash(b));
        tb_soft_world_destroy(b);
    }
    /* the sleep count sits at byte 68 of the state (after the 16-byte header) */
    tb_soft_world *c = make_world();
    int32_t bad = TB_SOFT_SLEEP_STEPS + 1;
    memcpy(buf + 16 + 68, &bad, sizeof bad);
    assert_int_equal(tb_soft_world_load(c, buf, size), TB_PHYS_ERR_FORMAT);
    bad = -1;
    memcpy(buf + 16 + 68, &bad, sizeof bad);
    assert_int_equal(tb_soft_world_load(c, buf, size), TB_PHYS_ERR_FORMAT);
    bad = TB_SOFT_SLEEP_STEPS;
    memcpy(buf + 16 + 68, &bad, sizeof bad);
    assert_int_equal(tb_soft_world_load(c, buf, size), TB_PHYS_OK);
    assert_true(tb_soft_world_asleep(c));
    free(buf);
    tb_soft_world_destroy(c);
    tb_soft_world_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(icosphere_has_812_vertices_2430_edges_1620_triangles),
        cmocka_unit_test(pulled_vertex_stays_out_after_release),
        cmocka_unit_test(without_plasticity_dough_springs_back),
        cmocka_unit_test(press_keeps_volume_and_swells_the_far_side),
        cmocka_unit_test(dent_stays_after_press_ends),
        cmocka_unit_test(random_pulls_stay_within_size_limits),
        cmocka_unit_test(bad_dt_and_nan_inputs_change_nothing),
        cmocka_unit_test(two_grabs_pull_both_sides_and_commit_only_when_both_end),
        cmocka_unit_test(same_dough_inputs_give_identical_results),
        cmocka_unit_test(saved_dough_continues_identically),
        cmocka_unit_test(idle_dough_falls_asleep_and_stops_being_stepped),
        cmocka_unit_test(every_input_wakes_a_sleeping_dough_and_bad_input_does_not),
        cmocka_unit_test(sleep_state_is_saved_and_loaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
