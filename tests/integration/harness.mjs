// harness.mjs: start a real tumble-server for a test, talk to it, and always
// stop it.
//
// startServer() spawns build/tumble-server on 127.0.0.1 with an ephemeral
// port (--port 0) and a fresh temporary client folder, waits for the
// "tumble: listening on http://127.0.0.1:PORT" line and returns a handle.
// Every server started here is remembered: stopAll() (call it from an
// `after` hook) kills what is left, and a process 'exit' handler SIGKILLs
// anything still running even if a test threw or the runner is interrupted.
//
// A server that ends while a test still uses it (not through srv.stop(),
// stopAll() or the exit handler) is reported at once on stderr with its exit
// code or signal, its uptime, the load average, any core file and the tail
// of its stderr; metrics() and stopAll() then fail with that report rather
// than a bare "fetch failed". TUMBLE_TEST_LOG_LEVEL (default warn) sets the
// servers' --log-level. Servers run with `ulimit -c unlimited` in a folder
// of their own under build/test-cores/ so that a crash leaves a core file
// (kept, and named in the report; the folder is removed when empty).
//
// startLink() puts build/tumble-netem (the link emulator, tests/netem/netem.c)
// in front of a port: delay, jitter, a bandwidth cap and stalls per direction.
// Links are stopped by stopAll() and by the exit handler like servers.
//
// connect() opens a `tumble.v1` WebSocket (package `ws`: Node 18 has no
// global WebSocket) and buffers decoded msgpack messages so a test can wait
// for the next message of a type.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeClient, decodeServer, SnapshotState } from '../../proto/js/tumble-proto.mjs';
import WebSocket from 'ws';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../..');
export const NETEM_BIN = process.env.TUMBLE_NETEM_BIN ? path.resolve(process.env.TUMBLE_NETEM_BIN) : path.join(ROOT, 'build/tumble-netem');
export const SERVER_BIN = process.env.TUMBLE_SERVER_BIN ? path.resolve(process.env.TUMBLE_SERVER_BIN) : path.join(ROOT, 'build/tumble-server');

const IS_ASAN = /asan/.test(SERVER_BIN);
// What an ASan build's own bookkeeping (quarantine, shadow) may add to RSS
// beyond the server's memory: suites that bound RSS allow this much more.
export const ALLOCATOR_SLACK_KB = IS_ASAN ? 24576 : 0;
const running = new Set();
const tempDirs = new Set();
const finished = []; // servers that ended: their stderr is checked for sanitizer reports
const unexpected = []; // reports of servers that ended on their own
const LOG_LEVEL = process.env.TUMBLE_TEST_LOG_LEVEL || 'warn';
const CORE_ROOT = path.join(ROOT, 'build/test-cores');

const links = new Set();
function killAllNow() {
  for (const link of links) { try { link.proc.kill('SIGKILL'); } catch { /* already gone */ } }
  links.clear();
  for (const srv of running) {
    srv.stopping = true;
    try { srv.proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
  running.clear();
  for (const dir of tempDirs) {
    try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* ignore */ }
  }
  tempDirs.clear();
}
process.on('exit', killAllNow);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAllNow(); process.exit(130); });
}

// A temporary client folder: index.html with a marker, app.js, a file
// outside the folder and a symlink pointing at it (must be refused).
export function makeClientDir({ index = true } = {}) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-it-'));
  tempDirs.add(base);
  const dir = path.join(base, 'dist');
  fs.mkdirSync(dir);
  fs.mkdirSync(path.join(dir, 'assets'));
  if (index) fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>tumble test client</title>TUMBLE-INDEX\n');
  fs.writeFileSync(path.join(dir, 'app.js'), 'console.log("tumble");\n');
  fs.writeFileSync(path.join(dir, 'assets', 'style.css'), 'body{}\n');
  fs.writeFileSync(path.join(base, 'secret.txt'), 'TOP-SECRET-OUTSIDE\n');
  fs.symlinkSync(path.join(base, 'secret.txt'), path.join(dir, 'link.txt'));
  return dir;
}

// What a server that ended on its own leaves behind, as one readable text.
function exitReport(srv) {
  const secs = ((performance.now() - srv.startedAt) / 1000).toFixed(1);
  let cores = [];
  try { cores = fs.readdirSync(srv.cwd).filter((f) => /^core/.test(f)).map((f) => path.join(srv.cwd, f)); } catch { /* none */ }
  const tail = srv.stderr.split('\n').slice(-40).join('\n');
  // The kernel names what it killed (OOM) or faulted; say what it says of this pid.
  let kernel = '';
  try {
    kernel = execFileSync('dmesg', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 })
      .split('\n').filter((l) => new RegExp(`\\b${srv.proc.pid}\\b`).test(l)).slice(-5).join('\n');
  } catch { kernel = '(dmesg not readable)'; }
  return `tumble-server pid ${srv.proc.pid} (${path.basename(SERVER_BIN)} ${srv.args.join(' ')}) exited while in use: ` +
    `code ${srv.exitCode} signal ${srv.exitSignal} after ${secs} s, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}` +
    `${cores.length ? `, core file ${cores.join(' ')}` : ', no core file'}\n--- kernel log about it ---\n${kernel || '(nothing)'}` +
    `\n--- its stderr (last 40 lines) ---\n${tail}\n---`;
}

