// The replay viewer at `/replay` (a record dropped onto the page or opened from a file)
// and `/replay/<record name>` (a record the server lists at /api/records, fetched from
// /records/<name>). Loaded by main.js with a dynamic import(), so the lobby and the rooms
// never download it or the physics module.
//
// The page steps the record's room with the server's own code built as WebAssembly
// (replay.js over server/wasm/viewer.c) and draws it with the room views
// (views/rigid.js, cloth.js, soft.js) through the protocol adapter, so what it shows is
// what a live client saw (to the wire's quantization). Every state hash in the record
// is compared as the replay reaches it: the bar says "N/M hashes match" and a mismatch
// is shown in red with its tick and both hashes, never hidden.
//
// Controls: play/pause (Space), scrub (the slider; going back restarts from the record's
// start state and re-simulates up to there), speed 0.25x-4x, and a free camera (drag to
// orbit, right-drag to pan, wheel to zoom).
import * as THREE from 'three';
import { Stage } from '../stage.js';
import { createRigidView } from '../views/rigid.js';
import { createClothView } from '../views/cloth.js';
import { createSoftView } from '../views/soft.js';
import { createAdapter } from '../net/adapter.js';
import { installHook } from '../hook.js';
import { fetchPhysics } from '../physics/wasm.js';
import { worldHashLines } from '../physics/world-hash.js';
import { openReplay } from './replay.js';

const VIEWS = { rigid: createRigidView, cloth: createClothView, soft: createSoftView };
const SPEEDS = [0.25, 0.5, 1, 2, 4];
const HZ = 120;
/** Record names as the server writes them (sim/record.c: <room>-<unix ms>.rec). */
export const RECORD_NAME = /^[A-Za-z0-9_-]{1,32}-\d{1,20}\.rec$/;
const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

export function startViewer(host, { name = null } = {}) {
  document.body.classList.add('in-room', 'in-replay');
  document.title = 'Replay · Tumble';
  const hook = installHook();
  const ui = buildUi(host);
  let physicsP = null;
  const physics = () => (physicsP ||= fetchPhysics());
  let player = null;

  // Tests and tools: the same physics, the same lines as `tumble-bench world-hash`.
  hook.replay = {
    worldHash: async () => worldHashLines(await physics()),
    status: () => player?.status() ?? null,
    seek: (tick) => player?.seek(tick),
    play: (speed) => player?.play(speed),
    pause: () => player?.pause(),
  };

  async function load(bytes, label) {
    ui.say(`Loading ${label}…`);
    player?.dispose();
    player = null;
    try {
      player = createPlayer(host, ui, hook, await physics(), bytes, label);
    } catch (e) {
      ui.say(`${label}: ${e.message}`, 'bad');
      hook.replayError = e.message;
    }
  }

  // A record dropped anywhere on the page, or chosen with the file button.
  ui.file.addEventListener('change', () => { const f = ui.file.files[0]; if (f) f.arrayBuffer().then((b) => load(new Uint8Array(b), f.name)); });
  addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dropping'); });
  addEventListener('dragleave', () => document.body.classList.remove('dropping'));
  addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dropping');
    const f = e.dataTransfer?.files?.[0];
    if (f) f.arrayBuffer().then((b) => load(new Uint8Array(b), f.name));
  });
  hook.replay.loadBytes = (arr, label = 'record') => load(Uint8Array.from(arr), label);

  if (name) {
    if (!RECORD_NAME.test(name)) ui.say(`"${name}" is not a record name (<room>-<number>.rec)`, 'bad');
    else fetch(`/records/${encodeURIComponent(name)}`).then(async (r) => {
      if (!r.ok) { ui.say(r.status === 404 ? `No record called ${name} on this server (is it started with --record?)` : `${name}: HTTP ${r.status}`, 'bad'); return; }
      load(new Uint8Array(await r.arrayBuffer()), name);
    }, (e) => ui.say(`${name}: ${e.message}`, 'bad'));
  } else {
    ui.say('Drop a --record file (.rec) here, or open one. The lobby lists the server\'s records when it records.');
  }
}

