// watchers.test.mjs: spectators (issue 17 point 7; PROTOCOL.md "Watchers").
// A hello with watch: true joins a room as a watcher: it is sent the room like
// a player (welcome, snapshots, events), every input it sends is refused with
// watch_only and changes nothing, it counts against --max-watchers-per-room
// and not --max-clients-per-room, and the players see how many watch (welcome,
// `watchers` messages, the lobby, /api/rooms).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, metrics, sleep } from './harness.mjs';

after(stopAll);

let shared;
async function server() {
  shared ??= await startServer();
  return shared;
}

const watch = (client, room, scene) => join(client, room, scene, { watch: true });
const snapshots = (c) => c.inbox.filter((m) => m.type === 'snap_delta' || m.type === 'snap_key');

test('a watcher is sent the room like a player: welcome, snapshots and events', async () => {
  const s = await server();
  const player = await connect(s.port, { name: 'Ada' });
  const viewer = await connect(s.port, { name: 'Eve' });
  await join(player, 'w-stream', 'tower');
  const welcome = await watch(viewer, 'w-stream');
  assert.equal(welcome.room, 'w-stream');
  assert.equal(welcome.scene, 'tower');
  assert.equal(welcome.watchers, 1, 'its own welcome counts it');
  assert.deepEqual(welcome.peers.map((p) => p.name), ['Ada'], 'the peers are the players: a watcher is not one');
  viewer.dropSnapshots();
  // a stream, not a rate (the machine may be busy): 20 snapshots, each of a newer tick
  for (let i = 0; i < 30 && snapshots(viewer).length < 20; i++) await sleep(100);
  const got = snapshots(viewer);
  assert.ok(got.length >= 20, `${got.length} snapshots in 3 s`);
  for (let i = 1; i < got.length; i++) assert.ok(got[i].state.tick > got[i - 1].state.tick);
  assert.ok(got.at(-1).state.tick > welcome.state.tick, 'the ticks move on');
  assert.equal(viewer.snapErrors.length, 0);
  // a player's slider reaches the watcher as it reaches everyone
  player.send({ type: 'param', name: 'friction', value: 0.35 });
  const changed = await viewer.type('param_changed');
  assert.equal(changed.name, 'friction');
  assert.equal(changed.value, 0.35);
  assert.equal(changed.by_name, 'Ada');
  player.close(); viewer.close();
});

test("a watcher's inputs are refused with watch_only, change nothing, and it stays connected", async () => {
  const s = await server();
  const player = await connect(s.port, { name: 'Ada' });
  const viewer = await connect(s.port, { name: 'Eve' });
  await join(player, 'w-inputs', 'tower');
  await watch(viewer, 'w-inputs');
  await sleep(300);
  player.dropSnapshots();
  const before = (await player.snapshot()).state;
  const applied0 = (await metrics(s.url)).tumble_inputs_applied_total;
  const plank = [...before.bodies.keys()][0];
  const sent = [
    viewer.send({ type: 'throw', origin: [0, 1.5, 6], velocity: [0, 2, -12], shape: 'ball' }),
    viewer.send({ type: 'poke', body: plank, point: before.bodies.get(plank).pos, impulse: [0, 0, -50] }),
    viewer.send({ type: 'grab_start', pointer: 0, point: before.bodies.get(plank).pos, body: plank }),
    viewer.send({ type: 'param', name: 'friction', value: 1.1 }),
    viewer.send({ type: 'action', action: 'knock' }),
    viewer.send({ type: 'contacts_view', on: true }),
  ];
  for (const seq of sent) {
    const e = await viewer.next((m) => m.type === 'error' && m.seq === seq);
    assert.equal(e.code, 21);
    assert.equal(e.name, 'watch_only');
    assert.match(e.message, /watches/);
  }
  await sleep(400);
  // nothing reached the world: no new body, no slider change, no reset, the plank where it was
  player.dropSnapshots();
  const now = (await player.snapshot()).state;
  assert.deepEqual([...now.bodies.keys()], [...before.bodies.keys()], 'no projectile was added');
  const moved = Math.hypot(...now.bodies.get(plank).pos.map((x, i) => x - before.bodies.get(plank).pos[i]));
  assert.ok(moved < 0.002, `the poked plank moved ${moved.toFixed(4)} m`);
  assert.equal(player.inbox.filter((m) => ['param_changed', 'reset', 'contacts'].includes(m.type)).length, 0);
  assert.equal(viewer.inbox.filter((m) => m.type === 'contacts').length, 0);
  const m = await metrics(s.url);
  assert.equal(m.tumble_inputs_applied_total, applied0, 'the world applied none of them');
  assert.ok(m['tumble_inputs_rejected_total{reason="watch_only"}'] >= sent.length);
  // still connected and still watching
  viewer.send({ type: 'ping', client_time: 42 });
  assert.equal((await viewer.type('pong')).client_time, 42);
  viewer.dropSnapshots();
  await viewer.snapshot();
  assert.equal(viewer.closed, null);
  // the same throw from the player is applied: the refusal above is the watcher's, not the room's
  player.send({ type: 'throw', origin: [0, 1.5, 6], velocity: [0, 2, -12], shape: 'ball' });
  await sleep(300);
  player.dropSnapshots();
  assert.equal((await player.snapshot()).state.bodies.size, before.bodies.size + 1);
  player.close(); viewer.close();
});

