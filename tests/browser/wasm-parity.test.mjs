// The physics steps bit for bit alike on the server and in the browser: the client's
// own bundle (client-web/dist, served by a real tumble-server with its
// tumble-physics.wasm as application/wasm) loads the module in Chromium and prints the
// world-hash lines (tests/bench/bench_world_hash.c: every scene after its fixed input
// script); they must equal `build/tumble-bench world-hash` (native x86-64) and the
// committed goldens (tests/world-hash/golden.jsonl), line for line, for every scene.
// Node's run of the same module is tests/world-hash/check.sh. The time each scene
// took in Chromium is printed with the load average (BENCHMARKS.md "WebAssembly").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { launch, startTumble, hasServer, hasChromium, trackErrors, ROOT } from './helpers.mjs';

const BENCH = join(ROOT, 'build/tumble-bench');
const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)'
  : !existsSync(join(ROOT, 'client-web/dist/tumble-physics.wasm')) ? 'no client-web/dist/tumble-physics.wasm (make)' : !existsSync(BENCH) ? 'no build/tumble-bench (make)' : false;
let browser, server;
before(async () => { if (skip) return; server = await startTumble(); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test('the world-hash lines of the client bundle in Chromium equal native and the goldens for every scene', { skip, timeout: 600000 }, async () => {
  const native = execFileSync(BENCH, ['world-hash'], { encoding: 'utf8' }).trim().split('\n');
  const golden = readFileSync(join(ROOT, 'tests/world-hash/golden.jsonl'), 'utf8').trim().split('\n');
  assert.deepEqual(native, golden, 'native differs from the goldens (tests/world-hash/check.sh says more)');

  const page = await browser.newPage({ viewport: { width: 640, height: 400 } });
  page.setDefaultTimeout(300000);
  const errors = trackErrors(page);
  // The served module, with the content type that lets the browser compile it while it downloads.
  const wasm = await page.request.get(`${server.url}/tumble-physics.wasm`);
  assert.equal(wasm.status(), 200);
  assert.match(wasm.headers()['content-type'], /^application\/wasm/);
  await page.goto(`${server.url}/replay`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => window.__tumble?.replay?.worldHash, null, { polling: 100 });
  const load = os.loadavg()[0];
  const t0 = Date.now();
  const { lines, ms } = await page.evaluate(() => window.__tumble.replay.worldHash());
  const total = Date.now() - t0;
  const scenes = lines.map((l) => JSON.parse(l).scene);
  console.log(`# Chromium world-hash (load ${load.toFixed(2)}, ${os.cpus().length} CPUs): ${scenes.map((s, i) => `${s} ${ms[i].toFixed(0)} ms`).join(', ')}; ${total} ms in all`);
  assert.equal(lines.length, golden.length, lines.join('\n'));
  for (let i = 0; i < golden.length; i++) assert.equal(lines[i], native[i], `scene ${scenes[i]}: Chromium ≠ native`);
  assert.deepEqual(errors, []);
  await page.close();
});
