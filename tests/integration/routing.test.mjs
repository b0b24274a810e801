// routing.test.mjs: the room router, for real on loopback.
//
// Three tumble-server processes on ephemeral ports, and nginx (Debian's, with the
// njs module) started unprivileged in a temp folder with the project's own router
// config: docker/nginx/nginx.conf.template rendered by docker/nginx/render.sh, the
// same files docker/compose.yaml and docker/k8s use, only the upstream addresses
// differ. Then:
//   - clients of 50 room ids, three per room, join through ws://router/ws/<room>:
//     all clients of a room reach the same instance (named in the welcome), that
//     instance really holds the room, and every instance holds some rooms;
//   - GET /api/rooms on the router is the merged lobby: every room once, with the
//     server that holds it;
//   - stopping one instance moves only its rooms: rejoining all 50, the rooms of the
//     two others stay where they were, the stopped one's rooms land on the others.
// Everything started is stopped in `after`, and SIGKILLed on process exit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { joinRoom } from './wsclient.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVER_BIN = process.env.TUMBLE_SERVER_BIN || path.join(ROOT, 'build/tumble-server');
const NGINX = process.env.NGINX || (fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx');
const ROOMS = Array.from({ length: 50 }, (_, i) => `room-${i}`);
const PER_ROOM = 3;

const procs = new Set();
const clients = new Set();
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

async function stopProc(p, ms = 3000) {
  if (!procs.has(p)) return p.exited;
  p.kill('SIGTERM');
  const t = setTimeout(() => p.kill('SIGKILL'), ms);
  const r = await p.exited;
  clearTimeout(t);
  return r;
}

async function startServer(instance, clientDir) {
  const p = spawnTracked(SERVER_BIN, ['--port', '0', '--bind', '127.0.0.1', '--instance', instance,
    '--client-dir', clientDir, '--log-level', 'warn', '--workers', '1',
    // Behind the router every player has the router's address; the router limits per address.
    '--max-conns-per-address', '1000', '--room-create-rate', '100000']);
  const port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${instance} did not print its port:\n${p.out}`)), 15000);
    p.stdout.on('data', () => {
      const m = /tumble: listening on http:\/\/[0-9.]+:(\d+)/.exec(p.out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    p.on('exit', (code) => { clearTimeout(t); reject(new Error(`${instance} exited (${code}):\n${p.out}`)); });
  });
  return { instance, port, proc: p };
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

async function joinAll(base, rooms, perRoom) {
  const held = {};
  await Promise.all(rooms.map(async (room) => {
    const seen = [];
    for (let k = 0; k < perRoom; k++) {
      const c = await joinRoom(base, room);
      clients.add(c);
      seen.push(c);
    }
    held[room] = seen;
  }));
  return held;
}

function closeAll() {
  for (const c of clients) c.terminate();
  clients.clear();
}

const servers = [];
let router, routerPort, base;

// A tree without the server (server/main.c) has nothing to route to yet.
const NO_SERVER = !fs.existsSync(path.join(ROOT, 'server/main.c')) && !process.env.TUMBLE_SERVER_BIN
  && 'no server/main.c in this tree yet';

before(async () => {
  if (NO_SERVER) return;
  assert.ok(fs.existsSync(SERVER_BIN), `${SERVER_BIN} is missing: run make`);
  const v = spawnSync(NGINX, ['-v']);
  assert.equal(v.status, 0, 'nginx is missing: make deps installs nginx and libnginx-mod-http-js');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-routing-'));
  const clientDir = path.join(tmp, 'client');
  fs.mkdirSync(clientDir);
  fs.writeFileSync(path.join(clientDir, 'index.html'), '<!doctype html><title>tumble</title>ROUTED\n');
  for (const name of ['tumble-a', 'tumble-b', 'tumble-c']) servers.push(await startServer(name, clientDir));

  routerPort = await freePort();
  const dir = path.join(tmp, 'nginx');
  const r = spawnSync('sh', [path.join(ROOT, 'docker/nginx/render.sh'), dir], {
    env: {
      ...process.env,
      TUMBLE_UPSTREAMS: servers.map((s) => `127.0.0.1:${s.port}`).join(' '),
      TUMBLE_ROUTER_LISTEN: `127.0.0.1:${routerPort}`,
      TUMBLE_ROUTER_CONNS_PER_ADDRESS: '1000',
      TUMBLE_ROUTER_LOG: 'error',
    },
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `render.sh failed: ${r.stderr}`);
  router = spawnTracked(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', 'stderr']);
  router.on('exit', (code) => { if (code) console.error(`nginx exited ${code}:\n${router.out}`); });
  base = `ws://127.0.0.1:${routerPort}`;
  await waitHttp(`http://127.0.0.1:${routerPort}/router/healthz`, 15000);
});

after(async () => {
  if (process.env.TUMBLE_ROUTER_LOG) console.log(router ? router.out : 'no router');
  closeAll();
  await Promise.all([...procs].map((p) => stopProc(p)));
  if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); tmp = null; }
});

