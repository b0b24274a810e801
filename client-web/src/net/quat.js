// Small quaternion helpers on flat Float32Arrays, quaternions stored [x, y, z, w]
// (three.js order). No allocation: every function writes into `out` at `o`.

/**
 * Spherical interpolation from a[ai..ai+3] to b[bi..bi+3] by u, written to out[o..o+3].
 * Takes the short way (flips b when the dot product is negative: q and -q are the
 * same rotation, and slerping to the far one spins the body the long way round).
 * Falls back to normalized lerp when the two are nearly equal, where slerp's
 * 1/sin(theta) is ill-conditioned and nlerp is indistinguishable anyway.
 */
export function slerpFlat(out, o, a, ai, b, bi, u) {
  const ax = a[ai], ay = a[ai + 1], az = a[ai + 2], aw = a[ai + 3];
  let bx = b[bi], by = b[bi + 1], bz = b[bi + 2], bw = b[bi + 3];
  let cos = ax * bx + ay * by + az * bz + aw * bw;
  if (cos < 0) { cos = -cos; bx = -bx; by = -by; bz = -bz; bw = -bw; }
  let sa, sb;
  if (cos > 0.9995) {
    sa = 1 - u; sb = u;
  } else {
    const theta = Math.acos(cos);
    const sin = Math.sin(theta);
    sa = Math.sin((1 - u) * theta) / sin;
    sb = Math.sin(u * theta) / sin;
  }
  let x = ax * sa + bx * sb, y = ay * sa + by * sb, z = az * sa + bz * sb, w = aw * sa + bw * sb;
  const len = Math.sqrt(x * x + y * y + z * z + w * w) || 1;
  out[o] = x / len; out[o + 1] = y / len; out[o + 2] = z / len; out[o + 3] = w / len;
}

/** Angle in radians between two rotations given as flat quaternions. */
export function quatAngle(a, ai, b, bi) {
  const d = Math.abs(a[ai] * b[bi] + a[ai + 1] * b[bi + 1] + a[ai + 2] * b[bi + 2] + a[ai + 3] * b[bi + 3]);
  return 2 * Math.acos(Math.min(1, d));
}
