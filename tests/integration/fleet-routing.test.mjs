// fleet-routing.test.mjs: the compose fleet on loopback. Three servers sharing a
// private redis-server, behind the project's own nginx router config
// (docker/nginx, rendered by render.sh as in routing.test.mjs). Then:
//   - a player knocks a tower through ws://router/ws/<room>; its server is stopped
//     (SIGTERM: drain); the player, closed with 1001, reconnects through the router
//     and is back in the same, still-falling tower within 2 s, on another server;
//   - of 12 rooms, stopping one server moves exactly its rooms, each with its world
//     (the tick carries on from the checkpoint: not a new room), the others stay;
//   - the router's /api/rooms names each room's holder;
//   - the router ends TLS (a self-signed certificate render.sh makes): https and
//     wss through it reach the plain servers behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';
import { joinRoom } from './wsclient.mjs';
import https from 'node:https';
import WebSocket from 'ws';
import { encodeClient, decodeServer } from '../../proto/js/tumble-proto.mjs';
import { startRedis, stopAllRedis, redisAvailable } from './redis.mjs';
import { startRouter, nginxAvailable } from './router.mjs';

const skip = !redisAvailable() ? 'redis-server not installed (make deps)'
  : !nginxAvailable() ? 'nginx not installed (make deps)' : false;
const isSnap = (m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state;
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);

let router, routerPort, tlsPort, tmp, redis;
const servers = [];

before(async () => {
  if (skip) return;
  redis = await startRedis();
  for (const name of ['fleet-a', 'fleet-b', 'fleet-c']) {
    servers.push(await startServer({ args: ['--redis', redis.url, '--instance', name, '--workers', '1',
      '--max-conns-per-address', '1000', '--room-create-rate', '100000'] }));
  }
  router = await startRouter({ upstreams: servers.map((s) => s.port), tls: true });
  ({ port: routerPort, tlsPort, tmp } = router);
});

after(async () => {
  await router?.stop();
  await stopAll();
  await stopAllRedis();
});

const holder = (instance) => servers.find((s) => s.args.includes(instance));

test('a player whose server stops is back in the same, still-falling tower within 2 s', { skip, timeout: 30000 }, async () => {
  const room = 'fleet-fall';
  let p = await connect(routerPort, { path: `/ws/${room}` });
  const w = await join(p, room, 'tower');
  const initial = w.state;
  const srv = holder(w.server);
  assert.ok(srv, `welcome names a server: ${w.server}`);
  p.send({ type: 'action', action: 'knock', scene: null });
  await sleep(700);
  const snaps = p.inbox.filter(isSnap);
  const last = snaps[snaps.length - 1].state;
  assert.ok(last.awake > 10, 'falling');

  const t0 = performance.now();
  const stopped = srv.stop('SIGTERM');
  const closed = await p.whenClosed;
  assert.equal(closed.code, 1001);
  // what the client does: reconnect through the router, same room
  p = await connect(routerPort, { path: `/ws/${room}` });
  const again = await join(p, room);
  const first = (await p.snapshot()).state;
  const ms = performance.now() - t0;
  assert.equal((await stopped).code, 0);
  assert.notEqual(again.server, w.server, 'another server holds it now');
  assert.ok(ms < 2000, `back in the room after ${ms.toFixed(0)} ms`);
  const ticks = first.tick - last.tick;
  assert.ok(ticks >= 0 && ticks <= 120 * (ms / 1000 + 1), `tick ${last.tick} -> ${first.tick}`);
  for (const [id, b] of last.bodies) assert.ok(dist(b.pos, first.bodies.get(id).pos) <= 15 * ticks / 120 + 0.01, `body ${id} jumped`);
  const displaced = [...first.bodies.keys()].filter((id) => initial.bodies.has(id) && dist(initial.bodies.get(id).pos, first.bodies.get(id).pos) > 0.1).length;
  assert.ok(displaced >= 6, `the knocked tower, not a new one (${displaced} planks displaced)`);
  p.dropSnapshots();
  await sleep(300);
  const later = p.inbox.filter(isSnap);
  assert.ok(later.length && later[later.length - 1].state.tick > first.tick, 'still stepping on the new server');
  p.close();
});

test('the router serves https and wss with its certificate; the servers behind stay plain', { skip, timeout: 20000 }, async () => {
  const ca = fs.readFileSync(path.join(tmp, 'tls.crt'));
  const health = await new Promise((resolve, reject) => https.get(`https://127.0.0.1:${tlsPort}/router/healthz`, { ca }, (res) => {
    let body = ''; res.on('data', (d) => { body += d; }); res.on('end', () => resolve({ status: res.statusCode, body }));
  }).on('error', reject));
  assert.equal(health.status, 200);
  const ws = new WebSocket(`wss://127.0.0.1:${tlsPort}/ws/fleet-tls`, ['tumble.v1'], { ca });
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  const welcome = new Promise((resolve) => ws.on('message', (data) => {
    const m = decodeServer(new Uint8Array(data));
    if (m.type === 'welcome') resolve(m);
  }));
  ws.send(encodeClient({ type: 'hello', version: 1, room: 'fleet-tls', kind: null, scene: 'dice', name: 'tls' }));
  const w = await welcome;
  assert.equal(w.room, 'fleet-tls');
  assert.ok(servers.some((s) => s.args.includes(w.server)), `a server behind the router answered (${w.server})`);
  ws.close();
});

test('stopping a server moves exactly its rooms, each with its world; the lobby names the holders', { skip, timeout: 30000 }, async () => {
  // the restarted server listens on a new port the router does not know: route over the live ones
  const live = servers.filter((s) => s.exitCode === null);
  const base = `ws://127.0.0.1:${routerPort}`;
  const rooms = Array.from({ length: 12 }, (_, i) => `fleet-${i}`);
  const place = {}, tick = {};
  for (const room of rooms) {
    const c = await joinRoom(base, room);
    place[room] = c.welcome.instance;
    tick[room] = c.welcome.tick;
    c.terminate();
  }
  await sleep(1500); // a lobby round, and some ticks
  const lobby = await (await fetch(`http://127.0.0.1:${routerPort}/api/rooms`)).json();
  for (const room of rooms) assert.equal(lobby.filter((x) => x.id === room).map((x) => x.server).join(), place[room], `${room} in the lobby`);
  const counts = {};
  for (const room of rooms) counts[place[room]] = (counts[place[room]] || 0) + 1;
  const victimName = Object.keys(counts).sort((a, b) => counts[b] - counts[a])[0];
  const victim = live.find((s) => s.args.includes(victimName));
  assert.equal((await victim.stop('SIGTERM')).code, 0);
  let moved = 0;
  for (const room of rooms) {
    const c = await joinRoom(base, room);
    if (place[room] === victimName) {
      assert.notEqual(c.welcome.instance, victimName);
      assert.ok(c.welcome.tick >= tick[room] + 120, `${room} continued (tick ${tick[room]} -> ${c.welcome.tick}), not a new room`);
      moved++;
    } else {
      assert.equal(c.welcome.instance, place[room], `${room} stayed on its server`);
    }
    c.terminate();
  }
  assert.equal(moved, counts[victimName]);
});
