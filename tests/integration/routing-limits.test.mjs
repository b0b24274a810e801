// routing-limits.test.mjs: the router and the servers in production shape, with
// the per-address limits on (routing.test.mjs raises them out of the way):
// three tumble-servers with --max-conns-per-address 3 and --trusted-proxies
// naming the router's address, nginx from docker/nginx with limit_conn 5 per
// client address. Players come from distinct loopback addresses (127.0.0.x),
// so the router's X-Forwarded-For is what tells them apart at the servers:
//   - a 4th connection from one player to one server is refused by that server
//     (counted there as per_address), while another player still gets in: the
//     server counted the forwarded client, not the router's own address;
//   - a 6th connection from one player is refused by the router's limit_conn
//     even though no server is at its limit (no server counts a refusal).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { encode, decode } from '@msgpack/msgpack';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVER_BIN = process.env.TUMBLE_SERVER_BIN || path.join(ROOT, 'build/tumble-server');
const NGINX = process.env.NGINX || (fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx');
const SERVER_LIMIT = 3;
const ROUTER_LIMIT = 5;

const procs = new Set();
const sockets = new Set();
let tmp;
process.on('exit', () => {
  for (const p of procs) { try { p.kill('SIGKILL'); } catch { /* gone */ } }
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function spawnTracked(cmd, args, opts) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  p.out = '';
  p.stdout.on('data', (d) => { p.out += d; });
  p.stderr.on('data', (d) => { p.out += d; });
  procs.add(p);
  p.exited = new Promise((res) => p.on('exit', (code, signal) => { procs.delete(p); res({ code, signal }); }));
  return p;
}

async function startServer(instance, clientDir) {
  const p = spawnTracked(SERVER_BIN, ['--port', '0', '--bind', '127.0.0.1', '--instance', instance,
    '--client-dir', clientDir, '--log-level', 'warn', '--workers', '1', '--room-create-rate', '100000',
    '--max-conns-per-address', String(SERVER_LIMIT), '--trusted-proxies', '127.0.0.1/32']);
  const port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${instance} did not print its port:\n${p.out}`)), 15000);
    p.stdout.on('data', () => {
      const m = /tumble: listening on http:\/\/[0-9.]+:(\d+)/.exec(p.out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    p.on('exit', (code) => { clearTimeout(t); reject(new Error(`${instance} exited (${code}):\n${p.out}`)); });
  });
  return { instance, port, proc: p, url: `http://127.0.0.1:${port}` };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitHttp(url, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    try { const r = await fetch(url); if (r.ok) return r; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`${url} did not answer within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// One player's WebSocket through the router from a loopback address of its own.
// Resolves { ok: true, instance, ws } once welcomed, or { ok: false, status } when
// the upgrade is refused (by the router or by the server behind it).
function join(from, room) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${routerPort}/ws/${room}`, ['tumble.v1'], { localAddress: from });
    sockets.add(ws);
    const t = setTimeout(() => { ws.terminate(); reject(new Error(`${from} ${room}: nothing within 10 s`)); }, 10000);
    ws.on('unexpected-response', (req, res) => { clearTimeout(t); res.resume(); ws.terminate(); resolve({ ok: false, status: res.statusCode }); });
    ws.on('error', (e) => { clearTimeout(t); reject(e); });
    ws.on('open', () => ws.send(encode([1, 1, room, 'rigid', 'tower', `p-${from}`])));
    ws.on('message', (data) => {
      const m = decode(data);
      if (Array.isArray(m) && m[0] === 32) { clearTimeout(t); resolve({ ok: true, instance: m[6], ws }); }
      if (Array.isArray(m) && m[0] === 43) { clearTimeout(t); resolve({ ok: false, error: m[2], ws }); }
    });
  });
}

async function refusedPerAddress() {
  const out = {};
  for (const s of servers) {
    const text = await (await fetch(`${s.url}/metrics`)).text();
    const m = /tumble_connections_refused_total\{reason="per_address"\} (\d+)/.exec(text);
    out[s.instance] = m ? Number(m[1]) : 0;
  }
  return out;
}
const total = (o) => Object.values(o).reduce((a, b) => a + b, 0);

const servers = [];
let router, routerPort;

before(async () => {
  assert.ok(fs.existsSync(SERVER_BIN), `${SERVER_BIN} is missing: run make`);
  assert.equal(spawnSync(NGINX, ['-v']).status, 0, 'nginx is missing: make deps installs nginx and libnginx-mod-http-js');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-routing-limits-'));
  const clientDir = path.join(tmp, 'client');
  fs.mkdirSync(clientDir);
  fs.writeFileSync(path.join(clientDir, 'index.html'), '<!doctype html><title>tumble</title>\n');
  for (const name of ['tumble-a', 'tumble-b', 'tumble-c']) servers.push(await startServer(name, clientDir));
  routerPort = await freePort();
  const dir = path.join(tmp, 'nginx');
  const r = spawnSync('sh', [path.join(ROOT, 'docker/nginx/render.sh'), dir], {
    env: {
      ...process.env,
      TUMBLE_UPSTREAMS: servers.map((s) => `127.0.0.1:${s.port}`).join(' '),
      TUMBLE_ROUTER_LISTEN: `127.0.0.1:${routerPort}`,
      TUMBLE_ROUTER_CONNS_PER_ADDRESS: String(ROUTER_LIMIT),
      TUMBLE_ROUTER_LOG: 'error',
    },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `render.sh failed: ${r.stderr}`);
  router = spawnTracked(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', 'stderr']);
  await waitHttp(`http://127.0.0.1:${routerPort}/router/healthz`, 15000);
});

after(async () => {
  for (const ws of sockets) ws.terminate();
  await Promise.all([...procs].map(async (p) => {
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 3000);
    await p.exited;
    clearTimeout(t);
  }));
  if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); tmp = null; }
});