let placement; // room -> instance, from the first test

test('every client of a room reaches the same instance; every instance holds rooms', { skip: NO_SERVER }, async () => {
  const held = await joinAll(base, ROOMS, PER_ROOM);
  placement = {};
  for (const room of ROOMS) {
    const names = held[room].map((c) => c.welcome.instance);
    assert.equal(new Set(names).size, 1, `${room}: clients landed on ${names.join(', ')}`);
    assert.equal(held[room][0].welcome.room, room);
    placement[room] = names[0];
  }
  const counts = Object.fromEntries(servers.map((s) => [s.instance, 0]));
  for (const room of ROOMS) counts[placement[room]]++;
  for (const s of servers) assert.ok(counts[s.instance] > 0, `${s.instance} holds no room: ${JSON.stringify(counts)}`);
  console.log(`rooms per instance: ${JSON.stringify(counts)}`);

  // The instance named in the welcome really holds the room, with all its clients
  // (client counts may trail the joins by a step: asked again for up to 2 s).
  for (const s of servers) {
    const mine = ROOMS.filter((room) => placement[room] === s.instance);
    let list = [];
    for (let tries = 0; tries < 20; tries++) {
      list = await (await fetch(`http://127.0.0.1:${s.port}/api/rooms`)).json();
      if (mine.every((room) => list.some((x) => x.id === room && x.clients === PER_ROOM))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const room of mine) {
      const entry = list.find((x) => x.id === room);
      assert.ok(entry, `${room} not listed by ${s.instance}`);
      assert.equal(entry.clients, PER_ROOM, `${room} on ${s.instance}: ${entry.clients} clients`);
    }
    for (const room of ROOMS.filter((x) => placement[x] !== s.instance)) {
      assert.ok(!list.some((x) => x.id === room), `${room} also exists on ${s.instance}`);
    }
  }

  // Snapshots flow through the router's tunnels (a count, not a rate: the rate is the
  // server's own tests' business, and this machine may be busy).
  const sample = held[ROOMS[0]][0];
  const before = sample.snapshots;
  const end = Date.now() + 5000;
  while (sample.snapshots - before < 5 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  assert.ok(sample.snapshots - before >= 5, `only ${sample.snapshots - before} snapshots in 5 s through the router`);
});

test('the router\'s /api/rooms lists every room once, with the server that holds it', { skip: NO_SERVER }, async () => {
  assert.ok(placement, 'needs the first test');
  const res = await fetch(`http://127.0.0.1:${routerPort}/api/rooms`);
  assert.equal(res.status, 200);
  const list = await res.json();
  const ids = list.map((x) => x.id);
  assert.equal(new Set(ids).size, ids.length, `duplicate ids in the lobby: ${ids.join(',')}`);
  for (const room of ROOMS) {
    const entry = list.find((x) => x.id === room);
    assert.ok(entry, `${room} missing from the lobby`);
    assert.equal(entry.server, placement[room], `${room}: lobby says ${entry.server}, welcome said ${placement[room]}`);
  }
  // Rooms every server opens at start (tower, dice, ...) appear once, from the server
  // that the router sends their players to.
  for (const entry of list.filter((x) => !ROOMS.includes(x.id)).slice(0, 3)) {
    const c = await joinRoom(base, entry.id, { scene: entry.scene });
    assert.equal(c.welcome.instance, entry.server, `${entry.id}: lobby says ${entry.server}, join reached ${c.welcome.instance}`);
    c.terminate();
  }
});

test('stopping one instance moves only its rooms', { skip: NO_SERVER }, async () => {
  assert.ok(placement, 'needs the first test');
  closeAll();
  const victim = servers[1];
  const { code } = await stopProc(victim.proc);
  assert.equal(code, 0, `${victim.instance} did not exit 0 on SIGTERM`);

  const held = await joinAll(base, ROOMS, 2);
  let moved = 0;
  for (const room of ROOMS) {
    const names = held[room].map((c) => c.welcome.instance);
    assert.equal(new Set(names).size, 1, `${room}: clients landed on ${names.join(', ')} after the stop`);
    if (placement[room] === victim.instance) {
      assert.notEqual(names[0], victim.instance);
      moved++;
    } else {
      assert.equal(names[0], placement[room], `${room} moved from ${placement[room]} to ${names[0]} though its server is up`);
    }
  }
  assert.ok(moved > 0, 'the stopped instance held no rooms');
  console.log(`${moved} rooms moved off ${victim.instance}, ${ROOMS.length - moved} stayed`);

  // The lobby keeps working without the stopped server.
  const list = await (await fetch(`http://127.0.0.1:${routerPort}/api/rooms`)).json();
  assert.ok(ROOMS.every((room) => list.some((x) => x.id === room)), 'lobby lost rooms');
  assert.ok(!list.some((x) => x.server === victim.instance), 'lobby lists the stopped server');
  closeAll();
});
