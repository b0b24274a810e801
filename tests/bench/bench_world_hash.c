/* bench_world_hash.c: determinism as a test. Every kernel, driven by a fixed
 * input script, hashed at the end.
 *
 *   tumble-bench world-hash
 *
 * prints one line {"scene":..., "steps":N, "hash":"%016x"} for each of
 * tower, tower-cycle, pile1000, dice, flag, cape and dough. The hash is the
 * kernel's FNV-1a over its saved state (tb_rigid_world_save,
 * tb_cloth_world_hash, tb_soft_world_hash), so two builds step bit for bit
 * alike exactly when they print the same lines. tests/world-hash/check.sh
 * builds the physics several ways (gcc -O2 with the AVX clones, gcc -O0,
 * -DTB_NO_CLONES, clang -O2) and compares each build's lines with the
 * committed goldens in tests/world-hash/golden.jsonl.
 *
 * The scripts imitate what the load generator (tests/load/load_client.c)
 * does to each room, with every choice drawn from a seeded generator:
 *   tower        the demo: the ball launched at 1.6 s, 10 s in all
 *   tower-cycle  knocked every 5 s, rebuilt 2.5 s later, a plank poked every 3 s
 *   pile1000     1,000 cubes falling, 6 s, no input
 *   dice         thrown at 0 s and every 4 s, a ball thrown every 3 s, a body
 *                poked every 3 s (offset), 10 s
 *   flag, cape   wind changed every 4 s, a 1 s drag 1 s after it, a point
 *                flicked every 3 s, 10 s
 *   dough        every 3 s a vertex grabbed, pulled out for 0.75 s, released;
 *                a press every 3 s (offset), 9 s
 * An input the kernel refuses stops the program: a script that silently did
 * nothing would hash nothing worth comparing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "physics/cloth.h"
#include "physics/rigid.h"
#include "physics/rigid_scenes.h"
#include "physics/soft.h"

#define DT (1.0f / 120.0f)

void tb_bench_world_hash(const tb_bench_opts *opts);

static void line(const char *scene, int steps, uint64_t hash)
{
    printf("{\"scene\":\"%s\",\"steps\":%d,\"hash\":\"%016llx\"}\n", scene, steps, (unsigned long long)hash);
    fflush(stdout);
}

static void check(int ok, const char *scene, const char *what, int step)
{
    if (ok) return;
    fprintf(stderr, "tumble-bench world-hash: %s: %s refused at step %d\n", scene, what, step);
    exit(1);
}

/* ---- rigid ------------------------------------------------------------------ */

static tb_rigid_world *tray(int capacity)
{
    tb_rigid_world_def def = tb_rigid_world_def_default();
    def.body_capacity = capacity;
    tb_rigid_world *w = tb_rigid_world_create(&def);
    if (!w || tb_rigid_scene_tray(w) != TB_PHYS_OK) { fprintf(stderr, "tumble-bench: rigid world\n"); exit(1); }
    return w;
}

static uint64_t rigid_hash(const tb_rigid_world *w)
{
    size_t size = tb_rigid_world_save_size(w);
    unsigned char *buf = malloc(size);
    if (!buf || tb_rigid_world_save(w, buf, size, NULL) != TB_PHYS_OK) { fprintf(stderr, "tumble-bench: save\n"); exit(1); }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ buf[i]) * 1099511628211ull;
    free(buf);
    return h;
}

/* A small impulse (the load test's poke) at the centre of a live body drawn
 * from rng. */
static void poke_random_body(tb_rigid_world *w, tb_rigid_rng *rng)
{
    int ids[64], n = 0;
    for (int id = tb_rigid_world_next_body(w, -1); id >= 0 && n < 64; id = tb_rigid_world_next_body(w, id)) ids[n++] = id;
    if (n == 0) return;
    int id = ids[tb_rigid_rng_next(rng) % (uint64_t)n];
    tb_rigid_body_info info;
    tb_rigid_body_get_info(w, id, &info);
    float x = (tb_rigid_rng_float(rng) - 0.5f) * 0.6f, z = (tb_rigid_rng_float(rng) - 0.5f) * 0.6f;
    tb_rigid_body_apply_impulse(w, id, tb_v3(x, 0.3f, z), info.position);
}

/* The load test's tower room made deterministic: in each 5 s cycle (600
 * steps) the ball is launched at 1.0 s and the tower rebuilt at 3.5 s; every
 * 3 s (from step 200) a live body gets a poke. Call before step s. Shared
 * with bench_count.c (the tower-cycle instruction count). */
void tb_bench_tower_cycle_input(tb_rigid_world *w, int s, tb_rigid_rng *rng)
{
    if (s % 600 == 120) tb_rigid_scene_tower_launch_ball(w);
    if (s % 600 == 420) tb_rigid_scene_tower(w, NULL);
    if (s % 360 == 200) poke_random_body(w, rng);
}

