// The client's snapshot buffer and interpolation, read as a specification.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotBuffer, interpolate } from '../../client-web/src/net/snapshots.js';
import { slerpFlat, quatAngle } from '../../client-web/src/net/quat.js';
import { ClockSync } from '../../client-web/src/net/clock.js';

const TICK = 1 / 120;
const IV = 1 / 60; // a snapshot every 2nd tick

// One body moving along +x at 1 m/s, rotating about y at 1 rad/s; a 2-vertex array.
function snap(tick) {
  const t = tick * TICK;
  const h = t / 2;
  return {
    tick, time: t,
    ids: Int32Array.of(7),
    pos: Float32Array.of(t, 1, 0),
    rot: Float32Array.of(0, Math.sin(h), 0, Math.cos(h)),
    asleep: Uint8Array.of(0),
    verts: { cloth: Float32Array.of(t, 0, 0, t, 1, 0) },
  };
}

// Feed snapshots every IV seconds with a base latency, optional per-snapshot extra delay,
// and sample at 240 Hz; returns the x positions shown (x == server time of the picture).
function run({ seconds = 3, latency = 0.05, extra = () => 0, skip = () => false, order = null } = {}) {
  const buf = new SnapshotBuffer({ interval: IV });
  const arrivals = [];
  for (let k = 0; k * IV < seconds; k++) {
    const tick = 1000 + 2 * k;
    if (skip(k)) continue;
    arrivals.push({ at: tick * TICK + latency + extra(k), s: snap(tick) });
  }
  arrivals.sort((p, q) => p.at - q.at);
  if (order) order(arrivals);
  const shown = [];
  let ai = 0;
  const t0 = 1000 * TICK;
  for (let now = t0; now < t0 + seconds; now += 1 / 240) {
    while (ai < arrivals.length && arrivals[ai].at <= now) buf.push(arrivals[ai].s, arrivals[ai++].at);
    const st = buf.sample(now);
    if (st) shown.push({ now, x: st.pos[0], delay: buf.delay, extrapolated: st.extrapolated, newest: buf.newest.time });
  }
  return { buf, shown };
}

// Largest step between consecutive frames after warm-up, in server seconds of motion.
function maxStep(shown, from = 0.5) {
  let m = 0;
  const start = shown[0].now + from;
  for (let i = 1; i < shown.length; i++) if (shown[i].now > start) m = Math.max(m, Math.abs(shown[i].x - shown[i - 1].x));
  return m;
}

test('renders about two snapshot intervals behind the newest with steady arrivals', () => {
  const { buf, shown } = run();
  // Just as a snapshot arrives the picture is two intervals behind it; one interval
  // later (just before the next arrives) one interval behind.
  const behind = shown.filter((s) => s.now > shown[0].now + 1).map((s) => s.newest - s.x);
  const mean = behind.reduce((a, b) => a + b, 0) / behind.length;
  assert.ok(mean > 1.3 * IV && mean < 1.7 * IV, `mean behind ${mean / IV} intervals`);
  assert.ok(Math.max(...behind) < 2.1 * IV && Math.min(...behind) > 0.9 * IV, `behind ${Math.min(...behind) / IV}..${Math.max(...behind) / IV}`);
  assert.ok(Math.abs(buf.delay - 2 * IV) < 0.004, `delay ${buf.delay}`);
  // Motion is smooth: each 1/240 s frame moves about 1/240 m.
  assert.ok(maxStep(shown) < 1.15 / 240, `max step ${maxStep(shown)}`);
});

test('a late snapshot neither stalls nor jumps the picture', () => {
  // Snapshot 90 arrives 30 ms late (about two intervals).
  const { shown, buf } = run({ extra: (k) => (k === 90 ? 0.03 : 0) });
  assert.ok(buf.stats.late === 0 || buf.stats.late === 1);
  for (let i = 1; i < shown.length; i++) {
    if (shown[i].now < shown[0].now + 0.5) continue;
    const step = shown[i].x - shown[i - 1].x;
    assert.ok(step > 0, `stalled at ${shown[i].now}`);
    assert.ok(step < 1.3 / 240, `jumped ${step} at ${shown[i].now}`);
  }
});

test('duplicate snapshots are ignored', () => {
  const buf = new SnapshotBuffer({ interval: IV });
  assert.equal(buf.push(snap(10), 0.1), 'ok');
  assert.equal(buf.push(snap(12), 0.117), 'ok');
  assert.equal(buf.push(snap(12), 0.118), 'duplicate');
  assert.equal(buf.size, 2);
  assert.equal(buf.stats.duplicates, 1);
});

test('out-of-order snapshots are inserted in time order and used', () => {
  const buf = new SnapshotBuffer({ interval: IV });
  buf.push(snap(10), 0.1);
  buf.push(snap(14), 0.12);
  assert.equal(buf.push(snap(12), 0.121), 'ok');
  assert.deepEqual(buf.snaps.map((s) => s.tick), [10, 12, 14]);
  assert.equal(buf.stats.outOfOrder, 1);
  // Whole run with pairs swapped: still smooth.
  const { shown } = run({ order: (arr) => { for (let i = 10; i + 1 < arr.length; i += 7) [arr[i], arr[i + 1]] = [arr[i + 1], arr[i]]; } });
  assert.ok(maxStep(shown) < 1.3 / 240, `max step ${maxStep(shown)}`);
});

test('a missing snapshot is bridged by interpolating across the gap', () => {
  const { shown, buf } = run({ skip: (k) => k % 10 === 3 });
  assert.ok(maxStep(shown) < 1.3 / 240, `max step ${maxStep(shown)}`);
  assert.ok(Math.abs(buf.interval - IV) < 1e-6, 'a gap does not change the measured interval');
});

