// predict-bench.mjs: predicted grabs (issue 21 point 4), measured.
//
//   node tests/bench/predict-bench.mjs [--runs 5] [--seconds 4] [--no-browser]
//
// 1. Node, --runs times: a player drags the top plank of a tower room through
//    build/tumble-netem at 150 ms RTT (75 ms each way), and again at 150 ms RTT with
//    +-20 ms jitter, with the page's own adapter, buffer, clock and predictor over the
//    WebAssembly physics (tests/integration/predict-drag.mjs). Per run: how far the
//    predicted and the interpolated plank run behind the server's track (lag_ms, on
//    the player's clock at the moment the input was sent), the correction when a
//    snapshot arrives (p50/p99/max, cm) and the prediction's cost per frame in Node.
//    Medians over the runs.
// 2. Chromium (the client's own bundle, headless, SwiftShader): the room page with
//    ?predict=1 through the same 150 ms link, a 4 s mouse drag of the top plank; the
//    prediction's cost per frame (p50/p99, ms: the page's own performance.now() around
//    the predictor) and the corrections.
// Prints one JSON object. A benchmark: it judges nothing.
import os from 'node:os';
import { startServer, startLink, stopAll } from '../integration/harness.mjs';
import { dragTopPlank, lagOf, percentile } from '../integration/predict-drag.mjs';

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(`--${n}`); return i >= 0 ? Number(args[i + 1]) : d; };
const RUNS = opt('runs', 5), SECONDS = opt('seconds', 4);
const median = (a) => percentile(a.filter(Number.isFinite), 0.5);
const r2 = (x) => Math.round(x * 100) / 100;

async function nodeRuns(server, linkOpts) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const link = await startLink(server.port, linkOpts);
    const r = await dragTopPlank(link.port, { seconds: SECONDS });
    await link.stop();
    const shown = lagOf(r.log.frames, r.truth, 'shown'), interp = lagOf(r.log.frames, r.truth, 'interpolated');
    runs.push({
      rtt_ms: r2(r.rtt * 1000), shown_lag_ms: r2(shown.tau * 1000), shown_miss_mm: r2(shown.err * 1000), interpolated_lag_ms: r2(interp.tau * 1000),
      correction_cm: { p50: r2(100 * percentile(r.log.corrections, 0.5)), p99: r2(100 * percentile(r.log.corrections, 0.99)), max: r2(100 * Math.max(...r.log.corrections)) },
      cost_ms: { p50: r2(percentile(r.log.costMs, 0.5)), p99: r2(percentile(r.log.costMs, 0.99)) }, frames: r.log.frames.length, errors: r.errors.length,
    });
  }
  const m = (f) => median(runs.map(f));
  return {
    link: linkOpts, runs: runs.length,
    median: { shown_lag_ms: m((r) => r.shown_lag_ms), interpolated_lag_ms: m((r) => r.interpolated_lag_ms), shown_miss_mm: m((r) => r.shown_miss_mm),
      correction_p99_cm: m((r) => r.correction_cm.p99), correction_max_cm: m((r) => r.correction_cm.max), node_cost_p50_ms: m((r) => r.cost_ms.p50), node_cost_p99_ms: m((r) => r.cost_ms.p99) },
    each: runs,
  };
}

async function browserRun(server) {
  const { launch, startTumble } = await import('../browser/helpers.mjs');
  const tumble = await startTumble();
  const link = await startLink(tumble.port, { delay: 75 });
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 720, height: 520 } });
    await page.goto(`${tumble.url}/r/predbench-${Date.now().toString(36)}?kind=rigid&scene=tower&ws-port=${link.port}&predict=1`, { timeout: 120000 });
    await page.waitForFunction(() => window.__tumble?.predict?.ready && window.__tumble.pongs >= 4 && window.__tumble.frames > 5, null, { timeout: 120000, polling: 250 });
    const top = await page.evaluate(() => {
      let best = null;
      for (const [id, b] of Object.entries(window.__tumble.poses())) if (!best || b.p[1] > best.p[1]) best = { id: Number(id), ...b };
      return window.__tumble.screenOf(best.id);
    });
    const f0 = await page.evaluate(() => window.__tumble.frames);
    await page.mouse.move(top.x, top.y);
    await page.mouse.down();
    const steps = Math.round(SECONDS * 20);
    for (let i = 1; i <= steps; i++) { await page.mouse.move(top.x + 60 * Math.sin(i / 10), top.y - Math.min(90, 3 * i)); await page.waitForTimeout(50); }
    const log = await page.evaluate(() => window.__tumble.predict.log);
    const f1 = await page.evaluate(() => window.__tumble.frames);
    await page.mouse.up();
    return {
      viewport: '720x520', drag_s: SECONDS, frames: f1 - f0, predicted_frames: log.frames.length,
      cost_ms: { p50: r2(percentile(log.costMs, 0.5)), p99: r2(percentile(log.costMs, 0.99)), max: r2(Math.max(...log.costMs)) },
      correction_cm: { p50: r2(100 * percentile(log.corrections, 0.5)), p99: r2(100 * percentile(log.corrections, 0.99)) },
      steps_per_frame: { p50: percentile(log.steps, 0.5), p99: percentile(log.steps, 0.99) },
      slowest: log.costMs.map((c, i) => ({ frame: i, cost_ms: r2(c), steps: log.steps[i] })).sort((a, b) => b.cost_ms - a.cost_ms).slice(0, 5),
    };
  } finally {
    await browser.close(); await link.stop(); await tumble.stop();
  }
}

const cpu = os.cpus()[0]?.model || 'unknown';
const out = { bench: 'predict', cpu_model: cpu, cores: os.cpus().length, load_average_start: os.loadavg().map(r2), started_utc: new Date().toISOString() };
try {
  const server = await startServer();
  out.node_150ms = await nodeRuns(server, { delay: 75 });
  out.node_150ms_jitter20 = await nodeRuns(server, { delay: 75, jitter: 20 });
  if (!args.includes('--no-browser')) out.chromium_150ms = await browserRun(server);
} finally {
  await stopAll();
}
out.load_average_end = os.loadavg().map(r2);
out.command = `node tests/bench/predict-bench.mjs --runs ${RUNS} --seconds ${SECONDS}`;
console.log(JSON.stringify(out, null, 1));
