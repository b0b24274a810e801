// ws.test.mjs: the tumble.v1 WebSocket against a real server: upgrade,
// welcome, snapshot cadence, parameter broadcast, and every refusal a
// hostile or broken client can trigger, while a well-behaved client in the
// same room keeps its snapshot rate.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { startServer, stopAll, connect, join, metrics, sleep } from './harness.mjs';

let srv;
before(async () => { srv = await startServer({ args: ['--max-message-bytes', '8192', '--workers', '2'] }); });
after(stopAll);

test('upgrade negotiates tumble.v1', async () => {
  const c = await connect(srv.port);
  assert.equal(c.ws.protocol, 'tumble.v1');
  c.close();
});

test('a joiner gets welcome with static description and state, then 60 snapshots/s with ticks +2', async () => {
  const c = await connect(srv.port);
  const welcome = await join(c, 'tower');
  assert.equal(welcome.room, 'tower');
  assert.equal(welcome.kind, 'rigid');
  assert.equal(welcome.scene, 'tower');
  assert.ok(welcome.static && welcome.state, 'static and state present');
  assert.equal(typeof welcome.instance, 'string');
  await c.type('snapshot');
  c.drop('snapshot');
  c.snapshots = 0;
  const t0 = performance.now();
  await sleep(2000);
  const rate = c.snapshots / ((performance.now() - t0) / 1000);
  assert.ok(rate >= 57 && rate <= 63, `snapshot rate ${rate.toFixed(1)}/s`);
  // Ticks advance by 2. A server thread starved for > 25 ms by other load on
  // the machine makes the newest-wins slot skip one: allowed rarely, never
  // backwards, never odd.
  const snaps = c.inbox.filter((m) => m.type === 'snapshot');
  let twos = 0;
  for (let i = 1; i < snaps.length; i++) {
    const d = Number(snaps[i].tick) - Number(snaps[i - 1].tick);
    assert.ok(d > 0 && d % 2 === 0, `tick step ${d}`);
    if (d === 2) twos++;
  }
  assert.ok(twos >= 0.95 * (snaps.length - 1), `${twos} of ${snaps.length - 1} steps were +2`);
  c.close();
});

test('joining a missing room creates it with the scene asked for; a bad id is refused', async () => {
  const c = await connect(srv.port);
  const w = await join(c, 'my-room_1', 'dough');
  assert.equal(w.kind, 'soft');
  const rooms = await (await fetch(`${srv.url}/api/rooms`)).json();
  assert.ok(rooms.some((r) => r.id === 'my-room_1' && r.clients === 1));
  c.send({ type: 'join', v: 1, room: 'bad room!', scene: 'tower' });
  const err = await c.type('error');
  assert.equal(err.code, 'bad_room_id');
  c.send({ type: 'join', v: 1, room: 'nowhere' });
  assert.equal((await c.type('error')).code, 'bad_scene');
  c.close();
});

test('a parameter change reaches everyone with its author; bad values change nothing', async () => {
  const a = await connect(srv.port);
  const b = await connect(srv.port);
  const wa = await join(a, 'params', 'tower');
  await join(b, 'params', 'tower');
  a.send({ type: 'param', name: 'friction', value: 1.25, seq: 7 });
  const pa = await a.type('param');
  const pb = await b.type('param');
  assert.equal(pb.name, 'friction');
  assert.equal(pb.value, 1.25);
  assert.equal(pb.by, wa.client);
  assert.equal(pa.by, wa.client);
  for (const value of [99, -1, NaN, Infinity]) {
    a.send({ type: 'param', name: 'friction', value, seq: 8 });
    const e = await a.type('error');
    assert.ok(['invalid', 'out_of_range'].includes(e.code), `${value}: ${e.code}`);
  }
  a.send({ type: 'param', name: 'no_such_thing', value: 1 });
  assert.equal((await a.type('error')).code, 'unknown_name');
  await sleep(100);
  assert.equal(b.inbox.filter((m) => m.type === 'param').length, 0, 'no broadcast for rejected values');
  a.close(); b.close();
});