tb_rigid_world *tb_bench_tower_cycle_world(tb_rigid_rng *rng)
{
    tb_rigid_world *w = tray(32);
    tb_rigid_scene_tower(w, NULL);
    *rng = tb_rigid_rng_seed(1);
    return w;
}

static void rigid_scenes(void)
{
    /* the tower demo: the scene's own fall and the ball at 1.6 s (the rigid-hash scenario of
     * BENCHMARKS.md before this file: f74d9c2ae10ab904) */
    tb_rigid_world *w = tray(32);
    tb_rigid_scene_tower(w, NULL);
    for (int s = 0; s < 1200; s++) {
        if (s == 192) tb_rigid_scene_tower_launch_ball(w);
        tb_rigid_world_step(w, DT);
    }
    line("tower", 1200, rigid_hash(w));
    tb_rigid_world_destroy(w);

    tb_rigid_rng rng;
    w = tb_bench_tower_cycle_world(&rng);
    for (int s = 0; s < TB_BENCH_TOWER_CYCLE_STEPS; s++) {
        tb_bench_tower_cycle_input(w, s, &rng);
        tb_rigid_world_step(w, DT);
    }
    line("tower-cycle", TB_BENCH_TOWER_CYCLE_STEPS, rigid_hash(w));
    tb_rigid_world_destroy(w);

    /* 1,000 cubes falling onto each other, no input (720d5cfaeea228f5 in BENCHMARKS.md) */
    w = tray(1000);
    tb_rigid_scene_pile(w, 1000);
    for (int s = 0; s < 720; s++) tb_rigid_world_step(w, DT);
    line("pile1000", 720, rigid_hash(w));
    tb_rigid_world_destroy(w);
}

/* Dice: the scene (three dice thrown, two balls) rebuilt every 4 s as the
 * room's throw_dice does, a ball thrown across the tray every 3 s, a body
 * poked every 3 s half-way between the throws. Projectiles pile up to 4. */
static void dice_scene(void)
{
    const int steps = 1200;
    tb_rigid_world *w = tray(TB_SCENE_DICE_BODIES + 8);
    tb_rigid_rng rng = tb_rigid_rng_seed(7);
    for (int s = 0; s < steps; s++) {
        if (s % 480 == 0) check(tb_rigid_scene_dice(w, &rng, NULL, NULL) >= 0, "dice", "throw_dice", s);
        if (s % 360 == 60) {
            tb_vec3 origin = tb_v3((tb_rigid_rng_float(&rng) - 0.5f) * 2.0f, 2.0f, 2.0f);
            tb_vec3 velocity = tb_v3((tb_rigid_rng_float(&rng) - 0.5f) * 2.0f, 1.0f, -8.0f);
            check(tb_rigid_throw(w, TB_THROW_BALL, origin, velocity, tb_v3(0, 0, 0), 1) >= 0, "dice", "throw", s);
        }
        if (s % 360 == 240) poke_random_body(w, &rng);
        tb_rigid_world_step(w, DT);
    }
    line("dice", steps, rigid_hash(w));
    tb_rigid_world_destroy(w);
}

/* ---- cloth ------------------------------------------------------------------ */

/* A point of the piece drawn from rng (rows below the top one, which holds
 * the pins), and a unit direction to drag it in. */
static tb_vec3 cloth_point(const tb_cloth_world *w, tb_rigid_rng *rng)
{
    tb_cloth_view v;
    tb_cloth_world_get_cloth(w, 0, &v);
    int i = (int)(tb_rigid_rng_next(rng) % (uint64_t)v.width);
    int j = 1 + (int)(tb_rigid_rng_next(rng) % (uint64_t)(v.height - 1));
    const float *p = v.positions + 3 * (j * v.width + i);
    return tb_v3(p[0], p[1], p[2]);
}

