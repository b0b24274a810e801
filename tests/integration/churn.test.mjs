// churn.test.mjs: 5,000 connect, join, receive, leave cycles (50 at a time,
// spread over the five default rooms) leave no leaked memory or descriptors:
// the server's RSS ends within 10 % of what it was after a warm-up of 500
// cycles (allocator arenas and lws pools reach their working size there), and
// its open descriptors come back to the count before the first cycle.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { startServer, stopAll, metrics, sleep } from './harness.mjs';

after(stopAll);

const ROOMS = ['tower', 'dice', 'flag', 'cape', 'dough'];

function procStats(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)[1]), fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

// One cycle with a bare ws client: open, hello, the welcome and one more
// message (a snapshot), close; resolves once the socket is closed.
function cycle(port, i) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ['tumble.v1']);
    let got = 0;
    const timer = setTimeout(() => { ws.terminate(); reject(new Error(`cycle ${i} timed out after ${got} messages`)); }, 10000);
    ws.on('open', () => ws.send(encode([1, 1, ROOMS[i % ROOMS.length], null, null, `churn${i}`])));
    ws.on('message', (data) => {
      if (++got === 1 && data[1] !== 32) reject(new Error(`cycle ${i}: first message type ${data[1]}, not welcome`));
      if (got === 2) ws.close();
    });
    ws.on('close', () => { clearTimeout(timer); got >= 2 ? resolve() : reject(new Error(`cycle ${i} closed after ${got}`)); });
    ws.on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

async function run(port, from, to, parallel) {
  let next = from;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < to) await cycle(port, next++);
  }));
}

async function settle(pid, fds, ms = 8000) {
  const t0 = performance.now();
  let s = procStats(pid);
  while (s.fds > fds && performance.now() - t0 < ms) { await sleep(100); s = procStats(pid); }
  return s;
}

test('5,000 connect/join/receive/leave cycles leak no memory or descriptors', async () => {
  const srv = await startServer({ args: ['--max-conns-per-address', '100', '--max-clients-per-room', '64', '--workers', '2'] });
  const pid = srv.proc.pid;
  await sleep(300);
  const start = procStats(pid);
  const t0 = performance.now();
  await run(srv.port, 0, 500, 50);
  const warm = await settle(pid, start.fds);
  await run(srv.port, 500, 5000, 50);
  const end = await settle(pid, start.fds);
  const secs = (performance.now() - t0) / 1000;
  const m = await metrics(srv.url);
  const report = `start ${start.rssKb} kB/${start.fds} fds, after warm-up ${warm.rssKb} kB, end ${end.rssKb} kB/${end.fds} fds, ${secs.toFixed(1)} s`;
  if (process.env.TUMBLE_TEST_VERBOSE) console.log(report);
  assert.equal(m.tumble_connections_total, 5000, report);
  assert.equal(m.tumble_clients, 0, report);
  assert.equal(end.fds, start.fds, `descriptors: ${report}`);
  assert.ok(end.rssKb <= warm.rssKb * 1.1, `RSS: ${report}`);
  const exit = await srv.stop();
  assert.equal(exit.code, 0);
});
