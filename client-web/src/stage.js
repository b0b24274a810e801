// The one place the three.js scene is set up: renderer, scene, camera, resize,
// and a camera that frames the room on any aspect ratio (a 390x844 phone in portrait
// sees the whole tray too). Views add their meshes and lights to `stage.scene`.
// Mouse users can orbit with the right button and zoom with the wheel; the left
// button and touches belong to the room's input (poke, throw, grab).
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { RoomEnvironment } from 'three/examples/jsm/environments/RoomEnvironment.js';

export class Stage {
  /** @param {HTMLElement} host */
  constructor(host) {
    this.host = host;
    // Software rasterizers (SwiftShader, llvmpipe: headless test browsers, old
    // machines) get a lighter setup: no MSAA, fewer pixels (fill rate is their limit), smaller shadow maps,
    // an ambient light instead of the prefiltered environment (setEnvironment).
    this.quality = detectQuality();
    const low = this.quality === 'low';
    const r = (this.renderer = new THREE.WebGLRenderer({ antialias: !low, powerPreference: 'high-performance' }));
    r.setPixelRatio(low ? 0.5 : Math.min(window.devicePixelRatio || 1, 2));
    r.outputColorSpace = THREE.SRGBColorSpace;
    r.toneMapping = THREE.ACESFilmicToneMapping;
    r.toneMappingExposure = 1.0;
    r.shadowMap.enabled = true;
    r.shadowMap.type = THREE.PCFShadowMap;
    r.domElement.className = 'stage-canvas';
    host.appendChild(r.domElement);

    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(36, 1, 0.05, 120);
    this.controls = new OrbitControls(this.camera, r.domElement);
    this.controls.mouseButtons = { LEFT: null, MIDDLE: THREE.MOUSE.DOLLY, RIGHT: THREE.MOUSE.ROTATE };
    this.controls.touches = { ONE: null, TWO: null };
    this.controls.enablePan = false;
    this.controls.enableDamping = true;
    this.controls.maxPolarAngle = Math.PI * 0.47;
    this.frame = { center: new THREE.Vector3(), radius: 5, elevation: 0.6, azimuth: 0 };
    this.insets = { top: 0, bottom: 0 };
    this._resize = () => this.resize();
    window.addEventListener('resize', this._resize);
    this.resize();
  }

  /**
   * Image-based light for reflections (glossy balls, metal): a procedural room,
   * prefiltered once. `intensity` scales it per view (dim at night); `root` is the
   * view's group, which holds the stand-in light on software rasterizers.
   */
  setEnvironment(intensity = 1, root = null) {
    // Software rasterizers skip it: prefiltering the room took about 4 s of a page's
    // opening and sampling it a third of every frame (SwiftShader, 720x520). A plain
    // ambient light of 6x the intensity (added to the view's `root`, removed with it)
    // gives each room's view the same mean colour within 2 % (measured on tower,
    // flag and dough), without the reflections.
    if (this.quality === 'low') {
      if (root) root.add(new THREE.AmbientLight(0xffffff, 6 * intensity));
      return;
    }
    if (!this._env) {
      const pm = new THREE.PMREMGenerator(this.renderer);
      const room = new RoomEnvironment();
      this._env = pm.fromScene(room, 0.04).texture;
      room.dispose?.();
      pm.dispose();
    }
    this.scene.environment = this._env;
    this.scene.environmentIntensity = intensity;
  }

  /**
   * Aim the camera at `center` from `elevation` radians above the horizon and
   * `azimuth` around y, backing off until a sphere of `radius` fits the view.
   */
  frameSphere(center, radius, elevation = 0.6, azimuth = 0, fov = 36) {
    Object.assign(this.frame, { center: new THREE.Vector3().copy(center), radius, elevation, azimuth, box: null });
    this.camera.fov = fov;
    this._applyFrame();
  }

  /**
   * Aim at the centre of the box [min, max] from `elevation`/`azimuth` and back off
   * just far enough that all eight corners are in view (with a small margin), on
   * whatever aspect ratio the screen has.
   */
  frameBox(min, max, elevation = 0.6, azimuth = 0, fov = 36) {
    const center = new THREE.Vector3().fromArray(min).add(new THREE.Vector3().fromArray(max)).multiplyScalar(0.5);
    Object.assign(this.frame, { center, box: [min, max], elevation, azimuth, radius: 0 });
    this.camera.fov = fov;
    this._applyFrame();
  }

  /** Screen space taken by HUD bars (CSS px): the room is framed in what is left. */
  setInsets(top, bottom) {
    if (Math.abs(top - this.insets.top) < 1 && Math.abs(bottom - this.insets.bottom) < 1) return;
    this.insets = { top, bottom };
    this._applyFrame();
  }

