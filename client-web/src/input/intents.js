// Gestures and keys -> intents. The client never moves anything itself: every gesture
// becomes an intent sent to the server, and what happens shows up in later snapshots.
//
// Intents (the adapter turns them into protocol messages):
//   { type: 'poke',  body, point: [x,y,z], impulse: [x,y,z] }          rigid: tap a body
//   { type: 'throw', shape: 'sphere', from: [x,y,z], velocity: [x,y,z] } rigid: tap floor (drop), flick or aimed drag (throw)
//   { type: 'grab',  phase: 'start'|'move'|'end', pointer, key, vertex, point: [x,y,z] }  cloth / soft
//   { type: 'grab',  phase: ..., pointer, body, point }   rigid, with predicted grabs on (a drag from a body)
//   { type: 'press', key, vertex, point: [x,y,z], direction: [x,y,z] } soft: double-tap dent
//   { type: 'param', name, value }   { type: 'scene', action }   { type: 'contacts', on }
//
// Grabbing what moves (the walking knight's cape): the picture on screen trails the
// server by the interpolation delay plus half a round trip, so a grab aimed at the
// cloth as drawn is sent where that point of the cloth is now on the server (its
// drawn position carried forward by its velocity over that lag), and a pointer that
// just misses the drawn cloth takes the nearest point within a tolerance.
//
// The keyboard (the canvas takes focus with Tab): rigid ←/→ pick a body, Enter/Space
// poke it, T throw a ball at it, K knock the tower down; cloth and soft G grab (a
// free point), arrows pull it, G or Escape let go; soft D presses a dent.
import * as THREE from 'three';
import { attachGestures } from './gestures.js';

const POKE_STRENGTH = 3.0;   // N*s along the view ray, tilted up a little (the server caps a poke's speed change)
const POKE_TILT = 0.2;       // upward share of a poke: a nudge, not a launch
const THROW_MAX = 14;        // m/s
const THROW_HEIGHT = 1.0;    // the plane a flick is read on (m)
const DROP_HEIGHT = 2.6;     // a tap on the floor drops a ball from here (m)
const AIM_SPEED = 4;         // m/s per metre of aimed drag, for a release without a flick
const AIM_MIN = 0.25;        // m: a shorter aimed drag throws nothing (and says so)
const PICK_TOLERANCE = 0.35; // m: a grab that just misses the cloth as drawn
const KEY_PULL = 0.12;       // m per arrow press of a keyboard grab
const MAX_LEAD_S = 0.8;      // s: the furthest a grab is carried forward (beyond, a guess is worse than none)
const ONE_WAY_S = 0.01;      // s: the grab's own trip to the server

const arr = (v) => [+v.x.toFixed(4), +v.y.toFixed(4), +v.z.toFixed(4)];

/**
 * @param {{onAim?, onNote?(text), onSelect?(id), onKnock?(), buffer?, clock?}} o
 *   buffer/clock: the snapshot buffer and clock, for the lag of a grab on a moving cloth
 */
