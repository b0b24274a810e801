// A room page: connection -> snapshot buffer -> view, input -> intents -> connection.
//
// The transport delivers the client's internal messages (see README.md):
//   welcome, snapshot, players, param, dice, body_added, pong, stats, error
// and takes intents. The requestAnimationFrame loop only reads: it samples the
// buffer at "now minus the interpolation delay", hands that state to the view, and
// updates the HUD. Nothing here moves a body.
import * as THREE from 'three';
import { Stage } from './stage.js';
import { SnapshotBuffer } from './net/snapshots.js';
import { ClockSync } from './net/clock.js';
import { createRigidView } from './views/rigid.js';
import { createClothView } from './views/cloth.js';
import { createSoftView } from './views/soft.js';
import { attachInput } from './input/intents.js';
import { createHud } from './ui/hud.js';
import { createParamsPanel } from './ui/params.js';
import { installHook } from './hook.js';

const VIEWS = { rigid: createRigidView, cloth: createClothView, soft: createSoftView };
const ACTIONS = {
  rigid: [{ action: 'throw_dice', label: 'Throw dice' }, { action: 'build_tower', label: 'Build tower' }, { action: 'knock_down', label: 'Knock it down' }],
  cloth: [{ action: 'reset', label: 'Reset' }],
  soft: [{ action: 'reset', label: 'New dough' }],
};
const HINTS = {
  rigid: 'Tap a block to poke it · tap the felt to drop a ball · flick to throw',
  cloth: 'Drag the cloth to pull it',
  soft: 'Drag to stretch (use several fingers) · double-tap to press a dent',
};
const now = () => performance.now() / 1000;