function buildUi(host) {
  const top = h('div', 'bar top replay-top');
  const brand = h('a', 'brand', 'Tumble'); brand.href = '/';
  const title = h('div', 'room');
  const titleName = h('span', 'room-name', 'Replay');
  const titleKind = h('span', 'room-kind', '');
  title.append(titleName, titleKind);
  const openLabel = h('label', 'ghost replay-open', 'Open record…');
  const file = h('input'); file.type = 'file'; file.accept = '.rec,application/octet-stream'; file.className = 'visually-hidden';
  openLabel.append(file);
  top.append(brand, title, openLabel);

  const bottom = h('div', 'bar bottom replay-bar');
  const playBtn = h('button', 'primary replay-play', 'Play'); playBtn.type = 'button'; playBtn.disabled = true;
  const scrub = h('input', 'replay-scrub'); scrub.type = 'range'; scrub.min = '0'; scrub.max = '0'; scrub.step = '1'; scrub.value = '0'; scrub.disabled = true;
  scrub.setAttribute('aria-label', 'Position in the record');
  const time = h('span', 'replay-time', '0.00 s');
  const speed = h('select', 'replay-speed'); speed.setAttribute('aria-label', 'Speed');
  for (const s of SPEEDS) speed.append(new Option(`${s}×`, String(s), s === 1, s === 1));
  const hashes = h('span', 'replay-hashes', 'hashes: –'); hashes.setAttribute('role', 'status');
  bottom.append(playBtn, scrub, time, speed, hashes);

  const note = h('div', 'replay-note'); note.setAttribute('role', 'alert');
  const hud = h('div', 'hud replay-hud');
  const mid = h('div', 'replay-mid');
  mid.append(note);
  hud.append(top, mid, bottom);
  host.append(hud);
  return {
    top, bottom, hud, playBtn, scrub, time, speed, hashes, note, file, titleName, titleKind,
    say(text, level = '') { note.textContent = text; note.className = `replay-note ${level}`; note.hidden = !text; },
  };
}