  _fitBox(vfov, hfov) {
    const f = this.frame, [min, max] = f.box;
    // In portrait, look down more steeply: the tray then fills the tall screen.
    const portrait = this.camera.aspect < 1 ? 1 : 0;
    const el = Array.isArray(f.elevation) ? f.elevation[portrait] : f.elevation;
    const az = Array.isArray(f.azimuth) ? f.azimuth[portrait] : f.azimuth;
    const back = new THREE.Vector3(Math.sin(az) * Math.cos(el), Math.sin(el), Math.cos(az) * Math.cos(el));
    f.back = back;
    const right = new THREE.Vector3(0, 1, 0).cross(back).normalize();
    const up = back.clone().cross(right);
    const H = this.host.clientHeight || window.innerHeight;
    const free = Math.max(0.4, (H - this.insets.top - this.insets.bottom) / H);
    const tx = Math.tan(hfov / 2) * 0.94, ty = Math.tan(vfov / 2) * 0.94 * free;
    let d = 0;
    const r = new THREE.Vector3();
    for (let i = 0; i < 8; i++) {
      r.set(i & 1 ? max[0] : min[0], i & 2 ? max[1] : min[1], i & 4 ? max[2] : min[2]).sub(f.center);
      const zr = r.dot(back);
      d = Math.max(d, Math.abs(r.dot(right)) / tx + zr, Math.abs(r.dot(up)) / ty + zr);
    }
    f.radius = r.set(max[0] - min[0], max[1] - min[1], max[2] - min[2]).length() / 2;
    return d;
  }

  _applyFrame() {
    const c = this.camera, f = this.frame;
    const vfov = THREE.MathUtils.degToRad(c.fov);
    const hfov = 2 * Math.atan(Math.tan(vfov / 2) * c.aspect);
    const dist = f.box ? this._fitBox(vfov, hfov) : f.radius / Math.sin(Math.min(vfov, hfov) / 2);
    if (f.box) c.position.copy(f.center).addScaledVector(f.back, dist);
    else c.position.set(
      f.center.x + Math.sin(f.azimuth) * Math.cos(f.elevation) * dist,
      f.center.y + Math.sin(f.elevation) * dist,
      f.center.z + Math.cos(f.azimuth) * Math.cos(f.elevation) * dist);
    // Shift the picture so the framed box sits in the middle of the free area.
    const w = this.host.clientWidth || window.innerWidth, h = this.host.clientHeight || window.innerHeight;
    const shift = f.box ? -(this.insets.top - this.insets.bottom) / 2 : 0;
    if (shift) c.setViewOffset(w, h, 0, shift, w, h); else c.clearViewOffset();
    if (this.scene.fog?.isFog) { this.scene.fog.near = dist + f.radius; this.scene.fog.far = dist + f.radius * 8; }
    c.near = Math.max(0.05, dist - f.radius * 4);
    c.far = dist + f.radius * 12 + 40;
    c.updateProjectionMatrix();
    this.controls.target.copy(f.center);
    this.controls.minDistance = dist * 0.4;
    this.controls.maxDistance = dist * 2;
    this.controls.update();
  }

  resize() {
    const w = this.host.clientWidth || window.innerWidth, h = this.host.clientHeight || window.innerHeight;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / Math.max(1, h);
    this._applyFrame();
  }

  /** Normalized device coordinates of a client-space point (for raycasting). */
  ndc(clientX, clientY, out = new THREE.Vector2()) {
    const rect = this.renderer.domElement.getBoundingClientRect();
    return out.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
  }

  /** Screen position (CSS px relative to the canvas) of a world point, or null behind the camera. */
  toScreen(v, out = { x: 0, y: 0 }) {
    const p = _p.copy(v).project(this.camera);
    if (p.z > 1) return null;
    const rect = this.renderer.domElement.getBoundingClientRect();
    out.x = (p.x * 0.5 + 0.5) * rect.width; out.y = (-p.y * 0.5 + 0.5) * rect.height;
    return out;
  }

  render() {
    this.controls.update();
    this.renderer.render(this.scene, this.camera);
  }

  dispose() {
    window.removeEventListener('resize', this._resize);
    this.controls.dispose();
    this.renderer.dispose();
    this.renderer.domElement.remove();
  }
}

const _p = new THREE.Vector3();

/** 'low' on software WebGL or when the URL says ?quality=low, else 'high'. */
export function detectQuality() {
  const q = new URLSearchParams(location.search).get('quality');
  if (q === 'low' || q === 'high') return q;
  try {
    const gl = document.createElement('canvas').getContext('webgl2') || document.createElement('canvas').getContext('webgl');
    const ext = gl && gl.getExtension('WEBGL_debug_renderer_info');
    const name = ext ? gl.getParameter(ext.UNMASKED_RENDERER_WEBGL) : '';
    gl?.getExtension('WEBGL_lose_context')?.loseContext();
    return /swiftshader|llvmpipe|software|softpipe/i.test(name) ? 'low' : 'high';
  } catch { return 'high'; }
}

/** Shadow map size for the current quality. */
export function shadowSize(stage, high) { return stage.quality === 'low' ? Math.min(1024, high) / 2 : high; }
