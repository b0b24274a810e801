/* cloth_figure.c: the figure that wears the cape — six capsules (torso, head,
 * two arms, two legs) walking a circle around the origin.
 *
 * The pose is a pure function of three numbers in the saved state (where on
 * the loop, the stride phase, how much it is walking), and those advance by a
 * fixed amount per step, so the animation is deterministic and survives
 * save/load. Walking on/off eases `blend` instead of stopping dead, so the
 * limbs come to rest and the cape has something physical to react to.
 *
 * Local frame of the figure: x to its right, y up, z forward (its heading). */
#include "physics/cloth_internal.h"

#define LOOP_RADIUS 2.0f     /* m, circle around the origin */
#define WALK_SPEED 1.6f      /* m/s along the loop at blend 1 */
#define STRIDE_RATE 5.6f     /* rad/s of stride phase at blend 1 (~0.9 steps per second per leg) */
#define BLEND_RATE 2.0f      /* blend changes by this per second */
#define LEAN 0.14f           /* rad, forward lean of the upper body at blend 1 */
#define LEG_SWING 0.45f      /* rad */
#define ARM_SWING 0.5f       /* rad */

#define HIP_Y 0.92f
#define HIP_X 0.10f
#define LEG_LENGTH 0.85f
#define LEG_RADIUS 0.075f
#define PELVIS_Y 0.95f
#define CHEST_Y 1.40f
#define TORSO_RADIUS 0.17f
#define HEAD_LOW_Y 1.60f
#define HEAD_HIGH_Y 1.68f
#define HEAD_RADIUS 0.11f
#define SHOULDER_X 0.28f
#define SHOULDER_Y 1.40f
#define ARM_LENGTH 0.62f
#define ARM_RADIUS 0.055f
#define CAPE_Y 1.40f
#define CAPE_BACK 0.20f      /* anchors sit this far behind the torso axis (torso radius + 3 cm) */

void tb_cloth__figure_advance(tb_cloth_figure_state *fig, bool walking, float dt)
{
    float goal = walking ? 1.0f : 0.0f;
    float step = BLEND_RATE * dt;
    if (fig->blend < goal) fig->blend = tb_minf(goal, fig->blend + step);
    else if (fig->blend > goal) fig->blend = tb_maxf(goal, fig->blend - step);

    fig->loop_angle += fig->blend * (WALK_SPEED / LOOP_RADIUS) * dt;
    if (fig->loop_angle > 2.0f * TB_PI) fig->loop_angle -= 2.0f * TB_PI;

    /* The swing amplitude scales with blend too, so the limbs close as it stops. */
    float rate = STRIDE_RATE * fig->blend;
    fig->stride_phase += rate * dt;
    if (fig->stride_phase > 2.0f * TB_PI) fig->stride_phase -= 2.0f * TB_PI;
}

/* Local point -> world: rotate by the heading about y, then translate. */
typedef struct frame { tb_vec3 origin, right, forward; } frame;

static tb_vec3 to_world(const frame *f, tb_vec3 local)
{
    tb_vec3 w = f->origin;
    w = tb_v3_mad(w, f->right, local.x);
    w.y += local.y;
    return tb_v3_mad(w, f->forward, local.z);
}

/* Tilt a local point of the upper body forward by `lean` about the pelvis. */
static tb_vec3 lean_point(tb_vec3 p, float lean)
{
    float s, c;
    tb_sin_cos(lean, &s, &c);
    float y = p.y - PELVIS_Y, z = p.z;
    return tb_v3(p.x, PELVIS_Y + y * c - z * s, y * s + z * c);
}

/* A limb hanging from `root`, swung forward by `angle` (z forward). */
static tb_vec3 limb_end(tb_vec3 root, float length, float angle, float out_x)
{
    float s, c;
    tb_sin_cos(angle, &s, &c);
    return tb_v3(root.x + out_x, root.y - length * c, root.z + length * s);
}

void tb_cloth__figure_pose(const tb_cloth_figure_state *fig, tb_cloth_capsule *capsules,
                           float *anchors, int count, tb_vec3 *forward, tb_vec3 *torso_centre)
{
    float sa, ca;
    tb_sin_cos(fig->loop_angle, &sa, &ca);
    frame f;
    f.origin = tb_v3(LOOP_RADIUS * ca, 0.0f, LOOP_RADIUS * sa);
    /* Walking counter-clockwise seen from above: heading is the tangent. */
    f.forward = tb_v3(-sa, 0.0f, ca);
    f.right = tb_v3(-f.forward.z, 0.0f, f.forward.x); /* forward x up */
    float lean = LEAN * fig->blend;
    float swing = tb_sinf(fig->stride_phase) * fig->blend;

    tb_vec3 pelvis = tb_v3(0.0f, PELVIS_Y, 0.0f);
    tb_vec3 chest = lean_point(tb_v3(0.0f, CHEST_Y, 0.0f), lean);
    capsules[0] = (tb_cloth_capsule){to_world(&f, pelvis), to_world(&f, chest), TORSO_RADIUS, TB_CLOTH_PART_TORSO};
    capsules[1] = (tb_cloth_capsule){to_world(&f, lean_point(tb_v3(0.0f, HEAD_LOW_Y, 0.0f), lean)),
                                     to_world(&f, lean_point(tb_v3(0.0f, HEAD_HIGH_Y, 0.0f), lean)),
                                     HEAD_RADIUS, TB_CLOTH_PART_HEAD};
    for (int side = 0; side < 2; side++) {
        float sx = side == 0 ? -1.0f : 1.0f;
        tb_vec3 shoulder = lean_point(tb_v3(sx * SHOULDER_X, SHOULDER_Y, 0.0f), lean);
        /* Arms swing against the leg on the same side. */
        tb_vec3 hand = limb_end(shoulder, ARM_LENGTH, -sx * ARM_SWING * swing, sx * 0.03f);
        capsules[2 + side] = (tb_cloth_capsule){to_world(&f, shoulder), to_world(&f, hand), ARM_RADIUS,
                                                side == 0 ? TB_CLOTH_PART_ARM_LEFT : TB_CLOTH_PART_ARM_RIGHT};
        tb_vec3 hip = tb_v3(sx * HIP_X, HIP_Y, 0.0f);
        tb_vec3 foot = limb_end(hip, LEG_LENGTH, sx * LEG_SWING * swing, 0.0f);
        capsules[4 + side] = (tb_cloth_capsule){to_world(&f, hip), to_world(&f, foot), LEG_RADIUS,
                                                side == 0 ? TB_CLOTH_PART_LEG_LEFT : TB_CLOTH_PART_LEG_RIGHT};
    }

    /* Cape anchors: a straight line across the upper back, shoulder to
     * shoulder, spread over the cape's width. */
    for (int i = 0; i < count; i++) {
        float u = count > 1 ? (float)i / (float)(count - 1) : 0.5f;
        float x = (u - 0.5f) * TB_CLOTH_CAPE_SIZE_X;
        tb_vec3 w = to_world(&f, lean_point(tb_v3(x, CAPE_Y, -CAPE_BACK), lean));
        anchors[3 * i + 0] = w.x;
        anchors[3 * i + 1] = w.y;
        anchors[3 * i + 2] = w.z;
    }
    if (forward) *forward = f.forward;
    if (torso_centre) *torso_centre = tb_v3_lerp(capsules[0].a, capsules[0].b, 0.5f);
}
