// fleet.test.mjs: rooms outlive their server (--redis, net/fleet.h). Each
// test starts its own redis-server on a free loopback port and its own
// servers, and stops them all even when it fails.
//
//  - SIGTERM hands a falling tower to the next server: same bodies, poses
//    continuing, the tick counting on;
//  - SIGKILL: the next server waits out the dead one's lease and continues
//    from its last checkpoint, at most the checkpoint interval old;
//  - two servers racing for one room: one runs it, the other refuses;
//  - Redis killed (and hung) under load: rooms keep stepping, checkpoints
//    are skipped and counted, and resume when Redis is back;
//  - the lobby lists the fleet; POST /admin/drain is loopback/trusted only.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startServer, stopAll, connect, join, sleep, metrics } from './harness.mjs';
import { startRedis, stopAllRedis, redisAvailable } from './redis.mjs';

after(async () => { await stopAll(); await stopAllRedis(); });

const skip = redisAvailable() ? false : 'redis-server not installed (make deps)';
const isSnap = (m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state;
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const fleetArgs = (redis, instance, extra = []) => ['--redis', redis.url, '--instance', instance, '--workers', '1', ...extra];
const redisCli = (redis, ...args) => execFileSync('redis-cli', ['-p', String(redis.port), '--raw', ...args], { encoding: 'utf8' }).trim();

// The last snapshot state in a client's inbox.
function lastState(client) {
  const snaps = client.inbox.filter(isSnap);
  return snaps.length ? snaps[snaps.length - 1].state : null;
}

// Every body of `later` is within what it could travel in `ticks` of `earlier`.
function assertContinues(earlier, later, ticks, what) {
  assert.deepEqual([...later.bodies.keys()].sort((x, y) => x - y), [...earlier.bodies.keys()].sort((x, y) => x - y), `${what}: same bodies`);
  const allowance = 15 * (ticks / 120) + 0.01;
  for (const [id, p] of earlier.bodies) {
    const q = later.bodies.get(id);
    assert.ok(dist(p.pos, q.pos) <= allowance, `${what}: body ${id} moved ${dist(p.pos, q.pos).toFixed(3)} m in ${ticks} ticks`);
  }
}

function displaced(initial, state) {
  return [...state.bodies.keys()].filter((id) => initial.bodies.has(id) && dist(initial.bodies.get(id).pos, state.bodies.get(id).pos) > 0.1).length;
}

test('SIGTERM hands a falling tower to the next server: same fall, the tick counts on', { skip }, async () => {
  const redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A') });
  const b = await startServer({ args: fleetArgs(redis, 'B') });
  const p1 = await connect(a.port, { name: 'p1' });
  const initial = (await join(p1, 'fall', 'tower')).state;
  p1.send({ type: 'action', action: 'knock', scene: null });
  await sleep(700); // planks in the air
  const last = lastState(p1);
  assert.ok(last && last.awake > 10, `tower falling before the stop (awake ${last?.awake})`);

  const t0 = performance.now();
  const stopped = a.stop('SIGTERM');
  const closed = await p1.whenClosed;
  assert.equal(closed.code, 1001, `player closed with going-away (${JSON.stringify(closed)})`);
  // the player reconnects (here straight to B; in a fleet, through the router)
  const p2 = await connect(b.port, { name: 'p2' });
  const welcome = await join(p2, 'fall'); // no scene: B must find the room in Redis
  const first = welcome.state;
  const snap = await p2.snapshot();
  const handoffMs = performance.now() - t0;
  const exit = await stopped;
  assert.equal(exit.code, 0, a.stderr);
  assert.ok(performance.now() - t0 < 2500, 'A exited within 2 s of SIGTERM');

  assert.equal(welcome.scene, 'tower');
  const ticks = first.tick - last.tick;
  assert.ok(ticks >= 0 && ticks <= 120 * (handoffMs / 1000 + 1), `tick ${last.tick} on A -> ${first.tick} on B (${handoffMs.toFixed(0)} ms)`);
  assertContinues(last, first, ticks, 'A -> B');
  const moved = displaced(initial, first);
  assert.ok(moved >= 6, `${moved} planks displaced on B: the knocked tower, not a new one`);
  // and it keeps falling on B
  p2.dropSnapshots();
  await sleep(300);
  const end = lastState(p2);
  assert.ok(end && end.tick > snap.state.tick, 'B steps the room');
  const moving = [...end.bodies.keys()].filter((id) => dist(end.bodies.get(id).pos, first.bodies.get(id).pos) > 0.002).length;
  assert.ok(moving >= 3 || first.awake === 0, `${moving} bodies moved on B`);

  const mb = await metrics(b.url);
  assert.equal(mb.tumble_handoffs_total, 1);
  assert.match(b.stderr + a.stderr, /./s); // logs kept for a failing run
  assert.equal(redisCli(redis, 'GET', 'tumble:lease:fall').split('/')[0], 'B', 'B holds the lease');
  if (process.env.TUMBLE_TEST_VERBOSE) console.log({ handoffMs, ticks });
  p2.close();
});

test('SIGKILL 7 s after a knock: the next server continues from a checkpoint at most 5 s old', { skip, timeout: 40000 }, async () => {
  const redis = await startRedis();
  const b = await startServer({ args: fleetArgs(redis, 'B') }); // default --checkpoint-interval 5
  const c = await startServer({ args: fleetArgs(redis, 'C') });
  const p1 = await connect(b.port, { name: 'p1' });
  const initial = (await join(p1, 'crash', 'tower')).state;
  p1.send({ type: 'action', action: 'knock', scene: null });
  await sleep(7000);
  const last = lastState(p1);
  const mb = await metrics(b.url);
  assert.ok(mb.tumble_checkpoints_written_total >= 1, `B wrote checkpoints (${mb.tumble_checkpoints_written_total})`);
  await b.stop('SIGKILL');

  const t0 = performance.now();
  const p2 = await connect(c.port, { name: 'p2' });
  const welcome = await join(p2, 'crash').catch(() => null) ?? await p2.type('welcome', 5000);
  const waited = performance.now() - t0;
  const first = welcome.state;
  const lostTicks = last.tick - first.tick;
  assert.ok(lostTicks <= 5 * 120, `state ${lostTicks} ticks (${(lostTicks / 120).toFixed(2)} s) older than B's last`);
  assert.ok(first.tick > 120, `restored, not new (tick ${first.tick})`);
  assert.ok(displaced(initial, first) >= 6, 'the knocked tower came back');
  assert.ok(waited < 3000 + 1500, `C took the dead server's room after its lease expired (${waited.toFixed(0)} ms)`);
  const mc = await metrics(c.url);
  assert.equal(mc.tumble_handoffs_total, 1);
  p2.close();
});

test('two servers racing for one room: one runs it, the other refuses', { skip, timeout: 20000 }, async () => {
  const redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A') });
  const b = await startServer({ args: fleetArgs(redis, 'B') });
  const pa = await connect(a.port, { name: 'pa' });
  const pb = await connect(b.port, { name: 'pb' });
  const hello = { type: 'hello', version: 1, room: 'race', kind: null, scene: 'tower' };
  pa.send({ ...hello, name: 'pa' });
  pb.send({ ...hello, name: 'pb' });
  const outcome = (p) => p.next((m) => m.type === 'welcome' || m.type === 'error', 6000);
  const [ra, rb] = await Promise.all([outcome(pa), outcome(pb)]);
  const types = [ra.type, rb.type].sort();
  assert.deepEqual(types, ['error', 'welcome'], `one welcome, one refusal: ${JSON.stringify([ra, rb].map((m) => m.type === 'error' ? m.message : m.type))}`);
  const refused = ra.type === 'error' ? ra : rb;
  assert.match(refused.message, /running on another server/);
  const [winner, loser] = ra.type === 'welcome' ? [a, b] : [b, a];
  // only the winner has it open; both lobbies list it once, on the winner
  const health = async (s) => (await (await fetch(`${s.url}/healthz`)).json());
  assert.equal((await health(loser)).rooms, 0);
  assert.equal((await health(winner)).rooms, 1);
  await sleep(1300); // a lobby round
  for (const s of [a, b]) {
    const rooms = (await (await fetch(`${s.url}/api/rooms`)).json()).filter((r) => r.id === 'race');
    assert.equal(rooms.length, 1, `${s.url}: ${JSON.stringify(rooms)}`);
    assert.equal(rooms[0].instance, winner === a ? 'A' : 'B');
  }
  assert.equal((await metrics(loser.url)).tumble_claims_refused_total, 1);
  pa.close(); pb.close();
});

test('Redis killed, hung and restarted under load: rooms keep stepping, checkpoints are skipped, then resume', { skip, timeout: 90000 }, async () => {
  let redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A', ['--checkpoint-interval', '1', '--redis-timeout-ms', '500', '--log-level', 'warn']) });
  const players = [];
  for (let i = 0; i < 6; i++) {
    const p = await connect(a.port, { name: `p${i}` });
    await join(p, `load${i}`, i % 2 ? 'dice' : 'tower');
    players.push(p);
  }
  // an input every 400 ms: every room changes, so every interval checkpoints it
  const poke = setInterval(() => players.forEach((p, i) => {
    if (p.closed === null) p.send({ type: 'action', action: i % 2 ? 'throw_dice' : 'knock', scene: null });
  }), 400);
  after(() => clearInterval(poke));
  await sleep(2500);
  let m = await metrics(a.url);
  assert.ok(m.tumble_checkpoints_written_total >= 6, `checkpoints written with Redis up: ${m.tumble_checkpoints_written_total}`);
  const owner = redisCli(redis, 'GET', 'tumble:lease:load0');
  assert.match(owner, /^A\//);

  // killed
  await redis.stop('SIGKILL');
  const ticksBefore = players.map((p) => lastState(p).tick);
  await sleep(2500);
  m = await metrics(a.url);
  assert.equal(m.tumble_redis_up, 0);
  assert.ok(m.tumble_checkpoints_skipped_total >= 6, `checkpoints skipped while down: ${m.tumble_checkpoints_skipped_total}`);
  players.forEach((p, i) => {
    const t = lastState(p).tick;
    assert.ok(t - ticksBefore[i] >= 120 * 2, `room load${i} kept stepping without Redis (${ticksBefore[i]} -> ${t})`);
  });
  assert.match(a.stderr, /redis is down: rooms keep running/);

  // back (empty: a restarted Redis without persistence): leases are taken again, checkpoints resume
  redis = await startRedis({ port: redis.port });
  const written = m.tumble_checkpoints_written_total;
  // reconnect (backoff at most 2 s), renewal, then every room's next checkpoint (1 s)
  for (let i = 0; i < 40; i++) {
    await sleep(200);
    m = await metrics(a.url);
    if (m.tumble_redis_up === 1 && m.tumble_checkpoints_written_total >= written + 6) break;
  }
  assert.equal(m.tumble_redis_up, 1);
  assert.ok(m.tumble_checkpoints_written_total >= written + 6, `checkpoints resumed: ${written} -> ${m.tumble_checkpoints_written_total}`);
  assert.equal(redisCli(redis, 'GET', 'tumble:lease:load0'), owner, 'the lease was taken again by its server');
  assert.ok(Number(redisCli(redis, 'EXISTS', 'tumble:ckpt:load3')) === 1);

  // hung (SIGSTOP): replies stop; the connection is dropped after the timeout, rooms step on
  const beforeHang = await metrics(a.url);
  redis.proc.kill('SIGSTOP');
  const hungTicks = players.map((p) => lastState(p).tick);
  await sleep(2000);
  m = await metrics(a.url);
  assert.ok(m.tumble_redis_timeouts_total >= 1, `timeouts counted: ${m.tumble_redis_timeouts_total}`);
  // the unanswered commands were failed (not left waiting for ever)
  assert.ok(m.tumble_redis_failures_total > beforeHang.tumble_redis_failures_total,
    `commands failed after the timeout: ${beforeHang.tumble_redis_failures_total} -> ${m.tumble_redis_failures_total}`);
  players.forEach((p, i) => assert.ok(lastState(p).tick - hungTicks[i] >= 120, `room load${i} stepped while Redis hung`));
  redis.proc.kill('SIGCONT');
  // the reconnect backoff is at most 2 s after repeated drops; then the next due checkpoints
  let m2;
  for (let i = 0; i < 40; i++) {
    await sleep(200);
    m2 = await metrics(a.url);
    if (m2.tumble_redis_up === 1 && m2.tumble_checkpoints_written_total > m.tumble_checkpoints_written_total) break;
  }
  assert.equal(m2.tumble_redis_up, 1);
  assert.ok(m2.tumble_checkpoints_written_total > m.tumble_checkpoints_written_total,
    `checkpoints resumed after the hang (load average ${os.loadavg()[0].toFixed(1)}; redis timeouts ${m.tumble_redis_timeouts_total} -> ${m2.tumble_redis_timeouts_total}, connects ${m.tumble_redis_connects_total} -> ${m2.tumble_redis_connects_total}, skipped ${m.tumble_checkpoints_skipped_total} -> ${m2.tumble_checkpoints_skipped_total})`);
  assert.equal(m2.tumble_lease_losses_total, 0, 'no room lost');
  for (const p of players) { assert.equal(p.closed, null, 'players stayed connected'); p.close(); }
});

test('the lobby lists the fleet; a stopped server drops out of it', { skip, timeout: 20000 }, async () => {
  const redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A') });
  const b = await startServer({ args: fleetArgs(redis, 'B') });
  const pa = await connect(a.port); await join(pa, 'on-a', 'dice');
  const pb = await connect(b.port); await join(pb, 'on-b', 'flag');
  const list = async (s) => (await (await fetch(`${s.url}/api/rooms`)).json()).map((r) => `${r.id}@${r.instance}:${r.clients}`).sort();
  // each server writes its rows and reads the others' once a second
  const settled = async (s, want) => {
    const end = performance.now() + 3000;
    let got;
    while (performance.now() < end) {
      got = await list(s);
      if (JSON.stringify(got) === JSON.stringify(want)) return got;
      await sleep(100);
    }
    return got;
  };
  assert.deepEqual(await settled(a, ['on-a@A:1', 'on-b@B:1']), ['on-a@A:1', 'on-b@B:1']);
  assert.deepEqual(await settled(b, ['on-a@A:1', 'on-b@B:1']), ['on-a@A:1', 'on-b@B:1']);
  pb.close();
  await b.stop('SIGTERM');
  assert.deepEqual(await settled(a, ['on-a@A:1']), ['on-a@A:1']);
  pa.close();
});

test('POST /admin/drain: refused from a player behind a trusted proxy; from loopback it hands the rooms over', { skip, timeout: 20000 }, async () => {
  const redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A', ['--trusted-proxies', '127.0.0.1/32']) });
  const b = await startServer({ args: fleetArgs(redis, 'B') });
  const p1 = await connect(a.port);
  await join(p1, 'drained', 'dough');
  const outside = await fetch(`${a.url}/admin/drain`, { method: 'POST', headers: { 'x-forwarded-for': '203.0.113.7' } });
  assert.equal(outside.status, 403);
  assert.equal((await fetch(`${a.url}/healthz`)).status, 200);
  const get = await fetch(`${a.url}/admin/drain`);
  assert.notEqual(get.status, 202, 'GET does not drain');

  const t0 = performance.now();
  const res = await fetch(`${a.url}/admin/drain`, { method: 'POST' });
  assert.equal(res.status, 202);
  const closed = await p1.whenClosed;
  assert.equal(closed.code, 1001);
  assert.equal((await fetch(`${a.url}/healthz`)).status, 503, 'readiness fails while drained');
  assert.equal(redisCli(redis, 'EXISTS', 'tumble:lease:drained'), '0', 'lease given up');
  const p2 = await connect(b.port);
  const w = await join(p2, 'drained');
  assert.equal(w.scene, 'dough');
  const ms = performance.now() - t0;
  // typically 50-200 ms; the bound leaves room for a machine several times overloaded
  assert.ok(ms < 3000, `handed over in ${ms.toFixed(0)} ms (load average ${os.loadavg()[0].toFixed(1)})`);
  // a drained server refuses WebSockets, so a router tries the next server
  await assert.rejects(connect(a.port));
  assert.equal((await metrics(b.url)).tumble_handoffs_total, 1);
  p2.close();
});

// A stand-in for the router: every new TCP connection goes to the port
// target() names at that moment.
function switchProxy(target) {
  const conns = new Set();
  const server = net.createServer((down) => {
    const up = net.connect(target(), '127.0.0.1');
    conns.add(down); conns.add(up);
    down.pipe(up); up.pipe(down);
    const end = () => { down.destroy(); up.destroy(); conns.delete(down); conns.delete(up); };
    down.on('error', end); up.on('error', end); down.on('close', end); up.on('close', end);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    port: server.address().port,
    close: () => { for (const c of conns) c.destroy(); server.close(); },
  })));
}

