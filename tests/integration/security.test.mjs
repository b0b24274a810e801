// security.test.mjs: what a hostile browser or crawler can reach. Static
// files: a symlinked folder or file pointing out of the client folder is
// refused like traversal (http.test.mjs covers ../ and encoded forms).
// WebSocket: --allowed-origins admits only the listed origins (counted as
// refused{reason="origin"}). Room ids outside [A-Za-z0-9_-]{1,32} are refused
// with bad_room (they end up in logs and state file names).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { startServer, stopAll, connect, metrics, rawGet } from './harness.mjs';

let srv;
before(async () => { srv = await startServer({ args: ['--allowed-origins', 'https://play.example, http://127.0.0.1:8080'] }); });
after(stopAll);

test('symlinked folders and files pointing out of the client folder are refused', async () => {
  const dist = srv.clientDir;
  const base = path.dirname(dist);
  fs.mkdirSync(path.join(base, 'outside'));
  fs.writeFileSync(path.join(base, 'outside', 'private.txt'), 'TOP-SECRET-DIR\n');
  fs.symlinkSync(path.join(base, 'outside'), path.join(dist, 'outdir'));
  fs.symlinkSync('/etc', path.join(dist, 'etc'));
  fs.symlinkSync('../secret.txt', path.join(dist, 'assets', 'rel.txt'));
  for (const p of ['/outdir/private.txt', '/etc/passwd', '/etc/hostname', '/assets/rel.txt', '/outdir/', '/%6f%75%74%64%69%72/private.txt']) {
    const res = await rawGet(srv.port, p);
    assert.ok(res.status >= 400 || res.status === 0, `${p}: status ${res.status}`);
    assert.doesNotMatch(res.body, /root:|TOP-SECRET/, p);
  }
  assert.equal((await rawGet(srv.port, '/app.js')).status, 200, 'files inside are still served');
});

test('--allowed-origins admits listed origins only; the rest are refused and counted', async () => {
  const m0 = await metrics(srv.url);
  for (const origin of ['https://play.example', 'http://127.0.0.1:8080']) {
    const c = await connect(srv.port, { headers: { Origin: origin } });
    c.close();
  }
  for (const origin of ['https://evil.example', 'https://play.example.evil.example', 'null', 'https://play.example/']) {
    await assert.rejects(connect(srv.port, { headers: { Origin: origin } }), origin);
  }
  await assert.rejects(connect(srv.port), 'no Origin header');
  const m1 = await metrics(srv.url);
  const k = 'tumble_connections_refused_total{reason="origin"}';
  assert.equal(m1[k] - m0[k], 5);
});

test('room ids outside [A-Za-z0-9_-]{1,32} are refused (bad_room, or bad_value from the decoder) and counted', async () => {
  const m0 = await metrics(srv.url);
  const c = await connect(srv.port, { headers: { Origin: 'https://play.example' } });
  const bad = ['../x', 'a/b', 'a b', 'x'.repeat(33), '%2e%2e', 'caf\u00e9', 'a\u0000b', '.', 'room.state'];
  for (const room of bad) {
    c.sendRaw(Buffer.from(encode([1, 1, room, null, 'tower', 'x']))); // raw: the JS codec refuses these itself
    const e = await c.next((m) => m.type === 'error');
    assert.ok(['bad_room', 'bad_value', 'bad_message'].includes(e.name), `${JSON.stringify(room)}: ${e.name}`);
  }
  const m1 = await metrics(srv.url);
  const refused = m1['tumble_connections_refused_total{reason="bad_room_id"}'] - m0['tumble_connections_refused_total{reason="bad_room_id"}'];
  const rej = (k) => m1[`tumble_inputs_rejected_total{reason="${k}"}`] - m0[`tumble_inputs_rejected_total{reason="${k}"}`];
  const rejected = rej('bad_message') + rej('bad_value');
  assert.equal(refused + rejected, bad.length);
  c.close();
});
