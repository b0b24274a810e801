// The snapshot buffer: the client's only notion of "where things are".
//
// The server sends full room states (after the protocol adapter has undone deltas
// and quantization) about 60 times a second. They arrive with jitter, sometimes
// late, twice, out of order, or not at all. This buffer keeps the recent ones
// sorted by server time and answers one question per rendered frame: "what does
// the room look like at the moment we are showing?" That moment trails the newest
// snapshot by an interpolation delay of about two snapshot intervals, widened when
// arrivals get jittery, so there is nearly always a snapshot on each side of it.
//
// Timing model. For each snapshot we measure lag = arrival (local clock) - server
// time. Its low envelope (`baseLag`) is clock offset plus the fastest transit; what
// a snapshot spends above it is jitter. The playback clock runs in server time at
// local speed, nudged (never jumped) up to +-10% toward
//     target = localNow - baseLag - delay
// so a late snapshot makes the picture wait a little instead of freezing, and a
// change of delay is eased in. Only a gap larger than `snapDistance` (first
// snapshot, reconnect, a tab coming back from the background) resets the clock.
//
// Pure JS, no DOM: the same code runs in node --test and in the browser.

import { slerpFlat } from './quat.js';

/**
 * @typedef {Object} Snapshot  one full room state at a server tick
 * @property {number} tick             server step counter (120 per second)
 * @property {number} time             server time in seconds of that tick
 * @property {Int32Array|Uint32Array|number[]} ids  body ids (rigid rooms; may be empty)
 * @property {Float32Array} pos        3 floats per body: x, y, z (metres)
 * @property {Float32Array} rot        4 floats per body: quaternion x, y, z, w
 * @property {Uint8Array} [asleep]     1 per body: 1 when the body sleeps
 * @property {Object<string, Float32Array>} [verts]  named vertex arrays, 3 floats per
 *                                     vertex (cloth grids, the dough mesh, capsule end points)
 * @property {Array<{p:number[], n:number[], impulse:number}>} [contacts]  only when asked for
 */

/** @typedef {{ids: Int32Array, pos: Float32Array, rot: Float32Array, asleep: Uint8Array,
 *   count: number, verts: Object<string, Float32Array>, contacts: Array, tick: number,
 *   time: number, extrapolated: number}} SampledState */

const PUSHED = 'ok', DUPLICATE = 'duplicate', STALE = 'stale';

export class SnapshotBuffer {
  /**
   * @param {Object} [opts]
   * @param {number} [opts.interval=1/60]     expected snapshot interval (s); then measured
   * @param {number} [opts.capacity=48]       snapshots kept
   * @param {number} [opts.maxDelay=0.3]      interpolation delay never exceeds this (s)
   * @param {number} [opts.maxExtrapolation]  how far past the newest snapshot we may go (s); default half an interval
   * @param {number} [opts.snapDistance=0.35] playback clock further than this from its target is reset
   */
  constructor(opts = {}) {
    this.capacity = opts.capacity ?? 48;
    this.maxDelay = opts.maxDelay ?? 0.3;
    this.maxExtrapolationOpt = opts.maxExtrapolation;
    this.snapDistance = opts.snapDistance ?? 0.35;
    this.interval = opts.interval ?? 1 / 60;
    this.reset();
  }

  /** Forget everything (after a reconnect or a scene change with new topology). */
  reset() {
    /** @type {Snapshot[]} sorted by time, oldest first */
    this.snaps = [];
    this.baseLag = NaN;
    this.excess = new Float32Array(120); // recent (lag - baseLag), a ring
    this.excessN = 0;
    this.excessI = 0;
    this.jitter = 0;             // ~95th percentile of excess lag (s)
    this.intervals = [];         // recent measured intervals (s)
    this.delay = 2 * this.interval;
    this.playTime = NaN;         // server time being shown
    this.lastLocal = NaN;
    this.stats = { pushed: 0, duplicates: 0, stale: 0, outOfOrder: 0, late: 0, resets: 0, extrapolatedFrames: 0, heldFrames: 0 };
    this._out = null;
  }

  get maxExtrapolation() { return this.maxExtrapolationOpt ?? this.interval * 0.5; }
  get newest() { return this.snaps.length ? this.snaps[this.snaps.length - 1] : null; }
  get size() { return this.snaps.length; }

  /** The delay we are steering toward: two intervals, or one plus the jitter if that is more. */
  targetDelay() {
    return Math.min(this.maxDelay, Math.max(2 * this.interval, this.interval + this.jitter * 1.2));
  }