test('tumble-load follows its rooms when their server drains: reconnects counted, no errors', { skip, timeout: 40000 }, async () => {
  const redis = await startRedis();
  const a = await startServer({ args: fleetArgs(redis, 'A', ['--room-create-rate', '1000']) });
  const b = await startServer({ args: fleetArgs(redis, 'B', ['--room-create-rate', '1000']) });
  let target = a.port;
  const proxy = await switchProxy(() => target);
  after(() => proxy.close());
  const bin = process.env.TUMBLE_LOAD_BIN || path.join(ROOT, 'build/tumble-load');
  const load = spawn(bin, ['--url', `ws://127.0.0.1:${proxy.port}`, '--rooms', '4', '--clients-per-room', '2',
    '--mix', 'tower,dice,flag,dough', '--warmup', '1', '--duration', '6', '--json', '--quiet', '--prefix', 'moving'], { stdio: ['ignore', 'pipe', 'pipe'] });
  after(() => load.kill('SIGKILL'));
  let out = '';
  let err = '';
  load.stdout.on('data', (d) => { out += d; });
  load.stderr.on('data', (d) => { err += d; });
  const done = new Promise((resolve) => load.on('exit', resolve));
  // wait for the 4 rooms on A, then move them: drain A, the router now points at B
  for (let i = 0; i < 100 && (await (await fetch(`${a.url}/healthz`)).json()).clients < 8; i++) await sleep(100);
  await sleep(2000);
  target = b.port;
  await a.stop('SIGTERM');
  const code = await done;
  assert.ok(out.trim(), `tumble-load printed nothing (exit ${code}): ${err}`);
  const report = JSON.parse(out.trim().split('\n').pop());
  assert.equal(report.reconnects, 8, `every client reconnected once: ${out}\n${err}`);
  assert.equal(report.errors, 0, `no errors: ${out}\n${err}`);
  assert.equal(code, 0);
  const mb = await metrics(b.url);
  assert.equal(mb.tumble_handoffs_total, 4, 'the 4 rooms continued on B from their checkpoints');
});

test('a bad --redis URL is a clear start-up error', async () => {
  await assert.rejects(startServer({ args: ['--redis', 'http://x'] }), /redis URL must start with redis:\/\//);
  await assert.rejects(startServer({ args: ['--redis', 'redis://host:99999'] }), /port must be 1\.\.65535/);
});
