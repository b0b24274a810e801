// TEST SCAFFOLDING ONLY (never shipped): runs the real room page against a fake
// transport that plays the part of the server with made-up scenes, so the views,
// HUD and input can be developed and screenshot before the server exists.
//   /?kind=rigid&scene=tower | dice   /?kind=cloth&scene=flag | cape   /?kind=soft&scene=dough
//   /?lobby=1   the lobby with a canned room list
import * as THREE from 'three';
import { mergeVertices } from 'three/examples/jsm/utils/BufferGeometryUtils.js';
import { startRoom } from '../../../client-web/src/room.js';
import { startLobby } from '../../../client-web/src/lobby.js';

const q = new URLSearchParams(location.search);
const app = document.getElementById('app');
const TICK = 1 / 120;

if (q.get('lobby')) {
  startLobby(app, {
    fetchRooms: async () => [
      { id: 'tower', kind: 'rigid', scene: 'tower', clients: 2, bodies: 25, awake: 0, step_ms: 0.21 },
      { id: 'dice', kind: 'rigid', scene: 'dice', clients: 1, bodies: 5, awake: 3, step_ms: 0.05 },
      { id: 'flag', kind: 'cloth', scene: 'flag', clients: 0, bodies: 160, awake: 160, step_ms: 0.12 },
      { id: 'cape', kind: 'cloth', scene: 'cape', clients: 3, bodies: 204, awake: 204, step_ms: 0.15 },
      { id: 'dough', kind: 'soft', scene: 'dough', clients: 1, bodies: 812, awake: 812, step_ms: 0.4 },
      { id: 'pile-party', kind: 'rigid', scene: 'pile', clients: 5, bodies: 400, awake: 120, step_ms: 1.9 },
    ],
  });
} else {
  const kind = q.get('kind') || 'rigid', scene = q.get('scene') || 'tower';
  startRoom({ host: app, roomId: q.get('room') || scene, kind, scene, transport: fakeTransport(kind, scene) });
}

function fakeTransport(kind, scene) {
  const world = kind === 'rigid' ? rigidWorld(scene) : kind === 'cloth' ? clothWorld(scene) : softWorld();
  let timer = null, tick = 1000, h = null;
  window.__preview = { sent: [] };
  return {
    connect(handlers) {
      h = handlers;
      handlers.onStatus({ state: 'connecting', attempt: 0 });
      setTimeout(() => {
        handlers.onStatus({ state: 'open' });
        const you = { id: 1, name: 'You' };
        handlers.onMessage({ type: 'welcome', you, players: [you, { id: 2, name: 'Mina' }, { id: 3, name: 'Joon' }], desc: world.desc, snapshot: world.snap(tick) }, 2048);
        if (world.dice) setTimeout(() => handlers.onMessage({ type: 'dice', ...world.dice }, 40), 300);
        timer = setInterval(() => {
          tick += 2;
          handlers.onMessage({ type: 'snapshot', snap: { ...world.snap(tick), stepMs: 0.21 } }, world.bytes || 600);
        }, 1000 / 60);
      }, 50);
    },
    send(intent) {
      window.__preview.sent.push(intent);
      if (intent.type === 'ping') setTimeout(() => h.onMessage({ type: 'pong', sent: intent.sent, server: performance.now() / 1000 + 100 - 0.002 }, 20), 4);
      if (intent.type === 'param') setTimeout(() => h.onMessage({ type: 'param', name: intent.name, value: intent.value, by: { id: 1, name: 'You' } }, 30), 10);
      return true;
    },
    close() { clearInterval(timer); },
  };
}