  /**
   * Add a snapshot that arrived at local time `arrival` (seconds, any monotonic clock).
   * @returns {'ok'|'duplicate'|'stale'}
   */
  push(snap, arrival) {
    const s = this.snaps;
    // Duplicates (same tick) are dropped; so is anything older than what we keep
    // and already behind the playback clock: it can never be shown.
    let i = s.length;
    while (i > 0 && s[i - 1].time > snap.time) i--;
    if (i > 0 && s[i - 1].tick === snap.tick) { this.stats.duplicates++; return DUPLICATE; }
    if (s.length && i === 0 && (s.length >= this.capacity || snap.time < this.playTime)) { this.stats.stale++; return STALE; }
    if (i < s.length) this.stats.outOfOrder++;
    if (snap.time < this.playTime) this.stats.late++;

    // Interval: from in-order neighbours only, per tick gap, so a missing snapshot
    // does not look like a slow server.
    if (i === s.length && i > 0) {
      const prev = s[i - 1];
      const dt = snap.time - prev.time;
      if (dt > 0 && dt < 1) {
        const iv = this.intervals;
        iv.push(dt);
        if (iv.length > 31) iv.shift();
        this.interval = median(iv);
      }
    }
    s.splice(i, 0, snap);
    if (s.length > this.capacity) s.shift();

    // Lag envelope and jitter. baseLag drops at once to a faster arrival and creeps
    // up slowly (clock drift, a route change), so it tracks the fast edge.
    const lag = arrival - snap.time;
    if (!(lag >= this.baseLag)) this.baseLag = lag;
    else this.baseLag += (lag - this.baseLag) * 0.002;
    this.excess[this.excessI] = lag - this.baseLag;
    this.excessI = (this.excessI + 1) % this.excess.length;
    this.excessN = Math.min(this.excessN + 1, this.excess.length);
    this.jitter = percentile(this.excess, this.excessN, 0.95);
    this.stats.pushed++;
    return PUSHED;
  }

  /**
   * Advance the playback clock to local time `now` and return the interpolated
   * state there (a reused object: copy what you keep). null before the first snapshot.
   * @returns {SampledState|null}
   */
  sample(now) {
    const s = this.snaps;
    if (!s.length) return null;
    this._advance(now);
    const newest = s[s.length - 1];
    let t = this.playTime;
    // Never go further than a short extrapolation past the newest snapshot: hold there.
    const limit = newest.time + (s.length > 1 ? this.maxExtrapolation : 0);
    if (t > limit) { t = limit; this.stats.heldFrames++; }
    if (t < s[0].time) t = s[0].time;

    // Binary search: a = last snapshot with time <= t.
    let lo = 0, hi = s.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (s[mid].time <= t) lo = mid; else hi = mid - 1;
    }
    let a = s[lo], b = s[lo + 1];
    let u;
    if (!b) {
      if (s.length > 1 && t > a.time) { // short extrapolation along the last segment
        b = a; a = s[lo - 1];
        u = (t - a.time) / (b.time - a.time);
        this.stats.extrapolatedFrames++;
      } else { b = a; u = 0; }
    } else {
      u = (t - a.time) / (b.time - a.time);
    }
    return interpolate(a, b, u, this._out || (this._out = newState()), t);
  }

  _advance(now) {
    const s = this.snaps;
    const targetDelay = this.targetDelay();
    // Ease the delay: grow quickly (jitter hurts now), shrink slowly.
    const dLocal = Number.isFinite(this.lastLocal) ? Math.max(0, now - this.lastLocal) : 0;
    this.lastLocal = now;
    const rateUp = 0.5, rateDown = 0.05; // seconds of delay per second
    if (targetDelay > this.delay) this.delay = Math.min(targetDelay, this.delay + rateUp * dLocal);
    else this.delay = Math.max(targetDelay, this.delay - rateDown * dLocal);
    const target = now - this.baseLag - this.delay;
    if (!Number.isFinite(this.playTime) || Math.abs(target - this.playTime) > this.snapDistance) {
      this.playTime = Math.max(target, s[0].time);
      if (Number.isFinite(this.playTime)) this.stats.resets++;
      return;
    }
    // Error after advancing at normal speed, corrected by a proportional nudge, capped at +-10% speed so motion never visibly changes pace.
    const err = target - (this.playTime + dLocal);
    const rate = 1 + Math.max(-0.1, Math.min(0.1, err * 4));
    this.playTime += dLocal * rate;
    // Holding: do not let the clock run on past what we can show, or the picture
    // would leap forward when the missing snapshot finally arrives.
    const limit = s[s.length - 1].time + (s.length > 1 ? this.maxExtrapolation : 0);
    if (this.playTime > limit) this.playTime = limit;
  }
}

