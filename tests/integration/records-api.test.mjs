// records-api.test.mjs: the server lists and serves its --record folder for the
// replay viewer (docs/replay.md): GET /api/records names every record file the
// server writes (<room>-<digits>.rec) and nothing else in the folder, newest
// first; GET /records/<name> serves one byte for byte; other names are refused
// (403), a missing record is 404, traversal and symlinks out of the folder are
// never served; without --record both answer 404. /replay and /replay/<name>
// give the client page.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, stopAll, connect, join, sleep, rawGet } from './harness.mjs';

after(stopAll);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-records-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('with --record the records are listed and served; other names are refused', async () => {
  // Things in the folder that are not records, or not the server's to hand out.
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a record');
  fs.writeFileSync(path.join(dir, 'bad name-12.rec'), 'x');
  fs.writeFileSync(path.join(dir, '-12.rec'), 'x');
  fs.symlinkSync('/etc/passwd', path.join(dir, 'link-123.rec'));
  const srv = await startServer({ args: ['--record', dir] });
  const c = await connect(srv.port, { name: 'rec' });
  await join(c, 'rec-room', 'dough');
  await sleep(1200); // at least one hash record
  const list = await (await fetch(`${srv.url}/api/records`)).json();
  const names = list.map((r) => r.name);
  assert.ok(names.some((n) => /^rec-room-\d+\.rec$/.test(n)), names.join(' '));
  for (const n of ['notes.txt', 'bad name-12.rec', '-12.rec', 'link-123.rec']) assert.ok(!names.includes(n), `${n} listed`);
  for (let i = 1; i < list.length; i++) assert.ok(list[i - 1].modified_ms >= list[i].modified_ms, 'newest first');
  const rec = list.find((r) => r.room === 'rec-room');
  assert.equal(rec.room, 'rec-room');

  const res = await fetch(`${srv.url}/records/${rec.name}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/octet-stream');
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(body.subarray(0, 8).toString('latin1'), 'TBREC001');
  const onDisk = fs.readFileSync(path.join(dir, rec.name));
  assert.ok(onDisk.subarray(0, body.length).equals(body), 'served as written');

  assert.equal((await fetch(`${srv.url}/records/notes.txt`)).status, 403);
  assert.equal((await fetch(`${srv.url}/records/rec-room-1.rec`)).status, 404);
  assert.notEqual((await fetch(`${srv.url}/records/link-123.rec`)).status, 200, 'a symlink out of the folder');
  for (const raw of ['/records/../../etc/passwd', '/records/..%2f..%2fetc%2fpasswd', '/records/%2e%2e/x-1.rec', '/records/a/b-1.rec']) {
    const r = await rawGet(srv.port, raw);
    assert.ok(r.status === 403 || r.status === 404, `${raw}: ${r.status}`);
    assert.doesNotMatch(r.body, /root:/);
  }
  for (const p of ['/replay', '/replay/', `/replay/${rec.name}`]) {
    const r = await fetch(`${srv.url}${p}`);
    assert.equal(r.status, 200, p);
    assert.match(r.headers.get('content-type'), /^text\/html/, p);
  }
  c.close();
  await srv.stop();
});

test('without --record there is nothing to list or serve', async () => {
  const srv = await startServer();
  const r = await fetch(`${srv.url}/api/records`);
  assert.equal(r.status, 200); // an empty list, not an error: the lobby asks every server
  assert.deepEqual(await r.json(), []);
  assert.equal((await fetch(`${srv.url}/records/tower-1.rec`)).status, 404);
  await srv.stop();
});
