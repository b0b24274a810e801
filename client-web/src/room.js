// A room page: connection -> snapshot buffer -> view, input -> intents -> connection.
//
// The transport delivers the client's internal messages (see README.md):
//   welcome, snapshot, players, watchers, param, dice, body_added, pong, stats, error
// and takes intents. The requestAnimationFrame loop only reads: it samples the
// buffer at "now minus the interpolation delay", hands that state to the view, and
// updates the HUD. Nothing here moves a body.
//
// What a person is told lives here too: who did what (in people's terms), that the
// page is offline (inputs paused), and - when the room cannot be joined - what
// happened and a way on (ui/room-problem.js).
import * as THREE from 'three';
import { Stage } from './stage.js';
import { SnapshotBuffer } from './net/snapshots.js';
import { ClockSync } from './net/clock.js';
import { createRigidView } from './views/rigid.js';
import { createClothView } from './views/cloth.js';
import { createSoftView } from './views/soft.js';
import { attachInput } from './input/intents.js';
import { createGrabPrediction } from './physics/predicted-grabs.js';
import { createHud } from './ui/hud.js';
import { createParamsPanel, describeParam, paramLabel } from './ui/params.js';
import { showRoomProblem, askName } from './ui/room-problem.js';
import { installHook } from './hook.js';
import { KINDS, ACTIONS, HINTS, KEYS, roomUrl } from './scenes.js';

const VIEWS = { rigid: createRigidView, cloth: createClothView, soft: createSoftView };
const DEFAULT_ACTIONS = { rigid: ACTIONS.tower, cloth: ACTIONS.flag, soft: ACTIONS.dough };
const RESET_WORDS = {
  knock: 'knocked the tower down', rebuild: 'rebuilt the tower', throw_dice: 'threw the dice', roll: 'threw the dice',
  reset: 'reset the room (settings kept)',
};
/** Server refusals in people's terms (the server's own words are for developers). */
function errorWords(m) {
  switch (m.name) {
    case 'projectile_cap': return 'Too many balls: the oldest one was removed';
    case 'unknown_body': return m.grab != null ? 'Missed: grab a little closer to the cloth' : 'Nothing there to poke';
    case 'rate_limited': return 'Slow down: too many actions at once';
    case 'not_allowed': return 'That does not work in this room';
    case 'bad_value': { const p = /^(\w+): /.exec(m.message || ''); return p ? `That ${paramLabel(p[1])} is outside its range` : 'That value is not allowed here'; }
    default: return m.message;
  }
}
const now = () => performance.now() / 1000;

// What a watcher's page sends (PROTOCOL.md §14: a watcher sends no inputs).
const WATCHER_SENDS = new Set(['ping', 'resync']);

