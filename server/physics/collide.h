/* collide.h: narrow-phase geometry, pure functions on shapes and poses.
 *
 * Each function takes two shapes A and B in world space and a margin, and
 * fills a manifold: one normal pointing from A towards B and up to
 * TB_MANIFOLD_MAX points, each with its signed separation (negative when the
 * shapes overlap). Points are produced while the separation is at most the
 * margin: those are the speculative contacts the solver uses to stop closing
 * speed before the shapes meet. Nothing here touches a world, so the
 * property tests (swap A/B, move both rigidly, brute-force corners) call
 * these directly.
 *
 *   collide_plane.c   plane-box (corners), plane-sphere
 *   collide_sphere.c  sphere-sphere, box-sphere
 *   collide_box.c     box-box: SAT over 15 axes, face clipping, edge-edge
 */
#ifndef TB_COLLIDE_H
#define TB_COLLIDE_H

#include <stdbool.h>

#include "physics/tb_math.h"

#define TB_MANIFOLD_MAX 8

typedef struct tb_manifold {
    tb_vec3 normal; /* unit, A -> B */
    int count;
    tb_vec3 point[TB_MANIFOLD_MAX];
    float separation[TB_MANIFOLD_MAX];
} tb_manifold;

typedef struct tb_collide_box {
    tb_vec3 center;
    tb_vec3 axis[3]; /* unit body axes in world */
    float half[3];
} tb_collide_box;

/* Which of the 15 separating axes won. */
typedef enum tb_sat_kind {
    TB_SAT_FACE_A = 0, /* axis index_a of A */
    TB_SAT_FACE_B = 1, /* axis index_b of B */
    TB_SAT_EDGES = 2,  /* axis(A, index_a) x axis(B, index_b) */
} tb_sat_kind;

typedef struct tb_sat_result {
    float separation; /* along normal; > margin means no contact */
    tb_vec3 normal;   /* unit, A -> B */
    tb_sat_kind kind;
    int index_a, index_b;
} tb_sat_result;

tb_collide_box tb_collide_box_make(tb_vec3 center, tb_quat rotation, tb_vec3 half_extents);

int tb_collide_plane_box(tb_vec3 plane_normal, float plane_offset, const tb_collide_box *box,
                         float margin, tb_manifold *m);
int tb_collide_plane_sphere(tb_vec3 plane_normal, float plane_offset, tb_vec3 center, float radius,
                            float margin, tb_manifold *m);
int tb_collide_sphere_sphere(tb_vec3 center_a, float radius_a, tb_vec3 center_b, float radius_b,
                             float margin, tb_manifold *m);
int tb_collide_box_sphere(const tb_collide_box *a, tb_vec3 center_b, float radius_b, float margin,
                          tb_manifold *m);

/* The separating-axis test alone. Returns false as soon as an axis separates
 * the boxes by more than margin (out->separation then holds that axis' gap
 * and the rest of *out is unspecified); with margin = INFINITY every axis is
 * evaluated. The choice is symmetric: swapping A and B picks the same axis
 * with the normal negated (the face comparisons are computed bit-identically
 * either way round; near-ties go to the larger face). */
bool tb_box_box_sat(const tb_collide_box *a, const tb_collide_box *b, float margin, tb_sat_result *out);
int tb_collide_box_box(const tb_collide_box *a, const tb_collide_box *b, float margin, tb_manifold *m);

#endif /* TB_COLLIDE_H */
