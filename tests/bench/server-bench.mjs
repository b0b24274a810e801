// server-bench.mjs: figures for BENCHMARKS.md "Server", measured against a
// real build/tumble-server on loopback. Prints one JSON object per line:
//   latency    knock-down input -> first snapshot showing the ball moving (p50/p99 ms)
//   lateness   tick lateness p50/p99 (us) from the server's own histogram
//   cpu_room   server CPU per room of each kind, one client each (% of one core)
//   cpu_client server CPU per extra client in one room (% of one core)
// Usage: node tests/bench/server-bench.mjs [--rounds 40] [--quick]
import fs from 'node:fs';
import { startServer, stopAll, connect, join, sleep, metrics } from '../integration/harness.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const rounds = Number(args[args.indexOf('--rounds') + 1]) || (quick ? 10 : 40);
const isSnap = (m) => m.type === 'snap_delta' || m.type === 'snap_key';

function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, USER_HZ = 100
}

async function cpuPercent(pid, ms) {
  const c0 = cpuSeconds(pid), t0 = performance.now();
  await sleep(ms);
  return (100 * (cpuSeconds(pid) - c0)) / ((performance.now() - t0) / 1000);
}

function pct(sorted, q) { return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]; }

function histQuantile(m, name, q) {
  const buckets = Object.entries(m).filter(([k]) => k.startsWith(`${name}_bucket{`))
    .map(([k, v]) => [k.includes('+Inf') ? Infinity : Number(/le="([^"]+)"/.exec(k)[1]), v]).sort((a, b) => a[0] - b[0]);
  const total = buckets[buckets.length - 1][1];
  let prevLe = 0, prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= q * total) {
      if (le === Infinity) return prevLe * 1e6;
      return (prevLe + (le - prevLe) * ((q * total - prevCount) / Math.max(1, count - prevCount))) * 1e6;
    }
    prevLe = le; prevCount = count;
  }
  return NaN;
}

const srv = await startServer({ args: ['--workers', '2', '--max-rooms', '200', '--room-idle-timeout', '1',
  '--max-clients-per-room', '200', '--max-conns-per-address', '500', '--room-create-rate', '100000'] });
const pid = srv.proc.pid;
const out = (o) => console.log(JSON.stringify({ machine_nproc: (await_nproc()), ...o }));
function await_nproc() { return fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((l) => l.startsWith('processor')).length; }

// ---- input-to-snapshot latency ----------------------------------------------
const lat = [];
for (let i = 0; i < rounds; i++) {
  const c = await connect(srv.port);
  await join(c, `bench-knock-${i}`, 'tower');
  await c.snapshot();
  // a random phase against the 60 Hz snapshot cycle: sending a fixed time
  // after a snapshot would always land just after the next one
  await sleep(200 + Math.random() * 50);
  const before = new Set(c.state.ids);
  c.dropSnapshots();
  const t0 = performance.now();
  c.send({ type: 'action', action: 'knock', scene: null });
  const m = await c.next((x) => {
    if (!isSnap(x) || !x.state) return false;
    for (const [id, b] of x.state.bodies) if (!before.has(id) && b.pos[0] > -3.3 + 0.02) return true;
    return false;
  }, 3000);
  lat.push(m.__at - t0);
  c.close();
  await sleep(50);
}
lat.sort((a, b) => a - b);
out({ bench: 'server_latency_knock_to_snapshot_ms', rounds, p50: +pct(lat, 0.5).toFixed(2), p99: +pct(lat, 0.99).toFixed(2), max: +lat[lat.length - 1].toFixed(2) });

// ---- CPU per room (by kind) and per client -------------------------------------
const mlat = await metrics(srv.url);
out({ bench: 'server_input_to_snapshot_encoded_us', note: 'server side: input arrival -> first snapshot encoded with it',
  p50: +histQuantile(mlat, 'tumble_input_to_snapshot_seconds', 0.5).toFixed(1), p99: +histQuantile(mlat, 'tumble_input_to_snapshot_seconds', 0.99).toFixed(1) });
await sleep(3000); // the bench rooms are disposed (idle timeout 1 s)
const base = await cpuPercent(pid, quick ? 2000 : 5000);
out({ bench: 'server_cpu_baseline_pct', rooms: (await (await fetch(`${srv.url}/api/rooms`)).json()).length, cpu_pct: +base.toFixed(2) });
const held = [];
for (const scene of ['tower', 'flag', 'dough']) {
  const n = 8, cs = [];
  for (let i = 0; i < n; i++) {
    const c = await connect(srv.port);
    await join(c, `bench-${scene}-${i}`, scene);
    if (scene === 'tower') c.send({ type: 'action', action: 'knock', scene: null });
    cs.push(c);
  }
  const before = await cpuPercent(pid, 300);
  const during = await cpuPercent(pid, quick ? 2000 : 4000);
  out({ bench: 'server_cpu_per_room_pct', scene, rooms: n, note: scene === 'tower' ? 'knocked down, falling then asleep' : 'always moving',
    cpu_pct_per_room: +((during - base) / n).toFixed(2) });
  cs.forEach((c) => c.close());
  held.push(...cs);
  await sleep(500);
}
{
  const n = 80, cs = [];
  const c0 = await connect(srv.port);
  await join(c0, 'bench-clients', 'flag');
  await sleep(500);
  const one = await cpuPercent(pid, quick ? 2000 : 6000);
  for (let i = 0; i < n; i++) {
    const c = await connect(srv.port);
    await join(c, 'bench-clients', 'flag');
    cs.push(c);
  }
  await sleep(500);
  const many = await cpuPercent(pid, quick ? 2000 : 6000);
  const stats = cs.map((c) => c.snapshots);
  out({ bench: 'server_cpu_per_client_pct', room: 'flag', clients: n + 1, cpu_pct_per_extra_client: +((many - one) / n).toFixed(3),
    min_snapshots_per_client: Math.min(...stats) });
  cs.forEach((c) => c.close());
  c0.close();
}

// ---- tick lateness ---------------------------------------------------------------
const m = await metrics(srv.url);
out({ bench: 'server_tick_lateness_us', steps: m.tumble_steps_total, p50: +histQuantile(m, 'tumble_tick_lateness_seconds', 0.5).toFixed(1),
  p99: +histQuantile(m, 'tumble_tick_lateness_seconds', 0.99).toFixed(1), overrun_steps: m.tumble_overrun_steps_total,
  step_p50_us: +histQuantile(m, 'tumble_step_seconds', 0.5).toFixed(1), step_p99_us: +histQuantile(m, 'tumble_step_seconds', 0.99).toFixed(1) });
await stopAll();
