// restart.test.mjs: a restart loses nothing. A tower is knocked down, the
// server gets SIGTERM mid-fall and saves every room to --state-dir; a new
// server on the same folder restores them, and a rejoining client sees the
// tower continue from where it was (same bodies, poses within what the
// elapsed ticks allow, tick counting on, bodies still moving), not a rebuilt
// one. Corrupt and truncated state files are reported, skipped and counted;
// the server starts anyway.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, stopAll, connect, join, sleep, metrics } from './harness.mjs';

after(stopAll);

const isSnap = (m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state;
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
function stateDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-state-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('SIGTERM mid-fall saves the rooms; a restarted server continues the fall from the saved state', async () => {
  const dir = stateDir();
  let srv = await startServer({ args: ['--state-dir', dir, '--workers', '1'] });
  const a = await connect(srv.port, { name: 'before' });
  const welcome = await join(a, 'fall', 'tower');
  const initial = welcome.state;
  a.send({ type: 'action', action: 'knock', scene: null });
  await sleep(700); // the ball is through the tower, planks in the air
  const before = a.inbox.filter(isSnap).map((m) => m.state);
  const last = before[before.length - 1];
  assert.ok(last && last.awake > 10, `tower falling before the stop (awake ${last?.awake})`);

  const exit = await srv.stop('SIGTERM');
  assert.equal(exit.code, 0, srv.stderr);
  assert.ok(fs.existsSync(path.join(dir, 'room-fall.state')), `state files: ${fs.readdirSync(dir)}`);
  for (const id of ['tower', 'dice', 'flag', 'cape', 'dough']) assert.ok(fs.existsSync(path.join(dir, `room-${id}.state`)), id);
  assert.ok(!fs.readdirSync(dir).some((f) => f.endsWith('.tmp')), 'no temporary files left');

  const t0 = performance.now();
  srv = await startServer({ args: ['--state-dir', dir, '--workers', '1'] });
  const b = await connect(srv.port, { name: 'after' });
  const again = await join(b, 'fall'); // no scene: the room exists again
  const first = again.state;
  const ranMs = performance.now() - t0;

  // Same room, same bodies (the 24 planks and the knock ball), tick carried on.
  assert.equal(again.scene, 'tower');
  assert.deepEqual([...first.bodies.keys()].sort((x, y) => x - y), [...last.bodies.keys()].sort((x, y) => x - y));
  const ticks = first.tick - last.tick;
  assert.ok(ticks >= 0 && ticks <= 120 * (ranMs / 1000 + 2), `tick ${last.tick} -> ${first.tick} (${ranMs.toFixed(0)} ms)`);

  // Poses continue: every body within what it could travel in the elapsed
  // ticks (15 m/s is above anything in the tower scene after the first hit)
  // plus quantization; and the tower has not been rebuilt.
  const allowance = 15 * (ticks / 120) + 0.01;
  if (process.env.TUMBLE_TEST_VERBOSE) console.log({ ticks, ranMs, maxMove: Math.max(...[...last.bodies].map(([id, p]) => dist(p.pos, first.bodies.get(id).pos))) });
  let rebuiltLike = 0;
  for (const [id, p] of last.bodies) {
    const q = first.bodies.get(id);
    assert.ok(dist(p.pos, q.pos) <= allowance, `body ${id} moved ${dist(p.pos, q.pos).toFixed(3)} m in ${ticks} ticks`);
    const orig = initial.bodies.get(id);
    if (orig && dist(orig.pos, q.pos) < 0.05) rebuiltLike++;
  }
  const displaced = [...last.bodies.keys()].filter((id) => initial.bodies.has(id) && dist(initial.bodies.get(id).pos, last.bodies.get(id).pos) > 0.1).length;
  assert.ok(displaced >= 6, `${displaced} planks displaced before the stop`);
  assert.ok(rebuiltLike < 24 - displaced / 2, `${rebuiltLike} bodies back at their start poses: looks rebuilt`);

  // Motion continues after the restart.
  b.dropSnapshots();
  await sleep(300);
  const later = b.inbox.filter(isSnap).map((m) => m.state);
  assert.ok(later.length >= 10, `${later.length} snapshots after rejoin`);
  const end = later[later.length - 1];
  const moving = [...end.bodies.keys()].filter((id) => dist(end.bodies.get(id).pos, first.bodies.get(id).pos) > 0.002).length;
  // The stop came 0.7 s into a fall that lasts seconds: the restored bodies are
  // still awake (sleep state is part of the saved image) and keep moving.
  assert.ok(first.awake > 10, `${first.awake} bodies awake after the restart (${last.awake} before the stop)`);
  assert.ok(moving >= 3, `${moving} bodies moved after the restart (awake ${first.awake})`);
  const m = await metrics(srv.url);
  assert.ok(m.tumble_rooms_restored_total >= 6, `restored ${m.tumble_rooms_restored_total}`);
  assert.equal(m.tumble_state_files_rejected_total, 0);
  b.close();
  await srv.stop();
});

test('corrupt, truncated and foreign state files are reported, counted and skipped; the server serves', async () => {
  const dir = stateDir();
  let srv = await startServer({ args: ['--state-dir', dir] });
  await srv.stop();
  const good = fs.readFileSync(path.join(dir, 'room-tower.state'));
  fs.writeFileSync(path.join(dir, 'room-trunc.state'), good.subarray(0, good.length >> 1));
  const flipped = Buffer.from(good); flipped[flipped.length - 7] ^= 0x40;
  fs.writeFileSync(path.join(dir, 'room-flip.state'), flipped);
  fs.writeFileSync(path.join(dir, 'room-rand.state'), Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) & 255)));
  fs.writeFileSync(path.join(dir, 'room-empty.state'), Buffer.alloc(0));
  fs.writeFileSync(path.join(dir, 'room-other.state'), good); // a tower file under another room's name
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a state file');

  srv = await startServer({ args: ['--state-dir', dir, '--log-level', 'info'] });
  const m = await metrics(srv.url);
  assert.equal(m.tumble_state_files_rejected_total, 5, srv.stderr);
  assert.equal(m.tumble_rooms_restored_total, 5);
  for (const bad of ['trunc', 'flip', 'rand', 'empty', 'other']) {
    assert.match(srv.stderr, new RegExp(`room-${bad}\\.state: .*skipped`));
    assert.ok(fs.existsSync(path.join(dir, `room-${bad}.state.bad`)), `${bad} kept as .bad`);
  }
  const c = await connect(srv.port);
  await join(c, 'tower');
  await c.snapshot();
  c.close();
  const exit = await srv.stop();
  assert.equal(exit.code, 0);
  assert.ok(fs.existsSync(path.join(dir, 'notes.txt')), 'other files are left alone');
});
