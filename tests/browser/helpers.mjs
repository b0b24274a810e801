// Shared helpers for browser tests: Debian's Chromium through playwright-core
// (never a downloaded browser), a tiny static server, the preview bundle, console
// error capture, screenshots under build/screenshots/, and a HUD overlap check.
import { chromium } from 'playwright-core';
import * as esbuild from 'esbuild';
import http from 'node:http';
import { mkdir, readFile, copyFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, dirname, extname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const SHOTS = join(ROOT, 'build/screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'];

export const hasChromium = () => existsSync(CHROMIUM);

export async function launch() {
  await mkdir(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** Bundle the test-only preview page (fake server + real client) into build/preview/. */
export async function buildPreview() {
  const out = join(ROOT, 'build/preview');
  await mkdir(out, { recursive: true });
  await esbuild.build({ entryPoints: [join(ROOT, 'tests/browser/preview/preview-entry.js')], outfile: join(out, 'app.js'), bundle: true, format: 'esm', sourcemap: true, logLevel: 'warning' });
  await copyFile(join(ROOT, 'client-web/index.html'), join(out, 'index.html'));
  await copyFile(join(ROOT, 'client-web/style.css'), join(out, 'style.css'));
  return out;
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.map': 'application/json', '.json': 'application/json' };
/** Serve `dir` on an ephemeral loopback port; unknown paths get index.html. */
export async function serveStatic(dir) {
  const server = http.createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(dir, path);
    try { if (!(await stat(file)).isFile()) throw 0; } catch { file = join(dir, 'index.html'); }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(body);
    } catch { res.writeHead(404); res.end(); }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/** Record console errors and page errors; returns the live array. */
export function trackErrors(page) {
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  return errors;
}

export async function shot(page, name) {
  await mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), timeout: 120000 });
}

/**
 * Visible HUD boxes that overlap each other or leave the viewport. Checks the
 * top bar items, banner, dice sum, the controls panel, actions, hint and stats.
 */
export async function hudOverlaps(page) {
  return page.evaluate(() => {
    const sel = ['.brand', '.room', '.players', '.conn', '.banner', '.dice-sum', '.side .lil-gui', '.actions', '.hint', '.stats'];
    const boxes = [];
    for (const s of sel) for (const el of document.querySelectorAll(s)) {
      const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
      if (r.width < 1 || r.height < 1 || cs.display === 'none' || cs.visibility === 'hidden') continue;
      boxes.push({ s, r: { l: r.left, t: r.top, r: r.right, b: r.bottom } });
    }
    const vw = innerWidth, vh = innerHeight, bad = [];
    for (const b of boxes) if (b.r.l < -0.5 || b.r.t < -0.5 || b.r.r > vw + 0.5 || b.r.b > vh + 0.5) bad.push(`${b.s} leaves the viewport ${JSON.stringify(b.r)}`);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, c = boxes[j].r;
      const ov = Math.min(a.r, c.r) - Math.max(a.l, c.l), oh = Math.min(a.b, c.b) - Math.max(a.t, c.t);
      if (ov > 1 && oh > 1) bad.push(`${boxes[i].s} overlaps ${boxes[j].s}`);
    }
    return bad;
  });
}

export const VIEWPORTS = { desktop: { width: 1280, height: 800 }, landscape: { width: 844, height: 390 }, portrait: { width: 390, height: 844 } };

// ---- a real server for end-to-end tests --------------------------------------------------
import { spawn } from 'node:child_process';
const servers = new Set();
process.on('exit', () => { for (const p of servers) { try { p.kill('SIGKILL'); } catch { /* gone */ } } });

export const SERVER_BIN = process.env.TUMBLE_SERVER_BIN || join(ROOT, 'build/tumble-server');
export const hasServer = () => existsSync(SERVER_BIN) && existsSync(join(ROOT, 'client-web/dist/index.html'));

/**
 * Start build/tumble-server on an ephemeral loopback port serving client-web/dist;
 * resolves { url, port, proc, stop() } once it prints its listening line. Always
 * stopped: stop() sends SIGTERM (SIGKILL after 2.5 s), and process exit kills it.
 */
export async function startTumble({ args = [], timeoutMs = 8000 } = {}) {
  // Rooms a test has left go after 15 s (not 300): a file opens dozens, and the
  // cloth ones would go on stepping in the wind beside the next tests' pages.
  const proc = spawn(SERVER_BIN, ['--port', '0', '--bind', '127.0.0.1', '--client-dir', join(ROOT, 'client-web/dist'), '--log-level', 'warn',
    '--room-idle-timeout', '15', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  servers.add(proc);
  let out = '', err = '';
  const exited = new Promise((r) => proc.on('exit', (code, sig) => { servers.delete(proc); r({ code, sig }); }));
  proc.stderr.on('data', (d) => { err += d; });
  const port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`tumble-server did not listen within ${timeoutMs} ms\n${err}`)), timeoutMs);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(t); reject(new Error(`tumble-server exited (${code})\n${err}`)); });
  });
  return {
    port, url: `http://127.0.0.1:${port}`, proc, get stderr() { return err; },
    async stop() {
      if (!servers.has(proc)) return exited;
      proc.kill('SIGTERM');
      const k = setTimeout(() => proc.kill('SIGKILL'), 2500);
      const r = await exited; clearTimeout(k); return r;
    },
  };
}