function rigidWorld(scene) {
  const bodies = [], poses = [];
  const q = new THREE.Quaternion(), e = new THREE.Euler();
  const add = (b, p, rot = [0, 0, 0, 1]) => { bodies.push(b); poses.push([p, rot]); };
  let id = 1;
  if (scene === 'tower') {
    const yaw = new THREE.Quaternion().setFromAxisAngle(new THREE.Vector3(0, 1, 0), Math.PI / 2).toArray();
    for (let L = 0; L < 8; L++) for (let k = 0; k < 3; k++) {
      const o = (k - 1) * 0.5, y = 0.15 + L * 0.3015 + 0.0015;
      add({ id: id++, shape: 'box', size: [1.5, 0.3, 0.48], look: 'plank' }, L % 2 === 0 ? [1.7, y, o] : [1.7 + o, y, 0], L % 2 === 0 ? [0, 0, 0, 1] : yaw);
    }
    add({ id: id++, shape: 'sphere', size: [0.38], look: 'heavy' }, [-3.3, 0.95, 0.1]);
  }
  const diceIds = [];
  [[-1.6, -0.6, 0.3], [-0.7, 0.4, 1.2], [0.1, -0.9, 2.3]].forEach(([x, z, a], i) => {
    e.set(i === 1 ? Math.PI / 2 : 0, a, i === 2 ? Math.PI : 0); q.setFromEuler(e);
    diceIds.push(id);
    add({ id: id++, shape: 'box', size: [0.5, 0.5, 0.5], look: 'die' }, [x, 0.25, z], q.toArray());
  });
  add({ id: id++, shape: 'sphere', size: [0.18], look: 'ball' }, [-2.6, 0.18, 1.4]);
  add({ id: id++, shape: 'sphere', size: [0.22], look: 'ball' }, [0.3, 0.22, 1.5]);
  const n = bodies.length;
  const ids = Int32Array.from(bodies.map((b) => b.id));
  const pos = new Float32Array(n * 3), rot = new Float32Array(n * 4), asleep = new Uint8Array(n).fill(1);
  poses.forEach(([p, r], i) => { pos.set(p, i * 3); rot.set(r, i * 4); });
  return {
    desc: {
      room: { id: scene, kind: 'rigid', scene, tickRate: 120, snapshotRate: 60 },
      bounds: { min: [-4, 0, -2.5], max: [4, 6, 2.5] },
      planes: [{ n: [0, 1, 0], d: 0 }, { n: [1, 0, 0], d: -4 }, { n: [-1, 0, 0], d: -4 }, { n: [0, 0, 1], d: -2.5 }, { n: [0, 0, -1], d: -2.5 }],
      bodies,
      params: [{ name: 'restitution', label: 'restitution', min: 0, max: 0.9, step: 0.05, default: 0.3, value: 0.3 }, { name: 'friction', label: 'friction', min: 0, max: 1.2, step: 0.05, default: 0.5, value: 0.5 }],
    },
    snap: (tick) => {
      const p = pos.slice(), r = rot.slice();
      // Let the small balls roll a little so interpolation has something to do.
      const t = tick * TICK;
      p[(n - 1) * 3] = 0.3 + Math.sin(t * 0.8) * 0.8;
      return { tick, time: t, ids, pos: p, rot: r, asleep: asleep.map((s, i) => (i === n - 1 ? 0 : s)),
        contacts: [{ p: [-1.6, 0.0, -0.35], n: [0, 1, 0], impulse: 0.04 }, { p: [1.7, 0.3, 0.2], n: [0, 1, 0], impulse: 0.08 }] };
    },
    dice: scene === 'dice' || scene === 'tower' ? { faces: diceIds.map((d, i) => ({ id: d, value: [2, 3, 5][i] })), sum: 10 } : null,
    bytes: 900,
  };
}