/** One open record: the replay, the stage, the view and the frame loop. */
function createPlayer(host, ui, hook, physics, bytes, label) {
  const r = openReplay(physics, bytes); // throws with the reason when it is not a record
  const stageHost = h('div', 'stage');
  host.prepend(stageHost);
  const stage = new Stage(stageHost);
  // A free camera: the left button orbits here (a room gives it to poke/throw/grab).
  stage.controls.mouseButtons = { LEFT: THREE.MOUSE.ROTATE, MIDDLE: THREE.MOUSE.DOLLY, RIGHT: THREE.MOUSE.PAN };
  stage.controls.touches = { ONE: THREE.TOUCH.ROTATE, TWO: THREE.TOUCH.DOLLY_PAN };
  stage.controls.enablePan = true;
  const adapter = createAdapter({ roomId: r.room });
  let view = null, desc = null, statics = -1, state = null;
  const start = r.startTick, end = r.endTick;
  let playing = false, speed = 1, clock = start; // clock: the tick being shown, fractional while playing
  ui.titleName.textContent = r.room;
  ui.titleKind.textContent = `${r.scene} · ${label}`;
  ui.scrub.min = String(start); ui.scrub.max = String(end); ui.scrub.value = String(start); ui.scrub.disabled = false;
  ui.playBtn.disabled = false;
  ui.say('');

  function take(bytesOut) {
    for (const m of adapter.decode(bytesOut)) {
      if (m.type === 'welcome') {
        view?.dispose();
        desc = m.desc;
        view = VIEWS[desc.room.kind](stage, desc);
        hook.kind = desc.room.kind; hook.scene = desc.room.scene; hook.desc = desc; hook.view = view;
        if (m.snapshot) state = sampled(m.snapshot);
      } else if (m.type === 'body_added') view?.addBody?.(m.body);
      else if (m.type === 'snapshot') state = sampled(m.snapshot ?? m.snap);
    }
  }
  function refresh() {
    if (r.staticChanges !== statics) { statics = r.staticChanges; take(r.welcome()); return; }
    const b = r.snapshot();
    if (b) take(b); else { statics = r.staticChanges; take(r.welcome()); }
  }
  refresh();

  function showHashes() {
    const bad = r.firstMismatch, n = r.checks.length, ok = r.checks.filter((c) => c.ok).length;
    ui.hashes.textContent = `hashes: ${ok}/${n} match${n < r.hashCount ? ` (of ${r.hashCount})` : ''}`;
    ui.hashes.className = `replay-hashes ${bad ? 'bad' : n ? 'ok' : ''}`;
    if (bad) ui.say(`State hash MISMATCH at tick ${bad.tick} (${((bad.tick - start) / HZ).toFixed(2)} s): the record says ${bad.want}, this replay computed ${bad.got}. From here on the picture is not what the server simulated.`, 'bad');
  }

  /** Show tick t: forward by stepping, backward by re-simulating from the start state. */
  function seek(t) {
    t = Math.max(start, Math.min(end, Math.floor(t)));
    if (t < r.tick) { r.reopen(); statics = -1; }
    let done = false;
    try { done = r.advance(t); } catch (e) { ui.say(e.message, 'bad'); playing = false; }
    refresh();
    showHashes();
    return done;
  }

  function play(s) { if (s) setSpeed(s); if (r.tick >= end) { seek(start); clock = start; } playing = true; ui.playBtn.textContent = 'Pause'; }
  function pause() { playing = false; ui.playBtn.textContent = 'Play'; }
  function setSpeed(s) { speed = SPEEDS.includes(+s) ? +s : 1; ui.speed.value = String(speed); }

  const onPlay = () => (playing ? pause() : play());
  const onScrub = () => { clock = Number(ui.scrub.value); seek(clock); };
  const onSpeed = () => setSpeed(ui.speed.value);
  const onKey = (e) => { if (e.code === 'Space' && e.target === document.body) { e.preventDefault(); onPlay(); } };
  ui.playBtn.addEventListener('click', onPlay);
  ui.scrub.addEventListener('input', onScrub);
  ui.speed.addEventListener('change', onSpeed);
  addEventListener('keydown', onKey);

  const frameMs = new Float64Array(60);
  let frames = 0, prev = performance.now(), raf = 0;
  function frame() {
    const now = performance.now();
    const dt = Math.min(0.1, (now - prev) / 1000); prev = now;
    if (playing) {
      clock = Math.min(end, clock + dt * speed * HZ);
      const t0 = performance.now();
      const done = seek(clock);
      frameMs[frames++ % 60] = performance.now() - t0;
      if (done && r.tick >= end) pause();
    }
    ui.scrub.value = String(r.tick);
    ui.time.textContent = `${((r.tick - start) / HZ).toFixed(2)} s / ${((end - start) / HZ).toFixed(2)} s`;
    if (view && state) { view.update(state, dt); hook.state = state; }
    stage.render();
    hook.frames++;
    raf = requestAnimationFrame(frame);
  }
  raf = requestAnimationFrame(frame);
  showHashes();

  const player = {
    seek, play, pause,
    status: () => ({
      tick: r.tick, start, end, playing, speed, scene: r.scene, room: r.room, inputs: r.inputs,
      hashes: r.hashCount, checked: r.checks.length, matched: r.checks.filter((c) => c.ok).length,
      firstMismatch: r.firstMismatch, shownMismatch: ui.note.classList.contains('bad') ? ui.note.textContent : null,
      hashText: ui.hashes.textContent, stepMsPerFrame: median(frameMs.slice(0, Math.min(frames, 60))),
    }),
    dispose() {
      cancelAnimationFrame(raf);
      removeEventListener('keydown', onKey);
      ui.playBtn.removeEventListener('click', onPlay);
      ui.scrub.removeEventListener('input', onScrub);
      ui.speed.removeEventListener('change', onSpeed);
      view?.dispose(); stage.dispose(); stageHost.remove(); r.close();
    },
  };
  return player;
}

/** The adapter's full-state snapshot as the views' sampled state (net/snapshots.js). */
function sampled(s) {
  return { ids: s.ids, pos: s.pos, rot: s.rot, asleep: s.asleep, count: s.ids.length, verts: s.verts || {}, contacts: [], tick: s.tick, time: s.time, extrapolated: 0 };
}

function median(a) { if (!a.length) return 0; const s = Array.from(a).sort((x, y) => x - y); return s[s.length >> 1]; }