static void cloth_scene(const char *name, tb_cloth_scene scene, uint64_t seed)
{
    const int steps = 1200;
    tb_cloth_def def = tb_cloth_def_default();
    def.scene = scene;
    tb_cloth_world *w = tb_cloth_world_create(&def, NULL);
    if (!w) { fprintf(stderr, "tumble-bench: cloth world\n"); exit(1); }
    tb_rigid_rng rng = tb_rigid_rng_seed(seed);
    tb_vec3 grab = tb_v3(0, 0, 0), dir = tb_v3(0, 0, 0);
    int held = -1; /* the grab's handle */
    for (int s = 0; s < steps; s++) {
        int phase = s % 480; /* a 4 s cycle: wind at 0, a drag from 1 s to 2 s */
        if (phase == 0) {
            float strength = 2.0f + 10.0f * tb_rigid_rng_float(&rng);
            float direction = (tb_rigid_rng_float(&rng) - 0.5f) * 6.2831853f;
            check(tb_cloth_world_set_wind(w, strength, direction) == TB_PHYS_OK, name, "set_wind", s);
        }
        if (phase == 120) {
            grab = cloth_point(w, &rng);
            float dx = tb_rigid_rng_float(&rng) - 0.5f; /* in its own statement: argument order is unspecified */
            float dz = tb_rigid_rng_float(&rng) - 0.5f;
            dir = tb_v3(dx, 0.5f, dz);
            held = tb_cloth_world_grab_start(w, grab);
            check(held >= 0, name, "grab_start", s);
        }
        if (phase > 120 && phase <= 240 && phase % 6 == 0) { /* 20 moves, 2 cm each along dir */
            grab = tb_v3(grab.x + 0.02f * dir.x, grab.y + 0.02f * dir.y, grab.z + 0.02f * dir.z);
            check(tb_cloth_world_grab_move(w, held, grab) == TB_PHYS_OK, name, "grab_move", s);
        }
        if (phase == 250) check(tb_cloth_world_grab_end(w, held) == TB_PHYS_OK, name, "grab_end", s);
        if (s % 360 == 300) {
            tb_vec3 at = cloth_point(w, &rng);
            tb_vec3 dv = tb_v3(0.0f, 0.0f, 0.4f + tb_rigid_rng_float(&rng));
            check(tb_cloth_world_poke(w, at, dv, 0.4f) == TB_PHYS_OK, name, "poke", s);
        }
        tb_cloth_world_step(w, TB_CLOTH_DT);
    }
    line(name, steps, tb_cloth_world_hash(w));
    tb_cloth_world_destroy(w);
}

/* ---- soft ------------------------------------------------------------------- */

static void dough_scene(void)
{
    const int steps = 1080;
    tb_soft_def def = tb_soft_def_default();
    tb_soft_world *w = tb_soft_world_create(&def, NULL);
    if (!w) { fprintf(stderr, "tumble-bench: soft world\n"); exit(1); }
    tb_rigid_rng rng = tb_rigid_rng_seed(3);
    tb_vec3 grab = tb_v3(0, 0, 0), dir = tb_v3(0, 0, 0);
    int held = -1; /* the grab's handle */
    for (int s = 0; s < steps; s++) {
        int phase = s % 360;
        if (phase == 30 || phase == 210) {
            /* a vertex drawn from rng, and the outward direction from the dough's centre to it */
            int n = tb_soft_world_vertex_count(w);
            const float *pos = tb_soft_world_positions(w);
            float cx = 0, cy = 0, cz = 0;
            for (int i = 0; i < n; i++) { cx += pos[3 * i]; cy += pos[3 * i + 1]; cz += pos[3 * i + 2]; }
            cx /= (float)n; cy /= (float)n; cz /= (float)n;
            const float *p = pos + 3 * (int)(tb_rigid_rng_next(&rng) % (uint64_t)n);
            tb_vec3 at = tb_v3(p[0], p[1], p[2]);
            if (phase == 30) {
                grab = at;
                dir = tb_v3(p[0] - cx, p[1] - cy, p[2] - cz);
                held = tb_soft_world_grab_start(w, grab);
                check(held >= 0, "dough", "grab_start", s);
            } else {
                float depth = 0.1f + 0.2f * tb_rigid_rng_float(&rng);
                check(tb_soft_world_press(w, at, depth) == TB_PHYS_OK, "dough", "press", s);
            }
        }
        if (phase > 30 && phase <= 120 && phase % 6 == 0) { /* 15 moves over 0.75 s, 1.5 % of dir each */
            grab = tb_v3(grab.x + 0.015f * dir.x, grab.y + 0.015f * dir.y, grab.z + 0.015f * dir.z);
            check(tb_soft_world_grab_move(w, held, grab) == TB_PHYS_OK, "dough", "grab_move", s);
        }
        if (phase == 126) check(tb_soft_world_grab_end(w, held) == TB_PHYS_OK, "dough", "grab_end", s);
        check(tb_soft_world_step(w, DT) == TB_PHYS_OK, "dough", "step", s);
    }
    line("dough", steps, tb_soft_world_hash(w));
    tb_soft_world_destroy(w);
}

void tb_bench_world_hash(const tb_bench_opts *opts)
{
    (void)opts;
    rigid_scenes();
    dice_scene();
    cloth_scene("flag", TB_CLOTH_SCENE_FLAG, 11);
    cloth_scene("cape", TB_CLOTH_SCENE_CAPE, 12);
    dough_scene();
}
