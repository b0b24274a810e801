// predict.js: predicted grabs (a toggle in a rigid room's controls, off by default).
//
// The thin client draws every body where the snapshots put it, interpolated: what a
// player sees trails the server by half a round trip plus the interpolation delay, and
// a body they drag trails their pointer by a whole round trip more, since the drag
// reaches the server half a trip later. With prediction on, the body the player holds
// is drawn from a world of the client's own, the server's kernel in WebAssembly
// (server/wasm/predict.c): reset to every snapshot that arrives (poses as sent,
// velocities from the snapshot before, bodies at rest asleep) and stepped forward,
// with the grab inputs this client sent that the server has not applied yet, to the
// tick at which an input sent now will be applied there. So the held body follows the
// pointer now, as it will on the server; each new snapshot corrects what the snapshot
// could not carry (exact velocities, the contact cache), and those corrections are
// measured. Everything else is still drawn interpolated: the server decides.
//
// Ticks and times. `baseLag` (net/snapshots.js) is arrival minus server tick time for
// the fastest snapshot: the clock offset plus the one-way trip. An input sent at local
// time t reaches the server another one-way trip later, at server tick
//     (t - baseLag + rtt) * tickRate,
// and that tick, for t = now, is the one drawn. An input applied at tick k was sent at
// k / tickRate + baseLag - rtt: the target history gives what the server has then.
//
//   const p = createPredictor(physics, desc);
//   p.onSnapshot(snap);  p.grab(id, point, t);  p.move(point, t);  p.release(t);
//   const pose = p.frame(now, buffer.baseLag, rtt);   // {id, pos, rot} or null
export const DENSITY = { plank: 0.6, die: 1.0, ball: 1.2 }; // kg/m^3 scale as the scenes' (rigid_scenes.c)
const MAX_AHEAD_TICKS = 96;   // a prediction further ahead than 0.8 s is a guess: clamp
const REACH = 3;              // m: bodies further than this from the held one are left out
const HISTORY_S = 3;          // s of pointer targets kept
const BLEND_S = 0.25;         // s: after a release, the drawn body eases back to the interpolated one
const LOG = 4096;             // frames of measurements kept for tests and benchmarks

/**
 * The engine compiles a WebAssembly function on its first call, with a quick compiler,
 * and the code that runs hot later again with the optimising one; JavaScript likewise.
 * Before a real drag, drag a plank of a made-up stack of six for 30 frames (each frame a
 * snapshot and 30 steps, as at 150 ms RTT), once per module: the first frames of a
 * player's first drag cost 10-13 ms in Chromium without this, 0.2 ms after.
 */
const warmed = new WeakSet();
function warmUp(physics) {
  if (warmed.has(physics)) return;
  warmed.add(physics);
  const bodies = [], ids = [], pos = [], rot = [];
  for (let i = 0; i < 6; i++) {
    const layer = i >> 1, side = (i & 1) * 2 - 1;
    bodies.push({ id: i + 1, shape: 'box', size: [1.2, 0.2, 0.4], look: 'plank' });
    ids.push(i + 1); pos.push(0, 0.1 + 0.2 * layer, 0.25 * side); rot.push(0, 0, 0, 1);
  }
  const desc = { planes: [{ n: [0, 1, 0], d: 0 }], bodies, params: [] };
  const p = createPredictor(physics, desc);
  const snap = (tick) => ({ tick, time: tick / 120, ids: Int32Array.from(ids), pos: Float32Array.from(pos), rot: Float32Array.from(rot), asleep: new Uint8Array(6).fill(1) });
  p.onSnapshot(snap(1000));
  p.grab(6, [0, 0.5, 0.25], 0);
  for (let f = 1; f <= 30; f++) {
    p.move([0.01 * f, 0.5 + 0.01 * f, 0.25], f / 60);
    p.onSnapshot(snap(1000 + 2 * f));
    p.frame(f / 60, f / 60 + 0.125 - (1000 + 2 * f + 30) / 120, 0.125, null); // 30 steps ahead
  }
  p.dispose();
}

