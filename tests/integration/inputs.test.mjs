// inputs.test.mjs: soft and cloth inputs end to end, seen by another client
// in the streamed (quantized) vertices, not by the server's own word:
//   - a poke on the dough is a press: the dent shows in the other client's
//     mesh and stays;
//   - the flag's iterations slider, sent as a param message, reaches everyone
//     and changes how far the streamed cloth stretches.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';

after(stopAll);

let srv;
async function server() {
  srv ??= await startServer();
  return srv;
}

const mesh = (m) => m.state.meshes[0];
function centreY(v) {
  let s = 0;
  for (let i = 1; i < v.length; i += 3) s += v[i];
  return s / (v.length / 3);
}

test('a poke on the dough presses a dent that another client sees and that stays', async () => {
  const s = await server();
  const a = await connect(s.port, { name: 'presser' });
  const b = await connect(s.port, { name: 'watcher' });
  await join(a, 'dent', 'dough');
  await join(b, 'dent');
  await sleep(500);
  b.dropSnapshots();
  const v0 = mesh(await b.snapshot());
  let top = 0;
  for (let i = 0; i < v0.length / 3; i++) if (v0[3 * i + 1] > v0[3 * top + 1]) top = i;
  const before = v0[3 * top + 1] - centreY(v0);
  a.send({ type: 'poke', body: null, point: [v0[3 * top], v0[3 * top + 1], v0[3 * top + 2]], impulse: [0, -4, 0] });
  await sleep(1000);
  b.dropSnapshots();
  const v1 = mesh(await b.snapshot());
  const after1 = v1[3 * top + 1] - centreY(v1);
  await sleep(1500);
  b.dropSnapshots();
  const v2 = mesh(await b.snapshot());
  const after2 = v2[3 * top + 1] - centreY(v2);
  assert.ok(before - after1 >= 0.15 && before - after1 <= 0.25, `top vertex ${before.toFixed(3)} -> ${after1.toFixed(3)} m above the centre`);
  assert.ok(Math.abs(after2 - after1) < 0.01, `the dent stays: ${after1.toFixed(3)} -> ${after2.toFixed(3)}`);
  assert.equal(a.inbox.filter((m) => m.type === 'error').length, 0);
  a.close(); b.close();
});

// Mean |length / first length - 1| of the grid's structural edges over the snapshots.
function stretch(snaps, w, h, rest) {
  let sum = 0, n = 0;
  const len = (v, i, j) => Math.hypot(v[3 * i] - v[3 * j], v[3 * i + 1] - v[3 * j + 1], v[3 * i + 2] - v[3 * j + 2]);
  for (const v of snaps) {
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = y * w + x;
        if (x + 1 < w) { sum += Math.abs(len(v, i, i + 1) / rest[2 * i] - 1); n++; }
        if (y + 1 < h) { sum += Math.abs(len(v, i, i + w) / rest[2 * i + 1] - 1); n++; }
      }
    }
  }
  return sum / n;
}

test('the iterations slider reaches every client and changes how far the streamed flag stretches', async () => {
  const s = await server();
  const a = await connect(s.port, { name: 'slider' });
  const b = await connect(s.port, { name: 'watcher' });
  const w = await join(a, 'iters', 'flag');
  await join(b, 'iters');
  const cloth = w.static.meshes.find((m) => m.kind === 'cloth');
  const gw = cloth.grid_w ?? cloth.w, gh = cloth.grid_h ?? cloth.h;
  assert.ok(gw > 1 && gh > 1, `grid ${gw} x ${gh}: ${JSON.stringify(Object.keys(cloth))}`);
  const v0 = w.state.meshes[0];
  const rest = new Float64Array(2 * gw * gh);
  const len = (v, i, j) => Math.hypot(v[3 * i] - v[3 * j], v[3 * i + 1] - v[3 * j + 1], v[3 * i + 2] - v[3 * j + 2]);
  for (let y = 0; y < gh; y++) for (let x = 0; x < gw; x++) {
    const i = y * gw + x;
    if (x + 1 < gw) rest[2 * i] = len(v0, i, i + 1);
    if (y + 1 < gh) rest[2 * i + 1] = len(v0, i, i + gw);
  }
  const measure = async (iterations) => {
    a.send({ type: 'param', name: 'iterations', value: iterations });
    const changed = await b.next((m) => m.type === 'param_changed' && m.name === 'iterations', 3000);
    assert.equal(changed.value, iterations);
    await sleep(500);
    b.dropSnapshots();
    await sleep(2000);
    return stretch(b.inbox.filter((m) => m.type === 'snap_delta' || m.type === 'snap_key').map(mesh), gw, gh, rest);
  };
  const few = await measure(1);
  const many = await measure(20);
  assert.ok(few >= 2 * many, `mean structural stretch: 1 iteration ${few.toFixed(4)}, 20 iterations ${many.toFixed(4)}`);
  a.close(); b.close();
});
