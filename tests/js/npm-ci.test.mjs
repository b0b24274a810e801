// npm-ci.test.mjs: scripts/npm-ci.sh, the Makefile's only `npm ci`, against a fake npm
// first on PATH. An attempt that stalls is stopped at its limit and retried, a failed one
// is retried with every request logged, and three failures end it with a clear message
// instead of a CI run that waits for its own limit.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = path.join(ROOT, 'scripts/npm-ci.sh');
const dirs = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

// A folder with an `npm` that records its arguments (one line per call) and then runs `body`.
function fakeNpm(body) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-npm-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'npm'), `#!/bin/sh\necho "$*" >>"${dir}/calls"\n${body}\n`, { mode: 0o755 });
  return { dir, calls: () => fs.readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n') };
}

function run(npm, env = {}) {
  const t0 = performance.now();
  const r = spawnSync('sh', [SCRIPT], {
    encoding: 'utf8', timeout: 60000,
    env: { ...process.env, PATH: `${npm.dir}:${process.env.PATH}`, TUMBLE_NPM_PAUSE: '0', ...env },
  });
  return { ...r, ms: performance.now() - t0 };
}

test('an npm ci that stalls is stopped at the limit, tried three times, then fails saying so', () => {
  const npm = fakeNpm('exec sleep 30');
  const r = run(npm, { TUMBLE_NPM_TIMEOUT: '1' });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.equal(npm.calls().length, 3);
  assert.equal((r.stderr.match(/did not finish within 1 s/g) || []).length, 3, r.stderr);
  assert.match(r.stderr, /failed 3 times; is https:\/\/registry\.npmjs\.org reachable/);
  assert.ok(r.ms < 15000, `took ${r.ms.toFixed(0)} ms: each attempt must end at its limit`);
});

test('a failed npm ci is retried with every request logged, and a later success is success', () => {
  const npm = fakeNpm(`n=$(wc -l <"$(dirname "$0")/calls"); [ "$n" -ge 2 ] && exit 0; echo "ECONNRESET" >&2; exit 1`);
  const r = run(npm, { TUMBLE_NPM_TIMEOUT: '20' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const calls = npm.calls();
  assert.equal(calls.length, 2);
  assert.match(calls[0], /^ci --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=4$/);
  assert.match(calls[1], /--loglevel=http/);
  assert.match(r.stderr, /npm ci failed \(exit 1\)/);
});

test('an npm ci that succeeds at once is run once, without the request log', () => {
  const npm = fakeNpm('exit 0');
  const r = run(npm);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.deepEqual(npm.calls(), ['ci --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=4']);
});