export function createPredictor(physics, desc, { tickRate = 120 } = {}) {
  const x = physics.exports;
  warmUp(physics);
  const param = (n, d) => { const p = desc.params?.find((q) => q.name === n); return p ? (p.value ?? p.default) : d; };
  const capacity = Math.max(256, (desc.bodies?.length || 0) + 128);
  const w = x.tb_pred_create(capacity, param('friction', 0.5), param('restitution', 0.3));
  if (!w) throw new Error('prediction: out of memory');
  for (const p of desc.planes || []) x.tb_pred_add_plane(w, p.n[0], p.n[1], p.n[2], p.d);
  const shapes = new Map();
  const shapeOf = (id) => {
    let b = shapes.get(id);
    if (!b) { for (const d of desc.bodies || []) shapes.set(d.id, d); b = shapes.get(id); }
    return b;
  };

  let latest = null, previous = null, dirty = false;
  let held = null;    // { id, local: [x,y,z], start: {t, p}, history: [{t, p}], end: t|null }
  let tick = -1;      // the prediction world's tick; -1: nothing loaded
  let active = false; // the world's grab is on
  let lastPose = null, blend = null, stepped = 0;
  const log = { corrections: [], costMs: [], steps: [], frames: [] };
  const push = (a, v) => { a.push(v); if (a.length > LOG) a.shift(); };

  function indexIn(s, id) { for (let i = 0; i < s.ids.length; i++) if (s.ids[i] === id) return i; return -1; }
  function poseIn(s, id) {
    const i = indexIn(s, id);
    return i < 0 ? null : { pos: [s.pos[i * 3], s.pos[i * 3 + 1], s.pos[i * 3 + 2]], rot: [s.rot[i * 4], s.rot[i * 4 + 1], s.rot[i * 4 + 2], s.rot[i * 4 + 3]] };
  }

  /** The target the server holds at tick k: the newest one sent by k's send time. */
  function targetAt(k, baseLag, rtt) {
    const t = k / tickRate + baseLag - rtt;
    if (!held || t < held.start.t || (held.end != null && t >= held.end)) return null;
    let p = held.start.p;
    for (const h of held.history) { if (h.t > t) break; p = h.p; }
    return p;
  }

  // The newest snapshot into the world: every body near the held one.
  function load() {
    const s = latest, prev = previous;
    const centre = poseIn(s, held.id)?.pos || held.start.p;
    const dtSnap = prev ? s.time - prev.time : 0;
    const before = new Map();
    if (prev && dtSnap > 0) for (let j = 0; j < prev.ids.length; j++) before.set(prev.ids[j], j);
    x.tb_pred_begin(w);
    for (let i = 0; i < s.ids.length; i++) {
      const id = s.ids[i], b = shapeOf(id);
      if (!b || (b.shape !== 'box' && b.shape !== 'sphere')) continue;
      const px = s.pos[i * 3], py = s.pos[i * 3 + 1], pz = s.pos[i * 3 + 2];
      if (id !== held.id && Math.hypot(px - centre[0], py - centre[1], pz - centre[2]) > REACH) continue;
      const j = before.get(id);
      let v = [0, 0, 0], av = [0, 0, 0];
      if (j !== undefined) {
        v = [0, 1, 2].map((c) => (s.pos[i * 3 + c] - prev.pos[j * 3 + c]) / dtSnap);
        av = angular(prev.rot, j, s.rot, i, dtSnap);
        if (Math.hypot(...v) > 50 || Math.hypot(...av) > 100) { v = [0, 0, 0]; av = [0, 0, 0]; } // a rebuild, not motion
      }
      const half = b.shape === 'box' ? b.size.map((e) => e / 2) : [b.size[0], 0, 0];
      x.tb_pred_body(w, id, b.shape === 'sphere' ? 1 : 0, half[0], half[1], half[2], DENSITY[b.look] ?? 1,
        px, py, pz, s.rot[i * 4], s.rot[i * 4 + 1], s.rot[i * 4 + 2], s.rot[i * 4 + 3],
        v[0], v[1], v[2], av[0], av[1], av[2], s.asleep?.[i] && id !== held.id ? 1 : 0);
    }
    x.tb_pred_end(w);
    tick = s.tick;
    active = false;
  }

  function anchorOf(pose) { return add(pose.pos, rotate(pose.rot, held.local)); }

  // Steps the world from its tick to `to`, the grab on, moved and off as the server has it.
  function stepTo(to, baseLag, rtt) {
    stepped += Math.max(0, to - tick);
    for (let k = tick + 1; k <= to; k++) {
      const target = targetAt(k, baseLag, rtt);
      if (target && !active) {
        const pose = readPose(held.id);
        if (pose) active = x.tb_pred_grab(w, held.id, ...anchorOf(pose)) >= 0;
      } else if (!target && active) { x.tb_pred_release(w); active = false; }
      if (active) x.tb_pred_grab_move(w, target[0], target[1], target[2]);
      x.tb_pred_step(w);
      tick = k;
    }
  }

  function readPose(id) {
    const ptr = x.tb_pred_pose(w, id);
    if (!ptr) return null;
    const f = new Float32Array(physics.memory.buffer, ptr, 7);
    return { pos: [f[0], f[1], f[2]], rot: [f[3], f[4], f[5], f[6]] };
  }

  return {
    log,
    get holding() { return held && held.end == null ? held.id : null; },
    /** The body drawn from the prediction (held, or easing back after a release), or null. */
    get current() { return held ? held.id : null; },
    onSnapshot(snap) {
      if (!snap || (latest && snap.tick <= latest.tick)) return;
      previous = latest; latest = snap; dirty = true;
    },
    /**
     * A grab of body `id` at world point `point`, sent at local time t (s). `drawn`: the
     * body's pose in the picture the point was picked in ({pos, rot}), else the newest
     * snapshot's: the grabbed body-local point is taken there (as a lag-compensating
     * server takes it).
     */
    grab(id, point, t, drawn = null) {
      const pose = drawn || (latest && poseIn(latest, id));
      if (!pose) { held = null; return false; }
      held = { id, local: rotate(conj(pose.rot), sub(point, pose.pos)), start: { t, p: point.slice() }, history: [], end: null };
      tick = -1; blend = null;
      return true;
    },
    move(point, t) {
      if (!held || held.end != null) return;
      held.history.push({ t, p: point.slice() });
      while (held.history.length && held.history[0].t < t - HISTORY_S) held.history.shift();
    },
    release(t) { if (held && held.end == null) { held.end = t; blend = { t, id: held.id }; } },
    /**
     * The held body's pose to draw now, or null (draw the interpolated one).
     * `interpolated`: its pose in the picture otherwise (for the log and the blend).
     */
    frame(now, baseLag, rtt, interpolated) {
      if (!held || !latest || !Number.isFinite(baseLag)) return null;
      rtt = Number.isFinite(rtt) ? rtt : 0;
      const t0 = performance.now();
      stepped = 0;
      let to = Math.floor((now - baseLag + rtt) * tickRate);
      to = Math.min(to, latest.tick + MAX_AHEAD_TICKS);
      let correction = null;
      if (dirty || tick < 0 || to < tick) {
        let before = null;
        if (tick >= 0 && to >= tick) { stepTo(to, baseLag, rtt); before = readPose(held.id); }
        load();
        stepTo(to, baseLag, rtt);
        const after = readPose(held.id);
        if (before && after) correction = dist(anchorOf(before), anchorOf(after));
        dirty = false;
      } else stepTo(to, baseLag, rtt);
      let pose = readPose(held.id);
      const cost = performance.now() - t0;
      push(log.costMs, cost);
      push(log.steps, stepped);
      if (correction != null) push(log.corrections, correction);
      if (!pose) { held = null; return null; }
      const target = held.end == null ? (held.history.length ? held.history[held.history.length - 1].p : held.start.p) : null;
      push(log.frames, { t: now, target, shown: anchorOf(pose), interpolated: interpolated ? anchorOf(interpolated) : null, tick: to });
      if (blend && interpolated) {
        const s = Math.min(1, (now - blend.t) / BLEND_S);
        if (s >= 1) { held = null; blend = null; return null; }
        pose = { pos: lerp(pose.pos, interpolated.pos, s), rot: nlerp(pose.rot, interpolated.rot, s) };
      }
      lastPose = pose;
      return { id: held.id, pos: pose.pos, rot: pose.rot };
    },
    get lastPose() { return lastPose; },
    dispose() { x.tb_pred_destroy(w); },
  };
}

