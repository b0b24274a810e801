// server-churn.mjs: connect, join, receive a snapshot, leave, many times;
// prints the server's RSS and open descriptors as it goes (JSON lines).
// A leak shows as growth after the first few hundred cycles (the first ones
// grow the allocator's per-thread arenas and the rooms' worlds, then flat).
// Usage: node tests/bench/server-churn.mjs [--cycles 1800]
import fs from 'node:fs';
import { startServer, stopAll, connect, join, sleep } from '../integration/harness.mjs';

const args = process.argv.slice(2);
const cycles = Number(args[args.indexOf('--cycles') + 1]) || 1800;
const srv = await startServer({ args: ['--room-idle-timeout', '1'] });
const pid = srv.proc.pid;
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const fds = () => fs.readdirSync(`/proc/${pid}/fd`).length;
const scenes = ['flag', 'dough', 'pile'];
for (let i = 0; i <= cycles; i++) {
  if (i % 300 === 0) console.log(JSON.stringify({ bench: 'server_churn', cycle: i, rss_kb: rss(), fds: fds() }));
  if (i === cycles) break;
  const c = await connect(srv.port);
  // every third client creates (or reuses) a short-lived room that is disposed when idle
  if (i % 3 === 0) await join(c, `churn-${i % 20}`, scenes[(i / 3) % 3]);
  else await join(c, 'tower');
  await c.snapshot();
  c.close();
  await c.whenClosed;
}
await sleep(3000);
console.log(JSON.stringify({ bench: 'server_churn', cycle: 'end+3s', rss_kb: rss(), fds: fds() }));
await stopAll();
