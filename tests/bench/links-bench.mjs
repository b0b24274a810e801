// links-bench.mjs: what a remote player sees through a bad link.
//
//   node tests/bench/links-bench.mjs [--window 20] [--warmup 3] [--links a,b] [--rooms a,b] [--kbps N] [--json]
//   (--kbps N: the remote player asks for a bandwidth budget of N kbit/s in its hello)
//
// For every link x room it starts a fresh room on one tumble-server (ephemeral
// loopback port) and two players in it:
//   - the host, on loopback, drives the scene the way tumble-load's client 0
//     does (tower: knock every 5 s and rebuild 2.5 s later; pile: a ball every
//     3 s; flag/cape: a wind change every 4 s and a 1 s drag; dough: a 0.75 s
//     pull every 3 s). It also keeps, for every snapshot tick, when that tick
//     reached it: on loopback that is the server's present, give or take a
//     fraction of a millisecond.
//   - the remote player, through build/tumble-netem with the link's settings,
//     applies every snapshot with the protocol's SnapshotState (a delta that
//     does not fit is answered with resync, as the browser does) and pokes
//     something once a second.
// Over the window (after --warmup s) it reports for the remote player:
//   view_lag_ms   sampled every 10 ms: now - (when the host got the tick of the
//                 remote player's newest applied snapshot), i.e. how far behind
//                 the server's present the world it can show is (p50, p99, max)
//   input_to_visible_ms  a poke sent until the first applied snapshot whose
//                 last_seq covers it (the snapshot that shows its effect)
//   snapshots_per_s, kbit_per_s (WebSocket payload), keyframes (snap_key after
//   the welcome: forced by the server or asked for with resync), resyncs,
//   disconnected.
// Both players live in this process, so one clock times both. Prints one JSON
// line per run (--json) or a markdown table for BENCHMARKS.md ("Links").
// This is a benchmark, never a test: it judges nothing.
import os from 'node:os';
import WebSocket from 'ws';
import { encodeClient, decodeServer, SnapshotState } from '../../proto/js/tumble-proto.mjs';
import { startServer, startLink, stopAll, sleep } from '../integration/harness.mjs';

export const LINKS = {
  loopback: null,
  'rtt50': { delay: 25 },
  'rtt150-j20': { delay: 75, jitter: 20 },
  '256kbit': { kbps: 256 },
  '64kbit-40ms': { kbps: 64, delay: 40 },
  'stall1s-10s': { stall: { ms: 1000, every: 10000 } },
};
export const LINK_NAMES = {
  loopback: 'loopback', 'rtt50': '50 ms RTT', 'rtt150-j20': '150 ms RTT, ±20 ms jitter', '256kbit': '256 kbit/s',
  '64kbit-40ms': '64 kbit/s + 40 ms one way', 'stall1s-10s': '1 s stall every 10 s',
};
const ROOMS = ['tower', 'pile', 'flag', 'cape', 'dough'];

function args() {
  const a = process.argv.slice(2), o = { kbps: null, window: 20, warmup: 3, links: Object.keys(LINKS), rooms: ROOMS, json: false, reports: true };
  for (let i = 0; i < a.length; i++) {
    const v = a[i + 1];
    if (a[i] === '--window') { o.window = +v; i++; } else if (a[i] === '--warmup') { o.warmup = +v; i++; }
    else if (a[i] === '--links') { o.links = v.split(','); i++; } else if (a[i] === '--rooms') { o.rooms = v.split(','); i++; }
    else if (a[i] === '--json') o.json = true;
    else if (a[i] === '--kbps') { o.kbps = +v; i++; } // the remote player asks for this budget (PROTOCOL.md §16)
    else if (a[i] === '--no-reports') o.reports = false;
    else { console.error(`usage: links-bench.mjs [--window S] [--warmup S] [--links ${Object.keys(LINKS).join(',')}] [--rooms ${ROOMS.join(',')}] [--kbps N] [--no-reports] [--json]`); process.exit(2); }
  }
  for (const l of o.links) if (!(l in LINKS)) { console.error(`unknown link ${l}`); process.exit(2); }
  return o;
}

