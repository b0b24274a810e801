// sched-attribution.mjs: who had the CPUs while the server's threads waited for one.
//
//   node tests/load/sched-attribution.mjs TIMEHIST SERVER_PID [GENERATOR_PID] [MIN_MS]
//
// Reads `perf sched timehist` text (tests/load/sched-latency.sh writes it): each line
// is a task switched out on a CPU after running `run` ms, having waited `sch delay` ms
// for the CPU before that. For every wait of a server thread longer than MIN_MS
// (default 4), it adds up what ran on every CPU during the wait, by kind: the server's
// workers, its network thread, the generator, other processes, and the CPUs' idle
// time (a wait with an idle CPU is the scheduler's placement, not a lack of CPU).
// Prints one table: per kind, the CPU time in those waits and its share.
import fs from 'node:fs';

const [file, serverPid, generatorPid = '-1', minArg = '4'] = process.argv.slice(2);
if (!file || !serverPid) {
  console.error('usage: node tests/load/sched-attribution.mjs TIMEHIST SERVER_PID [GENERATOR_PID] [MIN_MS]');
  process.exit(2);
}
const minMs = Number(minArg);
const runs = [];      // { cpu, start, end, kind }
const waits = [];     // { start, end, thread }
const cpus = new Set();
for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
  const m = line.match(/^\s*([\d.]+)\s+\[(\d+)\]\s+(.*?)\[(\d+)(?:\/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$/);
  if (!m) continue;
  const [, time, cpu, name, tid, pidOrNone, , delay, run] = m;
  const pid = pidOrNone ?? tid;
  const end = Number(time) * 1e3, runMs = Number(run), delayMs = Number(delay);
  const start = end - runMs;
  let kind;
  if (name.startsWith('<idle>') || tid === '0') kind = 'idle';
  else if (pid === serverPid) kind = name.startsWith('tb-worker') ? 'server workers' : 'server network thread';
  else if (pid === generatorPid || name.startsWith('tumble-load')) kind = 'generator';
  else kind = 'other processes';
  cpus.add(cpu);
  runs.push({ cpu, start, end, kind });
  if (pid === serverPid && delayMs > minMs) waits.push({ start: start - delayMs, end: start, thread: name.trim() });
}
runs.sort((a, b) => a.start - b.start);
const byKind = new Map();
let total = 0;
for (const w of waits) {
  for (const r of runs) {
    if (r.start >= w.end) break;
    const overlap = Math.min(r.end, w.end) - Math.max(r.start, w.start);
    if (overlap <= 0) continue;
    byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + overlap);
    total += overlap;
  }
}
const waited = waits.reduce((s, w) => s + (w.end - w.start), 0);
console.log(`${waits.length} waits of server threads over ${minMs} ms (${waited.toFixed(1)} ms in all); ` +
  `what the ${cpus.size} CPUs ran meanwhile (switch records only; time not covered is idle or unrecorded):`);
for (const [kind, ms] of [...byKind].sort((a, b) => b[1] - a[1]))
  console.log(`  ${kind.padEnd(24)} ${ms.toFixed(1).padStart(9)} ms  ${(100 * ms / total).toFixed(1).padStart(5)} %`);
