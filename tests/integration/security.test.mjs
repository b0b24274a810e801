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

test('a hello for another room than the /ws/<room> URL is refused with bad_room and counted', async () => {
  const headers = { Origin: 'https://play.example' };
  const m0 = await metrics(srv.url);
  const c = await connect(srv.port, { headers, path: '/ws/tower' });
  c.send({ type: 'hello', version: 1, room: 'dice', kind: null, scene: null, name: 'x' });
  const e = await c.error('bad_room');
  assert.match(e.message, /dice.*\/ws\/tower/);
  // the connection stays open and unjoined: the right room is still welcome
  c.send({ type: 'hello', version: 1, room: 'tower', kind: null, scene: null, name: 'x' });
  assert.equal((await c.type('welcome')).room, 'tower');
  c.close();
  // a trailing slash is the same room; any other path leaves the room to the hello
  const d = await connect(srv.port, { headers, path: '/ws/flag/' });
  d.send({ type: 'hello', version: 1, room: 'flag', kind: null, scene: null, name: 'x' });
  assert.equal((await d.type('welcome')).room, 'flag');
  d.close();
  const other = await connect(srv.port, { headers, path: '/anything' });
  other.send({ type: 'hello', version: 1, room: 'dice', kind: null, scene: null, name: 'x' });
  assert.equal((await other.type('welcome')).room, 'dice');
  other.close();
  const m1 = await metrics(srv.url);
  const k = 'tumble_connections_refused_total{reason="room_mismatch"}';
  assert.equal(m1[k] - (m0[k] ?? 0), 1);
});

test('--trusted-proxies: X-Forwarded-For names the client only when the peer is a trusted proxy', async () => {
  const xff = (a) => ({ 'X-Forwarded-For': a });
  // Trusted (the test connects from 127.0.0.1): each forwarded address has its own limit of 2.
  const trusted = await startServer({ args: ['--max-conns-per-address', '2', '--trusted-proxies', '10.0.0.0/8, 127.0.0.1/32'] });
  const open = [];
  for (let i = 0; i < 2; i++) open.push(await connect(trusted.port, { headers: xff('203.0.113.7') }));
  await assert.rejects(connect(trusted.port, { headers: xff('203.0.113.7') }), '203.0.113.7 is over its limit');
  // the rightmost untrusted hop counts: "spoofed, real, proxy" is real
  await assert.rejects(connect(trusted.port, { headers: xff('198.51.100.1, 203.0.113.7, 10.1.2.3') }), 'still 203.0.113.7');
  open.push(await connect(trusted.port, { headers: xff('203.0.113.8') }));
  open.push(await connect(trusted.port, { headers: xff('203.0.113.7, 198.51.100.9') }));
  let m = await metrics(trusted.url);
  assert.equal(m['tumble_connections_refused_total{reason="per_address"}'], 2);
  open.forEach((c) => c.close());
  await trusted.stop();
  // Not trusted (default): the header is ignored, the peer address counts.
  const plain = await startServer({ args: ['--max-conns-per-address', '2'] });
  const a = await connect(plain.port, { headers: xff('203.0.113.1') });
  const b = await connect(plain.port, { headers: xff('203.0.113.2') });
  await assert.rejects(connect(plain.port, { headers: xff('203.0.113.3') }), 'a client cannot pick its address');
  m = await metrics(plain.url);
  assert.equal(m['tumble_connections_refused_total{reason="per_address"}'], 1);
  a.close(); b.close();
  await plain.stop();
});

test('--trusted-proxies with a malformed range: one clear line, exit status 2', async () => {
  for (const bad of ['10.0.0.0/33', 'not-an-ip', '::1/129', '10.0.0.0/']) {
    await assert.rejects(startServer({ args: ['--trusted-proxies', bad] }), (e) => {
      assert.match(e.message, /server exited \(2\) before listening/);
      assert.match(e.message, /--trusted-proxies: /);
      return true;
    }, bad);
  }
});
