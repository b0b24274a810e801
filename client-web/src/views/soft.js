// Soft rooms (dough): a ball of dough on a floured wooden board in a warm kitchen.
//
// The dough is one indexed mesh (about 812 shared vertices, 1,620 triangles from
// the welcome); its vertex positions arrive in every state (state.verts[soft.key]).
// Normals are recomputed every frame for smooth shading, and bounding volumes too,
// so a ray still finds the dough after it has been pulled far out of its first shape.
//
// The floor: the soft world collides with nothing. It keeps the dough's centre of
// mass on the origin (server/physics/soft_solver.c, recentre) and sends no floor
// plane, so the board is a prop that must follow the dough: its top is kept at the
// dough's lowest vertex (eased, so a stretch does not make it jump), and the dough
// always rests on it instead of floating above or sinking into it. A server whose
// description has an upward plane (a real floor) gets the board fixed on that plane.
import * as THREE from 'three';
import { shadowSize } from '../stage.js';
import { RoundedBoxGeometry } from 'three/examples/jsm/geometries/RoundedBoxGeometry.js';
import { woodTexture, flourTexture, skyTexture, rng } from './textures.js';

export function createSoftView(stage, desc) {
  const scene = stage.scene;
  const root = new THREE.Group();
  root.name = 'soft-room';
  scene.add(root);
  const disposables = [];
  const keep = (x) => (disposables.push(x), x);
  const soft = desc.soft || { key: 'dough', vertexCount: 0, triangles: [] };

  scene.background = keep(skyTexture('#3a2a20', '#120c08', [[0.5, '#241a13']]));
  scene.fog = new THREE.Fog(0x1a130d, 10, 30);
  stage.setEnvironment(0.25, root);
  root.add(new THREE.HemisphereLight(0xffe9cf, 0x3a2a1c, 0.7));
  const key = new THREE.SpotLight(0xffe2b8, 70, 30, 0.6, 0.6, 1.6);
  key.position.set(-3, 7, 4);
  key.castShadow = true;
  key.shadow.mapSize.setScalar(shadowSize(stage, 2048));
  key.shadow.bias = -0.0003; key.shadow.normalBias = 0.02; key.shadow.radius = 5;
  const rim = new THREE.DirectionalLight(0xb8d0ff, 0.9);
  rim.position.set(4, 3, -5);
  root.add(key, key.target, rim);

  // Table, board, flour, rolling pin. Placed when the first state tells us where the dough sits.
  const stage3 = new THREE.Group();
  root.add(stage3);
  const tableTex = keep(woodTexture(23, { base: '#6b4226', w: 1024, h: 512 }));
  tableTex.repeat.set(10, 10);
  const table = new THREE.Mesh(keep(new THREE.PlaneGeometry(120, 120).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ map: tableTex, color: 0xc8b8a8, roughness: 0.7 })));
  table.position.y = -0.14;
  table.receiveShadow = true;
  const boardTex = keep(woodTexture(29, { base: '#d9b07a' }));
  const board = new THREE.Mesh(keep(new RoundedBoxGeometry(5.2, 0.14, 3.6, 3, 0.05)), keep(new THREE.MeshStandardMaterial({ map: boardTex, roughness: 0.55 })));
  board.position.y = -0.07;
  board.castShadow = board.receiveShadow = true;
  board.name = 'floor';
  const flour = new THREE.Mesh(keep(new THREE.PlaneGeometry(4.6, 3.2).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ map: keep(flourTexture()), transparent: true, roughness: 1, depthWrite: false })));
  flour.position.y = 0.002;
  flour.receiveShadow = true;
  const pinWood = keep(new THREE.MeshStandardMaterial({ map: keep(woodTexture(31, { base: '#c99a62' })), roughness: 0.5 }));
  const pin = new THREE.Group();
  const roller = new THREE.Mesh(keep(new THREE.CylinderGeometry(0.2, 0.2, 2.2, 32).rotateZ(Math.PI / 2)), pinWood);
  const h1 = new THREE.Mesh(keep(new THREE.CylinderGeometry(0.07, 0.08, 0.5, 16).rotateZ(Math.PI / 2)), pinWood);
  h1.position.x = 1.35; const h2 = h1.clone(); h2.position.x = -1.35;
  pin.add(roller, h1, h2);
  pin.position.set(0.4, 0.2, 2.6); pin.rotation.y = 0.25;
  pin.traverse((o) => { o.castShadow = o.receiveShadow = true; });
  stage3.add(table, board, flour, pin);

  // The dough.
  const n = soft.vertexCount || 0;
  const g = keep(new THREE.BufferGeometry());
  const pos = new Float32Array(n * 3);
  g.setAttribute('position', new THREE.BufferAttribute(pos, 3).setUsage(THREE.DynamicDrawUsage));
  g.setAttribute('normal', new THREE.BufferAttribute(new Float32Array(n * 3), 3).setUsage(THREE.DynamicDrawUsage));
  // A per-vertex tint that travels with the dough: toasted patches and floury ones.
  const col = new Float32Array(n * 3), R = rng(7);
  for (let i = 0; i < n; i++) { const f = 0.93 + R() * 0.07, w = R() < 0.15 ? 0.04 : 0; col[i * 3] = f + w; col[i * 3 + 1] = f * 0.97 + w; col[i * 3 + 2] = f * 0.93 + w; }
  g.setAttribute('color', new THREE.BufferAttribute(col, 3));
  g.setIndex(Array.from(soft.triangles || []));
  const doughMat = keep(new THREE.MeshPhysicalMaterial({ color: 0xe8c998, vertexColors: true, roughness: 0.6, sheen: 0.6, sheenColor: new THREE.Color(0xfff4e0), sheenRoughness: 0.5, clearcoat: 0.08, clearcoatRoughness: 0.6 }));
  const dough = new THREE.Mesh(g, doughMat);
  dough.castShadow = dough.receiveShadow = true;
  dough.frustumCulled = false;
  dough.visible = false;
  root.add(dough);

  let placed = false;
  const floorPlane = (desc.planes || []).find((p) => p.n[1] > 0.99); // n = +y: y = d
  let floorY = 0;
  stage.frameSphere(new THREE.Vector3(0, 0.8, 0), 2.6, 0.5, 0, 38);

  return {
    kind: 'soft',
    root,
    counts: { awake: 0, asleep: 0, total: 0 },
    update(state, dt = 1 / 60) {
      const v = state?.verts?.[soft.key];
      if (!v || v.length !== pos.length) return;
      pos.set(v);
      g.attributes.position.needsUpdate = true;
      g.computeVertexNormals();
      g.computeBoundingSphere();
      g.computeBoundingBox();
      dough.visible = true;
      // The board's top: the description's floor plane, else the dough's lowest point
      // (eased at ~10/s; the bounds are only the quantization box, not a floor).
      const bb = g.boundingBox;
      const want = floorPlane ? floorPlane.d : bb.min.y;
      floorY = placed ? floorY + (want - floorY) * Math.min(1, dt * 10) : want;
      stage3.position.y = floorY;
      if (!placed) {
        const c = bb.getCenter(new THREE.Vector3());
        stage3.position.set(c.x, floorY, c.z);
        key.target.position.copy(c);
        const r = Math.max(bb.max.x - bb.min.x, bb.max.y - bb.min.y, bb.max.z - bb.min.z);
        stage.frameSphere(new THREE.Vector3(c.x, floorY + r * 0.45, c.z), Math.max(2.4, r * 1.35), 0.5, 0, 38);
        placed = true;
      }
    },
    /** Height of the board's top (the floor the dough rests on). */
    floorY: () => floorY,
    setShowContacts() {},
    /** The dough under the ray: nearest vertex, hit point and surface normal. */
    pick(raycaster) {
      if (!dough.visible) return null;
      const hit = raycaster.intersectObject(dough, false)[0];
      if (!hit) return null;
      const f = hit.face;
      let best = f.a, bd = Infinity;
      for (const k of [f.a, f.b, f.c]) {
        const d = (pos[k * 3] - hit.point.x) ** 2 + (pos[k * 3 + 1] - hit.point.y) ** 2 + (pos[k * 3 + 2] - hit.point.z) ** 2;
        if (d < bd) { bd = d; best = k; }
      }
      return { type: 'soft', key: soft.key, vertex: best, point: hit.point.clone(), normal: f.normal.clone() };
    },
    dispose() {
      scene.remove(root);
      scene.background = null; scene.fog = null; scene.environment = null;
      for (const d of disposables) d.dispose?.();
    },
  };
}
