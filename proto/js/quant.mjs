// quant.mjs: the quantizers and bit packing of tumble.v1 snapshots (PROTOCOL.md
// "Quantization", "Snapshot bin"), written to agree exactly with proto/c/tb_snap_*.c.
// Plain ES module, no Node-only APIs: runs under node --test and in the browser.

export const POS_SCALE = 2048;   // rigid positions: 1/2048 m cells
export const VERT_SCALE = 1024;  // cloth/soft vertices: 1/1024 m cells
export const ROT_BITS = 12;
export const ROT_HALF = 2047;           // cell of component 0 (zero is exact)
export const ROT_MAXQ = 2 * ROT_HALF;   // 4094; 4095 is never sent
export const GRID_MAX = (1 << 24) - 1;

/** Cells per axis for [min, max] at `scale`, or -1 when the bounds are unusable. */
export function gridMax(min, max, scale) {
  if (!Number.isFinite(min) || !Number.isFinite(max) || !(max > min)) return -1;
  const cells = Math.floor((max - min) * scale);
  if (!(cells >= 1) || cells > GRID_MAX) return -1;
  return cells;
}

/** Bits to hold 0..v (at least 1). */
export function bitsFor(v) {
  let n = 1;
  while (n < 32 && Math.floor(v / 2 ** n) > 0) n++;
  return n;
}

export function quantPos(p, min, gmax, scale) {
  const q = Math.floor((p - min) * scale + 0.5);
  if (!(q > 0)) return 0;
  return q >= gmax ? gmax : q;
}

export function dequantPos(q, min, scale) {
  return min + q / scale;
}

/** Smallest three -> unit quaternion [x, y, z, w] (written into out at offset). */
export function dequantRot(index, c0, c1, c2, out = new Float64Array(4), off = 0) {
  const k = Math.SQRT1_2 / ROT_HALF;
  const a = (c0 - ROT_HALF) * k, b = (c1 - ROT_HALF) * k, c = (c2 - ROT_HALF) * k;
  const s = a * a + b * b + c * c;
  const w = s < 1 ? Math.sqrt(1 - s) : 0;
  let q0, q1, q2, q3;
  switch (index) {
    case 0: q0 = w; q1 = a; q2 = b; q3 = c; break;
    case 1: q0 = a; q1 = w; q2 = b; q3 = c; break;
    case 2: q0 = a; q1 = b; q2 = w; q3 = c; break;
    default: q0 = a; q1 = b; q2 = c; q3 = w; break;
  }
  const n = Math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3);
  out[off] = q0 / n; out[off + 1] = q1 / n; out[off + 2] = q2 / n; out[off + 3] = q3 / n;
  return out;
}

/** Quaternion [x, y, z, w] -> {index, c: [3]} (the encoder's rule; used by tests and tools). */
export function quantRot(q) {
  let n = Math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  let v = [q[0], q[1], q[2], q[3]];
  if (!Number.isFinite(n) || n < 1e-12) { v = [0, 0, 0, 1]; n = 1; }
  let big = 0;
  for (let i = 1; i < 4; i++) if (Math.abs(v[i]) > Math.abs(v[big])) big = i;
  const sign = v[big] < 0 ? -1 : 1;
  const c = [];
  for (let i = 0; i < 4; i++) {
    if (i === big) continue;
    let x = ROT_HALF + Math.floor(v[i] * sign / n * (ROT_HALF / Math.SQRT1_2) + 0.5);
    if (!(x > 0)) x = 0;
    if (x > ROT_MAXQ) x = ROT_MAXQ;
    c.push(x);
  }
  return { index: big, c };
}

export const zigzag = (v) => (v >= 0 ? 2 * v : -2 * v - 1);
export const unzigzag = (u) => ((u & 1) === 0 ? u >>> 1 : -((u + 1) >>> 1));   // u < 2^28

/** MSB-first bit reader over a Uint8Array. Errors set `error` and return 0. */
export class BitReader {
  constructor(bytes) { this.buf = bytes; this.bit = 0; this.total = bytes.length * 8; this.error = false; }
  get(n) {
    if (this.error) return 0;
    if (this.total - this.bit < n) { this.error = true; return 0; }
    let v = 0;
    while (n > 0) {
      const used = this.bit & 7, room = 8 - used, take = n < room ? n : room;
      const byte = this.buf[this.bit >> 3];
      v = v * (1 << take) + ((byte >> (room - take)) & ((1 << take) - 1));
      this.bit += take;
      n -= take;
    }
    return v;
  }
  /** Exp-Golomb order k; codes longer than 28 bits are refused. */
  eg(k) {
    let zeros = 0;
    for (;;) {
      if (this.error) return 0;
      if (this.bit >= this.total) { this.error = true; return 0; }
      const b = this.bit;
      if ((this.buf[b >> 3] >> (7 - (b & 7))) & 1) break;
      this.bit++;
      if (++zeros + k + 1 > 28) { this.error = true; return 0; }
    }
    return this.get(zeros + k + 1) - (1 << k);
  }
}

/** MSB-first bit writer (tests and tools). */
export class BitWriter {
  constructor() { this.bytes = []; this.bit = 0; }
  put(v, n) {
    for (let i = n - 1; i >= 0; i--) {
      if ((this.bit & 7) === 0) this.bytes.push(0);
      if (Math.floor(v / 2 ** i) % 2) this.bytes[this.bytes.length - 1] |= 0x80 >> (this.bit & 7);
      this.bit++;
    }
  }
  eg(v, k) {
    const m = v + 2 ** k;
    const n = bitsFor(m);
    this.put(0, n - 1 - k);
    this.put(m, n);
  }
  finish() { return Uint8Array.from(this.bytes); }
}
