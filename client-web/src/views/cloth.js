// Cloth rooms (flag, cape): night on a castle wall. Stars and a moon, stone
// blocks, torches whose flames flicker and throw warm light, a flag on a pole and a
// figure made of capsules wearing a cape.
//
// Every cloth is a w x h grid whose vertex positions arrive in each state
// (state.verts[cloth.key]); the figure's capsules arrive as end points
// (state.verts.capsules, 6 floats each). Normals and bounding volumes are
// recomputed every frame so lighting follows the flutter and picking keeps
// working on a stretched cloth.
import * as THREE from 'three';
import { shadowSize } from '../stage.js';
import { stoneTexture, flagTexture, capeTexture, glowTexture, groundTexture, skyTexture, woodTexture, rng } from './textures.js';

export function createClothView(stage, desc) {
  const scene = stage.scene;
  const root = new THREE.Group();
  root.name = 'cloth-room';
  scene.add(root);
  const disposables = [];
  const keep = (x) => (disposables.push(x), x);
  const min = desc.bounds?.min ?? [-3, 0, -3], max = desc.bounds?.max ?? [3, 4, 3];
  const cx = (min[0] + max[0]) / 2, cz = (min[2] + max[2]) / 2;
  const spanX = max[0] - min[0], spanZ = max[2] - min[2];

  // Night sky, stars, moon.
  scene.background = keep(skyTexture('#03050d', '#1b2540', [[0.6, '#0b1226']]));
  scene.fog = new THREE.FogExp2(0x0b1226, 0.025);
  {
    const R = rng(5), N = 900, P = new Float32Array(N * 3), S = new Float32Array(N);
    for (let i = 0; i < N; i++) {
      const a = R() * Math.PI * 2, e = 0.08 + Math.pow(R(), 0.8) * 1.4, r = 60;
      P[i * 3] = Math.cos(a) * Math.cos(e) * r; P[i * 3 + 1] = Math.sin(e) * r; P[i * 3 + 2] = Math.sin(a) * Math.cos(e) * r;
    }
    const g = keep(new THREE.BufferGeometry());
    g.setAttribute('position', new THREE.BufferAttribute(P, 3));
    const stars = new THREE.Points(g, keep(new THREE.PointsMaterial({ color: 0xdfe6ff, size: 0.16, sizeAttenuation: true, fog: false, transparent: true, opacity: 0.85 })));
    root.add(stars);
    const moon = new THREE.Sprite(keep(new THREE.SpriteMaterial({ map: keep(glowTexture('rgba(235,240,255,1)', 'rgba(120,140,220,0)')), fog: false, depthWrite: false, blending: THREE.AdditiveBlending })));
    moon.position.set(-18, 22, -40); moon.scale.set(9, 9, 1);
    root.add(moon);
  }
  stage.setEnvironment(0.12, root);
  root.add(new THREE.HemisphereLight(0x5a6aa8, 0x151822, 1.1));
  const moonLight = new THREE.DirectionalLight(0x9fb4ff, 1.5);
  moonLight.position.set(-6, 10, 4);
  moonLight.castShadow = true;
  moonLight.shadow.mapSize.setScalar(shadowSize(stage, 1024));
  Object.assign(moonLight.shadow.camera, { left: -8, right: 8, top: 8, bottom: -8, near: 1, far: 30 });
  moonLight.shadow.bias = -0.0005; moonLight.shadow.radius = 3;
  root.add(moonLight);

  // Ground and the wall behind.
  const ground = new THREE.Mesh(keep(new THREE.PlaneGeometry(80, 80).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ map: keep(groundTexture()), roughness: 1 })));
  ground.receiveShadow = true;
  ground.name = 'floor';
  root.add(ground);
  const stone = keep(stoneTexture());
  const wallMat = keep(new THREE.MeshStandardMaterial({ map: stone, roughness: 0.95, color: 0xb8bcc8 }));
  const wallZ = min[2] - 1.2, wallW = Math.max(16, spanX + 10), wallH = 3.2;
  const wall = new THREE.Mesh(keep(new THREE.BoxGeometry(wallW, wallH, 0.8)), wallMat);
  wall.position.set(cx, wallH / 2, wallZ);
  wall.receiveShadow = wall.castShadow = true;
  root.add(wall);
  const merlonGeo = keep(new THREE.BoxGeometry(0.7, 0.6, 0.8));
  for (let x = -wallW / 2 + 0.5; x < wallW / 2; x += 1.3) {
    const m = new THREE.Mesh(merlonGeo, wallMat);
    m.position.set(cx + x, wallH + 0.3, wallZ);
    m.castShadow = m.receiveShadow = true;
    root.add(m);
  }
  // Flagstones path along the front.
  {
    const path = new THREE.Mesh(keep(new THREE.PlaneGeometry(wallW, Math.max(3, spanZ + 1)).rotateX(-Math.PI / 2)), keep(new THREE.MeshStandardMaterial({ map: stone, color: 0x8a8e9a, roughness: 0.9 })));
    path.position.set(cx, 0.005, cz);
    path.receiveShadow = true;
    root.add(path);
  }

  // Torches: stick, iron cup, flickering flame sprite and a warm point light.
  const torches = [];
  const flameTex = keep(glowTexture('rgba(255,230,160,1)', 'rgba(255,90,10,0)'));
  const stickMat = keep(new THREE.MeshStandardMaterial({ map: keep(woodTexture(17, { base: '#5a3a20' })), roughness: 0.8 }));
  const ironMat = keep(new THREE.MeshStandardMaterial({ color: 0x2a2a2e, metalness: 0.8, roughness: 0.4 }));
  const torchXs = [cx - Math.max(2.2, spanX * 0.45), cx + Math.max(2.2, spanX * 0.45)];
  torchXs.forEach((x, i) => {
    const g = new THREE.Group();
    g.position.set(x, 1.9, wallZ + 0.55);
    const stick = new THREE.Mesh(keep(new THREE.CylinderGeometry(0.04, 0.03, 0.6, 8)), stickMat);
    stick.rotation.x = 0.35;
    const cup = new THREE.Mesh(keep(new THREE.CylinderGeometry(0.09, 0.05, 0.12, 10)), ironMat);
    cup.position.set(0, 0.3, 0.1);
    const flame = new THREE.Sprite(keep(new THREE.SpriteMaterial({ map: flameTex, blending: THREE.AdditiveBlending, depthWrite: false, color: 0xffc070 })));
    flame.position.set(0, 0.48, 0.12); flame.scale.set(0.45, 0.7, 1);
    const halo = new THREE.Sprite(keep(new THREE.SpriteMaterial({ map: flameTex, blending: THREE.AdditiveBlending, depthWrite: false, color: 0xff7a20, opacity: 0.35 })));
    halo.position.copy(flame.position); halo.scale.set(2.2, 2.2, 1);
    const light = new THREE.PointLight(0xff9a40, 6, 9, 1.6);
    light.position.set(0, 0.5, 0.35);
    if (i === 0 && stage.quality !== 'low') { light.castShadow = true; light.shadow.mapSize.set(512, 512); light.shadow.bias = -0.002; light.shadow.radius = 4; }
    stick.castShadow = true;
    g.add(stick, cup, flame, halo, light);
    root.add(g);
    torches.push({ flame, halo, light, phase: i * 1.7 });
  });

  // Cloths.
  const cloths = [];
  const flagMap = keep(flagTexture()), capeMap = keep(capeTexture());
  for (const c of desc.cloths || []) {
    const grid = c.w > 1 && c.h > 1 && c.w * c.h === (c.verts ?? c.w * c.h);
    const n = c.verts ?? c.w * c.h;
    const g = keep(new THREE.BufferGeometry());
    const pos = new Float32Array(n * 3), uv = new Float32Array(n * 2), idx = [];
    if (grid) for (let j = 0; j < c.h; j++) for (let i = 0; i < c.w; i++) {
      const k = j * c.w + i;
      uv[k * 2] = i / (c.w - 1); uv[k * 2 + 1] = 1 - j / (c.h - 1);
    }
    if (c.triangles?.length) idx.push(...c.triangles);
    else for (let j = 0; j < c.h - 1; j++) for (let i = 0; i < c.w - 1; i++) {
      const a = j * c.w + i, b = a + 1, d = a + c.w, e = d + 1;
      idx.push(a, d, b, b, d, e);
    }
    g.setAttribute('position', new THREE.BufferAttribute(pos, 3).setUsage(THREE.DynamicDrawUsage));
    g.setAttribute('uv', new THREE.BufferAttribute(uv, 2));
    g.setIndex(idx);
    const isCape = c.look === 'cape';
    const mat = keep(new THREE.MeshStandardMaterial({ map: isCape ? capeMap : flagMap, roughness: isCape ? 0.85 : 0.7, side: THREE.DoubleSide }));
    const mesh = new THREE.Mesh(g, mat);
    mesh.castShadow = mesh.receiveShadow = true;
    mesh.frustumCulled = false; // it moves every frame; bounds are refreshed for picking anyway
    mesh.visible = false;
    mesh.userData.clothKey = c.key;
    root.add(mesh);
    cloths.push({ info: c, mesh, geo: g, pos, pole: null });
  }
  const poleMat = keep(new THREE.MeshStandardMaterial({ color: 0x8a8f98, metalness: 0.7, roughness: 0.35 }));
  const goldMat = keep(new THREE.MeshStandardMaterial({ color: 0xd9a53a, metalness: 0.9, roughness: 0.3 }));
  function makePole(cl) {
    // A pole through the pinned column, from the ground to just above the top pin.
    const P = cl.pos, pins = cl.info.pins || [];
    let x = 0, z = 0, top = 0;
    for (const k of pins) { x += P[k * 3]; z += P[k * 3 + 2]; top = Math.max(top, P[k * 3 + 1]); }
    x /= pins.length || 1; z /= pins.length || 1;
    const pole = cl.info.pole;
    const r = pole?.radius ?? 0.05;
    const base = pole ? new THREE.Vector3(...pole.base) : new THREE.Vector3(x, 0, z);
    const tip = pole ? new THREE.Vector3(...pole.top) : new THREE.Vector3(x, top + 0.2, z);
    const len = base.distanceTo(tip);
    const g = new THREE.Group();
    const shaft = new THREE.Mesh(keep(new THREE.CylinderGeometry(r, r * 1.2, len, 16)), poleMat);
    shaft.position.y = len / 2;
    const knob = new THREE.Mesh(keep(new THREE.SphereGeometry(r * 2, 16, 12)), goldMat);
    knob.position.y = len + r;
    const foot = new THREE.Mesh(keep(new THREE.CylinderGeometry(r * 4, r * 5, 0.2, 16)), keep(new THREE.MeshStandardMaterial({ map: stone, roughness: 0.9 })));
    foot.position.y = 0.1;
    g.add(shaft, knob, foot);
    g.position.copy(base);
    g.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), tip.clone().sub(base).normalize());
    g.traverse((o) => { o.castShadow = o.receiveShadow = true; });
    root.add(g);
    cl.pole = g;
  }

  // Static world capsules from the description (the flag pole).
  for (const p of desc.poles || []) {
    const a = new THREE.Vector3(...p.a), b = new THREE.Vector3(...p.b);
    const lo = a.y <= b.y ? a : b, hi = a.y <= b.y ? b : a;
    makePole({ info: { pole: { base: [lo.x, Math.min(lo.y, 0), lo.z], top: hi.toArray(), radius: p.radius } }, pos: new Float32Array(0) });
  }

  // The figure: one mesh per capsule, rebuilt only if a bone's length changes.
  // Materials by part name ('head', 'torso', anything else is armour); parts may be
  // named after the first state arrives, so the material is picked at update time.
  const partMats = {
    head: keep(new THREE.MeshStandardMaterial({ color: 0xb8bec8, metalness: 0.6, roughness: 0.32 })),
    torso: keep(new THREE.MeshStandardMaterial({ color: 0x6a4a34, roughness: 0.7 })),
    other: keep(new THREE.MeshStandardMaterial({ color: 0x9aa2ae, metalness: 0.55, roughness: 0.38 })),
  };
  // The server's colours, when it gives them, win over the armour defaults.
  const colourMats = new Map();
  const matFor = (part = '', color) => {
    if (part === 'pole') return poleMat;
    if (color) {
      if (!colourMats.has(color)) colourMats.set(color, keep(new THREE.MeshStandardMaterial({ color, roughness: /head/.test(part) ? 0.55 : 0.65, metalness: 0.05 })));
      return colourMats.get(color);
    }
    return /head/.test(part) ? partMats.head : /torso|body|chest/.test(part) ? partMats.torso : partMats.other;
  };
  const caps = (desc.capsules || []).map((c, i) => {
    const mesh = new THREE.Mesh(undefined, matFor(c.part, c.color));
    mesh.castShadow = mesh.receiveShadow = true;
    mesh.visible = false;
    root.add(mesh);
    return { info: c, mesh, len: -1, index: i, part: c.part };
  });
  // The figure carries a torch in its right hand (end point of the right arm).
  const isHand = (part) => /(arm|hand).*(_r|right)|right.*(arm|hand)/i.test(part || '');
  let handTorch = null;
  if (caps.length) {
    const g = new THREE.Group();
    const stick = new THREE.Mesh(keep(new THREE.CylinderGeometry(0.025, 0.02, 0.5, 8)), stickMat);
    stick.position.y = 0.12;
    const flame = new THREE.Sprite(keep(new THREE.SpriteMaterial({ map: flameTex, blending: THREE.AdditiveBlending, depthWrite: false, color: 0xffc070 })));
    flame.position.y = 0.45; flame.scale.set(0.3, 0.5, 1);
    const halo = new THREE.Sprite(keep(new THREE.SpriteMaterial({ map: flameTex, blending: THREE.AdditiveBlending, depthWrite: false, color: 0xff7a20, opacity: 0.3 })));
    halo.position.y = 0.45; halo.scale.set(1.6, 1.6, 1);
    const light = new THREE.PointLight(0xff9a40, 4, 7, 1.6);
    light.position.y = 0.5;
    g.add(stick, flame, halo, light);
    g.visible = false;
    root.add(g);
    handTorch = g;
    torches.push({ flame, halo, light, phase: 0.9, base: 4 });
  }
  const _a = new THREE.Vector3(), _b = new THREE.Vector3(), _d = new THREE.Vector3(), _up = new THREE.Vector3(0, 1, 0);

  // Frame: the cloth area plus some of the wall and a torch on each side.
  stage.frameSphere(new THREE.Vector3(cx, 1.5, cz), Math.max(3.2, spanX * 0.55), 0.25, 0.35, 40);
  let t = 0;
  // Once the first state is in: frame the cloths and the figure (plus room to walk and
  // the ground below), rather than the whole quantization box.
  let framed = false;
  function frameFirst(state) {
    const box = new THREE.Box3();
    const add = (v) => { for (let i = 0; i + 2 < v.length; i += 3) box.expandByPoint(_a.set(v[i], v[i + 1], v[i + 2])); };
    for (const c of desc.cloths || []) if (state.verts?.[c.key]) add(state.verts[c.key]);
    if (state.verts?.capsules) add(state.verts.capsules);
    for (const p of desc.poles || []) { add(p.a); add(p.b); }
    if (box.isEmpty()) return;
    framed = true;
    if (caps.length > 1) {
      // A walking figure: frame the circle it walks (its distance from the centre),
      // so it stays in view all the way round.
      const c = box.getCenter(new THREE.Vector3());
      const R = Math.max(2, Math.hypot(c.x, c.z)) + 0.8;
      stage.frameBox([-R, 0, -R], [R, box.max.y + 0.3, R], [0.32, 0.45], 0.3, 40);
    } else {
      stage.frameBox([box.min.x - 0.6, 0, box.min.z - 0.6], [box.max.x + 0.6, box.max.y + 0.3, box.max.z + 0.6], [0.22, 0.3], 0.3, 40);
    }
  }

  const _v = new THREE.Vector3();
  function nearRay(ray, tolerance) {
    let best = null, bd = tolerance * tolerance, bt = Infinity;
    for (const c of cloths) {
      if (!c.mesh.visible) continue;
      const P = c.pos;
      for (let k = 0; k < P.length / 3; k++) {
        _v.set(P[k * 3], P[k * 3 + 1], P[k * 3 + 2]);
        const d = ray.distanceSqToPoint(_v), t = _v.distanceTo(ray.origin);
        // Nearest to the ray; among near-equals, nearest to the eye.
        if (d < bd - 1e-4 || (Math.abs(d - bd) <= 1e-4 && t < bt)) { bd = d; bt = t; best = { c, k, p: _v.clone() }; }
      }
    }
    return best && { type: 'cloth', key: best.c.info.key, id: best.c.info.id, vertex: best.k, point: best.p, near: true };
  }

  return {
    kind: 'cloth',
    root,
    counts: { awake: 0, asleep: 0, total: 0 },
    update(state, dt = 1 / 60) {
      t += dt;
      for (const tr of torches) { // flicker: two incommensurate sines and a little noise
        const f = 0.82 + 0.12 * Math.sin(t * 13 + tr.phase) + 0.06 * Math.sin(t * 31 + tr.phase * 3) + 0.05 * Math.random();
        tr.light.intensity = (tr.base ?? 6) * f;
        tr.flame.scale.set(0.42 * f, 0.7 * (0.9 + 0.2 * f), 1);
        tr.halo.material.opacity = 0.28 + 0.1 * f;
      }
      if (!state) return;
      if (!framed) frameFirst(state);
      for (const cl of cloths) {
        const v = state.verts?.[cl.info.key];
        if (!v || v.length !== cl.pos.length) { cl.mesh.visible = false; continue; }
        cl.pos.set(v);
        cl.geo.attributes.position.needsUpdate = true;
        cl.geo.computeVertexNormals();
        cl.geo.computeBoundingSphere();
        cl.geo.computeBoundingBox();
        cl.mesh.visible = true;
        if (!cl.pole && cl.info.look !== 'cape' && !(desc.poles || []).length && !(desc.capsules || []).length) makePole(cl);
      }
      const cv = state.verts?.capsules;
      for (const c of caps) {
        const o = c.index * 6;
        if (!cv || cv.length < o + 6) { c.mesh.visible = false; continue; }
        _a.set(cv[o], cv[o + 1], cv[o + 2]); _b.set(cv[o + 3], cv[o + 4], cv[o + 5]);
        const len = _a.distanceTo(_b);
        if (c.part !== c.info.part) { c.part = c.info.part; c.mesh.material = matFor(c.part, c.info.color); }
        {
          if (c.part === 'pole' && !c.knob) { // a pole: gold knob on top, a stone foot
            c.knob = new THREE.Mesh(keep(new THREE.SphereGeometry(c.info.radius * 2, 16, 12)), goldMat);
            c.foot = new THREE.Mesh(keep(new THREE.CylinderGeometry(c.info.radius * 4, c.info.radius * 5, 0.2, 16)), keep(new THREE.MeshStandardMaterial({ map: stone, roughness: 0.9 })));
            c.knob.castShadow = c.foot.castShadow = c.foot.receiveShadow = true;
            root.add(c.knob, c.foot);
          }
        }
        if (c.knob) {
          const top = _a.y > _b.y ? _a : _b, bottom = _a.y > _b.y ? _b : _a;
          c.knob.position.copy(top).y += c.info.radius * 2;
          c.foot.position.set(bottom.x, 0.1, bottom.z);
        }
        if (Math.abs(len - c.len) > 0.01) {
          c.mesh.geometry?.dispose();
          c.mesh.geometry = new THREE.CapsuleGeometry(c.info.radius, Math.max(0.001, len), 6, 16);
          c.len = len;
        }
        c.mesh.position.copy(_a).add(_b).multiplyScalar(0.5);
        _d.copy(_b).sub(_a);
        if (len > 1e-6) c.mesh.quaternion.setFromUnitVectors(_up, _d.divideScalar(len));
        c.mesh.visible = true;
        if (handTorch && isHand(c.info.part)) {
          // The torch sits in the hand: the arm's lower end point.
          handTorch.position.copy(_a.y < _b.y ? _a : _b); handTorch.visible = true;
        }
      }
    },

    setShowContacts() {},

    /** Cloth under the ray: its key, the nearest grid vertex and the hit point; with a
     *  tolerance (m), a ray that just misses the cloth as drawn takes the vertex nearest it
     *  (a walking figure's cape moves while the pointer goes down). */
    pick(raycaster, { tolerance = 0 } = {}) {
      const hit = raycaster.intersectObjects(cloths.filter((c) => c.mesh.visible).map((c) => c.mesh), false)[0];
      if (!hit) return tolerance > 0 ? nearRay(raycaster.ray, tolerance) : null;
      const cl = cloths.find((c) => c.mesh === hit.object);
      const P = cl.pos, f = hit.face;
      let best = f.a, bd = Infinity;
      for (const k of [f.a, f.b, f.c]) {
        const d = (P[k * 3] - hit.point.x) ** 2 + (P[k * 3 + 1] - hit.point.y) ** 2 + (P[k * 3 + 2] - hit.point.z) ** 2;
        if (d < bd) { bd = d; best = k; }
      }
      return { type: 'cloth', key: cl.info.key, id: cl.info.id, vertex: best, point: hit.point.clone() };
    },

    /** The vertex farthest from the pins (a free corner or hem): what a keyboard grab takes. */
    freeVertex(key) {
      const c = cloths.find((x) => x.info.key === key) || cloths[0];
      if (!c) return null;
      const P = c.pos, pins = c.info.pins || [];
      let best = 0, bd = -1;
      for (let k = 0; k < P.length / 3; k++) {
        let d = Infinity;
        for (const q of pins) d = Math.min(d, (P[k * 3] - P[q * 3]) ** 2 + (P[k * 3 + 1] - P[q * 3 + 1]) ** 2 + (P[k * 3 + 2] - P[q * 3 + 2]) ** 2);
        if (d > bd) { bd = d; best = k; }
      }
      return { type: 'cloth', key: c.info.key, id: c.info.id, vertex: best, point: new THREE.Vector3(P[best * 3], P[best * 3 + 1], P[best * 3 + 2]) };
    },

    clothVertex(key, k) { const c = cloths.find((x) => x.info.key === key); return c ? new THREE.Vector3(c.pos[k * 3], c.pos[k * 3 + 1], c.pos[k * 3 + 2]) : null; },

    dispose() {
      scene.remove(root);
      scene.background = null; scene.fog = null; scene.environment = null;
      for (const c of caps) c.mesh.geometry?.dispose();
      for (const d of disposables) d.dispose?.();
    },
  };
}