export function startRoom({ host, roomId, kind: askedKind, scene: askedScene, transport, fetchRoomStats = null, fetchRooms = null,
  watch = false }) {
  document.body.classList.add('in-room');
  const stageHost = document.createElement('div');
  stageHost.className = 'stage';
  host.append(stageHost);
  const stage = new Stage(stageHost);
  const canvas = stage.renderer.domElement;
  canvas.tabIndex = 0;
  canvas.setAttribute('role', 'application');
  canvas.setAttribute('aria-roledescription', '3D view');
  const buffer = new SnapshotBuffer();
  const clock = new ClockSync();
  const hook = installHook();
  hook.stage = stage;
  const pickRay = new THREE.Raycaster();
  /** What a pointer at (clientX, clientY) would pick, for tests. */
  hook.pickAt = (x, y, opts) => {
    pickRay.setFromCamera(stage.ndc(x, y, new THREE.Vector2()), stage.camera);
    const hit = view?.pick(pickRay, opts);
    return hit && { type: hit.type, id: hit.id, key: hit.key, vertex: hit.vertex, point: hit.point && [hit.point.x, hit.point.y, hit.point.z], near: !!hit.near };
  };
  const small = () => Math.min(window.innerWidth, window.innerHeight) < 500;
  const prediction = createGrabPrediction({ hook, onNote: (text) => hud?.toast(text) });
  if (new URLSearchParams(location.search).get('predict') === '1') prediction.setOn(true);

  let insetObserver = null;
  let hud = null, view = null, input = null, panel = null, desc = null, scene = askedScene;
  let you = null, players = [], dice = null, contacts = [], showContacts = false;
  let watchers = 0; // how many watch the room (PROTOCOL.md §14)
  hook.watching = watch;
  let lastState = null;
  const rate = { snaps: [], bytes: [] };   // arrival times and sizes over the last second
  let stepMs = NaN;
  // How good the link is: the newest snapshot's lag above the fastest one seen (queueing,
  // jitter), and the "slow connection" sign with some hysteresis (on after 1 s poor,
  // off after 3 s good) so it does not flicker.
  const link = { excess: 0, poorSince: NaN, goodSince: NaN, slow: false, since: NaN };
  let serverAwake = null; // the server's own count, when the stream carries it
  const aim = makeAimLine();
  stage.scene.add(aim.line);
  const marker = makeMarker();
  stage.scene.add(marker.mesh);
  let offlineToldAt = 0;

  function send(intent) {
    if (watch && !WATCHER_SENDS.has(intent.type)) { hud?.toast('You are watching: controls are off'); return false; }
    // What the person aimed at is the picture on screen: the server resolves a poke or grab
    // against the poses of that moment (lag compensation, PROTOCOL.md §15).
    if (intent.type === 'poke' || intent.type === 'throw' || (intent.type === 'grab' && intent.phase === 'start')) intent.viewTime = buffer.playTime;
    hook.sent.push(intent);
    if (hook.sent.length > 200) hook.sent.shift();
    const ok = transport.send(intent);
    // Offline, nothing is sent: say so (pings are the page's own, not the person's).
    if (!ok && intent.type !== 'ping' && connState.state !== 'open' && performance.now() - offlineToldAt > 1500) {
      offlineToldAt = performance.now();
      hud?.toast('Offline: not sent. Reconnecting…');
    }
    return ok;
  }

  function setupRoom(d) {
    // (Re)build everything that depends on the description.
    input?.dispose(); view?.dispose(); panel?.dispose(); hud?.dispose();
    desc = d;
    const kind = d.room?.kind || askedKind || 'rigid';
    scene = d.room?.scene || scene || KINDS[kind][0];
    buffer.reset();
    if (d.room?.snapshotRate) buffer.interval = 1 / d.room.snapshotRate;
    view = VIEWS[kind](stage, d);
    hud = createHud(host, {
      roomId, kind, scene, actions: ACTIONS[scene] || DEFAULT_ACTIONS[kind], scenes: KINDS[kind] || [],
      onAction: (a) => doAction(a),
      onSelectScene: (sc) => send({ type: 'scene', action: 'select', scene: sc }),
      onRename: () => askName(host, { current: you?.name, onSave: (n) => transport.rename?.(n) }),
      hint: HINTS[scene] || HINTS[KINDS[kind][0]], watching: watch,
    });
    hud.setPlayers(players, you?.id, watchers, watch);
    hud.setConnection(connState);
    hud.setSlow(link.slow);
    panel = createParamsPanel(hud.side, d.params || [], {
      send, scene, showContacts: kind === 'rigid', contactsOn: showContacts, compact: small(),
      onContacts: (on) => { showContacts = on; view.setShowContacts(on); send({ type: 'contacts', on }); },
      showPredict: kind === 'rigid', predictOn: prediction.on,
      onPredict: (on) => { prediction.setOn(on); hud?.toast(on ? 'Predicted grabs on: drag a body' : 'Predicted grabs off'); },
    });
    applyOffline();
    const keys = KEYS[kind] + (scene === 'tower' ? ' · K knock it down' : '');
    canvas.setAttribute('aria-label', `${scene} room ${roomId}: ${viewWords(kind, scene, d)}. Keys: ${keys}`);
    input = watch ? null : attachInput(stage, view, send, {
      onAim: (a) => aim.set(a),
      onNote: (text) => hud?.toast(text),
      onSelect: (id) => { marker.target = id; },
      onKnock: scene === 'tower' ? () => doAction('knock_down') : null,
      buffer, clock, bodyGrabs: prediction,
    });
    prediction.setDesc(d);
    const measure = () => {
      const H = window.innerHeight;
      const top = hud.el.querySelector('.bar.top').getBoundingClientRect().bottom;
      const bottom = H - hud.el.querySelector('.bar.bottom').getBoundingClientRect().top;
      stage.setInsets(top, bottom);
      document.documentElement.style.setProperty('--hud-bottom', `${bottom}px`);
    };
    insetObserver?.disconnect();
    insetObserver = new ResizeObserver(measure);
    for (const el of hud.el.querySelectorAll('.bar')) insetObserver.observe(el);
    measure();
    hook.kind = kind; hook.scene = scene; hook.desc = d; hook.view = view;
    for (const p of d.params || []) hook.params[p.name] = p.value ?? p.default;
    // The address bar names the room as it is now (a switched scene, a link to share).
    if (d.room?.kind && d.room?.scene) {
      const base = roomUrl({ id: roomId, kind: d.room.kind, scene: d.room.scene });
      const url = watch ? `${base}${base.includes('?') ? '&' : '?'}watch=1` : base; // a reload still watches
      if (location.pathname + location.search !== url) history.replaceState(null, '', url);
    }
  }

  function doAction(a) {
    if (connState.state !== 'open') { send({ type: 'scene', action: a }); return; }
    if (!send({ type: 'scene', action: a })) hud?.toast('That does not work in this scene');
  }

  let connState = { state: 'connecting' };
  function applyOffline() {
    const off = connState.state !== 'open';
    hud?.setOffline(off);
    panel?.setEnabled(!off && !watch);
    hook.offline = off;
  }
  function onStatus(st) {
    connState = st;
    hook.connected = st.state === 'open';
    hook.status = st;
    hud?.setConnection(st);
    applyOffline();
    if (st.state === 'reconnecting' || st.state === 'failed') {
      // Keep the last picture; the buffer holds, never extrapolating far.
      clearInterval(statusTick);
      if (st.state === 'reconnecting') statusTick = setInterval(() => hud?.setConnection(connState), 500);
    } else clearInterval(statusTick);
    if (st.state === 'failed' && st.name) {
      // The room cannot be joined (not there, a name in use, full): say what happened, and a way on.
      hook.problem = showRoomProblem(host, { roomId, askedKind, askedScene, code: st.name, reason: st.reason, fetchRooms });
    }
  }
  let statusTick = null;

  // `arrival`: when the message reached the socket (net/socket.js), not when this
  // thread got to it; rates, the snapshot buffer and the clock are timed by it.
  function onMessage(m, bytes = 0, arrival = now()) {
    const t = arrival;
    rate.bytes.push([t, bytes]);
    switch (m.type) {
      case 'welcome':
        you = m.you || you;
        players = m.players || players;
        if (m.watchers !== undefined) watchers = m.watchers;
        hook.watchers = watchers;
        dice = null; contacts = [];
        setupRoom(m.desc);
        if (showContacts) { view.setShowContacts(true); }
        if (m.snapshot) { buffer.push(m.snapshot, t); prediction.onSnapshot(m.snapshot); }
        if (!m.scene) link.since = t;
        hook.arrived.welcome = t;
        hook.welcomes++;
        break;
      case 'snapshot':
        if (!view) return;
        buffer.push(m.snap, t);
        prediction.onSnapshot(m.snap);
        rate.snaps.push(t);
        link.excess = t - m.snap.time - buffer.baseLag;
        if (Number.isFinite(m.snap.stepMs)) stepMs = m.snap.stepMs;
        if (Number.isFinite(m.snap.awake)) serverAwake = { awake: m.snap.awake, total: m.snap.ids.length };
        hook.arrived.snapshot = t; hook.arrived.tick = m.snap.tick; hook.arrived.awake = m.snap.awake;
        hook.snapshots++;
        break;
      case 'watchers':
        watchers = m.count;
        hook.watchers = watchers;
        hud?.setPlayers(players, you?.id, watchers, watch);
        break;
      case 'players':
        players = m.players;
        hud?.setPlayers(players, you?.id, watchers, watch);
        if (m.joined && m.joined.id !== you?.id) hud?.toast(`${m.joined.name} joined`);
        if (m.left) hud?.toast(`${m.left.name || 'Someone'} left`);
        break;
      case 'contacts':
        contacts = m.contacts;
        view?.setContacts?.(contacts);
        hook.contacts = contacts.length;
        break;
      case 'reset': {
        const who = m.by?.id === you?.id ? 'You' : m.by?.name || 'Someone';
        const what = m.action === 'select' ? `switched the room to ${scene}` : RESET_WORDS[m.action] || m.action;
        hud?.toast(`${who} ${what}`);
        hook.announcements.push(`${who} ${what}`);
        if (m.action === 'throw_dice' || m.action === 'roll' || m.action === 'select' || m.action === 'reset') { dice = null; hud?.setDice(null); hook.dice = null; }
        break;
      }
      case 'resync':
        hook.resyncs++;
        break;
      case 'param': {
        const mine = m.by?.id === you?.id;
        panel?.applyChange(m.name, m.value, mine ? 'you' : (m.by?.name || 'someone'), mine);
        hook.params[m.name] = m.value;
        hook.paramLog.push({ name: m.name, value: m.value, by: m.by?.name });
        const who = mine ? 'You' : m.by?.name || 'Someone';
        const text = /^(on|off)$/.test(describeParam(m.name, m.value))
          ? `${who} turned "${paramLabel(m.name)}" ${describeParam(m.name, m.value)}`
          : `${who} set ${paramLabel(m.name)} to ${describeParam(m.name, m.value)}`;
        hud?.toast(text);
        hook.announcements.push(text);
        break;
      }
      case 'dice':
        dice = m;
        hud?.setDice(m);
        hook.dice = { faces: m.faces.map((f) => ({ ...f })), sum: m.sum };
        break;
      case 'body_added':
        view?.addBody?.(m.body);
        if (desc) desc.bodies = [...(desc.bodies || []).filter((b) => b.id !== m.body.id), m.body];
        break;
      case 'pong':
        clock.addSample(m.sent, m.server, t);
        hook.pongs++;
        break;
      case 'stats':
        if (Number.isFinite(m.stepMs)) stepMs = m.stepMs;
        break;
      case 'grab_refused': // the rest of a refused grab: already said once
        hook.quietRefusals++;
        break;
      case 'error': {
        const words = errorWords(m);
        hud?.toast(words);
        hook.errors.push(m.message);
        hook.shownErrors.push(words);
        break;
      }
      default: break;
    }
  }

  transport.connect({ onMessage, onStatus });
  // Server step time is not in the stream; the room list has it (and the awake count).
  let roomStatsTimer = null;
  if (fetchRoomStats) {
    const poll = async () => {
      // not while the connection is down: the server is gone or unreachable, and a failed
      // fetch is a console error every 2 s (the socket's reconnect says what is going on)
      if (connState.state === 'open') {
        try { const r = await fetchRoomStats(roomId); if (r && Number.isFinite(r.stepMs)) stepMs = r.stepMs; } catch { /* next time */ }
      }
      roomStatsTimer = setTimeout(poll, 2000);
    };
    poll();
  }
  // Twice a second: clock sync, and the link report the server reads (PROTOCOL.md §13).
  const pinger = setInterval(() => send({ type: 'ping', sent: now(), rtt: clock.rtt }), 500);

  // --- the frame loop: read the latest state, draw -------------------------------------
  let prev = now(), statsAt = 0;
  const cpuTimes = new Float64Array(60);
  let cpuI = 0;
  const tmp = new THREE.Vector3();
  function frame() {
    const cpu0 = performance.now();
    const t = now();
    const dt = Math.min(0.1, t - prev); prev = t;
    if (view) {
      const st = buffer.sample(t);
      view.update(st, dt);
      prediction.frame(t, buffer, clock, st, view);
      if (st) lastState = st;
      hook.state = st;
      if (dice && st && view.kind === 'rigid') {
        // Clear the result once any die moves again (a new throw).
        let moving = false;
        for (const f of dice.faces) {
          const i = indexOfId(st, f.id);
          if (i >= 0 && !st.asleep[i]) moving = true;
          const p = view.bodyPosition(f.id);
          hud.placeDieLabel(f.id, p ? stage.toScreen(tmp.copy(p).setY(p.y + 0.45)) : null);
        }
        if (moving) { dice = null; hud.setDice(null); hook.dice = null; }
      }
      marker.update(view, t);
      if (t - statsAt > 0.25) { statsAt = t; hud.setStats(statsLine(t)); }
    }
    stage.render();
    // Main-thread time per frame (sample + update + draw submission): median of the last 60.
    cpuTimes[cpuI++ % cpuTimes.length] = performance.now() - cpu0;
    if (cpuI < 60 || cpuI % 30 === 0) hook.frameMs = median(cpuTimes.slice(0, Math.min(cpuI, cpuTimes.length)));
    hook.frames++;
    raf = requestAnimationFrame(frame);
  }
  let raf = requestAnimationFrame(frame);

  function statsLine(t) {
    while (rate.snaps.length && rate.snaps[0] < t - 1) rate.snaps.shift();
    while (rate.bytes.length && rate.bytes[0][0] < t - 1) rate.bytes.shift();
    const kbit = rate.bytes.reduce((a, b) => a + b[1], 0) * 8 / 1000;
    const rtt = Number.isFinite(clock.rtt) ? clock.rtt : 0;
    // Estimated view lag: one-way delay plus the queueing the newest snapshot met.
    const newestAge = rate.snaps.length ? t - rate.snaps[rate.snaps.length - 1] : Infinity;
    const viewLag = rtt / 2 + Math.max(0, link.excess) + (connState.state === 'open' && newestAge < 5 ? Math.max(0, newestAge - buffer.interval) : 0);
    const expected = desc?.room?.snapshotRate || 60;
    const poor = connState.state === 'open' && (viewLag > 0.25 || rtt > 0.4 || (t - link.since > 2 && rate.snaps.length < 0.5 * expected));
    if (poor) { link.goodSince = NaN; if (!(link.poorSince <= t)) link.poorSince = t; } else { link.poorSince = NaN; if (!(link.goodSince <= t)) link.goodSince = t; }
    const slow = link.slow ? !(t - link.goodSince >= 3) : t - link.poorSince >= 1;
    if (slow !== link.slow) { link.slow = slow; hud.setSlow(slow); }
    if (slow) hud.setSlowDetail(`view about ${Math.round(viewLag * 1000)} ms behind, ping ${Math.round(rtt * 1000)} ms, ${rate.snaps.length} snapshots/s`);
    const c = serverAwake ? { awake: serverAwake.awake, asleep: Math.max(0, serverAwake.total - serverAwake.awake) } : view.counts;
    const parts = [
      `ping ${Number.isFinite(clock.rtt) ? Math.round(clock.rtt * 1000) : '–'} ms`,
      `${rate.snaps.length} snap/s`,
      `delay ${Math.round(buffer.delay * 1000)} ms`,
      `${kbit.toFixed(0)} kbit/s`,
    ];
    if (view.kind === 'rigid') parts.push(`${c.awake} moving / ${c.asleep} at rest`);
    parts.push(`server step ${Number.isFinite(stepMs) ? stepMs.toFixed(2) : '–'} ms`);
    hook.stats = { ping: clock.rtt, snapsPerSec: rate.snaps.length, delay: buffer.delay, jitter: buffer.jitter, viewLag, slow: link.slow, kbit, awake: c.awake, asleep: c.asleep, stepMs };
    return parts.join(' · ');
  }

  return {
    stage, buffer, clock,
    dispose() {
      cancelAnimationFrame(raf); clearInterval(pinger); clearTimeout(roomStatsTimer); clearInterval(statusTick); insetObserver?.disconnect();
      transport.close();
      input?.dispose(); view?.dispose(); panel?.dispose(); hud?.dispose(); prediction.dispose(); stage.dispose();
    },
    get lastState() { return lastState; },
  };
}