test('each server limits the player named by X-Forwarded-For, not the router\'s address', async () => {
  const before = await refusedPerAddress();
  const held = [];
  for (let i = 0; i < SERVER_LIMIT; i++) {
    const r = await join('127.0.0.2', 'xff-room');
    assert.ok(r.ok, `connection ${i + 1} of 127.0.0.2: ${JSON.stringify({ status: r.status, error: r.error })}`);
    held.push(r);
  }
  const instance = held[0].instance;
  const fourth = await join('127.0.0.2', 'xff-room');
  assert.equal(fourth.ok, false, 'a 4th connection of one player to one server is refused');
  const after4 = await refusedPerAddress();
  assert.equal(after4[instance] - before[instance], 1, `refused by ${instance} itself: ${JSON.stringify(after4)}`);
  // Another player, same router, same server: the server counts it apart.
  for (let i = 0; i < SERVER_LIMIT; i++) {
    const r = await join('127.0.0.3', 'xff-room');
    assert.ok(r.ok, `connection ${i + 1} of 127.0.0.3 (the server must count the forwarded address): ${JSON.stringify({ status: r.status, error: r.error, refused: await refusedPerAddress() })}`);
    assert.equal(r.instance, instance);
    held.push(r);
  }
  for (const h of held) h.ws.close();
});

test('the router refuses a player\'s 6th WebSocket (limit_conn) while no server is at its limit', async () => {
  // Where rooms land: asked from a player of its own, then closed.
  const byInstance = {};
  for (let i = 0; i < 40 && Object.values(byInstance).filter((l) => l.length >= 2).length < 3; i++) {
    const room = `spread-${i}`;
    const r = await join('127.0.0.9', room);
    assert.ok(r.ok, `placing ${room}`);
    (byInstance[r.instance] ??= []).push(room);
    r.ws.close();
    await new Promise((res) => r.ws.once('close', res));
  }
  const rooms = Object.values(byInstance).flatMap((l) => l.slice(0, 2));
  assert.equal(rooms.length, 6, `two rooms on each server: ${JSON.stringify(byInstance)}`);
  await new Promise((r) => setTimeout(r, 300));
  const before = await refusedPerAddress();
  const held = [];
  for (let i = 0; i < ROUTER_LIMIT; i++) {
    const r = await join('127.0.0.4', rooms[i]);
    assert.ok(r.ok, `connection ${i + 1} of 127.0.0.4 (at most 2 per server)`);
    held.push(r);
  }
  const sixth = await join('127.0.0.4', rooms[ROUTER_LIMIT]);
  assert.equal(sixth.ok, false, 'the 6th is refused');
  assert.equal(sixth.status, 503, 'by nginx limit_conn (503)');
  assert.equal(total(await refusedPerAddress()) - total(before), 0, 'no server refused anything: the router did');
  // Another player is not affected.
  const other = await join('127.0.0.5', rooms[ROUTER_LIMIT]);
  assert.ok(other.ok, 'another address gets in');
  for (const h of [...held, other]) h.ws.close();
});
