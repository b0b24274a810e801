// cloth-grid.test.mjs: the cloth `grid` parameter through a real server. A
// change rebuilds the cloth: every client of the room gets a `scene` with the
// new mesh and a keyframe, then `param_changed`, and the deltas after it
// decode against that keyframe. A bad value is refused with `bad_value` and
// changes nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';

let srv;
before(async () => { srv = await startServer({ args: ['--workers', '1'] }); });
after(stopAll);

const gridOf = (m) => m.params.find((p) => p.name === 'grid');

test('the flag\'s grid is a parameter; a change sends everyone a scene with the new mesh', async () => {
  const a = await connect(srv.port, { name: 'setter' });
  const b = await connect(srv.port, { name: 'watcher' });
  const wa = await join(a, 'grid-test', 'flag');
  await join(b, 'grid-test', 'flag');
  const g = gridOf(wa);
  assert.deepEqual([g.value, g.min, g.max, g.default, g.step], [16, 6, 48, 16, 1]);
  assert.deepEqual([wa.static.meshes[0].grid_w, wa.static.meshes[0].grid_h], [16, 10]);

  a.send({ type: 'param', name: 'grid', value: 24 });
  for (const c of [a, b]) {
    const scene = await c.type('scene');
    const mesh = scene.static.meshes[0];
    assert.deepEqual([mesh.grid_w, mesh.grid_h, mesh.verts], [24, 15, 360], c.name);
    assert.equal(gridOf(scene).value, 24);
    const changed = await c.type('param_changed');
    assert.deepEqual([changed.name, changed.value], ['grid', 24]);
  }
  // The stream goes on against the new keyframe: deltas apply, with the new vertex count.
  b.dropSnapshots();
  await sleep(300);
  const snap = await b.snapshot();
  assert.equal(snap.state.meshes[0].length, 3 * 360);
  assert.equal(b.snapErrors.length, 0, String(b.snapErrors[0]));
  a.close(); b.close();
});

test('an out-of-range grid is refused with bad_value and changes nothing', async () => {
  const a = await connect(srv.port, { name: 'bad' });
  await join(a, 'grid-bad', 'cape');
  for (const value of [5, 49, -3, 1e6]) {
    const seq = a.send({ type: 'param', name: 'grid', value });
    const err = await a.error('bad_value');
    assert.equal(err.seq, seq);
    assert.match(err.message, /grid/);
  }
  // Still the cape's own 12 x 17: a late joiner sees it.
  const late = await connect(srv.port, { name: 'late' });
  const w = await join(late, 'grid-bad');
  assert.deepEqual([w.static.meshes[0].grid_w, w.static.meshes[0].grid_h, gridOf(w).value], [12, 17, 17]);
  assert.equal(a.inbox.filter((m) => m.type === 'scene').length, 0, 'no scene for a refused value');
  a.close(); late.close();
});
