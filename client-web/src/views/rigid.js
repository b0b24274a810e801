// Rigid rooms (tower, dice, pile): a bright studio with a felt tray in a wooden
// frame, glass walls, wood-grain planks, dice with pips and glossy balls.
//
// Built once from the room's static description; each frame `update(state)` copies
// the interpolated poses onto the meshes. The view never moves a body on its own:
// if a body is not in the state, it is hidden.
import * as THREE from 'three';
import { shadowSize } from '../stage.js';
import { RoundedBoxGeometry } from 'three/examples/jsm/geometries/RoundedBoxGeometry.js';
import { woodTexture, feltTexture, dieFaceTexture, ballTexture, skyTexture } from './textures.js';

/** Box material order is +x, -x, +y, -y, +z, -z; opposite faces sum to 7.
 *  Must match the server's top-face reading (proto/PROTOCOL.md, dice). */
export const DIE_FACES = [1, 6, 2, 5, 3, 4];

const BALL_COLOURS = [['#ffcf3a', '#ffffff'], ['#3a9cff', '#ffffff'], ['#ff8a3a', '#ffe9c8'], ['#5ad07a', '#ffffff'], ['#a06cff', '#ffffff'], ['#ff5d8f', '#ffffff']];
const PLANK_TINTS = [0xffffff, 0xf3e2c8, 0xe9d2ae, 0xfff0d8];

