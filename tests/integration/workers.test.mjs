// workers.test.mjs: with --workers 2 the rooms spread over both workers and
// every room keeps 120 steps per second.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';

after(stopAll);

test('--workers 2 spreads rooms over both workers, each room at 120 steps/s', async () => {
  const srv = await startServer({ args: ['--workers', '2'] });
  const c = await connect(srv.port);
  await join(c, 'extra-1', 'pile'); // a sixth room, placed on the less loaded worker
  const rooms0 = await (await fetch(`${srv.url}/api/rooms`)).json();
  const workers = new Set(rooms0.map((r) => r.worker));
  assert.deepEqual([...workers].sort(), [0, 1]);
  const perWorker = [0, 1].map((w) => rooms0.filter((r) => r.worker === w).length);
  assert.ok(Math.abs(perWorker[0] - perWorker[1]) <= 1, `rooms per worker ${perWorker}`);
  const t0 = performance.now();
  await sleep(3000);
  const rooms1 = await (await fetch(`${srv.url}/api/rooms`)).json();
  const secs = (performance.now() - t0) / 1000;
  for (const r1 of rooms1) {
    const r0 = rooms0.find((r) => r.id === r1.id);
    const rate = (r1.steps - r0.steps) / secs;
    assert.ok(rate > 114 && rate < 126, `${r1.id} stepped ${rate.toFixed(1)}/s`);
  }
  const m = await (await fetch(`${srv.url}/metrics`)).text();
  assert.match(m, /^tumble_worker_rooms\{worker="0"\} [34]$/m);
  assert.match(m, /^tumble_worker_rooms\{worker="1"\} [34]$/m);
  assert.match(m, /^tumble_worker_steps_total\{worker="1"\} [1-9]/m);
  c.close();
});
