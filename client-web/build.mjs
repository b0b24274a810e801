// Builds the browser client into client-web/dist/: app.js (the minified ES module
// with three.js, lil-gui and the protocol codec, plus a source map), chunks/ (what
// app.js imports only when needed: the replay viewer), index.html, style.css, and
// tumble-physics.wasm (`make wasm`; the viewer fetches it: the server gives .wasm
// files application/wasm). Run by `make` (see the Makefile) or directly:
//   node client-web/build.mjs [--dev]     (--dev: no minification)
import * as esbuild from 'esbuild';
import { mkdir, copyFile, rm, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const dev = process.argv.includes('--dev');

await mkdir(dist, { recursive: true });
await rm(join(dist, 'chunks'), { recursive: true, force: true });
const result = await esbuild.build({
  entryPoints: { app: join(here, 'src/main.js') },
  outdir: dist,
  // The replay viewer and the physics loader are a dynamic import(): a room's or the
  // lobby's first paint does not wait for them (issue 21: first paint no slower).
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'safari15', 'firefox100'],
  minify: !dev,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
await copyFile(join(here, 'style.css'), join(dist, 'style.css'));
const wasm = join(here, '../build/wasm/tumble-physics.wasm');
if (existsSync(wasm)) await copyFile(wasm, join(dist, 'tumble-physics.wasm'));
else console.warn('client-web/dist: no build/wasm/tumble-physics.wasm (make wasm): the replay viewer cannot load');
// index.html last (it is make's target), with a modulepreload for each chunk app.js
// imports statically (three.js and what the viewer shares with the rooms), so the
// browser fetches them beside app.js instead of after parsing it: first paint waits
// for no extra round trip.
const shared = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint)?.[1].imports
  .filter((i) => i.kind === 'import-statement').map((i) => '/' + i.path.slice(i.path.indexOf('chunks/'))) || [];
const html = (await readFile(join(here, 'index.html'), 'utf8')).replace('<script type="module" src="/app.js"></script>',
  shared.map((p) => `<link rel="modulepreload" href="${p}">\n  `).join('') + '<script type="module" src="/app.js"></script>');
if (!html.includes('modulepreload') && shared.length) throw new Error('index.html: no app.js script tag to preload beside');
await writeFile(join(dist, 'index.html'), html);
const bytes = Object.values(result.metafile.outputs).reduce((a, o) => a + (o.bytes || 0), 0);
console.log(`client-web/dist: app.js + maps ${(bytes / 1024).toFixed(0)} KiB${dev ? ' (dev)' : ''}`);