export function createRigidView(stage, desc) {
  const scene = stage.scene;
  const root = new THREE.Group();
  root.name = 'rigid-room';
  scene.add(root);
  const disposables = [];
  const keep = (x) => (disposables.push(x), x);

  // The tray's inner size: from the wall planes (n = +-x: x = -+W; n = +-z: z = -+D),
  // else from the room bounds.
  const min = desc.bounds?.min ?? [-4, 0, -2.5], max = desc.bounds?.max ?? [4, 6, 2.5];
  let W = 0, D = 0;
  for (const p of desc.planes || []) {
    if (Math.abs(Math.abs(p.n[0]) - 1) < 1e-3) W = Math.max(W, Math.abs(p.d));
    if (Math.abs(Math.abs(p.n[2]) - 1) < 1e-3) D = Math.max(D, Math.abs(p.d));
  }
  if (!W) W = Math.max(Math.abs(min[0]), Math.abs(max[0]));
  if (!D) D = Math.max(Math.abs(min[2]), Math.abs(max[2]));

  // Light and air: a pale studio gradient, hemisphere fill, a warm key light with soft shadows.
  scene.background = keep(skyTexture('#eef3f8', '#b7c4d3'));
  scene.fog = new THREE.Fog(0xc9d3de, 18, 45);
  stage.setEnvironment(0.35, root);
  root.add(new THREE.HemisphereLight(0xf4f8ff, 0x6a7380, 0.8));
  const key = new THREE.DirectionalLight(0xfff3e2, 2.4);
  key.position.set(-3.5, 9, 5);
  key.castShadow = true;
  key.shadow.mapSize.setScalar(shadowSize(stage, 2048));
  Object.assign(key.shadow.camera, { left: -W - 2.5, right: W + 2.5, top: D + 4, bottom: -D - 4, near: 1, far: 25 });
  key.shadow.bias = -0.0004;
  key.shadow.normalBias = 0.02;
  key.shadow.radius = 4;
  const fill = new THREE.DirectionalLight(0xdfe9ff, 0.55);
  fill.position.set(5, 4, -3);
  root.add(key, fill);

  // The tray: floor, wooden base, felt, rims, glass.
  const ground = new THREE.Mesh(keep(new THREE.PlaneGeometry(80, 80).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ color: 0xd3dae3, roughness: 0.95 })));
  ground.position.y = -0.32;
  ground.receiveShadow = true;
  const baseWood = keep(woodTexture(11, { base: '#8a5a34' }));
  baseWood.repeat.set(2, 1);
  const base = new THREE.Mesh(keep(new RoundedBoxGeometry(2 * W + 0.8, 0.32, 2 * D + 0.8, 2, 0.08)), keep(new THREE.MeshStandardMaterial({ color: 0x9a6a44, map: baseWood, roughness: 0.6 })));
  base.position.y = -0.16;
  base.receiveShadow = true;
  const feltMap = keep(feltTexture('#2e6a70'));
  const felt = new THREE.Mesh(keep(new THREE.PlaneGeometry(2 * W, 2 * D).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ color: 0xffffff, map: feltMap, roughness: 1, envMapIntensity: 0 })));
  felt.position.y = 0.002;
  felt.receiveShadow = true;
  felt.name = 'floor';
  root.add(ground, base, felt);
  const rimTex = keep(woodTexture(7));
  rimTex.repeat.set(2, 1);
  const rimMat = keep(new THREE.MeshStandardMaterial({ color: 0xc08e5c, map: rimTex, roughness: 0.5 }));
  const rimX = keep(new RoundedBoxGeometry(0.3, 0.44, 2 * D + 0.6, 2, 0.06));
  const rimZ = keep(new RoundedBoxGeometry(2 * W, 0.44, 0.3, 2, 0.06));
  for (const s of [-1, 1]) {
    const a = new THREE.Mesh(rimX, rimMat); a.position.set(s * (W + 0.15), 0.22, 0);
    const b = new THREE.Mesh(rimZ, rimMat); b.position.set(0, 0.22, s * (D + 0.15));
    a.castShadow = a.receiveShadow = b.castShadow = b.receiveShadow = true;
    root.add(a, b);
  }
  // Glass: the physical walls are endless planes; show them up to GH with a faint edge.
  const GH = 1.9;
  const glassMat = keep(new THREE.MeshPhysicalMaterial({ color: 0xffffff, transparent: true, opacity: 0.08, roughness: 0.05, metalness: 0, depthWrite: false, side: THREE.DoubleSide }));
  for (const s of [-1, 1]) {
    const gx = new THREE.Mesh(keep(new THREE.PlaneGeometry(2 * D, GH).rotateY(Math.PI / 2)), glassMat);
    gx.position.set(s * W, 0.44 + GH / 2, 0);
    const gz = new THREE.Mesh(keep(new THREE.PlaneGeometry(2 * W, GH)), glassMat);
    gz.position.set(0, 0.44 + GH / 2, s * D);
    gx.renderOrder = gz.renderOrder = 2;
    root.add(gx, gz);
  }
  {
    const y0 = 0.44, y1 = 0.44 + GH, P = [];
    const cs = [[-W, -D], [W, -D], [W, D], [-W, D]];
    for (let i = 0; i < 4; i++) {
      const [x, z] = cs[i], [x2, z2] = cs[(i + 1) % 4];
      P.push(x, y1, z, x2, y1, z2, x, y0, z, x, y1, z);
    }
    const lg = keep(new THREE.BufferGeometry());
    lg.setAttribute('position', new THREE.Float32BufferAttribute(P, 3));
    root.add(new THREE.LineSegments(lg, keep(new THREE.LineBasicMaterial({ color: 0xffffff, transparent: true, opacity: 0.5 }))));
  }

  // Body looks, shared by size.
  const geoCache = new Map();
  const geo = (k, make) => geoCache.get(k) || (geoCache.set(k, keep(make())), geoCache.get(k));
  const dieMats = DIE_FACES.map((n) => keep(new THREE.MeshStandardMaterial({ map: keep(dieFaceTexture(n)), roughness: 0.32 })));
  const plankTex = keep(woodTexture(3));
  const plankMats = PLANK_TINTS.map((c) => keep(new THREE.MeshStandardMaterial({ color: c, map: plankTex, roughness: 0.6 })));
  const ballMats = new Map();
  const ballMat = (main, band) => {
    const k = main + band;
    if (!ballMats.has(k)) ballMats.set(k, keep(new THREE.MeshPhysicalMaterial({ map: keep(ballTexture(main, band)), roughness: 0.3, clearcoat: 0.6, clearcoatRoughness: 0.25 })));
    return ballMats.get(k);
  };

  /** id -> { mesh, info } */
  const bodies = new Map();
  const pickables = [];
  function makeBody(info) {
    let mesh;
    const s = info.size;
    if (info.shape === 'sphere') {
      const r = s[0];
      let cols = BALL_COLOURS[Math.abs(info.id) % BALL_COLOURS.length];
      if (info.look === 'heavy' || info.look === 'wrecking') cols = ['#e8423a', '#ffffff'];
      if (info.color) cols = [info.color, '#ffffff'];
      mesh = new THREE.Mesh(geo(`s${r}`, () => new THREE.SphereGeometry(r, 40, 24)), ballMat(cols[0], cols[1]));
    } else if (info.look === 'die') {
      mesh = new THREE.Mesh(geo(`d${s}`, () => new RoundedBoxGeometry(s[0], s[1], s[2], 3, Math.min(...s) * 0.14)), dieMats);
    } else {
      // Plank (the default box): the wood grain runs along u, i.e. along x on the long faces.
      const g = geo(`b${s}`, () => new RoundedBoxGeometry(s[0], s[1], s[2], 2, Math.min(...s) * 0.12));
      // The server's colour picks one of our wood tints (multiplying its dark wood
      // colours onto the grain texture would make the planks muddy).
      const tint = info.color ? parseInt(info.color.slice(1), 16) : Math.abs(info.id) * 7;
      const mat = plankMats[(tint + (info.color ? Math.abs(info.id) : 0)) % plankMats.length];
      mesh = new THREE.Mesh(g, mat);
    }
    mesh.castShadow = mesh.receiveShadow = true;
    mesh.visible = false;
    mesh.userData.bodyId = info.id;
    mesh.matrixAutoUpdate = true;
    root.add(mesh);
    pickables.push(mesh);
    bodies.set(info.id, { mesh, info });
    return bodies.get(info.id);
  }
  for (const b of desc.bodies || []) makeBody(b);

  // Contacts overlay: red dots and yellow normals (length ~ impulse), drawn on top.
  const MAXC = 1024;
  const dots = new THREE.InstancedMesh(keep(new THREE.SphereGeometry(0.035, 8, 6)), keep(new THREE.MeshBasicMaterial({ color: 0xff2a2a, depthTest: false, toneMapped: false })), MAXC);
  dots.renderOrder = 10; dots.frustumCulled = false; dots.count = 0;
  const nPos = new Float32Array(MAXC * 6);
  const nGeo = keep(new THREE.BufferGeometry());
  nGeo.setAttribute('position', new THREE.BufferAttribute(nPos, 3).setUsage(THREE.DynamicDrawUsage));
  const nLines = new THREE.LineSegments(nGeo, keep(new THREE.LineBasicMaterial({ color: 0xffe14a, depthTest: false, toneMapped: false })));
  nLines.renderOrder = 11; nLines.frustumCulled = false;
  dots.visible = nLines.visible = false;
  root.add(dots, nLines);
  let showContacts = false;
  let contacts = [];
  const m4 = new THREE.Matrix4();

  stage.frameBox([-W - 0.45, -0.3, -D - 0.45], [W + 0.45, 1.6, D + 0.45], [0.62, 0.85], [0, Math.PI / 2]);

  const seen = new Set();
  let awake = 0, asleep = 0;

  return {
    kind: 'rigid',
    root,
    get counts() { return { awake, asleep, total: awake + asleep }; },

    /** A body that appeared after the welcome (a throw): make its mesh now. */
    addBody(info) { if (!bodies.has(info.id)) makeBody(info); },

    update(state) {
      seen.clear(); awake = 0; asleep = 0;
      if (state) {
        const { ids, pos, rot, asleep: sl, count } = state;
        for (let i = 0; i < count; i++) {
          const b = bodies.get(ids[i]);
          if (!b) continue;
          const m = b.mesh;
          m.position.set(pos[i * 3], pos[i * 3 + 1], pos[i * 3 + 2]);
          m.quaternion.set(rot[i * 4], rot[i * 4 + 1], rot[i * 4 + 2], rot[i * 4 + 3]);
          m.visible = true;
          seen.add(ids[i]);
          if (sl[i]) asleep++; else awake++;
        }
      }
      for (const [id, b] of bodies) if (!seen.has(id)) b.mesh.visible = false;

      dots.visible = nLines.visible = showContacts;
      if (showContacts) {
        const C = contacts.length ? contacts : state?.contacts || [];
        const n = Math.min(MAXC, C.length);
        for (let i = 0; i < n; i++) {
          const c = C[i], p = c.p, nn = c.n;
          dots.setMatrixAt(i, m4.makeTranslation(p[0], p[1], p[2]));
          const L = 0.08 + Math.min(0.6, (c.impulse || 0) * 6);
          nPos[i * 6] = p[0]; nPos[i * 6 + 1] = p[1]; nPos[i * 6 + 2] = p[2];
          nPos[i * 6 + 3] = p[0] + nn[0] * L; nPos[i * 6 + 4] = p[1] + nn[1] * L; nPos[i * 6 + 5] = p[2] + nn[2] * L;
        }
        dots.count = n;
        dots.instanceMatrix.needsUpdate = true;
        nGeo.setDrawRange(0, n * 2);
        nGeo.attributes.position.needsUpdate = true;
      }
    },

    /** Draw body `id` at this pose instead (a predicted grab, physics/predict.js). */
    overridePose(id, pos, rot) {
      const b = bodies.get(id);
      if (!b) return;
      b.mesh.position.set(pos[0], pos[1], pos[2]);
      b.mesh.quaternion.set(rot[0], rot[1], rot[2], rot[3]);
      b.mesh.visible = true;
    },

    setShowContacts(on) { showContacts = !!on; if (!on) contacts = []; },
    /** Contact points streamed by the server: [{p, n, impulse}]. */
    setContacts(list) { contacts = list || []; },

    /**
     * What is under a ray: a body (id, world point, normal), else a point on the
     * felt floor inside the tray, else null.
     */
    pick(raycaster) {
      const vis = pickables.filter((m) => m.visible);
      const hit = raycaster.intersectObjects(vis, false)[0];
      if (hit) return { type: 'body', id: hit.object.userData.bodyId, point: hit.point.clone(), normal: hit.face ? hit.face.normal.clone().transformDirection(hit.object.matrixWorld) : null };
      const p = new THREE.Vector3();
      if (raycaster.ray.intersectPlane(_floor, p) && Math.abs(p.x) < W && Math.abs(p.z) < D) return { type: 'floor', point: p };
      return null;
    },

    /** World position of a body (for labels), or null if not shown. */
    bodyPosition(id) { const b = bodies.get(id); return b && b.mesh.visible ? b.mesh.position : null; },
    bodyInfo(id) { return bodies.get(id)?.info; },
    /** The pose a body is drawn at ({pos, rot} arrays), or null if not shown. */
    bodyPose(id) {
      const b = bodies.get(id);
      if (!b || !b.mesh.visible) return null;
      const p = b.mesh.position, q = b.mesh.quaternion;
      return { pos: [p.x, p.y, p.z], rot: [q.x, q.y, q.z, q.w] };
    },
    bodyIds() { return [...bodies.keys()]; },
    bounds: { W, D },

    dispose() {
      scene.remove(root);
      scene.background = null; scene.fog = null; scene.environment = null;
      for (const d of disposables) d.dispose?.();
      dots.dispose();
    },
  };
}

const _floor = new THREE.Plane(new THREE.Vector3(0, 1, 0), 0);
