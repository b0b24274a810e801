// room-ux.test.mjs: what the server tells people (issue #18), over the real tumble.v1
// WebSocket: a scene switch is announced to everyone with who did it; a hello that
// would create a room of another kind under a name in use is refused with the name's
// owner; a poke nudges (its speed change is capped), whatever impulse is sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(stopAll);

test('a scene switch is announced to everyone in the room, the switcher too, with who did it', async () => {
  const a = await connect(srv.port, { name: 'Ana' }), b = await connect(srv.port, { name: 'Ben' });
  await join(a, 'ux-switch', 'tower');
  await join(b, 'ux-switch', 'tower');
  const seq = a.send({ type: 'action', action: 'select', scene: 'dice' });
  for (const c of [a, b]) {
    const sc = await c.type('scene', 5000);
    assert.equal(sc.scene, 'dice');
    const r = await c.type('reset', 5000);
    assert.deepEqual([r.action, r.by_name], ['select', 'Ana']);
    assert.ok(r.by > 0);
  }
  assert.ok(seq > 0);
  a.close(); b.close();
});

test('a hello with another kind for a room in use is refused, naming the room that holds the name', async () => {
  const c = await connect(srv.port);
  c.send({ type: 'hello', version: 1, room: 'tower', kind: 'cloth', scene: 'flag', name: 'x' });
  const e = await c.error('bad_room', 5000);
  assert.match(e.message, /the name 'tower' is taken by a tower room \(rigid\)/);
  // The same kind (a link with a scene switched since) still joins.
  const d = await connect(srv.port);
  const w = await join(d, 'tower', 'dice', { kind: 'rigid' });
  assert.equal(w.scene, 'tower');
  c.close(); d.close();
});

test('a poke changes a body\'s speed by at most 1.5 m/s, whatever the impulse', async () => {
  const c = await connect(srv.port);
  const w = await join(c, 'ux-poke', 'tower');
  await sleep(1500); // the tower at rest
  c.dropSnapshots();
  const s0 = (await c.snapshot()).state;
  // The top plank.
  let top = null;
  for (const [id, b] of s0.bodies) if (b.shape?.material === 1 && (!top || b.pos[1] > s0.bodies.get(top).pos[1])) top = id;
  assert.ok(top != null, `a plank in ${w.scene}`);
  const p0 = s0.bodies.get(top).pos;
  c.send({ type: 'poke', body: top, point: p0, impulse: [0, 0, -50] });
  // 0.1 s later it has moved at most ~1.5 m/s * 0.1 s (and friction only slows it).
  const t0 = s0.tick;
  let moved = 0;
  for (;;) {
    const s = (await c.snapshot()).state;
    if (s.tick - t0 >= 12) { const p = s.bodies.get(top).pos; moved = Math.hypot(p[0] - p0[0], p[1] - p0[1], p[2] - p0[2]); break; }
  }
  assert.ok(moved > 0.02, `the plank moved (${moved.toFixed(3)} m)`);
  assert.ok(moved < 0.25, `a 50 N s poke moved it ${moved.toFixed(3)} m in 0.1 s: capped`);
  c.close();
});