test('watchers do not count against the player limit and have a limit of their own', async () => {
  const s = await startServer({ args: ['--max-clients-per-room', '2', '--max-watchers-per-room', '2'] });
  const open = [];
  const conn = async (name) => { const c = await connect(s.port, { name }); open.push(c); return c; };
  const [p1, p2, p3] = [await conn('p1'), await conn('p2'), await conn('p3')];
  const [w1, w2, w3, w4] = [await conn('w1'), await conn('w2'), await conn('w3'), await conn('w4')];
  await join(p1, 'w-limits', 'pile');
  await watch(w1, 'w-limits');
  await watch(w2, 'w-limits');
  // two watchers in: the second player still gets in
  assert.equal((await join(p2, 'w-limits')).room, 'w-limits');
  // the room has its two players: a third is refused, and so is a third watcher
  p3.send({ type: 'hello', version: 1, room: 'w-limits', kind: null, scene: null, name: 'p3' });
  const full = await p3.error('room_full');
  assert.equal(full.code, 8);
  w3.send({ type: 'hello', version: 1, room: 'w-limits', kind: null, scene: null, name: 'w3', watch: true });
  const wfull = await w3.error('room_full');
  assert.equal(wfull.code, 8);
  assert.match(wfull.message, /2 watchers.*--max-watchers-per-room/);
  // a watcher leaving makes room for a watcher, not a player
  w1.close();
  await w1.whenClosed;
  await sleep(200);
  p3.send({ type: 'hello', version: 1, room: 'w-limits', kind: null, scene: null, name: 'p3' });
  await p3.error('room_full');
  assert.equal((await watch(w4, 'w-limits')).watchers, 2);
  // a refused hello leaves the connection unjoined: it may join as a watcher now that there is room
  w2.close();
  await w2.whenClosed;
  await sleep(200);
  assert.equal((await watch(w3, 'w-limits')).watchers, 2);
  const rooms = await (await fetch(`${s.url}/api/rooms`)).json();
  const row = rooms.find((r) => r.id === 'w-limits');
  assert.equal(row.clients, 2);
  assert.equal(row.watchers, 2);
  for (const c of open) c.close();
  await s.stop();
});

test('the players see how many watch: watchers messages, welcome, lobby and /api/rooms', async () => {
  const s = await server();
  const player = await connect(s.port, { name: 'Ada' });
  const [w1, w2] = [await connect(s.port, { name: 'w1' }), await connect(s.port, { name: 'w2' })];
  const first = await join(player, 'w-count', 'dice');
  assert.equal(first.watchers, undefined, 'a room without watchers sends the welcome it always did');
  await watch(w1, 'w-count');
  assert.equal((await player.type('watchers')).count, 1);
  await watch(w2, 'w-count');
  assert.equal((await player.type('watchers')).count, 2);
  // the watcher already in hears of the second one too
  assert.equal((await w1.type('watchers')).count, 2);
  assert.equal(player.inbox.filter((m) => m.type === 'peer_joined').length, 0, 'a watcher is no peer');
  player.send({ type: 'lobby_req' });
  const row = (await player.type('lobby')).rooms.find((r) => r.id === 'w-count');
  assert.equal(row.clients, 1);
  assert.equal(row.watchers, 2);
  const api = (await (await fetch(`${s.url}/api/rooms`)).json()).find((r) => r.id === 'w-count');
  assert.equal(api.clients, 1);
  assert.equal(api.watchers, 2);
  // a player who comes later is told in its welcome
  const late = await connect(s.port, { name: 'Grace' });
  const lw = await join(late, 'w-count');
  assert.equal(lw.watchers, 2);
  assert.deepEqual(lw.peers.map((p) => p.name).sort(), ['Ada', 'Grace']);
  w1.close();
  assert.equal((await player.type('watchers')).count, 1);
  assert.equal((await late.type('watchers')).count, 1);
  assert.equal(player.inbox.filter((m) => m.type === 'peer_left').length, 0);
  w2.close();
  assert.equal((await player.type('watchers')).count, 0);
  player.close(); late.close();
});

test('a room with only a watcher in it streams and is not closed as idle', async () => {
  const s = await startServer({ args: ['--room-idle-timeout', '1'] });
  const viewer = await connect(s.port, { name: 'Eve' });
  const welcome = await watch(viewer, 'w-alone', 'pile');
  assert.equal(welcome.peers.length, 0);
  assert.equal(welcome.watchers, 1);
  await sleep(2500); // idle rooms go after 1 s; housekeeping looks twice a second
  const rooms = await (await fetch(`${s.url}/api/rooms`)).json();
  assert.ok(rooms.some((r) => r.id === 'w-alone' && r.watchers === 1 && r.clients === 0), JSON.stringify(rooms.map((r) => r.id)));
  viewer.dropSnapshots();
  const a = await viewer.snapshot();
  await sleep(300);
  const b = (await viewer.snapshot()).state;
  assert.ok(b.tick > a.state.tick);
  viewer.close();
  await viewer.whenClosed;
  await sleep(2000);
  const after = await (await fetch(`${s.url}/api/rooms`)).json();
  assert.ok(!after.some((r) => r.id === 'w-alone'), 'once the watcher has gone, the room is closed as idle');
  await s.stop();
});