function clothWorld(scene) {
  if (scene === 'flag') {
    const w = 16, h = 10, sp = 0.12, pins = [];
    for (let j = 0; j < h; j++) pins.push(j * w);
    return {
      desc: { room: { id: 'flag', kind: 'cloth', scene: 'flag', snapshotRate: 60 }, bounds: { min: [-3, 0, -2], max: [3, 4, 2] },
        cloths: [{ id: 1, key: 'flag', w, h, pins, look: 'flag' }], capsules: [],
        params: [{ name: 'wind', label: 'wind', min: 0, max: 20, default: 8, value: 8 }, { name: 'iterations', label: 'iterations', min: 1, max: 20, step: 1, default: 8, value: 8 }, { name: 'grid', label: 'grid size', min: 8, max: 32, step: 1, default: 16, value: 16 }] },
      snap: (tick) => {
        const t = tick * TICK, v = new Float32Array(w * h * 3);
        for (let j = 0; j < h; j++) for (let i = 0; i < w; i++) {
          const k = (j * w + i) * 3, s = i / (w - 1);
          v[k] = -0.9 + i * sp * (1 - 0.05 * s);
          v[k + 1] = 3.2 - j * sp - s * s * 0.25;
          v[k + 2] = Math.sin(i * 0.55 - t * 6 + j * 0.15) * 0.12 * s;
        }
        return { tick, time: t, ids: new Int32Array(0), pos: new Float32Array(0), rot: new Float32Array(0), verts: { flag: v } };
      },
    };
  }
  // Cape: a figure of capsules and a cape pinned at the shoulders.
  const w = 12, h = 17, sp = 0.075;
  const pins = []; for (let i = 0; i < w; i++) pins.push(i);
  const parts = [['head', 0.16], ['torso', 0.24], ['arm_l', 0.07], ['arm_r', 0.07], ['leg_l', 0.09], ['leg_r', 0.09]];
  return {
    desc: { room: { id: 'cape', kind: 'cloth', scene: 'cape', snapshotRate: 60 }, bounds: { min: [-3, 0, -1.5], max: [3, 2.5, 1.5] },
      cloths: [{ id: 1, key: 'cape', w, h, pins, look: 'cape' }], capsules: parts.map(([part, r], i) => ({ id: i, part, radius: r })),
      params: [{ name: 'wind', label: 'wind', min: 0, max: 20, default: 4, value: 4 }, { name: 'walk_speed', label: 'walk speed', min: 0, max: 3, default: 1.2, value: 1.2 }] },
    snap: (tick) => {
      const t = tick * TICK, x = Math.sin(t * 0.3) * 1.6, sw = Math.sin(t * 5) * 0.35;
      const C = [[x, 1.62, 0, x, 1.74, 0], [x, 0.95, 0, x, 1.35, 0], [x - 0.33, 1.42, 0, x - 0.36 - sw * 0.3, 0.95, sw * 0.4], [x + 0.33, 1.42, 0, x + 0.36 + sw * 0.3, 0.95, -sw * 0.4],
        [x - 0.13, 0.1, sw * 0.5, x - 0.12, 0.8, 0], [x + 0.13, 0.1, -sw * 0.5, x + 0.12, 0.8, 0]];
      const v = new Float32Array(w * h * 3);
      for (let j = 0; j < h; j++) for (let i = 0; i < w; i++) {
        const k = (j * w + i) * 3, u = i / (w - 1) - 0.5, d = j * sp;
        v[k] = x + u * (0.62 + d * 0.35);
        v[k + 1] = 1.45 - d * 0.95;
        v[k + 2] = -0.27 - d * 0.35 - Math.sin(t * 3 + j * 0.4 + i * 0.3) * 0.04 * d;
      }
      return { tick, time: t, ids: new Int32Array(0), pos: new Float32Array(0), rot: new Float32Array(0), verts: { cape: v, capsules: Float32Array.from(C.flat()) } };
    },
  };
}

function softWorld() {
  let g = new THREE.IcosahedronGeometry(1, 8);
  g.deleteAttribute('normal'); g.deleteAttribute('uv');
  g = mergeVertices(g);
  const base = g.attributes.position.array;
  const tris = Uint32Array.from(g.index.array);
  return {
    desc: { room: { id: 'dough', kind: 'soft', scene: 'dough', snapshotRate: 60 }, bounds: { min: [-3, 0, -3], max: [3, 3, 3] },
      soft: { key: 'dough', vertexCount: base.length / 3, triangles: tris, look: 'dough' },
      params: [{ name: 'stiffness', label: 'stiffness', min: 0, max: 1, default: 0.6, value: 0.6 }, { name: 'plasticity', label: 'plasticity', min: 0, max: 1, default: 0.5, value: 0.5 }] },
    snap: (tick) => {
      const t = tick * TICK, v = new Float32Array(base.length);
      for (let i = 0; i < base.length; i += 3) {
        const x = base[i], y = base[i + 1], z = base[i + 2];
        const squash = 1 - 0.22 * (1 - y) * 0.5, bulge = 1 + 0.14 * (1 - Math.abs(y));
        const wob = 1 + 0.02 * Math.sin(t * 3 + x * 4);
        v[i] = x * bulge * wob * 1.05 + (x > 0.6 ? (x - 0.6) * 1.2 : 0);
        v[i + 1] = 0.86 + y * 0.86 * squash;
        v[i + 2] = z * bulge * wob;
      }
      return { tick, time: t, ids: new Int32Array(0), pos: new Float32Array(0), rot: new Float32Array(0), verts: { dough: v } };
    },
  };
}
