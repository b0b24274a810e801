// handoff-bench.mjs: how long a room takes to move between servers. A
// player knocks a tower on server X; X gets SIGTERM; the player, closed
// with 1001, reconnects to server Y at once and joins again. Measured: from
// the SIGTERM to the first snapshot on Y (p50/p99 over --runs), and the
// tick the room continues at. Prints one JSON line. Own redis-server on a
// free port; servers on ephemeral loopback ports.
//   node tests/load/handoff-bench.mjs [--runs 30]
import os from 'node:os';
import { startServer, stopAll, connect, join } from '../integration/harness.mjs';
import { startRedis, stopAllRedis } from '../integration/redis.mjs';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 30) || 30;
const redis = await startRedis();
const args = (name) => ['--redis', redis.url, '--instance', name, '--workers', '1'];
let x = await startServer({ args: args('s0') });
const times = [];
const tickGaps = [];
try {
  let p = await connect(x.port);
  await join(p, 'moving', 'tower');
  for (let i = 1; i <= runs; i++) {
    p.send({ type: 'action', action: 'knock', scene: null });
    await new Promise((r) => setTimeout(r, 300));
    const snaps = p.inbox.filter((m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state);
    const lastTick = snaps.length ? snaps[snaps.length - 1].state.tick : 0;
    const y = await startServer({ args: args(`s${i}`) });
    const t0 = performance.now();
    const stopped = x.stop('SIGTERM');
    await p.whenClosed;
    p = await connect(y.port);
    await join(p, 'moving');
    const snap = await p.snapshot(5000);
    times.push(performance.now() - t0);
    tickGaps.push(snap.state.tick - lastTick);
    await stopped;
    x = y;
  }
  p.close();
} finally {
  await stopAll();
  await stopAllRedis();
}
const sorted = [...times].sort((a, b) => a - b);
const pct = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
console.log(JSON.stringify({
  bench: 'handoff', runs, p50_ms: +pct(0.5).toFixed(1), p99_ms: +pct(0.99).toFixed(1), max_ms: +sorted[sorted.length - 1].toFixed(1),
  tick_gap_max: Math.max(...tickGaps), tick_gap_min: Math.min(...tickGaps), loadavg: os.loadavg().map((v) => +v.toFixed(2)), cores: os.cpus().length,
}));