/** What the 3D view shows, for a screen reader (the canvas's label). */
function viewWords(kind, scene, d) {
  const bodies = d.bodies || [];
  const n = (look) => bodies.filter((b) => b.look === look).length;
  if (scene === 'tower') return `a tower of ${n('plank')} wooden planks on a felt tray`;
  if (scene === 'dice') return `${n('die')} dice and ${n('ball')} balls on a felt tray`;
  if (kind === 'rigid') return `${bodies.length} bodies in a tray`;
  if (scene === 'cape') return 'a knight walking a castle wall at night, a cape on his back';
  if (kind === 'cloth') return 'a flag on a pole in the night wind';
  return 'a ball of soft dough on a floured board';
}

function median(a) { const s = Array.from(a).sort((x, y) => x - y); return s[s.length >> 1]; }

function indexOfId(st, id) {
  for (let i = 0; i < st.count; i++) if (st.ids[i] === id) return i;
  return -1;
}

/** A dashed arc showing where a flick will throw, while dragging. */
function makeAimLine() {
  const g = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]);
  const line = new THREE.Line(g, new THREE.LineDashedMaterial({ color: 0xffffff, dashSize: 0.12, gapSize: 0.08, transparent: true, opacity: 0.85, depthTest: false }));
  line.renderOrder = 12; line.visible = false; line.frustumCulled = false;
  return {
    line,
    set(a) {
      if (!a) { line.visible = false; return; }
      g.setFromPoints([a.from, a.to]);
      line.computeLineDistances();
      line.visible = true;
    },
  };
}

/** A small ring over the body picked with the keyboard (Arrow keys), so a sighted keyboard user sees it. */
function makeMarker() {
  const mesh = new THREE.Mesh(new THREE.TorusGeometry(0.22, 0.045, 8, 32), new THREE.MeshBasicMaterial({ color: 0xf2b632, depthTest: false, transparent: true }));
  mesh.rotation.x = Math.PI / 2; mesh.renderOrder = 13; mesh.visible = false; mesh.frustumCulled = false;
  const m = {
    mesh, target: null,
    update(view, t) {
      const p = m.target != null ? view.bodyPosition?.(m.target) : null;
      mesh.visible = !!p;
      if (p) mesh.position.set(p.x, p.y + 0.55 + 0.05 * Math.sin(t * 4), p.z);
    },
  };
  return m;
}
