// Benchmark (not a test): decode one snapshot for N bodies and interpolate one frame,
// the client's per-frame work. Prints one JSON line with the median of the runs.
//   node tests/bench/client-interp-bench.mjs [--bodies 1000] [--runs 2000]
//
// With the protocol's JS codec present (proto/js) it measures the client's real path:
// a tumble.v1 snap_delta in which all N bodies moved (position residuals and absolute
// orientations, the worst case) -> adapter.decode (SnapshotState.apply + the buffer's
// full state) -> SnapshotBuffer.push -> sample. Without it, a stand-in with the same
// shape of work (msgpack envelope, 16-bit positions, 32-bit smallest-three).
import { encode, decode } from '@msgpack/msgpack';
import { existsSync } from 'node:fs';
import { SnapshotBuffer } from '../../client-web/src/net/snapshots.js';

const arg = (name, def) => { const i = process.argv.indexOf(name); return i > 0 ? Number(process.argv[i + 1]) : def; };
const N = arg('--bodies', 1000), RUNS = arg('--runs', 2000);
const PROTO = new URL('../../proto/js/tumble-proto.mjs', import.meta.url);
if (existsSync(PROTO) && !process.argv.includes('--stand-in')) { await realCodec(); process.exit(0); }

const LO = [-4, 0, -2.5], HI = [4, 6, 2.5];

function encodeSnapshot(tick, phase) {
  const ids = new Uint32Array(N), pos = new Uint16Array(N * 3), rot = new Uint32Array(N);
  for (let i = 0; i < N; i++) {
    ids[i] = i;
    const x = Math.sin(i + phase) * 3, y = 1 + (i % 10) * 0.3, z = Math.cos(i * 0.7 + phase) * 2;
    [x, y, z].forEach((v, k) => { pos[i * 3 + k] = Math.round(((v - LO[k]) / (HI[k] - LO[k])) * 65535); });
    const h = (i + phase) * 0.5, q = [0, Math.sin(h), 0, Math.cos(h)];
    let big = 0; for (let k = 1; k < 4; k++) if (Math.abs(q[k]) > Math.abs(q[big])) big = k;
    const s = q[big] < 0 ? -1 : 1; let bits = big, shift = 2;
    for (let k = 0; k < 4; k++) if (k !== big) { bits |= Math.round(((q[k] * s) / Math.SQRT2 * 0.5 + 0.5) * 1023) << shift; shift += 10; }
    rot[i] = bits >>> 0;
  }
  return encode({ type: 'snapshot', tick, ids: new Uint8Array(ids.buffer), pos: new Uint8Array(pos.buffer), rot: new Uint8Array(rot.buffer) });
}

function decodeSnapshot(bytes) {
  const m = decode(bytes);
  const cnt = m.ids.byteLength / 4;
  const ids = new Uint32Array(m.ids.buffer.slice(m.ids.byteOffset, m.ids.byteOffset + m.ids.byteLength));
  const pq = new Uint16Array(m.pos.buffer.slice(m.pos.byteOffset, m.pos.byteOffset + m.pos.byteLength));
  const rq = new Uint32Array(m.rot.buffer.slice(m.rot.byteOffset, m.rot.byteOffset + m.rot.byteLength));
  const pos = new Float32Array(cnt * 3), rot = new Float32Array(cnt * 4);
  const sx = (HI[0] - LO[0]) / 65535, sy = (HI[1] - LO[1]) / 65535, sz = (HI[2] - LO[2]) / 65535;
  for (let i = 0; i < cnt; i++) {
    pos[i * 3] = LO[0] + pq[i * 3] * sx; pos[i * 3 + 1] = LO[1] + pq[i * 3 + 1] * sy; pos[i * 3 + 2] = LO[2] + pq[i * 3 + 2] * sz;
    const bits = rq[i], big = bits & 3; let sum = 0, sh = 2;
    for (let k = 0; k < 4; k++) {
      if (k === big) continue;
      const v = (((bits >>> sh) & 1023) / 1023 - 0.5) * 2 * Math.SQRT1_2; sh += 10;
      rot[i * 4 + k] = v; sum += v * v;
    }
    rot[i * 4 + big] = Math.sqrt(Math.max(0, 1 - sum));
  }
  return { tick: m.tick, time: m.tick / 120, ids, pos, rot };
}

const frames = [];
for (let k = 0; k < 8; k++) frames.push(encodeSnapshot(2 * k, k * 0.01));
const buf = new SnapshotBuffer({ interval: 1 / 60 });
for (let k = 0; k < 4; k++) buf.push(decodeSnapshot(frames[k]), (2 * k) / 120 + 0.03);