export function startRoom({ host, roomId, kind: askedKind, scene: askedScene, transport, fetchRoomStats = null }) {
  document.body.classList.add('in-room');
  const stageHost = document.createElement('div');
  stageHost.className = 'stage';
  host.append(stageHost);
  const stage = new Stage(stageHost);
  const buffer = new SnapshotBuffer();
  const clock = new ClockSync();
  const hook = installHook();
  hook.stage = stage;
  const small = () => Math.min(window.innerWidth, window.innerHeight) < 500;

  let insetObserver = null;
  let hud = null, view = null, input = null, panel = null, desc = null;
  let you = null, players = [], dice = null, contacts = [], showContacts = false;
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

  function send(intent) {
    hook.sent.push(intent);
    if (hook.sent.length > 200) hook.sent.shift();
    return transport.send(intent);
  }

  function setupRoom(d) {
    // (Re)build everything that depends on the description.
    input?.dispose(); view?.dispose(); panel?.dispose(); hud?.dispose();
    desc = d;
    const kind = d.room?.kind || askedKind || 'rigid';
    buffer.reset();
    if (d.room?.snapshotRate) buffer.interval = 1 / d.room.snapshotRate;
    view = VIEWS[kind](stage, d);
    hud = createHud(host, { roomId, kind, scene: d.room?.scene || askedScene, actions: ACTIONS[kind], onAction: (a) => send({ type: 'scene', action: a }) });
    hud.setHint(HINTS[kind]);
    hud.setPlayers(players, you?.id);
    hud.setConnection(connState);
    hud.setSlow(link.slow);
    panel = createParamsPanel(hud.side, d.params || [], {
      send, showContacts: kind === 'rigid', compact: small(),
      onContacts: (on) => { showContacts = on; view.setShowContacts(on); send({ type: 'contacts', on }); },
    });
    input = attachInput(stage, view, send, { onAim: (a) => aim.set(a) });
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
    hook.kind = kind; hook.desc = d; hook.view = view;
    for (const p of d.params || []) hook.params[p.name] = p.value ?? p.default;
  }

  let connState = { state: 'connecting' };
  function onStatus(st) {
    connState = st;
    hook.connected = st.state === 'open';
    hook.status = st;
    hud?.setConnection(st);
    if (st.state === 'reconnecting' || st.state === 'failed') {
      // Keep the last picture; the buffer holds, never extrapolating far.
      clearInterval(statusTick);
      if (st.state === 'reconnecting') statusTick = setInterval(() => hud?.setConnection(connState), 500);
    } else clearInterval(statusTick);
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
        dice = null; contacts = [];
        setupRoom(m.desc);
        if (showContacts) { view.setShowContacts(true); }
        if (m.snapshot) buffer.push(m.snapshot, t);
        if (!m.scene) link.since = t;
        hook.welcomes++;
        break;
      case 'snapshot':
        if (!view) return;
        buffer.push(m.snap, t);
        rate.snaps.push(t);
        link.excess = t - m.snap.time - buffer.baseLag;
        if (Number.isFinite(m.snap.stepMs)) stepMs = m.snap.stepMs;
        if (Number.isFinite(m.snap.awake)) serverAwake = { awake: m.snap.awake, total: m.snap.ids.length };
        hook.snapshots++;
        break;
      case 'players':
        players = m.players;
        hud?.setPlayers(players, you?.id);
        if (m.joined && m.joined.id !== you?.id) hud?.toast(`${m.joined.name} joined`);
        if (m.left) hud?.toast(`${m.left.name || 'Someone'} left`);
        break;
      case 'contacts':
        contacts = m.contacts;
        view?.setContacts?.(contacts);
        hook.contacts = contacts.length;
        break;
      case 'reset': {
        const what = { knock: 'knocked the tower down', rebuild: 'rebuilt the tower', throw_dice: 'threw the dice', roll: 'threw the dice', select: 'changed the scene', reset: 'reset the room' }[m.action] || m.action;
        hud?.toast(`${m.by?.name || 'Someone'} ${what}`);
        if (m.action === 'throw_dice' || m.action === 'roll' || m.action === 'select' || m.action === 'reset') { dice = null; hud?.setDice(null); hook.dice = null; }
        break;
      }
      case 'resync':
        hook.resyncs++;
        break;
      case 'param':
        panel?.applyChange(m.name, m.value, m.by?.id === you?.id ? 'you' : (m.by?.name || 'someone'), m.by?.id === you?.id);
        hook.params[m.name] = m.value;
        hook.paramLog.push({ name: m.name, value: m.value, by: m.by?.name });
        hud?.toast(`${m.by?.id === you?.id ? 'You' : m.by?.name || 'Someone'} set ${m.name} to ${(+m.value).toFixed(2)}`);
        break;
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
      case 'error':
        hud?.toast(m.message);
        hook.errors.push(m.message);
        break;
      default: break;
    }
  }

  transport.connect({ onMessage, onStatus });
  // Server step time is not in the stream; the room list has it (and the awake count).
  let roomStatsTimer = null;
  if (fetchRoomStats) {
    const poll = async () => {
      try { const r = await fetchRoomStats(roomId); if (r && Number.isFinite(r.stepMs)) stepMs = r.stepMs; } catch { /* next time */ }
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
    if (view.kind === 'rigid') parts.push(`${c.awake} awake / ${c.asleep} asleep`);
    parts.push(`step ${Number.isFinite(stepMs) ? stepMs.toFixed(2) : '–'} ms`);
    hook.stats = { ping: clock.rtt, snapsPerSec: rate.snaps.length, delay: buffer.delay, jitter: buffer.jitter, viewLag, slow: link.slow, kbit, awake: c.awake, asleep: c.asleep, stepMs };
    return parts.join(' · ');
  }

  return {
    stage, buffer, clock,
    dispose() {
      cancelAnimationFrame(raf); clearInterval(pinger); clearTimeout(roomStatsTimer); clearInterval(statusTick); insetObserver?.disconnect();
      transport.close();
      input?.dispose(); view?.dispose(); panel?.dispose(); hud?.dispose(); stage.dispose();
    },
    get lastState() { return lastState; },
  };
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