const now = () => performance.now();
const quantile = (a, q) => { if (!a.length) return null; const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
const r1 = (x) => (x == null ? null : Math.round(x * 10) / 10);

// A player: a WebSocket, a SnapshotState, and hooks on every message.
function player(port, room, scene, name, onMsg, kbps = null) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/${room}`, ['tumble.v1']);
    const p = { ws, st: new SnapshotState(), seq: 0, bytes: 0, welcome: null, closed: false, awaitingKey: false, resyncs: 0,
      send(m) { if (ws.readyState !== 1) return 0; if (!['ping', 'resync', 'hello'].includes(m.type)) m.seq = ++p.seq; ws.send(encodeClient(m)); return m.seq; } };
    ws.on('open', () => p.send({ type: 'hello', version: 1, room, kind: null, scene, name, kbps }));
    ws.on('message', (data) => {
      const at = now();
      p.bytes += data.length;
      const m = decodeServer(new Uint8Array(data));
      if (p.st.handles(m)) {
        if (p.awaitingKey && m.type === 'snap_delta') return;
        try { p.st.apply(m); p.awaitingKey = false; } catch { p.awaitingKey = true; p.resyncs++; p.send({ type: 'resync' }); return; }
      }
      if (m.type === 'welcome') { p.welcome = m; resolve(p); }
      onMsg(p, m, at);
    });
    ws.on('close', () => { p.closed = true; });
    ws.on('error', (e) => { if (!p.welcome) reject(e); });
    setTimeout(() => { if (!p.welcome) reject(new Error(`${name}: no welcome in 10 s`)); }, 10000);
  });
}

const rand = () => Math.random();
function randomBox(st) {
  for (let k = 0; k < 16 && st.bodyCount; k++) {
    const i = Math.floor(rand() * st.bodyCount);
    if (st.shapes[i].shape === 0) return { id: st.ids[i], pos: [st.pos[3 * i], st.pos[3 * i + 1], st.pos[3 * i + 2]] };
  }
  return null;
}
// A random vertex of mesh 0 and the outward direction (from the mesh centre, a bit up).
function randomVertex(st) {
  const m = st.meshes[0];
  if (!m) return null;
  const n = m.pos.length / 3, c = [0, 0, 0];
  for (let k = 0; k < n; k++) for (let a = 0; a < 3; a++) c[a] += m.pos[3 * k + a] / n;
  const i = Math.floor(rand() * n);
  const p = [m.pos[3 * i], m.pos[3 * i + 1], m.pos[3 * i + 2]];
  const d = [p[0] - c[0], p[1] - c[1] + 0.2, p[2] - c[2]];
  const len = Math.hypot(...d) || 1;
  return { p, dir: d.map((x) => x / len) };
}

// The host's input: what tumble-load's client 0 does in each scene.
function drive(host, scene, timers) {
  const every = (ms, fn, first = ms) => { const t0 = setTimeout(() => { fn(); timers.push(setInterval(fn, ms)); }, first); timers.push(t0); };
  if (scene === 'tower') every(5000, () => { host.send({ type: 'action', action: 'knock', scene: null }); timers.push(setTimeout(() => host.send({ type: 'action', action: 'rebuild', scene: null }), 2500)); }, 1000);
  if (scene === 'pile') every(3000, () => host.send({ type: 'throw', origin: [(rand() - 0.5) * 2, 2, 6], velocity: [0, 1, -8], shape: 'ball' }), 500);
  const drag = (pointer, moves, step, ms) => {
    const v = randomVertex(host.st);
    if (!v) return;
    host.send({ type: 'grab_start', pointer, point: v.p, body: null });
    let k = 0;
    const t = setInterval(() => {
      if (++k > moves) { clearInterval(t); host.send({ type: 'grab_end', pointer }); return; }
      for (let a = 0; a < 3; a++) v.p[a] += v.dir[a] * step;
      host.send({ type: 'grab_move', pointer, point: v.p });
    }, ms);
    timers.push(t);
  };
  if (scene === 'flag' || scene === 'cape') {
    const wind = host.welcome.params.find((p) => p.name === 'wind');
    every(4000, () => {
      if (wind) host.send({ type: 'param', name: 'wind', value: wind.min + (wind.max - wind.min) * rand() });
      timers.push(setTimeout(() => drag(0, 20, 0.02, 50), 1000));
    }, 500);
  }
  if (scene === 'dough') every(3000, () => drag(0, 15, 0.015, 50), 500);
}

// The remote player's poke: a plank or cube, or a vertex of the cloth or dough.
function poke(remote, scene) {
  if (scene === 'tower' || scene === 'pile') {
    const b = randomBox(remote.st);
    return b ? remote.send({ type: 'poke', body: b.id, point: b.pos, impulse: [(rand() - 0.5) * 0.6, 0.3, (rand() - 0.5) * 0.6] }) : 0;
  }
  const v = randomVertex(remote.st);
  const k = scene === 'dough' ? -0.05 : 0.01;
  return v ? remote.send({ type: 'poke', body: null, point: v.p, impulse: v.dir.map((x) => x * k) }) : 0;
}

async function runOne(srvPort, linkName, scene, o) {
  const link = LINKS[linkName] ? await startLink(srvPort, LINKS[linkName]) : null;
  const room = `links-${process.pid}-${linkName}-${scene}`;
  const tickAt = new Map(); // tick -> when the host got it
  let hostTickMax = 0;
  const timers = [];
  const host = await player(srvPort, room, scene, 'host', (p, m, at) => {
    if (m.type === 'snap_delta' || m.type === 'snap_key' || m.type === 'welcome') { tickAt.set(p.st.tick, at); hostTickMax = p.st.tick; }
  });
  let measuring = false;
  const w = { snaps: 0, keys: 0, bytes0: 0, lag: [], lagAt: [], input: [], refused: 0, pending: new Map() };
  const remote = await player(link ? link.port : srvPort, room, null, 'remote', (p, m, at) => {
    if (m.type === 'error' && m.seq != null && w.pending.delete(m.seq)) w.refused++;
    if (m.type === 'pong' && p.onPong) p.onPong(m);
    if (m.type !== 'snap_delta' && m.type !== 'snap_key') return;
    if (!measuring) return;
    w.snaps++;
    if (m.type === 'snap_key') w.keys++;
    for (const [seq, sent] of w.pending) if (p.st.lastSeq >= seq) { w.input.push(at - sent); w.pending.delete(seq); }
  }, o.kbps);
  drive(host, scene, timers);
  // link reports every 0.5 s, as the browser client sends them (PROTOCOL.md §13); --no-reports: an old client
  if (o.reports) {
    let pingAt = 0, rtt = null;
    remote.onPong = (m) => { rtt = now() - m.client_time; };
    timers.push(setInterval(() => {
      pingAt = now();
      remote.send({ type: 'ping', client_time: pingAt, ack_tick: remote.st.tick || null, rtt_ms: rtt, recv_bytes: remote.bytes % 2 ** 32 });
    }, 500));
  }
  // the remote pokes once a second, at a random phase
  timers.push(setTimeout(() => timers.push(setInterval(() => { const s = poke(remote, scene); if (s && measuring) w.pending.set(s, now()); }, 1000)), rand() * 1000));
  // view lag, every 10 ms: how old is the present the remote player can show?
  const lagOf = (t) => {
    const tick = remote.st.tick;
    let at = tickAt.get(tick);
    if (at === undefined) {
      if (tick >= hostTickMax) return 0; // not even the host has it yet
      let k = tick; while (k > 0 && !tickAt.has(k)) k--; // an earlier tick the host saw
      at = tickAt.has(k) ? tickAt.get(k) + ((tick - k) / 120) * 1000 : t;
    }
    return Math.max(0, t - at);
  };
  await sleep(o.warmup * 1000);
  measuring = true;
  const t0 = now();
  w.bytes0 = remote.bytes;
  const sampler = setInterval(() => { const t = now(); w.lag.push(lagOf(t)); w.lagAt.push(t); }, 10);
  await sleep(o.window * 1000);
  measuring = false;
  clearInterval(sampler);
  const secs = (now() - t0) / 1000;
  // after each excursion over 0.5 s (a stall), the time from its peak until the lag is back under 0.2 s
  const recoveries = [];
  for (let i = 0; i < w.lag.length; i++) {
    if (w.lag[i] <= 500) continue;
    let peak = i;
    while (peak + 1 < w.lag.length && w.lag[peak + 1] >= w.lag[peak]) peak++;
    let j = peak;
    while (j < w.lag.length && w.lag[j] >= 200) j++;
    if (j < w.lag.length) recoveries.push(Math.round(w.lagAt[j] - w.lagAt[peak]));
    i = j;
  }
  for (const t of timers) { clearTimeout(t); clearInterval(t); }
  const res = {
    link: linkName, room: scene, window_s: r1(secs),
    view_lag_ms: { p50: r1(quantile(w.lag, 0.5)), p99: r1(quantile(w.lag, 0.99)), max: r1(quantile(w.lag, 1)),
      // when the worst came (wall clock, to read beside a server's debug log)
      max_at: w.lag.length ? new Date(Date.now() - (now() - w.lagAt[w.lag.indexOf(Math.max(...w.lag))])).toISOString() : null },
    input_to_visible_ms: { p50: r1(quantile(w.input, 0.5)), p99: r1(quantile(w.input, 0.99)), count: w.input.length, unanswered: w.pending.size, refused: w.refused },
    snapshots_per_s: r1(w.snaps / secs), snap_rate: remote.welcome.snap_rate,
    kbit_per_s: r1(((remote.bytes - w.bytes0) * 8) / 1000 / secs),
    recovery_ms: recoveries.length ? { count: recoveries.length, max: Math.max(...recoveries) } : null,
    keyframes: w.keys, resyncs: remote.resyncs, disconnected: remote.closed, reports: o.reports,
  };
  host.ws.close(); remote.ws.close();
  await sleep(200);
  if (link) await link.stop();
  return res;
}

export function markdown(rows) {
  const f = (x) => (x == null ? '–' : x >= 100 ? String(Math.round(x)) : String(x));
  const out = ['| link | room | view lag p50 / p99 / max (ms) | input to visible p50 / p99 (ms) | snapshots/s | kbit/s | keyframes | disconnected |',
    '|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    out.push(`| ${LINK_NAMES[r.link]} | ${r.room} | ${f(r.view_lag_ms.p50)} / ${f(r.view_lag_ms.p99)} / ${f(r.view_lag_ms.max)} | ` +
      `${f(r.input_to_visible_ms.p50)} / ${f(r.input_to_visible_ms.p99)} | ${f(r.snapshots_per_s)} | ${f(r.kbit_per_s)} | ${r.keyframes} | ${r.disconnected ? 'yes' : 'no'} |`);
  }
  return out.join('\n');
}

async function main() {
  const o = args();
  const cpu = os.cpus()[0]?.model ?? '?';
  const srv = await startServer({ args: ['--max-conns-per-address', '100', '--room-create-rate', '100000'] });
  const rows = [];
  try {
    for (const l of o.links) {
      for (const scene of o.rooms) {
        const load0 = os.loadavg()[0];
        const r = await runOne(srv.port, l, scene, o);
        r.load_average = r1(Math.max(load0, os.loadavg()[0]));
        rows.push(r);
        if (o.json) console.log(JSON.stringify(r));
        else console.error(`${l} ${scene}: view lag p50 ${r.view_lag_ms.p50} p99 ${r.view_lag_ms.p99} max ${r.view_lag_ms.max} ms${r.recovery_ms ? `, back under 0.2 s after ${r.recovery_ms.count} excursion(s) in at most ${r.recovery_ms.max} ms` : ''}, input ${r.input_to_visible_ms.p50} ms, ${r.snapshots_per_s} snap/s, ${r.kbit_per_s} kbit/s, keyframes ${r.keyframes} (load ${r.load_average})`);
      }
    }
  } finally {
    await stopAll();
    if (process.env.LINKS_BENCH_SERVER_LOG) (await import('node:fs')).writeFileSync(process.env.LINKS_BENCH_SERVER_LOG, srv.stderr);
  }
  if (!o.json) {
    console.log(markdown(rows));
    console.log(`\n${cpu}, ${os.cpus().length} cores; load average during the runs ${Math.min(...rows.map((r) => r.load_average))}–${Math.max(...rows.map((r) => r.load_average))}; window ${o.window} s after ${o.warmup} s`);
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) main().catch((e) => { console.error(e); stopAll().finally(() => process.exit(1)); });
