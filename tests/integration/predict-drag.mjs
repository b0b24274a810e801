// predict-drag.mjs: a player dragging the top plank of a tower room through a link,
// with the room page's own code (the protocol adapter, snapshot buffer, clock sync and
// the grab predictor over the physics in WebAssembly), minus the drawing. Used by
// predict.test.mjs and tests/bench/predict-bench.mjs.
//
//   const r = await dragTopPlank(port, { seconds: 3 });
//   r.log          the predictor's log (corrections, costMs, frames)
//   r.truth        [{t, p}]: the server's plank centre, by the local time the input
//                  applied at that tick was sent (k / 120 + baseLag - rtt)
//   lagOf(r.log.frames, r.truth, 'shown' | 'interpolated')   how far behind truth (s)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { ROOT } from './harness.mjs';
import { createAdapter } from '../../client-web/src/net/adapter.js';
import { SnapshotBuffer } from '../../client-web/src/net/snapshots.js';
import { ClockSync } from '../../client-web/src/net/clock.js';
import { loadPhysics } from '../../client-web/src/physics/wasm.js';
import { createPredictor } from '../../client-web/src/physics/predict.js';

export const WASM = path.join(ROOT, 'build/wasm/tumble-physics.wasm');
const now = () => performance.now() / 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The pointer's path: up 0.4 m in 0.5 s, then a slow circle of 0.35 m radius (0.45 m/s). */
export function pointerPath(start, t) {
  const up = Math.min(1, t / 0.5) * 0.4;
  const s = Math.max(0, t - 0.5), r = 0.35, om = 1.3;
  return [start[0] + r * Math.sin(om * s), start[1] + up, start[2] + r * (1 - Math.cos(om * s))];
}

export async function dragTopPlank(port, { seconds = 3, room = `pred-${Math.random().toString(36).slice(2, 8)}`, frameMs = 1000 / 60 } = {}) {
  const physics = await loadPhysics(readFileSync(WASM));
  const adapter = createAdapter({ roomId: room, kind: 'rigid', scene: 'tower', name: 'predictor' });
  const buffer = new SnapshotBuffer(), clock = new ClockSync();
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ['tumble.v1']);
  ws.binaryType = 'arraybuffer';
  adapter.setSender((b) => ws.send(b));
  let desc = null, predictor = null;
  const truth = [];
  const pending = []; // server plank centres by tick, mapped once baseLag and rtt are known
  let heldId = null;
  const errors = [];
  ws.on('message', (data) => {
    const t = now();
    for (const m of adapter.decode(new Uint8Array(data))) {
      if (m.type === 'welcome') { desc = m.desc; buffer.interval = 1 / (desc.room.snapshotRate || 60); buffer.push(m.snapshot, t); }
      else if (m.type === 'snapshot') {
        buffer.push(m.snap, t);
        predictor?.onSnapshot(m.snap);
        if (heldId != null) {
          const i = [...m.snap.ids].indexOf(heldId);
          if (i >= 0) pending.push({ tick: m.snap.tick, p: [m.snap.pos[i * 3], m.snap.pos[i * 3 + 1], m.snap.pos[i * 3 + 2]] });
        }
      } else if (m.type === 'pong') clock.addSample(m.sent, m.server, t);
      else if (m.type === 'error') errors.push(m);
    }
  });
  await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
  for (const b of adapter.onOpen()) ws.send(b);
  const ping = () => { const b = adapter.encode({ type: 'ping', sent: now(), rtt: clock.rtt }); if (b) ws.send(b); };
  const pinger = setInterval(ping, 200);
  try {
    // Settle: the tower standing, the clock and the snapshot timing known.
    const t0 = now();
    while (!(desc && buffer.size > 30 && Number.isFinite(clock.rtt) && clock.samples.length >= 5) && now() - t0 < 20) await sleep(50);
    if (!desc) throw new Error('no welcome');
    await sleep(500);
    predictor = createPredictor(physics, desc);
    const s = buffer.newest;
    predictor.onSnapshot(s);
    let top = 0;
    for (let i = 1; i < s.ids.length; i++) if (s.pos[i * 3 + 1] > s.pos[top * 3 + 1]) top = i;
    heldId = s.ids[top];
    const start = [s.pos[top * 3], s.pos[top * 3 + 1], s.pos[top * 3 + 2]];
    const send = (intent) => { const b = adapter.encode(intent); if (b) ws.send(b); };
    const tStart = now();
    send({ type: 'grab', phase: 'start', pointer: 0, body: heldId, point: start });
    predictor.grab(heldId, start, tStart);
    let lastMove = tStart;
    while (now() - tStart < seconds) {
      await sleep(frameMs);
      const t = now();
      if (t - lastMove >= 0.016) {
        const p = pointerPath(start, t - tStart);
        send({ type: 'grab', phase: 'move', pointer: 0, point: p });
        predictor.move(p, t);
        lastMove = t;
      }
      const st = buffer.sample(t);
      const i = st ? [...st.ids.subarray(0, st.count)].indexOf(heldId) : -1;
      const interp = i >= 0 ? { pos: [st.pos[i * 3], st.pos[i * 3 + 1], st.pos[i * 3 + 2]], rot: [st.rot[i * 4], st.rot[i * 4 + 1], st.rot[i * 4 + 2], st.rot[i * 4 + 3]] } : null;
      predictor.frame(t, buffer.baseLag, clock.rtt, interp);
    }
    send({ type: 'grab', phase: 'end', pointer: 0 });
    predictor.release(now());
    await sleep(600);
    const rate = desc.room.tickRate || 120;
    for (const q of pending) truth.push({ t: q.tick / rate + buffer.baseLag - clock.rtt, p: q.p });
    return { log: predictor.log, truth, rtt: clock.rtt, baseLag: buffer.baseLag, delay: buffer.delay, errors, heldId };
  } finally {
    clearInterval(pinger);
    predictor?.dispose();
    ws.close();
  }
}

/** Position on a [{t, p}] track at time t (linear between samples), or null outside it. */
function at(track, t) {
  if (!track.length || t < track[0].t || t > track[track.length - 1].t) return null;
  let lo = 0, hi = track.length - 1;
  while (hi - lo > 1) { const m = (lo + hi) >> 1; if (track[m].t <= t) lo = m; else hi = m; }
  const a = track[lo], b = track[hi], s = b.t > a.t ? (t - a.t) / (b.t - a.t) : 0;
  return a.p.map((v, k) => v + (b.p[k] - v) * s);
}

/**
 * How far behind the server's truth a drawn track runs: the shift tau (s) that brings
 * truth(t - tau) closest to the drawn position over the frames (mean distance), searched
 * from -0.2 s to 0.6 s in 2 ms steps. Frames from `from` s after the first are used (the
 * lift-off is left out: it starts from rest on every track alike).
 */
export function lagOf(frames, truth, key, { from = 0.6 } = {}) {
  const f = frames.filter((x) => x[key] && x.t >= frames[0].t + from);
  let best = { tau: NaN, err: Infinity };
  for (let tau = -0.2; tau <= 0.6 + 1e-9; tau += 0.002) {
    let sum = 0, n = 0;
    for (const x of f) {
      const p = at(truth, x.t - tau);
      if (!p) continue;
      sum += Math.hypot(p[0] - x[key][0], p[1] - x[key][1], p[2] - x[key][2]); n++;
    }
    if (n > f.length / 2 && sum / n < best.err) best = { tau, err: sum / n, n };
  }
  return best;
}

export function percentile(values, p) {
  const a = [...values].sort((x, y) => x - y);
  return a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN;
}
