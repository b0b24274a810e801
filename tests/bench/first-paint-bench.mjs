// first-paint-bench.mjs: how soon a room page paints, for one or more client builds.
//
//   node tests/bench/first-paint-bench.mjs [--runs 7] [--scene tower] DIR [DIR ...]
//
// DIR: a built client (client-web/dist of this tree, or of an older commit built with
// `node client-web/build.mjs` in a worktree). Each DIR is served by its own
// build/tumble-server (ephemeral loopback port); the runs alternate between them, each
// in a fresh browser context (empty cache) of headless Chromium (SwiftShader), a new
// room each time, viewport 960x600. Per run, from the navigation's start:
//   fcp_ms          first-contentful-paint (the page's first pixels: the HUD, the stage)
//   first_frame_ms  the room drawn: the frame after its first state reached the view
//                   (window.__tumble.state set, then two animation frames)
//   bytes           what the page transferred before that frame (transferSize sum)
// Medians per DIR. Prints one JSON object. A benchmark: it judges nothing.
import os from 'node:os';
import path from 'node:path';
import { launch, startTumble } from '../browser/helpers.mjs';

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(`--${n}`); return i >= 0 ? args.splice(i, 2)[1] : d; };
const RUNS = Number(opt('runs', 7)), SCENE = opt('scene', 'tower');
const dirs = args.filter((a) => !a.startsWith('--'));
if (!dirs.length) { console.error('usage: first-paint-bench.mjs [--runs N] [--scene S] DIR [DIR ...]'); process.exit(2); }
const median = (a) => { const s = a.filter(Number.isFinite).sort((x, y) => x - y); return s.length ? s[s.length >> 1] : null; };

const servers = [];
const browser = await launch();
const results = dirs.map((d) => ({ dir: d, runs: [] }));
try {
  for (const d of dirs) servers.push(await startTumble({ args: ['--client-dir', path.resolve(d)] }));
  for (let r = 0; r < RUNS; r++) {
    for (let k = 0; k < dirs.length; k++) {
      const ctx = await browser.newContext({ viewport: { width: 960, height: 600 } });
      const page = await ctx.newPage();
      const room = `fp-${r}-${k}-${Date.now().toString(36)}`;
      await page.goto(`${servers[k].url}/r/${room}?kind=rigid&scene=${SCENE}`, { waitUntil: 'commit', timeout: 120000 });
      // the room drawn: a frame after the first state reached the view
      await page.waitForFunction(() => window.__tumble?.state, null, { timeout: 120000, polling: 'raf' });
      const m = await page.evaluate(async () => {
        const drawn = await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))));
        // (no entry: Chromium had not reported a contentful paint before the frame; null)
        const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null;
        const bytes = performance.getEntriesByType('resource').reduce((s, e) => s + (e.transferSize || 0), 0) +
          (performance.getEntriesByType('navigation')[0]?.transferSize || 0);
        return { fcp_ms: fcp, first_frame_ms: drawn, bytes };
      });
      results[k].runs.push(m);
      await ctx.close();
    }
  }
} finally {
  await browser.close();
  for (const s of servers) await s.stop();
}
const out = {
  bench: 'first-paint', scene: SCENE, runs: RUNS, cpu_model: os.cpus()[0]?.model, cores: os.cpus().length, load_average_end: os.loadavg().map((x) => +x.toFixed(2)),
  clients: results.map((r) => ({
    dir: r.dir,
    median: { fcp_ms: median(r.runs.map((x) => x.fcp_ms)) === null ? null : Math.round(median(r.runs.map((x) => x.fcp_ms))), first_frame_ms: Math.round(median(r.runs.map((x) => x.first_frame_ms))), bytes: median(r.runs.map((x) => x.bytes)) },
    each: r.runs.map((x) => ({ fcp_ms: x.fcp_ms === null ? null : Math.round(x.fcp_ms), first_frame_ms: Math.round(x.first_frame_ms), bytes: x.bytes })),
  })),
  command: `node tests/bench/first-paint-bench.mjs --runs ${RUNS} --scene ${SCENE} ${dirs.join(' ')}`,
};
console.log(JSON.stringify(out, null, 1));
