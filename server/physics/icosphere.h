/* icosphere.h: a shared-vertex geodesic sphere of radius 1 — an icosahedron
 * whose faces are each cut into n x n triangles, projected onto the sphere.
 * With n = 9 (three.js IcosahedronGeometry(1, 8) after mergeVertices):
 * 10 n^2 + 2 = 812 vertices, 30 n^2 = 2430 edges, 20 n^2 = 1620 triangles. */
#ifndef TB_ICOSPHERE_H
#define TB_ICOSPHERE_H

#include <stdint.h>

#define TB_ICOSPHERE_SEGMENTS 9
#define TB_ICOSPHERE_VERTICES (10 * TB_ICOSPHERE_SEGMENTS * TB_ICOSPHERE_SEGMENTS + 2)
#define TB_ICOSPHERE_EDGES (30 * TB_ICOSPHERE_SEGMENTS * TB_ICOSPHERE_SEGMENTS)
#define TB_ICOSPHERE_TRIANGLES (20 * TB_ICOSPHERE_SEGMENTS * TB_ICOSPHERE_SEGMENTS)

/* Fills positions (xyz per vertex), triangles (3 indices each, counter-
 * clockwise seen from outside) and edges (2 indices each, lower first).
 * Deterministic: the same arrays on every call. Returns 0, or -1 if the
 * construction did not close up (a bug, checked by the tests). */
int tb_icosphere_build(float positions[TB_ICOSPHERE_VERTICES * 3], uint16_t triangles[TB_ICOSPHERE_TRIANGLES * 3],
                       uint16_t edges[TB_ICOSPHERE_EDGES * 2]);

#endif /* TB_ICOSPHERE_H */
