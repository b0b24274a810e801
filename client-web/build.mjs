// Builds the browser client into client-web/dist/: app.js (one minified ES module
// bundle with three.js, lil-gui and the protocol codec, plus a source map),
// index.html and style.css. Run by `make` (see the Makefile) or directly:
//   node client-web/build.mjs [--dev]     (--dev: no minification)
import * as esbuild from 'esbuild';
import { mkdir, copyFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const dev = process.argv.includes('--dev');

await mkdir(dist, { recursive: true });
const result = await esbuild.build({
  entryPoints: [join(here, 'src/main.js')],
  outfile: join(dist, 'app.js'),
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
await copyFile(join(here, 'index.html'), join(dist, 'index.html')); // last: it is make's target
const bytes = Object.values(result.metafile.outputs).reduce((a, o) => a + (o.bytes || 0), 0);
console.log(`client-web/dist: app.js + maps ${(bytes / 1024).toFixed(0)} KiB${dev ? ' (dev)' : ''}`);
