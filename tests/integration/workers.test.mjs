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

// The server's CPU by thread: each worker's own clock, the network thread's, the process's.
const cpuOf = (text) => {
  const v = (re) => { const m = re.exec(text); return m ? Number(m[1]) : NaN; };
  return {
    w0: v(/^tumble_worker_cpu_seconds_total\{worker="0"\} ([0-9.]+)$/m),
    w1: v(/^tumble_worker_cpu_seconds_total\{worker="1"\} ([0-9.]+)$/m),
    net: v(/^tumble_network_thread_cpu_seconds_total ([0-9.]+)$/m),
    proc: v(/^process_cpu_seconds_total ([0-9.]+)$/m),
  };
};

test('/metrics says how much CPU each worker, the network thread and the process used', async () => {
  const srv = await startServer({ args: ['--workers', '2'] });
  const url = `${srv.url}/metrics`;
  const a = cpuOf(await (await fetch(url)).text());
  for (const [k, v] of Object.entries(a)) assert.ok(Number.isFinite(v) && v >= 0, `${k} = ${v}`);
  // read in this order (workers, network thread, process): the process clock counts every
  // thread, so it is at least their sum (1 ms of slack for the clocks' rounding)
  assert.ok(a.proc + 1e-3 >= a.w0 + a.w1 + a.net, JSON.stringify(a));
  // the workers step the five default rooms (120 steps/s each): their clocks run; a thread
  // that does nothing does not gain a second of CPU in 2 s
  await sleep(2000);
  const b = cpuOf(await (await fetch(url)).text());
  assert.ok(b.w0 > a.w0 && b.w1 > a.w1, `workers ran: ${JSON.stringify(a)} -> ${JSON.stringify(b)}`);
  assert.ok(b.net >= a.net && b.proc > a.proc, JSON.stringify(b));
  assert.ok(b.proc - a.proc < 2 * 2.5, `at most the cores' worth in 2 s: ${b.proc - a.proc}`);
  assert.ok(b.proc + 1e-3 >= b.w0 + b.w1 + b.net, JSON.stringify(b));
  // a worker busy-looping would show near 2 s; five idle-ish rooms cost far less
  assert.ok(b.w0 - a.w0 < 1.5 && b.w1 - a.w1 < 1.5, `workers sleep between steps: ${JSON.stringify(a)} -> ${JSON.stringify(b)}`);
});
