// Gestures -> intents. The client never moves anything itself: every gesture
// becomes an intent sent to the server, and what happens shows up in later snapshots.
//
// Intents (the adapter turns them into protocol messages):
//   { type: 'poke',  body, point: [x,y,z], impulse: [x,y,z] }          rigid: tap a body
//   { type: 'throw', shape: 'sphere', from: [x,y,z], velocity: [x,y,z] } rigid: tap floor (drop), flick (throw)
//   { type: 'grab',  phase: 'start'|'move'|'end', pointer, key, vertex, point: [x,y,z] }  cloth / soft
//   { type: 'press', key, vertex, point: [x,y,z], direction: [x,y,z] } soft: double-tap dent
//   { type: 'param', name, value }   { type: 'scene', action }   { type: 'contacts', on }
import * as THREE from 'three';
import { attachGestures } from './gestures.js';

const POKE_STRENGTH = 3.0;   // N*s along the view ray, tilted up
const THROW_MAX = 14;        // m/s
const THROW_HEIGHT = 1.0;    // the plane a flick is read on (m)
const DROP_HEIGHT = 2.6;     // a tap on the floor drops a ball from here (m)

const arr = (v) => [+v.x.toFixed(4), +v.y.toFixed(4), +v.z.toFixed(4)];

export function attachInput(stage, view, send, { onAim } = {}) {
  const ray = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const cast = (p) => { stage.ndc(p.clientX, p.clientY, ndc); ray.setFromCamera(ndc, stage.camera); return ray; };
  const grabs = new Map(); // pointer id -> { key, vertex, plane }
  const kind = view.kind;

  function planePoint(p, plane, out = new THREE.Vector3()) {
    return cast(p).ray.intersectPlane(plane, out);
  }

  const handlers = {
    down(p) {
      if (kind === 'rigid') return false;
      const hit = view.pick(cast(p));
      if (!hit || (hit.type !== 'cloth' && hit.type !== 'soft')) return false;
      // Drag on a plane through the grabbed point facing the camera.
      const normal = stage.camera.getWorldDirection(new THREE.Vector3()).negate();
      const plane = new THREE.Plane().setFromNormalAndCoplanarPoint(normal, hit.point);
      grabs.set(p.id, { key: hit.key, vertex: hit.vertex, plane, last: 0 });
      send({ type: 'grab', phase: 'start', pointer: p.id, key: hit.key, vertex: hit.vertex, point: arr(hit.point) });
      return true;
    },
    move(p) {
      const g = grabs.get(p.id);
      if (!g) return;
      const now = performance.now();
      if (now - g.last < 16) return; // at most ~60 moves/s per pointer
      g.last = now;
      const q = planePoint(p, g.plane);
      if (q) send({ type: 'grab', phase: 'move', pointer: p.id, key: g.key, vertex: g.vertex, point: arr(q) });
    },
    up(p) {
      const g = grabs.get(p.id);
      if (!g) return;
      grabs.delete(p.id);
      const q = planePoint(p, g.plane);
      send({ type: 'grab', phase: 'end', pointer: p.id, key: g.key, vertex: g.vertex, point: q ? arr(q) : null });
    },
    tap(p) {
      if (kind !== 'rigid') return;
      const r = cast(p), hit = view.pick(r);
      if (!hit) return;
      if (hit.type === 'body') {
        const imp = r.ray.direction.clone().setY(Math.max(r.ray.direction.y, 0) + 0.8).normalize().multiplyScalar(POKE_STRENGTH);
        send({ type: 'poke', body: hit.id, point: arr(hit.point), impulse: arr(imp) });
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
      if (!now || !before) return;
      const v = now.clone().sub(before).divideScalar(dt);
      v.y = 0;
      const speed = Math.min(THROW_MAX, v.length());
      if (speed < 0.5) return;
      v.setLength(speed);
      v.y = 1.5 + speed * 0.25;
      const { W, D } = view.bounds;
      const start = planePoint({ clientX: p.clientX - (p.x - p.x0), clientY: p.clientY - (p.y - p.y0) }, plane) || now;
      start.x = THREE.MathUtils.clamp(start.x, -W + 0.4, W - 0.4);
      start.z = THREE.MathUtils.clamp(start.z, -D + 0.4, D - 0.4);
      start.y = THROW_HEIGHT + 0.3;
      send({ type: 'throw', shape: 'sphere', from: arr(start), velocity: arr(v) });
    },
  };
  const g = attachGestures(stage.renderer.domElement, handlers);
  return {
    grabs,
    dispose() {
      for (const [id, gr] of grabs) send({ type: 'grab', phase: 'end', pointer: id, key: gr.key, vertex: gr.vertex, point: null });
      g.dispose();
    },
  };
}
