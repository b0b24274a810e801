// load.test.mjs: a short load run against a real server, as a correctness
// check under concurrency (not a performance test: the figures that matter for
// capacity are in BENCHMARKS.md, measured with --ramp on a quiet machine).
//
// It starts build/tumble-server on an ephemeral loopback port (harness.mjs),
// runs build/tumble-load with 20 rooms x 3 clients over every scene kind for
// 10 s, and checks that every client joined and got snapshots at (nearly) the
// set rate, that no client saw an error (a server `error`, an undecodable
// frame, a delta that did not fit its baseline, a dropped connection), and
// that the server kept stepping its rooms without overruns.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startServer, stopAll } from './harness.mjs';

const LOAD_BIN = process.env.TUMBLE_LOAD_BIN || path.join(ROOT, 'build/tumble-load');

after(stopAll);

// Runs tumble-load; resolves { code, stdout, stderr }. Killed if it overruns.
function runLoad(args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const proc = spawn(LOAD_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`tumble-load did not finish within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
    proc.on('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

test('20 rooms x 3 clients of every kind hold the snapshot rate with no errors', { timeout: 90_000 }, async (t) => {
  // The server's network thread drops a client's queued snapshots when it has
  // not run for 133 ms (8 slots at 60/s), and a worker that gets no CPU for more
  // than 0.25 s counts overruns: on a machine whose run queue is several times
  // its core count that happens whatever the server does. So the rates are held
  // to the bounds on a machine with at most 2 runnable threads per core,
  // to looser bounds up to 4, and above that only reported (the test says so);
  // correctness (joins, decoding, no errors, inputs applied) is always checked.
  const load = os.loadavg()[0] / os.cpus().length;
  const judgeRates = load <= 4;
  const minRatio = load <= 2 ? 0.95 : 0.80;
  const maxOverrunShare = load <= 2 ? 0.01 : 0.10;
  if (load > 2) {
    t.diagnostic(judgeRates
      ? `machine load ${load.toFixed(1)} per core: snapshot_rate_ratio held to ${minRatio}, ` +
        `steps/s to ${minRatio} of the tick rate, overruns to ${maxOverrunShare * 100} % of the steps`
      : `machine load ${load.toFixed(1)} per core: rates reported, not judged`);
  }
  const rooms = 20;
  const perRoom = 3;
  // 60 connections from one address and 20 more rooms than the defaults allow
  const srv = await startServer({
    args: ['--max-conns-per-address', '1000', '--max-rooms', '1000', '--room-create-rate', '100000', '--workers', '2'],
  });
  const { code, stdout, stderr } = await runLoad([
    '--url', `ws://127.0.0.1:${srv.port}`,
    '--rooms', String(rooms), '--clients-per-room', String(perRoom),
    '--mix', 'tower,dice,flag,cape,dough',
    '--duration', '10', '--warmup', '1',
    '--server-pid', String(srv.proc.pid),
    '--json', '--quiet',
  ], 60_000);
  let r;
  try {
    r = JSON.parse(stdout);
  } catch (e) {
    throw new Error(`tumble-load printed no JSON (exit ${code}):\n${stdout}\n${stderr}`);
  }
  const why = `\n${JSON.stringify(r)}\n${stderr}\nserver stderr:\n${srv.stderr.slice(-2000)}`;
  t.diagnostic(`ratio ${r.snapshot_rate_ratio}, jitter p99 ${r.jitter_ms.p99} ms, tick lateness p99 ${r.tick_lateness_p99_ms} ms, ` +
    `latency p99 ${r.latency_p99_ms} ms, ${r.kbit_per_s_per_client} kbit/s per client, overruns ${r.overruns}, ` +
    `inputs refused ${r.inputs_refused}, ` +
    `server cpu ${r.server_cpu_cores}`);

  assert.equal(r.rooms, rooms, why);
  assert.equal(r.clients, rooms * perRoom, why);
  assert.equal(r.clients_joined, rooms * perRoom, `every client joined${why}`);
  assert.equal(r.clients_measured, rooms * perRoom, why);
  assert.equal(r.clients_without_snapshots, 0, `every client got snapshots${why}`);
  assert.equal(r.errors, 0, `no errors${why}`);
  assert.ok(r.snapshots_per_s.min > 0, `every client kept receiving${why}`);
  if (judgeRates) {
    assert.ok(r.snapshot_rate_ratio >= minRatio, `snapshot_rate_ratio ${r.snapshot_rate_ratio} >= ${minRatio}${why}`);
    assert.ok(r.snapshots_per_s.min >= (minRatio - 0.15) * r.snap_rate, `slowest client ${r.snapshots_per_s.min}/s${why}`);
  }
  // every kind of room streamed (each decoder path ran: rigid bodies, cloth and soft meshes)
  for (const scene of ['tower', 'dice', 'flag', 'cape', 'dough']) {
    assert.ok(r.by_scene[scene] && r.by_scene[scene].snapshot_rate_ratio > 0, `${scene} rooms streamed${why}`);
    if (judgeRates) assert.ok(r.by_scene[scene].snapshot_rate_ratio >= minRatio - 0.05, `${scene} rooms rate${why}`);
  }
  // inputs were applied: the knock-downs and throws were seen in the snapshots
  assert.ok(r.ack_latency_ms.count > 0, `inputs acknowledged through last_seq${why}`);
  // (a timeout is an input with no visible effect within 3 s: the failure, never the pass)
  assert.ok(r.latency_ms.count > 0, `knock-downs/throws seen moving bodies${why}`);
  // Inputs the world refused (unknown_body, not_allowed) are not errors, but they must
  // stay the exception: tower and dice pokes name boxes that are never removed, the
  // dough's presses come one at a time per room, the flag barely moves under a grab.
  // The cape walks, so a grab aimed at where a vertex was in a late snapshot misses
  // more often on a loaded machine (measured: 0 of 34 at load 2, 88 of 113 at load 15);
  // some of its inputs must still land.
  for (const [scene, b] of Object.entries(r.by_scene)) {
    assert.ok(b.inputs_sent > 0 && b.pokes_sent > 0, `${scene} clients sent inputs and pokes${why}`);
    if (scene === 'cape') assert.ok(b.inputs_refused < b.inputs_sent, `cape: ${b.inputs_refused} of ${b.inputs_sent} inputs refused${why}`);
    else assert.ok(b.pokes_refused <= 0.1 * b.pokes_sent, `${scene}: ${b.pokes_refused} of ${b.pokes_sent} pokes (presses, flicks) refused by the world${why}`);
  }
  // the server's own view (its /metrics) when it is reachable
  assert.notEqual(r.steps_per_room_per_s, null, `/metrics was read${why}`);
  // its CPU by thread: the workers and the network thread both busy, together no more than
  // the process (the same scrapes; 0.02 cores of slack for the clocks' rounding)
  assert.ok(r.server_workers_cpu_cores > 0 && r.server_network_cpu_cores > 0, `CPU by thread${why}`);
  assert.ok(r.server_workers_cpu_cores + r.server_network_cpu_cores <= r.server_cpu_cores + 0.02,
    `workers ${r.server_workers_cpu_cores} + network ${r.server_network_cpu_cores} <= server ${r.server_cpu_cores}${why}`);
  if (judgeRates) {
    assert.ok(r.steps_per_room_per_s >= minRatio * r.tick_rate, `steps/s per room ${r.steps_per_room_per_s}${why}`);
    assert.ok(r.overruns <= maxOverrunShare * r.tick_rate * r.window_s * (r.server_rooms ?? rooms), `overruns ${r.overruns}${why}`);
  }
  assert.equal(code, 0, `exit status${why}`);
});