// ---- small vector helpers (plain arrays) ------------------------------------------------
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const lerp = (a, b, s) => a.map((v, i) => v + (b[i] - v) * s);
const conj = (q) => [-q[0], -q[1], -q[2], q[3]];
function nlerp(a, b, s) {
  const d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] < 0 ? -1 : 1;
  const q = a.map((v, i) => v + (d * b[i] - v) * s), n = Math.hypot(...q) || 1;
  return q.map((v) => v / n);
}
/** q * v * q^-1 */
export function rotate(q, v) {
  const [x, y, z, w] = q;
  const tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]), tz = 2 * (x * v[1] - y * v[0]);
  return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)];
}
/** Angular velocity taking rotation a[i] to b[j] in dt: 2 log(b a^-1) / dt (small angles). */
function angular(ra, i, rb, j, dt) {
  const ax = -ra[i * 4], ay = -ra[i * 4 + 1], az = -ra[i * 4 + 2], aw = ra[i * 4 + 3]; // a^-1
  const bx = rb[j * 4], by = rb[j * 4 + 1], bz = rb[j * 4 + 2], bw = rb[j * 4 + 3];
  // d = b * a^-1
  let dx = bw * ax + bx * aw + by * az - bz * ay;
  let dy = bw * ay - bx * az + by * aw + bz * ax;
  let dz = bw * az + bx * ay - by * ax + bz * aw;
  const dw = bw * aw - bx * ax - by * ay - bz * az;
  const s = dw < 0 ? -2 / dt : 2 / dt;
  dx *= s; dy *= s; dz *= s;
  return [dx, dy, dz];
}