function newState() {
  return { ids: new Int32Array(0), pos: new Float32Array(0), rot: new Float32Array(0), asleep: new Uint8Array(0),
    count: 0, verts: {}, contacts: [], tick: 0, time: 0, extrapolated: 0 };
}

function ensure(out, n) {
  if (out.ids.length < n) {
    const cap = Math.max(n, out.ids.length * 2);
    out.ids = new Int32Array(cap); out.pos = new Float32Array(cap * 3);
    out.rot = new Float32Array(cap * 4); out.asleep = new Uint8Array(cap);
  }
}

function sameIds(a, b) {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function indexOf(snap) {
  if (!snap._index) {
    const m = new Map();
    for (let i = 0; i < snap.ids.length; i++) m.set(snap.ids[i], i);
    snap._index = m;
  }
  return snap._index;
}

/**
 * Interpolate from a to b by u (0..1, a little above 1 when extrapolating) into out.
 * Bodies are matched by id; a body present only in b (just spawned) takes b's pose,
 * one present only in a (just removed) is dropped. Vertex arrays lerp when their
 * lengths agree, else b's are taken. Contacts and tick come from the nearer end.
 */
export function interpolate(a, b, u, out = newState(), t = a.time + (b.time - a.time) * u) {
  const bIds = b.ids || [], n = bIds.length;
  ensure(out, n);
  const op = out.pos, or = out.rot, oa = out.asleep, oi = out.ids;
  const ap = a.pos, ar = a.rot, bp = b.pos, br = b.rot;
  const bAsleep = b.asleep, aAsleep = a.asleep;
  const v = 1 - u;
  if (a === b || sameIds(a.ids || [], bIds)) {
    for (let i = 0; i < n; i++) {
      const i3 = i * 3;
      op[i3] = ap[i3] * v + bp[i3] * u;
      op[i3 + 1] = ap[i3 + 1] * v + bp[i3 + 1] * u;
      op[i3 + 2] = ap[i3 + 2] * v + bp[i3 + 2] * u;
      slerpFlat(or, i * 4, ar, i * 4, br, i * 4, u);
      oi[i] = bIds[i];
      oa[i] = (u < 0.5 ? aAsleep?.[i] : bAsleep?.[i]) ? 1 : 0;
    }
  } else {
    const ai = indexOf(a);
    for (let i = 0; i < n; i++) {
      const id = bIds[i], j = ai.get(id);
      const i3 = i * 3;
      oi[i] = id;
      if (j === undefined) {
        op[i3] = bp[i3]; op[i3 + 1] = bp[i3 + 1]; op[i3 + 2] = bp[i3 + 2];
        or[i * 4] = br[i * 4]; or[i * 4 + 1] = br[i * 4 + 1]; or[i * 4 + 2] = br[i * 4 + 2]; or[i * 4 + 3] = br[i * 4 + 3];
        oa[i] = bAsleep?.[i] ? 1 : 0;
        continue;
      }
      const j3 = j * 3;
      op[i3] = ap[j3] * v + bp[i3] * u;
      op[i3 + 1] = ap[j3 + 1] * v + bp[i3 + 1] * u;
      op[i3 + 2] = ap[j3 + 2] * v + bp[i3 + 2] * u;
      slerpFlat(or, i * 4, ar, j * 4, br, i * 4, u);
      oa[i] = (u < 0.5 ? aAsleep?.[j] : bAsleep?.[i]) ? 1 : 0;
    }
  }
  out.count = n;
  const bv = b.verts || {}, av = a.verts || {};
  for (const key in bv) {
    const B = bv[key], A = av[key];
    let O = out.verts[key];
    if (!O || O.length !== B.length) O = out.verts[key] = new Float32Array(B.length);
    if (A && A.length === B.length && A !== B) {
      for (let k = 0; k < B.length; k++) O[k] = A[k] * v + B[k] * u;
    } else O.set(B);
  }
  for (const key in out.verts) if (!(key in bv)) delete out.verts[key];
  const near = u < 0.5 ? a : b;
  out.contacts = (u <= 1 ? a : b).contacts || [];
  out.tick = near.tick;
  out.time = t;
  out.extrapolated = Math.max(0, t - b.time);
  return out;
}

function median(arr) {
  const c = arr.slice().sort((x, y) => x - y);
  const m = c.length >> 1;
  return c.length % 2 ? c[m] : (c[m - 1] + c[m]) / 2;
}

const scratch = new Float32Array(120);
function percentile(ring, n, q) {
  if (!n) return 0;
  const c = n <= scratch.length ? scratch.subarray(0, n) : new Float32Array(n);
  c.set(ring.subarray(0, n));
  c.sort();
  return c[Math.min(n - 1, Math.floor(q * n))];
}