const times = [];
let tick = 8, now = 8 / 120 + 0.03;
for (let r = 0; r < RUNS; r++) {
  const bytes = frames[r % frames.length];
  const t0 = process.hrtime.bigint();
  const snap = decodeSnapshot(bytes);
  snap.tick = tick; snap.time = tick / 120;
  buf.push(snap, now);
  const st = buf.sample(now);
  const t1 = process.hrtime.bigint();
  if (st.count !== N) throw new Error('bad count');
  times.push(Number(t1 - t0) / 1e6);
  tick += 2; now += 1 / 60;
}
times.sort((a, b) => a - b);
const q = (p) => times[Math.floor(p * (times.length - 1))];
console.log(JSON.stringify({ bench: 'client_decode_interpolate_frame', bodies: N, runs: RUNS, codec: 'stand-in', bytes: frames[0].byteLength,
  median_ms: +q(0.5).toFixed(4), p90_ms: +q(0.9).toFixed(4), p99_ms: +q(0.99).toFixed(4), node: process.version }));

async function realCodec() {
  const { createAdapter } = await import('../../client-web/src/net/adapter.js');
  const { BitWriter, quantRot, zigzag, bitsFor, gridMax } = await import('../../proto/js/quant.mjs');
  const B = [-8, -1, -8, 8, 15, 8], SCALE = 2048;
  const gmax = [0, 1, 2].map((a) => gridMax(B[a], B[a + 3], SCALE)), pbits = gmax.map(bitsFor);
  const cellsAt = (i, t) => {
    const x = Math.sin(i * 0.37 + t * 1.3) * 6, y = 2 + (i % 20) * 0.5 + Math.sin(t * 2 + i) * 0.3, z = Math.cos(i * 0.11 + t) * 6;
    return [x, y, z].map((v, a) => Math.round((v - B[a]) * SCALE));
  };
  const rotAt = (i, t) => { const h = (i + t * 3) * 0.5; return quantRot([Math.sin(h) * 0.6, Math.sin(h) * 0.8, 0, Math.cos(h)]); };
  const s = (w, z, k) => w.eg(zigzag(z), k);
  const bodies = Array.from({ length: N }, (_, i) => [i + 1, 0, 0.25, 0.25, 0.25, 0xc08040, 1]);
  // Keyframe (in the welcome).
  let cells = bodies.map((_, i) => cellsAt(i, 0));
  let vel = bodies.map(() => [0, 0, 0]);
  const w = new BitWriter();
  w.put(0, 1); w.put(0, 4); w.put(0, 4);
  bodies.forEach((_, i) => {
    cells[i].forEach((c, a) => w.put(c, pbits[a]));
    const r = rotAt(i, 0); w.put(r.index, 2); r.c.forEach((c) => w.put(c, 12));
    for (let k = 0; k < 6; k++) s(w, 0, 0);
  });
  const key = [33, 0, 1000, N, bodies, w.finish()];
  const welcome = encode([32, 1, 1, 'bench', 'rigid', 'pile', 'bench', 120, 60, [[1, 'bench']], [], { bounds: B, planes: [[0, 1, 0, 0]] }, key]);
  // Deltas: every body moved; constant-velocity prediction, order-2 residuals.
  const deltas = [];
  for (let f = 1; f <= 16; f++) {
    const t = f / 60, dw = new BitWriter();
    dw.put(1, 1); dw.put(2, 4); dw.put(0, 4);
    dw.eg(N, 0);
    bodies.forEach((_, i) => {
      dw.eg(0, 0);
      const c1 = cellsAt(i, t);
      for (let a = 0; a < 3; a++) { s(dw, c1[a] - cells[i][a] - vel[i][a], 2); vel[i][a] = c1[a] - cells[i][a]; }
      cells[i] = c1;
      dw.put(1, 1);
      const r = rotAt(i, t); dw.put(r.index, 2); r.c.forEach((c) => dw.put(c, 12));
    });
    deltas.push(encode([34, 0, 1000 + 2 * f, 2, N, dw.finish()]));
  }
  const times = [];
  const tStart = 1000 / 120;
  for (let r = 0; r < RUNS; r += deltas.length) {
    const a = createAdapter({ roomId: 'bench', kind: 'rigid', scene: 'pile', name: 'bench' });
    const buf = new SnapshotBuffer({ interval: 1 / 60 });
    const w0 = a.decode(welcome)[0];
    buf.push(w0.snapshot, tStart + 0.03);
    deltas.forEach((bytes, f) => {
      const now = tStart + (f + 1) / 60 + 0.03;
      const t0 = process.hrtime.bigint();
      const msgs = a.decode(bytes);
      const snap = msgs[msgs.length - 1].snap;
      buf.push(snap, now);
      const st = buf.sample(now);
      const t1 = process.hrtime.bigint();
      if (st.count !== N) throw new Error(`bad count ${st.count}`);
      if (f > 1) times.push(Number(t1 - t0) / 1e6);
    });
  }
  times.sort((x, y) => x - y);
  const q = (p) => times[Math.floor(p * (times.length - 1))];
  console.log(JSON.stringify({ bench: 'client_decode_interpolate_frame', bodies: N, runs: times.length, codec: 'tumble.v1 (proto/js)', bytes: deltas[3].byteLength,
    median_ms: +q(0.5).toFixed(4), p90_ms: +q(0.9).toFixed(4), p99_ms: +q(0.99).toFixed(4), node: process.version }));
}