test('against a server with default limits, tumble-load says once which limit refused it and how to run', { timeout: 60_000 }, async () => {
  const srv = await startServer({ args: ['--workers', '1'] });
  const { stderr } = await runLoad([
    '--url', `ws://127.0.0.1:${srv.port}`, '--rooms', '20', '--clients-per-room', '2',
    '--duration', '1', '--warmup', '0.5', '--join-timeout', '3', '--server-pid', String(srv.proc.pid),
  ], 45_000);
  const lines = stderr.split('\n');
  const once = (re) => lines.filter((l) => re.test(l)).length;
  // 40 connections from one address: the per-address limit (32) answers HTTP 429
  assert.equal(once(/HTTP 429: its connection limit per address \(--max-conns-per-address/), 1, stderr);
  assert.equal(once(/--max-conns-per-address 40 or more, or .*--source-addrs 2/), 1, stderr);
  // 20 new rooms from one address: the room-creation limit (10 a minute)
  assert.equal(once(/room creations per address \(--room-create-rate/), 1, stderr);
  assert.equal(once(/--room-create-rate 20 or more/), 1, stderr);
  assert.equal(once(/connection failed/), 0, 'no per-client line for a refusal the server explained');
  await srv.stop();
});

test('a tiny ramp names its machine and draws every step with the held limit (--report)', { timeout: 90_000 }, async () => {
  const srv = await startServer({
    args: ['--max-conns-per-address', '1000', '--max-rooms', '1000', '--room-create-rate', '100000', '--workers', '1'],
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-ramp-'));
  const report = path.join(dir, 'ramp.html');
  try {
    // Lateness is not judged (1000 ms) so that a busy machine still holds every step:
    // the test is about the picture, not the capacity.
    const { code, stdout, stderr } = await runLoad([
      '--url', `ws://127.0.0.1:${srv.port}`, '--scene', 'tower', '--clients-per-room', '2',
      '--ramp', '--rooms', '1', '--ramp-step', '1', '--ramp-max-rooms', '3', '--ramp-interval', '1',
      '--ramp-settle', '0.3', '--target-lateness', '1000', '--target-ratio', '0.5', '--duration', '60',
      '--server-pid', String(srv.proc.pid), '--json', '--quiet', '--report', report,
    ], 60_000);
    const r = JSON.parse(stdout);
    const why = `\n${stdout}\n${stderr}`;
    assert.equal(code, 0, why);
    // the machine beside the figures
    assert.equal(r.machine.cores, os.cpus().length, why);
    assert.equal(r.machine.cpu_model, os.cpus()[0].model.trim(), why);
    // one model name ("AMD EPYC") covers several generations: the family and model numbers too
    const family = /^cpu family\s*:\s*(\d+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (family) assert.equal(r.machine.cpu_family, Number(family[1]), why);
    assert.ok(Number.isInteger(r.machine.cpu_model_number) && Number.isInteger(r.machine.l2_kib), why);
    assert.equal(r.machine.load_average_start.length, 3, why);
    assert.ok(r.machine.load_average_end.every((v) => typeof v === 'number' && v >= 0), why);
    const steps = r.ramp.steps;
    assert.deepEqual(steps.map((s) => s.rooms), [1, 2, 3], why);
    assert.equal(r.ramp.max_rooms_held, 3, why);

    const page = fs.readFileSync(report, 'utf8');
    assert.match(page, /^<!doctype html>/);
    assert.doesNotMatch(page, /<script|<link|src="/, 'self-contained: no scripts, no external files');
    assert.match(page, /class="axis x" data-name="rooms"/);
    for (const axis of ['tick_lateness_p99_ms', 'snapshot_rate_ratio', 'cpu_cores']) {
      assert.match(page, new RegExp(`class="axis y" data-name="${axis}"`), axis);
    }
    // one point per step and series, at the step's room count, with the value the JSON reports
    const points = (series) => [...page.matchAll(new RegExp(`class="pt ${series}(?: missed)?" data-rooms="(\\d+)" data-value="([^"]+)"`, 'g'))]
      .map((m) => ({ rooms: Number(m[1]), value: Number(m[2]) }));
    const fields = { lateness: 'tick_lateness_p99_ms', ratio: 'snapshot_rate_ratio', 'server-cpu': 'server_cpu_cores', 'generator-cpu': 'generator_cpu_cores',
      'workers-cpu': 'server_workers_cpu_cores', 'network-cpu': 'server_network_cpu_cores' };
    for (const [series, field] of Object.entries(fields)) {
      const got = points(series);
      assert.deepEqual(got.map((p) => p.rooms), [1, 2, 3], `${series} points${why}`);
      got.forEach((p, i) => assert.ok(Math.abs(p.value - steps[i][field]) <= 1e-3 * Math.max(1, Math.abs(steps[i][field])),
        `${series} at ${p.rooms} rooms: ${p.value} vs ${steps[i][field]}`));
    }
    assert.match(page, /class="held-mark" data-rooms="3"/);
    assert.equal([...page.matchAll(/<tr class="step">/g)].length, 3);
    assert.ok(page.includes(r.machine.cpu_model.replace(/&/g, '&amp;').replace(/</g, '&lt;')), 'the CPU model is on the page');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await srv.stop();
  }
});