test('a longer outage holds briefly, then catches up without a big jump', () => {
  const { shown } = run({ skip: (k) => k >= 100 && k < 104 });
  // Five intervals missing: the picture may pause, but never leaps by more than one interval.
  assert.ok(maxStep(shown) < IV, `max step ${maxStep(shown)}`);
});

test('stale snapshots older than everything already shown are dropped', () => {
  const buf = new SnapshotBuffer({ interval: IV });
  for (let k = 0; k < 20; k++) buf.push(snap(100 + 2 * k), (100 + 2 * k) * TICK + 0.05);
  buf.sample(138 * TICK + 0.05);
  assert.equal(buf.push(snap(98), 138 * TICK + 0.05), 'stale');
});

test('never extrapolates far when snapshots stop', () => {
  const buf = new SnapshotBuffer({ interval: IV });
  let now = 0;
  for (let k = 0; k < 30; k++) { now = (2 * k) * TICK + 0.05; buf.push(snap(2 * k), now); buf.sample(now); }
  const newest = buf.newest.time;
  let st;
  for (let i = 0; i < 240; i++) { now += 1 / 240; st = buf.sample(now); }
  assert.ok(st.pos[0] <= newest + IV * 0.5 + 1e-6, `went to ${st.pos[0]} past ${newest}`);
  assert.ok(st.pos[0] >= newest - 1e-6, 'holds at the newest (with a short extrapolation)');
});

test('interpolation delay grows with jitter and comes back when it calms', () => {
  // Pseudo-random 0..40 ms extra delay for the first 4 s, none after.
  let seed = 1;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const extras = Array.from({ length: 1000 }, () => rnd() * 0.04);
  const { shown } = run({ seconds: 10, extra: (k) => (k < 240 ? extras[k] : 0) });
  const at = (sec) => shown.find((s) => s.now >= shown[0].now + sec).delay;
  assert.ok(at(3.5) > 2 * IV + 0.02, `jittery delay ${at(3.5)}`);
  assert.ok(at(9.9) < at(3.5) - 0.01, `calm delay ${at(9.9)} vs ${at(3.5)}`);
  // Even while jittery, the picture hardly ever has to hold or extrapolate.
  const ex = shown.filter((s) => s.now > shown[0].now + 1 && s.extrapolated > 0).length;
  assert.ok(ex < shown.length * 0.02, `extrapolated ${ex} frames`);
});

test('slerp takes the short way round', () => {
  // a = identity, b = -(rotation of +20 deg about y): same rotation as +20 deg, stored negated.
  const h = (20 * Math.PI / 180) / 2;
  const a = Float32Array.of(0, 0, 0, 1);
  const b = Float32Array.of(-0, -Math.sin(h), -0, -Math.cos(h));
  const out = new Float32Array(4);
  slerpFlat(out, 0, a, 0, b, 0, 0.5);
  const angle = quatAngle(out, 0, a, 0) * 180 / Math.PI;
  assert.ok(Math.abs(angle - 10) < 0.01, `midpoint is ${angle} deg from a, want 10`);
  // Rotation axis stays +y (not the long way round the other side).
  const sign = Math.sign(out[1] * out[3]);
  assert.equal(sign, 1);
});

test('slerp midpoint of a 90 degree turn is 45 degrees and unit length', () => {
  const s = Math.SQRT1_2;
  const a = Float32Array.of(0, 0, 0, 1), b = Float32Array.of(s, 0, 0, s);
  const out = new Float32Array(4);
  slerpFlat(out, 0, a, 0, b, 0, 0.5);
  assert.ok(Math.abs(quatAngle(out, 0, a, 0) - Math.PI / 4) < 1e-5);
  assert.ok(Math.abs(Math.hypot(...out) - 1) < 1e-6);
});

test('bodies are matched by id; spawned bodies appear at their pose, removed ones vanish', () => {
  const a = { tick: 0, time: 0, ids: Int32Array.of(1, 2), pos: Float32Array.of(0, 0, 0, 5, 5, 5), rot: Float32Array.of(0, 0, 0, 1, 0, 0, 0, 1) };
  const b = { tick: 2, time: 1, ids: Int32Array.of(3, 1), pos: Float32Array.of(9, 9, 9, 2, 0, 0), rot: Float32Array.of(0, 0, 0, 1, 0, 0, 0, 1) };
  const out = interpolate(a, b, 0.5);
  assert.equal(out.count, 2);
  assert.deepEqual([...out.ids.subarray(0, 2)], [3, 1]);
  assert.deepEqual([...out.pos.subarray(0, 6)], [9, 9, 9, 1, 0, 0]);
});

test('vertex arrays are interpolated linearly', () => {
  const out = interpolate(snap(0), snap(12), 0.25);
  assert.ok(Math.abs(out.verts.cloth[0] - 0.025) < 1e-6);
  assert.ok(Math.abs(out.verts.cloth[4] - 1) < 1e-6);
});

test('clock sync picks the fastest exchange and reports the median rtt', () => {
  const c = new ClockSync();
  // True offset +100 s. One-way delays 10 ms each way; one exchange queued 80 ms on the way back.
  c.addSample(1.0, 101.01, 1.02);
  c.addSample(2.0, 102.01, 2.10);
  c.addSample(3.0, 103.01, 3.02);
  assert.ok(Math.abs(c.offset - 100) < 1e-9, `offset ${c.offset}`);
  assert.ok(Math.abs(c.rtt - 0.02) < 1e-9);
  assert.ok(Math.abs(c.serverTime(5) - 105) < 1e-9);
});