// The report for a server that ended on its own, if the one at url did.
export function unexpectedExit(url) {
  const srv = [...finished, ...unexpected.map((u) => u.srv)].find((x) => x.url === url && x.report);
  return srv ? srv.report : null;
}

// wrapper: a command the server is run through (e.g. setpriv ... --), which
// must exec it, so proc.pid stays the server's pid.
export async function startServer({ args = [], env = {}, clientDir, index = true, timeoutMs = 5000, wrapper = [] } = {}) {
  const dir = clientDir ?? makeClientDir({ index });
  fs.mkdirSync(CORE_ROOT, { recursive: true });
  const cwd = fs.mkdtempSync(path.join(CORE_ROOT, 'srv-'));
  const fullArgs = ['--port', '0', '--bind', '127.0.0.1', '--client-dir', dir, '--log-level', LOG_LEVEL, ...args];
  // sh raises the core limit (the hard limit allows it here) and execs the
  // server, so proc.pid is the server's pid.
  // An ASan build keeps freed blocks in a quarantine (256 MB by default) and so
  // grows its RSS with every allocation a flood makes; the suites bound the
  // server's own memory, so the quarantine is kept small (use-after-free of
  // recent blocks is still caught).
  const asan = IS_ASAN ? { ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'quarantine_size_mb=16'].filter(Boolean).join(':') } : {};
  const proc = spawn('/bin/sh', ['-c', 'ulimit -c unlimited 2>/dev/null; exec "$@"', 'sh', ...wrapper, SERVER_BIN, ...fullArgs], {
    env: { ...process.env, ...asan, ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const srv = { proc, args: fullArgs, cwd, stdout: '', stderr: '', port: 0, url: '', clientDir: dir, exitCode: null, exitSignal: null,
    stopping: false, report: null, startedAt: performance.now() };
  // Any signal sent from this process (srv.stop, stopAll, a test calling
  // srv.proc.kill) marks the end as expected.
  const kill = proc.kill.bind(proc);
  proc.kill = (signal) => { srv.stopping = true; return kill(signal); };
  running.add(srv);
  srv.exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      srv.exitCode = code; srv.exitSignal = signal; running.delete(srv); finished.push(srv);
      // stdio may still hold the last lines: read them before reporting
      const settle = () => {
        if (!srv.stopping && srv.port) {
          srv.report = exitReport(srv);
          unexpected.push({ srv });
          process.stderr.write(`\n[harness] ${srv.report}\n`);
        }
        try { fs.rmdirSync(cwd); } catch { /* a core file is kept */ }
        resolve({ code, signal });
      };
      if (proc.stderr.readableEnded) settle(); else { proc.stderr.once('end', settle); setTimeout(settle, 200).unref(); }
    });
  });
  proc.stderr.on('data', (d) => { srv.stderr += d; });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not print its port within ${timeoutMs} ms:\n${srv.stderr}`)), timeoutMs);
    proc.stdout.on('data', (d) => {
      srv.stdout += d;
      const m = /tumble: listening on (https?):\/\/127\.0\.0\.1:(\d+)/.exec(srv.stdout);
      if (m && !srv.port) {
        clearTimeout(timer);
        srv.port = Number(m[2]);
        srv.url = `${m[1]}://127.0.0.1:${srv.port}`;
        resolve();
      }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}) before listening:\n${srv.stderr}`)); });
  });
  srv.stop = async (signal = 'SIGTERM') => {
    if (srv.exitCode !== null || srv.exitSignal !== null) return srv.exited;
    srv.stopping = true;
    proc.kill(signal);
    return srv.exited;
  };
  return srv;
}

// Stops every server still running, then fails if any server of this file
// printed a sanitizer report (run the suite against build/asan/tumble-server
// with TUMBLE_SERVER_BIN to make that meaningful).
export async function stopAll() {
  await Promise.all([...links].map((l) => l.stop()));
  const all = [...running];
  await Promise.all(all.map(async (srv) => {
    srv.stopping = true;
    srv.proc.kill('SIGTERM');
    const t = setTimeout(() => srv.proc.kill('SIGKILL'), 2500);
    await srv.exited;
    clearTimeout(t);
  }));
  killAllNow();
  const reports = finished.filter((srv) => /ERROR: (Address|Leak|Thread)Sanitizer|runtime error:/.test(srv.stderr));
  finished.length = 0;
  const gone = unexpected.splice(0);
  if (reports.length) throw new Error(`sanitizer report from tumble-server:\n${reports[0].stderr.slice(0, 4000)}`);
  if (gone.length) throw new Error(gone.map((u) => u.srv.report).join('\n'));
}

// Start the link emulator on an ephemeral loopback port in front of
// 127.0.0.1:targetPort. Options (milliseconds, kbit/s), for both directions or
// per direction with down (server -> client) / up (client -> server):
//   { delay, jitter, kbps, down: {delay, jitter, kbps}, up: {...},
//     stall: {ms, every, phase}, queueBytes, seed }
// Resolves { port, proc, stop() } once it listens; stop() ends it (SIGTERM)
// and is also called by stopAll() and, as SIGKILL, by the exit handler.
export function netemArgs(opts = {}) {
  const a = [];
  const num = (flag, v) => { if (v != null) a.push(flag, String(v)); };
  num('--delay', opts.delay); num('--jitter', opts.jitter); num('--kbps', opts.kbps);
  for (const d of ['down', 'up']) {
    const o = opts[d] || {};
    num(`--${d}-delay`, o.delay); num(`--${d}-jitter`, o.jitter); num(`--${d}-kbps`, o.kbps);
  }
  if (opts.stall) a.push('--stall', `${opts.stall.ms}/${opts.stall.every}${opts.stall.phase != null ? `@${opts.stall.phase}` : ''}`);
  num('--queue-bytes', opts.queueBytes); num('--seed', opts.seed);
  return a;
}

export async function startLink(targetPort, opts = {}, { timeoutMs = 5000 } = {}) {
  const args = ['--listen', '127.0.0.1:0', '--target', `127.0.0.1:${targetPort}`, ...netemArgs(opts)];
  const proc = spawn(NETEM_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  const exited = new Promise((r) => proc.on('exit', (code, sig) => r({ code, sig })));
  const link = { proc, port: 0, args, stderr: () => err };
  link.stop = async () => {
    links.delete(link);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 2000);
    const r = await exited; clearTimeout(t); return r;
  };
  links.add(link);
  proc.stderr.on('data', (d) => { err += d; });
  link.port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`tumble-netem did not listen within ${timeoutMs} ms: ${err}`)), timeoutMs);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(t); reject(new Error(`tumble-netem exited (${code}): ${err}`)); });
    proc.on('error', (e) => { clearTimeout(t); reject(e); });
  });
  return link;
}

// A raw HTTP/1.1 GET that sends the path byte for byte (fetch would
// normalise "/../"). Resolves { status, headers, body }.
export function rawGet(port, rawPath) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    sock.on('connect', () => sock.write(`GET ${rawPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('error', reject);
    sock.on('close', () => {
      const text = data.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d+)/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, head: text.slice(0, split), body: split >= 0 ? text.slice(split + 4) : '' });
    });
    sock.setTimeout(3000, () => sock.destroy(new Error('raw GET timed out')));
  });
}

