/* tb_libm.c: deterministic sin, cos, exp, log, pow (why: tb_libm.h).
 *
 * Each function takes its float argument to double, reduces it and evaluates
 * a polynomial there (fdlibm's kernels, Sun Microsystems 1993: the same
 * coefficients as most C libraries' double functions), and rounds the result
 * to float once. Double keeps the error far below half a float ulp, so the
 * result is the correctly rounded float except when the exact value lies
 * within about 2^-29 ulp of a rounding boundary: nearly always the bits
 * glibc's (correctly rounded) sinf, cosf, expf give, and on every platform
 * the same bits, because each line is one IEEE double operation in a fixed
 * order (no table, no libm call except floor, which IEEE defines exactly). */
#include "physics/tb_libm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- sin and cos ----------------------------------------------------------------
 *
 * j = round(x 2/pi) and r = x - j pi/2 in [-pi/4, pi/4], with pi/2 split
 * into PIO2_HI (33 bits, so j PIO2_HI is exact for |j| < 2^20) and PIO2_LO.
 * On [-pi/4, pi/4], with z = r^2 (fdlibm __kernel_sin, __kernel_cos):
 *     sin r = r + r z (S1 + z (S2 + ... + z S6))
 *     cos r = 1 - z/2 + z^2 (C1 + z (C2 + ... + z C6))
 * and the quadrant j mod 4 picks (sin x, cos x) = (s, c), (c, -s), (-s, -c),
 * (-c, s). Angles beyond 2^20 rad are first reduced modulo 2 pi in double
 * (less accurate there, still the same bits everywhere). */
#define PIO2_HI 1.57079632673412561417e+00
#define PIO2_LO 6.07710050650619224932e-11
#define TWO_OVER_PI 6.36619772367581382433e-01
#define TWO_PI 6.28318530717958647692

static double kernel_sin(double r)
{
    const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03, S3 = -1.98412698298579493134e-04,
                 S4 = 2.75573137070700676789e-06, S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    double z = r * r, v = z * r;
    double p = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
    return r + v * (S1 + z * p);
}

static double kernel_cos(double r)
{
    const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03, C3 = 2.48015872894767294178e-05,
                 C4 = -2.75573143513906633035e-07, C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    double z = r * r;
    double p = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
    double hz = 0.5 * z, w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * p);
}

void tb_sin_cos(float x, float *sin_out, float *cos_out)
{
    double xd = (double)x;
    if (!(fabs(xd) < 1048576.0)) {
        if (xd != xd || fabs(xd) > 3.4e38) xd = 0.0; /* NaN, infinity: no NaN out of an angle */
        else xd = xd - floor(xd / TWO_PI) * TWO_PI;
    }
    double t = xd * TWO_OVER_PI;
    double jd = floor(t + 0.5);
    int j = (int)jd;
    double r = (xd - jd * PIO2_HI) - jd * PIO2_LO;
    double s = kernel_sin(r), c = kernel_cos(r);
    switch (j & 3) {
    case 0: *sin_out = (float)s, *cos_out = (float)c; break;
    case 1: *sin_out = (float)c, *cos_out = (float)-s; break;
    case 2: *sin_out = (float)-s, *cos_out = (float)-c; break;
    default: *sin_out = (float)-c, *cos_out = (float)s; break;
    }
}

float tb_sinf(float x)
{
    float s, c;
    tb_sin_cos(x, &s, &c);
    return s;
}

float tb_cosf(float x)
{
    float s, c;
    tb_sin_cos(x, &s, &c);
    return c;
}

/* ---- exp ------------------------------------------------------------------------
 *
 * e^x = 2^k e^r with k = round(x / ln 2), r = x - k ln 2 in [-ln2/2, ln2/2]
 * (ln 2 = LN2_HI + LN2_LO, k LN2_HI exact). fdlibm's rational form on that
 * range: with c = r - r^2 (P1 + r^2 (P2 + ... + r^2 P5)),
 *     e^r = 1 - ((r c) / (c - 2) - r),
 * and 2^k is built from its exponent bits. */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00

static double exp_double(double x) /* |x| <= 104: 2^k stays a normal double */
{
    const double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03, P3 = 6.61375632143793436117e-05,
                 P4 = -1.65339022054652515390e-06, P5 = 4.13813679705723846039e-08;
    double kd = floor(x * INV_LN2 + 0.5);
    int k = (int)kd;
    double r = (x - kd * LN2_HI) - kd * LN2_LO;
    double z = r * r;
    double c = r - z * (P1 + z * (P2 + z * (P3 + z * (P4 + z * P5))));
    double y = 1.0 - ((r * c) / (c - 2.0) - r);
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

float tb_expf(float x)
{
    double xd = (double)x;
    if (xd != xd) xd = 0.0;
    if (xd > 88.0) xd = 88.0;
    if (xd < -87.0) xd = -87.0;
    return (float)exp_double(xd);
}

/* ---- log ------------------------------------------------------------------------
 *
 * x = 2^k m with m in [sqrt(1/2), sqrt(2)) read off the bits; with f = m - 1
 * and s = f / (2 + f), ln m = 2 atanh s = f - f^2/2 + s (f^2/2 + R(s^2)),
 * R fdlibm's minimax polynomial (Lg1 .. Lg7); ln x = k ln 2 + ln m. */
static double log_double(double x) /* x normal, positive, finite */
{
    const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                 Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                 Lg7 = 1.479819860511658591e-01;
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int k = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | (1023ull << 52); /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.41421356237309504880) {
        m *= 0.5; /* exact */
        k += 1;
    }
    double f = m - 1.0;
    double s = f / (2.0 + f), z = s * s, w = z * z;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6)), t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    double hfsq = 0.5 * f * f;
    double kd = (double)k;
    return kd * LN2_HI - ((hfsq - (s * (hfsq + t2 + t1) + kd * LN2_LO)) - f);
}

float tb_logf(float x)
{
    if (!(x >= 1.17549435e-38f)) return -88.7228391f; /* zero, negative, subnormal, NaN */
    if (x > 3.40282347e+38f) return 88.7228391f;      /* infinity */
    return (float)log_double((double)x);
}

float tb_powf(float x, float y)
{
    if (x == 0.0f && y > 0.0f) return 0.0f;
    if (!(x >= 1.17549435e-38f) || x > 3.40282347e+38f || y != y) return 1.0f; /* outside the physics' use */
    double e = (double)y * log_double((double)x);
    if (e > 88.0) e = 88.0;
    if (e < -104.0) e = -104.0;
    return (float)exp_double(e);
}