test('garbage, wrong version, unknown type, text and oversized frames get errors; a good client keeps >= 57 snapshots/s', async () => {
  const good = await connect(srv.port);
  await join(good, 'abuse', 'tower');
  await good.type('snapshot');
  good.snapshots = 0;
  const t0 = performance.now();
  const m0 = await metrics(srv.url);

  const bad = await connect(srv.port);
  await join(bad, 'abuse', 'tower');
  bad.sendRaw(Buffer.from([0xc1, 0xff, 0x00, 0x13]));
  assert.equal((await bad.type('error')).code, 'malformed');
  bad.sendRaw(Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff])); // array header promising 2^32 elements
  assert.equal((await bad.type('error')).code, 'malformed');
  bad.send({ type: 'warp-drive' });
  assert.equal((await bad.type('error')).code, 'unknown_type');
  bad.sendRaw('hello', { binary: false });
  assert.equal((await bad.type('error')).code, 'text_frame');
  for (let i = 0; i < 200; i++) bad.sendRaw(Buffer.from(Array.from({ length: 64 }, (_, j) => (i * 31 + j * 7) & 255)));
  await sleep(300);

  const v2 = await connect(srv.port);
  v2.send({ type: 'join', v: 2, room: 'abuse' });
  assert.equal((await v2.type('error')).code, 'version');
  assert.equal((await v2.whenClosed).code, 1002);

  const big = await connect(srv.port);
  await join(big, 'abuse', 'tower');
  big.sendRaw(Buffer.alloc(20000, 0x90));
  assert.equal((await big.type('error')).code, 'too_big');
  assert.equal((await big.whenClosed).code, 1009);

  // A fragmented message within the cap is reassembled.
  const frag = await connect(srv.port);
  const payload = Buffer.from(encode({ type: 'join', v: 1, room: 'abuse', name: 'x'.repeat(20) }));
  frag.ws.send(payload.subarray(0, 10), { fin: false });
  frag.ws.send(payload.subarray(10), { fin: true });
  await frag.type('welcome');

  await sleep(Math.max(0, 2000 - (performance.now() - t0)));
  const rate = good.snapshots / ((performance.now() - t0) / 1000);
  assert.ok(rate >= 57, `good client got ${rate.toFixed(1)} snapshots/s`);
  assert.equal(good.closed, null);
  const m1 = await metrics(srv.url);
  const d = (k) => m1[k] - (m0[k] ?? 0);
  assert.ok(d('tumble_inputs_rejected_total{reason="malformed"}') >= 2);
  assert.equal(d('tumble_inputs_rejected_total{reason="unknown_type"}'), 1);
  assert.equal(d('tumble_inputs_rejected_total{reason="text_frame"}'), 1);
  assert.equal(d('tumble_inputs_rejected_total{reason="version"}'), 1);
  assert.equal(d('tumble_inputs_rejected_total{reason="too_big"}'), 1);
  for (const c of [good, bad, frag]) c.close();
});

test('inputs before join are refused', async () => {
  const c = await connect(srv.port);
  c.send({ type: 'reset' });
  assert.equal((await c.type('error')).code, 'not_joined');
  c.close();
});

test('an input flood hits the rate limit with errors and the room keeps its rate', async () => {
  const good = await connect(srv.port);
  await join(good, 'flood', 'tower');
  const f = await connect(srv.port);
  await join(f, 'flood', 'tower');
  await good.type('snapshot');
  good.snapshots = 0;
  const t0 = performance.now();
  for (let i = 0; i < 2000; i++) f.send({ type: 'poke', pos: [0, 1, 0], impulse: [0, 1, 0], seq: i });
  for (let i = 0; i < 50; i++) f.send({ type: 'throw', pos: [0, 1, 5], vel: [0, 0, -10], seq: i });
  const e = await f.next((m) => m.type === 'error' && m.code === 'rate');
  assert.match(e.message, /rate/);
  await sleep(1500);
  const rate = good.snapshots / ((performance.now() - t0) / 1000);
  assert.ok(rate >= 57, `good client got ${rate.toFixed(1)} snapshots/s`);
  const m = await metrics(srv.url);
  assert.ok(m['tumble_inputs_rejected_total{reason="rate"}'] > 1000);
  good.close(); f.close();
});

test('a per-address connection limit refuses the excess', async () => {
  const limited = await startServer({ args: ['--max-conns-per-address', '3'] });
  const ok = [];
  for (let i = 0; i < 3; i++) ok.push(await connect(limited.port));
  await assert.rejects(connect(limited.port));
  const m = await metrics(limited.url);
  assert.equal(m['tumble_connections_refused_total{reason="per_address"}'], 1);
  ok.forEach((c) => c.close());
  await limited.stop();
});

test('pings are answered with pongs', async () => {
  const c = await connect(srv.port);
  c.send({ type: 'ping', t: 1234.5 });
  const p = await c.type('pong');
  assert.equal(p.t, 1234.5);
  c.close();
});