// A tumble.v1 client with a buffered inbox of decoded messages (proto/js
// codec) and its own SnapshotState: welcome, scene and snapshots are applied
// as they arrive, and each snapshot message gets .state = {tick, ...} copies
// of what a test usually checks. A delta that does not fit is recorded in
// client.snapErrors and answered with a resync, like a real client.
export function connect(port, { protocol = 'tumble.v1', headers, name = 'test', path: urlPath = '/' } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${urlPath}`, protocol ? [protocol] : [], { headers });
    const client = {
      ws,
      name,
      inbox: [],
      waiters: [],
      closed: null,
      snapshots: 0,
      snapErrors: [],
      undecodable: 0,
      state: new SnapshotState(),
      seq: 0,
      // Encode with the protocol codec; seq is filled in when missing.
      send(obj) {
        const msg = { ...obj };
        if (!['hello', 'ping', 'resync', 'lobby_req'].includes(msg.type) && msg.seq === undefined) msg.seq = ++client.seq;
        ws.send(encodeClient(msg));
        return msg.seq;
      },
      sendRaw(buf, opts) { ws.send(buf, opts); },
      next(pred = () => true, timeoutMs = 3000) {
        const i = client.inbox.findIndex(pred);
        if (i >= 0) return Promise.resolve(client.inbox.splice(i, 1)[0]);
        return new Promise((res, rej) => {
          const w = { pred, res };
          const t = setTimeout(() => {
            client.waiters.splice(client.waiters.indexOf(w), 1);
            rej(new Error(`no matching message within ${timeoutMs} ms; last types: ${client.inbox.slice(-6).map((m) => m.type).join(',')}`));
          }, timeoutMs);
          w.res = (m) => { clearTimeout(t); res(m); };
          client.waiters.push(w);
        });
      },
      type(type, timeoutMs) { return client.next((m) => m.type === type, timeoutMs); },
      error(name, timeoutMs) { return client.next((m) => m.type === 'error' && (!name || m.name === name), timeoutMs); },
      snapshot(timeoutMs) { return client.next((m) => m.type === 'snap_delta' || m.type === 'snap_key', timeoutMs); },
      drop(pred) { client.inbox = client.inbox.filter((m) => !pred(m)); },
      dropSnapshots() { client.drop((m) => m.type === 'snap_delta' || m.type === 'snap_key'); },
      close() { try { ws.close(); } catch { /* ignore */ } },
      whenClosed: null,
    };
    client.whenClosed = new Promise((res) => ws.on('close', (code, reason) => {
      client.closed = { code, reason: reason.toString() };
      res(client.closed);
    }));
    ws.on('message', (data) => {
      let msg;
      try { msg = decodeServer(new Uint8Array(data)); } catch (e) { client.undecodable++; msg = { type: '__undecodable__', error: e }; }
      msg.__at = performance.now();
      if (client.state.handles(msg)) {
        try {
          client.state.apply(msg);
          msg.state = snapshotView(client.state);
        } catch (e) {
          client.snapErrors.push(e);
          try { ws.send(encodeClient({ type: 'resync' })); } catch { /* closing */ }
        }
        if (msg.type === 'snap_delta' || msg.type === 'snap_key') client.snapshots++;
      }
      const w = client.waiters.find((x) => x.pred(msg));
      if (w) { client.waiters.splice(client.waiters.indexOf(w), 1); w.res(msg); return; }
      client.inbox.push(msg);
      if (client.inbox.length > 5000) client.inbox.splice(0, 1000);
    });
    ws.on('open', () => resolve(client));
    ws.on('error', (e) => reject(e));
    ws.on('unexpected-response', (req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
  });
}

// A copy of the decoded world a test can keep: tick, bodies by id, meshes.
export function snapshotView(st) {
  const bodies = new Map();
  for (let i = 0; i < st.bodyCount; i++) {
    bodies.set(st.ids[i], {
      pos: [st.pos[3 * i], st.pos[3 * i + 1], st.pos[3 * i + 2]],
      rot: [st.rot[4 * i], st.rot[4 * i + 1], st.rot[4 * i + 2], st.rot[4 * i + 3]],
      shape: st.shapes[i],
    });
  }
  return { tick: st.tick, lastSeq: st.lastSeq, awake: st.awake, bodies, meshes: st.meshes.map((m) => Float32Array.from(m.pos)) };
}

// Join a room (hello) and wait for the welcome.
export async function join(client, room, scene, extra = {}) {
  client.send({ type: 'hello', version: 1, room, kind: null, scene: scene ?? null, name: client.name, ...extra });
  return client.type('welcome');
}

export async function metrics(url) {
  let text;
  try {
    text = await (await fetch(`${url}/metrics`)).text();
  } catch (e) {
    await sleep(300); // let the exit, if that is what happened, be seen
    const report = unexpectedExit(url);
    throw report ? new Error(`${e.message}: ${report}`, { cause: e }) : e;
  }
  const values = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    values[line.slice(0, sp)] = Number(line.slice(sp + 1));
  }
  return values;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Snapshot delivery as the server clock sees it: how many of the room's
// snapshot ticks in the inbox span reached this client, per second of room
// time. Independent of this test process's own event-loop stalls (a client
// busy flooding the server delays its own message handlers, not the server).
export function snapshotStats(client) {
  const snaps = client.inbox.filter((m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state);
  const load = os.loadavg()[0].toFixed(1);
  if (snaps.length < 2) return { received: snaps.length, seconds: 0, rate: 0, load };
  const seconds = (snaps[snaps.length - 1].state.tick - snaps[0].state.tick) / 120;
  let maxGap = 0;
  for (let i = 1; i < snaps.length; i++) maxGap = Math.max(maxGap, snaps[i].state.tick - snaps[i - 1].state.tick);
  const rate = (snaps.length - 1) / seconds;
  // for assertion messages: enough to tell a starved machine from a bug
  const note = `${rate.toFixed(1)} snapshots/s over ${seconds.toFixed(2)} s, largest tick gap ${maxGap}, keyframes ${snaps.filter((m) => m.type === 'snap_key').length}, load average ${load} on ${os.cpus().length} cores`;
  return { received: snaps.length, seconds, rate, load, maxGap, note };
}

// Steps per second of a room measured by the server's own counter.
export async function roomSteps(url, id) {
  const rooms = await (await fetch(`${url}/api/rooms`)).json();
  const r = rooms.find((x) => x.id === id);
  return { steps: r ? r.steps : 0, at: performance.now() };
}
export function stepRate(a, b) { return (b.steps - a.steps) / ((b.at - a.at) / 1000); }