export function attachInput(stage, view, send, { onAim, onNote, onSelect, onKnock, buffer, clock, bodyGrabs } = {}) {
  const ray = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const cast = (p) => { stage.ndc(p.clientX, p.clientY, ndc); ray.setFromCamera(ndc, stage.camera); return ray; };
  const grabs = new Map(); // pointer id -> { key, vertex, plane }
  const kind = view.kind;

  function planePoint(p, plane, out = new THREE.Vector3()) {
    return cast(p).ray.intersectPlane(plane, out);
  }

  /** Where vertex k of `key` is on the server now: its place in the newest snapshot
   *  received (the picture trails that by the buffer's delay), carried forward by its
   *  velocity over the snapshot's age. The age is measured, not assumed: the buffer
   *  knows the fastest arrival lag (arrival - tick time), so "now - that lag" is the
   *  server's tick time now, slow page or not. */
  function leadPoint(key, k, drawn) {
    const snaps = buffer?.snaps;
    if (!snaps || snaps.length < 2) return drawn;
    const a = snaps[snaps.length - 2], b = snaps[snaps.length - 1];
    const va = a.verts?.[key], vb = b.verts?.[key], dt = b.time - a.time;
    if (!va || !vb || va.length !== vb.length || !(dt > 0) || k * 3 + 2 >= vb.length) return drawn;
    const serverNow = performance.now() / 1000 - (Number.isFinite(buffer.baseLag) ? buffer.baseLag : 0);
    const ahead = Math.min(MAX_LEAD_S, Math.max(0, serverNow - b.time) + ONE_WAY_S);
    const v = [0, 1, 2].map((c) => (vb[k * 3 + c] - va[k * 3 + c]) / dt);
    if (Math.hypot(...v) > 20) return drawn; // a rebuild or a jump, not motion
    return new THREE.Vector3(vb[k * 3] + v[0] * ahead, vb[k * 3 + 1] + v[1] * ahead, vb[k * 3 + 2] + v[2] * ahead);
  }

  function startGrab(id, hit) {
    // Drag on a plane through the grabbed point facing the camera.
    const normal = stage.camera.getWorldDirection(new THREE.Vector3()).negate();
    const plane = new THREE.Plane().setFromNormalAndCoplanarPoint(normal, hit.point);
    const at = kind === 'cloth' ? leadPoint(hit.key, hit.vertex, hit.point) : hit.point;
    // The drag keeps the offset between where the cloth is drawn and where it is now.
    const lead = at.clone().sub(hit.point);
    grabs.set(id, { key: hit.key, vertex: hit.vertex, plane, last: 0, lead, point: at.clone() });
    send({ type: 'grab', phase: 'start', pointer: id, key: hit.key, vertex: hit.vertex, point: arr(at) });
  }
  /** Rigid, predicted grabs on: hold the body under the pointer (bodyGrabs: physics/predicted-grabs.js). */
  function startBodyGrab(id, hit) {
    const normal = stage.camera.getWorldDirection(new THREE.Vector3()).negate();
    const plane = new THREE.Plane().setFromNormalAndCoplanarPoint(normal, hit.point);
    const at = arr(hit.point);
    grabs.set(id, { body: hit.id, plane, last: 0, lead: new THREE.Vector3(), point: hit.point.clone() });
    send({ type: 'grab', phase: 'start', pointer: id, body: hit.id, point: at });
    bodyGrabs.grab(hit.id, at, performance.now() / 1000, view.bodyPose?.(hit.id));
  }
  function moveGrab(id, q) {
    const g = grabs.get(id);
    if (!g || !q) return;
    g.point.copy(q).add(g.lead);
    const at = arr(g.point);
    send({ type: 'grab', phase: 'move', pointer: id, key: g.key, vertex: g.vertex, point: at });
    if (g.body != null) bodyGrabs?.move(at, performance.now() / 1000);
  }
  function endGrab(id, q) {
    const g = grabs.get(id);
    if (!g) return;
    grabs.delete(id);
    send({ type: 'grab', phase: 'end', pointer: id, key: g.key, vertex: g.vertex, point: q ? arr(q.clone().add(g.lead)) : null });
    if (g.body != null) bodyGrabs?.release(performance.now() / 1000);
  }

  function poke(id, point, dir) {
    const imp = dir.clone().setY(0);
    if (imp.lengthSq() < 1e-6) imp.set(0, 0, -1);
    imp.normalize().setY(POKE_TILT).normalize().multiplyScalar(POKE_STRENGTH);
    send({ type: 'poke', body: id, point: arr(point), impulse: arr(imp) });
  }

  const handlers = {
    down(p) {
      if (kind === 'rigid') {
        if (!bodyGrabs?.grabsBodies) return false;
        const hit = view.pick(cast(p));
        if (!hit || hit.type !== 'body') return false;
        startBodyGrab(p.id, hit);
        return true;
      }
      const r = cast(p);
      const hit = kind === 'cloth' ? view.pick(r, { tolerance: PICK_TOLERANCE }) : view.pick(r);
      if (!hit || (hit.type !== 'cloth' && hit.type !== 'soft')) return false;
      startGrab(p.id, hit);
      return true;
    },
    move(p) {
      const g = grabs.get(p.id);
      if (!g) return;
      const now = performance.now();
      if (now - g.last < 16) return; // at most ~60 moves/s per pointer
      g.last = now;
      moveGrab(p.id, planePoint(p, g.plane));
    },
    up(p) {
      const g = grabs.get(p.id);
      if (!g) return;
      endGrab(p.id, planePoint(p, g.plane));
    },
    tap(p) {
      if (kind !== 'rigid') return;
      const r = cast(p), hit = view.pick(r);
      if (!hit) return;
      if (hit.type === 'body') {
        poke(hit.id, hit.point, r.ray.direction);
      } else if (hit.type === 'floor') {
        const { W, D } = view.bounds;
        const x = THREE.MathUtils.clamp(hit.point.x, -W + 0.3, W - 0.3), z = THREE.MathUtils.clamp(hit.point.z, -D + 0.3, D - 0.3);
        send({ type: 'throw', shape: 'sphere', from: arr(new THREE.Vector3(x, DROP_HEIGHT, z)), velocity: [0, 0, 0] });
      }
    },
    doubleTap(p) {
      if (kind !== 'soft') return;
      const hit = view.pick(cast(p));
      if (!hit) return;
      send({ type: 'press', key: hit.key, vertex: hit.vertex, point: arr(hit.point), direction: arr(hit.normal.clone().negate()) });
    },
    dragMove(p) {
      if (kind !== 'rigid' || !onAim) return;
      const plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), -THROW_HEIGHT);
      const a = planePoint({ clientX: p.clientX - (p.x - p.x0), clientY: p.clientY - (p.y - p.y0) }, plane);
      const b = planePoint(p, plane);
      onAim(a && b ? { from: a, to: b } : null);
    },
    dragEnd(p) {
      onAim?.(null);
      if (kind !== 'rigid') return;
      // Throw velocity from the flick: where the pointer is now and where it was
      // ~1/10 s earlier, both read on a horizontal plane at THROW_HEIGHT.
      const plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), -THROW_HEIGHT);
      const now = planePoint(p, plane);
      const dt = 0.1;
      const before = planePoint({ clientX: p.clientX - p.vx * dt, clientY: p.clientY - p.vy * dt }, plane);
      const startAt = planePoint({ clientX: p.clientX - (p.x - p.x0), clientY: p.clientY - (p.y - p.y0) }, plane);
      if (!now || !before) return;
      const v = now.clone().sub(before).divideScalar(dt);
      v.y = 0;
      let speed = Math.min(THROW_MAX, v.length());
      if (speed < 0.5) {
        // Aimed, held, released: throw along the aim line shown, as hard as it is long.
        const aimV = startAt ? now.clone().sub(startAt).setY(0) : null;
        if (!aimV || aimV.length() < AIM_MIN) { onNote?.('Drag further to throw (the line shows where)'); return; }
        speed = Math.min(THROW_MAX, Math.max(2, aimV.length() * AIM_SPEED));
        v.copy(aimV);
      }
      v.setLength(speed);
      v.y = 1.5 + speed * 0.25;
      const { W, D } = view.bounds;
      const start = startAt || now;
      start.x = THREE.MathUtils.clamp(start.x, -W + 0.4, W - 0.4);
      start.z = THREE.MathUtils.clamp(start.z, -D + 0.4, D - 0.4);
      start.y = THROW_HEIGHT + 0.3;
      send({ type: 'throw', shape: 'sphere', from: arr(start), velocity: arr(v) });
    },
  };
  const canvas = stage.renderer.domElement;
  const g = attachGestures(canvas, handlers);

  // ---- keyboard -----------------------------------------------------------------------
  const KEY_POINTER = 0xfff0; // the keyboard's own grab pointer (mouse 0, touches by id)
  let selected = null;
  const bodyIds = () => (view.bodyIds?.() || []).filter((id) => view.bodyPosition(id)).sort((a, b) => a - b);
  function describeBody(id) {
    const info = view.bodyInfo?.(id);
    const ids = bodyIds().filter((x) => view.bodyInfo?.(x)?.look === info?.look);
    return `${info?.look === 'plank' ? 'plank' : info?.look === 'die' ? 'die' : info?.look || 'body'} ${ids.indexOf(id) + 1} of ${ids.length}`;
  }
  function select(step) {
    const ids = bodyIds();
    if (!ids.length) return;
    const i = selected == null ? (step > 0 ? -1 : 0) : ids.indexOf(selected);
    selected = ids[(i + step + ids.length) % ids.length];
    onSelect?.(selected);
    onNote?.(`Selected ${describeBody(selected)}: Enter pokes it, T throws a ball at it`);
  }
  function keyGrabTarget() {
    if (kind === 'cloth') return view.freeVertex?.();
    const key = view.kind === 'soft' ? Object.keys(buffer?.newest?.verts || {})[0] : null;
    const v = key && buffer.newest.verts[key];
    if (!v) return null;
    let best = 0;
    for (let k = 1; k < v.length / 3; k++) if (v[k * 3] > v[best * 3]) best = k;
    return { type: 'soft', key, vertex: best, point: new THREE.Vector3(v[best * 3], v[best * 3 + 1], v[best * 3 + 2]) };
  }
  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (kind === 'rigid') {
      if (k === 'ArrowRight' || k === 'ArrowUp') select(1);
      else if (k === 'ArrowLeft' || k === 'ArrowDown') select(-1);
      else if ((k === 'Enter' || k === ' ') && selected != null) {
        const p = view.bodyPosition(selected);
        if (!p) { selected = null; onSelect?.(null); return; }
        const dir = p.clone().sub(stage.camera.position);
        poke(selected, p.clone(), dir);
        onNote?.(`Poked ${describeBody(selected)}`);
      } else if (k === 't') {
        const target = (selected != null && view.bodyPosition(selected)?.clone()) || new THREE.Vector3(0, 0.5, 0);
        const { W, D } = view.bounds;
        const cam = stage.camera.position;
        const from = new THREE.Vector3(THREE.MathUtils.clamp(cam.x, -W + 0.4, W - 0.4), THROW_HEIGHT + 0.3, THREE.MathUtils.clamp(cam.z, -D + 0.4, D - 0.4));
        const flat = target.clone().sub(from).setY(0);
        const dist = Math.max(0.5, flat.length());
        const speed = Math.min(THROW_MAX, Math.max(4, dist * 2.5));
        const tFlight = dist / speed;
        const vy = (target.y - from.y + 0.5 * 9.81 * tFlight * tFlight) / tFlight;
        const v = flat.setLength(speed).setY(Math.min(12, vy));
        send({ type: 'throw', shape: 'sphere', from: arr(from), velocity: arr(v) });
        onNote?.(selected != null ? `Threw a ball at ${describeBody(selected)}` : 'Threw a ball');
      } else if (k === 'k' && onKnock) onKnock();
      else if (k === 'Escape' && selected != null) { selected = null; onSelect?.(null); }
      else return;
      e.preventDefault();
      return;
    }
    // cloth / soft: a keyboard grab
    const held = grabs.get(KEY_POINTER);
    if (k === 'g' || (k === 'Escape' && held)) {
      if (held) { endGrab(KEY_POINTER, null); onNote?.('Let go'); }
      else if (k === 'g') {
        const hit = keyGrabTarget();
        if (!hit) return;
        startGrab(KEY_POINTER, hit);
        onNote?.(`Grabbed the ${kind === 'cloth' ? 'cloth' : 'dough'}: arrows pull it, G lets go`);
      }
      e.preventDefault();
    } else if (held && k.startsWith('Arrow')) {
      const cam = stage.camera;
      const right = new THREE.Vector3().setFromMatrixColumn(cam.matrixWorld, 0).setY(0).normalize();
      const step = KEY_PULL * (e.shiftKey ? 3 : 1);
      const d = { ArrowLeft: right.clone().multiplyScalar(-step), ArrowRight: right.clone().multiplyScalar(step),
        ArrowUp: new THREE.Vector3(0, step, 0), ArrowDown: new THREE.Vector3(0, -step, 0) }[k];
      const q = held.point.clone().sub(held.lead).add(d);
      moveGrab(KEY_POINTER, q);
      e.preventDefault();
    } else if (kind === 'soft' && k === 'd') {
      const hit = keyGrabTarget();
      if (!hit) return;
      // The top of the dough, pressed straight down.
      const v = buffer.newest.verts[hit.key];
      let top = 0;
      for (let i = 1; i < v.length / 3; i++) if (v[i * 3 + 1] > v[top * 3 + 1]) top = i;
      send({ type: 'press', key: hit.key, vertex: top, point: [v[top * 3], v[top * 3 + 1], v[top * 3 + 2]], direction: [0, -1, 0] });
      onNote?.('Pressed a dent in the top');
      e.preventDefault();
    }
  }
  canvas.addEventListener('keydown', onKey);
  return {
    grabs,
    get selected() { return selected; },
    dispose() {
      canvas.removeEventListener('keydown', onKey);
      for (const [id, gr] of grabs) send({ type: 'grab', phase: 'end', pointer: id, key: gr.key, vertex: gr.vertex, point: null });
      g.dispose();
    },
  };
}
