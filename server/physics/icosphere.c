/* icosphere.c: the dough's mesh, built without hashing or sorting.
 *
 * Every lattice point of the subdivided icosahedron lies on exactly one of:
 * an original corner (12), the inside of an original edge (30 x (n - 1)), or
 * the inside of an original face (20 x (n-1)(n-2)/2). Numbering them in that
 * order gives each shared point one index by construction, so faces that meet
 * at an edge use the same vertices (shared-vertex mesh, as mergeVertices
 * would give) and the result is identical on every run. */
#include <math.h>

#include "physics/icosphere.h"

#define N TB_ICOSPHERE_SEGMENTS

/* The icosahedron of three.js: corners (+-1, +-t, 0) and cyclic, t = golden ratio. */
static const float corners[12][3] = {
    {-1, 1.618034f, 0}, {1, 1.618034f, 0}, {-1, -1.618034f, 0}, {1, -1.618034f, 0},
    {0, -1, 1.618034f}, {0, 1, 1.618034f}, {0, -1, -1.618034f}, {0, 1, -1.618034f},
    {1.618034f, 0, -1}, {1.618034f, 0, 1}, {-1.618034f, 0, -1}, {-1.618034f, 0, 1},
};
static const uint8_t faces[20][3] = {
    {0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
    {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8}, {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1},
};

static void put_on_sphere(float *out, double x, double y, double z)
{
    double len = sqrt(x * x + y * y + z * z);
    out[0] = (float)(x / len);
    out[1] = (float)(y / len);
    out[2] = (float)(z / len);
}

/* Index of original edge (a, b) among the 30, found by scanning faces in a
 * fixed order; also reports whether it is stored as (a, b) or (b, a). */
typedef struct edge_table { uint8_t a[30], b[30]; int count; } edge_table;

static int edge_index(const edge_table *t, int a, int b, int *reversed)
{
    for (int e = 0; e < t->count; e++) {
        if (t->a[e] == a && t->b[e] == b) { *reversed = 0; return e; }
        if (t->a[e] == b && t->b[e] == a) { *reversed = 1; return e; }
    }
    return -1;
}

/* In a closed, consistently wound mesh every edge is walked once in each
 * direction, so keeping the half-edges that go from lower to higher index
 * lists every edge exactly once. */
static int list_edges(const uint16_t triangles[TB_ICOSPHERE_TRIANGLES * 3], uint16_t edges[TB_ICOSPHERE_EDGES * 2])
{
    int ne = 0;
    for (int t = 0; t < TB_ICOSPHERE_TRIANGLES; t++)
        for (int k = 0; k < 3; k++) {
            int a = triangles[3 * t + k], b = triangles[3 * t + (k + 1) % 3];
            if (a < b) {
                if (ne == TB_ICOSPHERE_EDGES) return -1;
                edges[2 * ne] = (uint16_t)a;
                edges[2 * ne + 1] = (uint16_t)b;
                ne++;
            }
        }
    return ne == TB_ICOSPHERE_EDGES ? 0 : -1;
}

int tb_icosphere_build(float positions[TB_ICOSPHERE_VERTICES * 3], uint16_t triangles[TB_ICOSPHERE_TRIANGLES * 3],
                       uint16_t edges[TB_ICOSPHERE_EDGES * 2])
{
    edge_table et = {{0}, {0}, 0};
    for (int f = 0; f < 20; f++)
        for (int k = 0; k < 3; k++) {
            int a = faces[f][k], b = faces[f][(k + 1) % 3], rev;
            if (edge_index(&et, a, b, &rev) < 0) {
                et.a[et.count] = (uint8_t)a;
                et.b[et.count] = (uint8_t)b;
                et.count++;
            }
        }
    if (et.count != 30) return -1;

    int v = 0;
    for (int c = 0; c < 12; c++, v++) put_on_sphere(&positions[3 * v], corners[c][0], corners[c][1], corners[c][2]);
    const int edge_base = 12, face_base = 12 + 30 * (N - 1);
    for (int e = 0; e < 30; e++)
        for (int s = 1; s < N; s++, v++) {
            const float *pa = corners[et.a[e]], *pb = corners[et.b[e]];
            double t = (double)s / N;
            put_on_sphere(&positions[3 * v], pa[0] + (pb[0] - pa[0]) * t, pa[1] + (pb[1] - pa[1]) * t,
                          pa[2] + (pb[2] - pa[2]) * t);
        }

    /* Lattice point (i, j) of face (A, B, C) is A + (B - A) i/N + (C - A) j/N, i + j <= N. */
    int tri = 0;
    for (int f = 0; f < 20; f++) {
        int A = faces[f][0], B = faces[f][1], C = faces[f][2];
        uint16_t id[N + 1][N + 1];
        for (int j = 0; j <= N; j++)
            for (int i = 0; i + j <= N; i++) {
                int vid;
                if (i == 0 && j == 0) vid = A;
                else if (i == N) vid = B;
                else if (j == N) vid = C;
                else if (j == 0 || i == 0 || i + j == N) {
                    /* On an original edge: which one, and how far along it. */
                    int ea, eb, s;
                    if (j == 0) { ea = A; eb = B; s = i; }
                    else if (i == 0) { ea = A; eb = C; s = j; }
                    else { ea = B; eb = C; s = j; }
                    int rev, e = edge_index(&et, ea, eb, &rev);
                    if (e < 0) return -1;
                    vid = edge_base + e * (N - 1) + (rev ? N - s : s) - 1;
                } else {
                    vid = v++;
                    const float *pa = corners[A], *pb = corners[B], *pc = corners[C];
                    double u = (double)i / N, w = (double)j / N;
                    put_on_sphere(&positions[3 * vid], pa[0] + (pb[0] - pa[0]) * u + (pc[0] - pa[0]) * w,
                                  pa[1] + (pb[1] - pa[1]) * u + (pc[1] - pa[1]) * w,
                                  pa[2] + (pb[2] - pa[2]) * u + (pc[2] - pa[2]) * w);
                }
                id[j][i] = (uint16_t)vid;
            }
        for (int j = 0; j < N; j++)
            for (int i = 0; i + j < N; i++) {
                uint16_t *t = &triangles[3 * tri++];
                t[0] = id[j][i]; t[1] = id[j][i + 1]; t[2] = id[j + 1][i];
                if (i + j + 1 < N) {
                    t = &triangles[3 * tri++];
                    t[0] = id[j][i + 1]; t[1] = id[j + 1][i + 1]; t[2] = id[j + 1][i];
                }
            }
    }
    (void)face_base;
    if (v != TB_ICOSPHERE_VERTICES || tri != TB_ICOSPHERE_TRIANGLES) return -1;

    return list_edges(triangles, edges);
}
