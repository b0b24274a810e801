// tls.test.mjs: --tls-cert/--tls-key (libwebsockets' own TLS): one port serves
// https and wss, checked with a self-signed certificate made for the test
// (openssl). Plain http on that port gets no answer; a missing key file is a
// clear start-up error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { encodeClient, decodeServer } from '../../proto/js/tumble-proto.mjs';
import { startServer, stopAll } from './harness.mjs';

after(stopAll);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-tls-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const cert = path.join(dir, 'cert.pem');
const key = path.join(dir, 'key.pem');
let skip = false;
try {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
} catch { skip = 'openssl not installed'; }

function get(url, ca) {
  return new Promise((resolve, reject) => {
    https.get(url, { ca }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

test('one port serves https and wss with the given certificate', { skip }, async () => {
  const srv = await startServer({ args: ['--tls-cert', cert, '--tls-key', key] });
  assert.match(srv.url, /^https:/);
  const ca = fs.readFileSync(cert);
  const health = await get(`${srv.url}/healthz`, ca);
  assert.equal(health.status, 200);
  assert.equal(JSON.parse(health.body).status, 'ok');
  const page = await get(`${srv.url}/`, ca);
  assert.equal(page.status, 200);
  assert.match(page.body, /TUMBLE-INDEX/);
  // an unknown certificate is refused by the client (it is really TLS, with this cert)
  await assert.rejects(get(`${srv.url}/healthz`, undefined), /self.signed|certificate/i);

  const ws = new WebSocket(`wss://127.0.0.1:${srv.port}/ws/secure`, ['tumble.v1'], { ca });
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  const got = [];
  const welcome = new Promise((resolve) => ws.on('message', (data) => {
    const m = decodeServer(new Uint8Array(data));
    got.push(m.type);
    if (m.type === 'welcome') resolve(m);
  }));
  ws.send(encodeClient({ type: 'hello', version: 1, room: 'secure', kind: null, scene: 'tower', name: 'tls' }));
  const w = await welcome;
  assert.equal(w.room, 'secure');
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(got.filter((t) => t === 'snap_delta' || t === 'snap_key').length >= 3, `snapshots over wss: ${got.join(',')}`);
  ws.close();
});

test('plain http on the TLS port gets no page', { skip }, async () => {
  const srv = await startServer({ args: ['--tls-cert', cert, '--tls-key', key] });
  const plain = await fetch(`http://127.0.0.1:${srv.port}/healthz`).then((r) => r.status, (e) => e);
  assert.ok(plain instanceof Error || plain >= 400, `plain http answered ${plain}`);
});

test('--tls-cert without --tls-key, or an unreadable file, is a clear start-up error', { skip }, async () => {
  await assert.rejects(startServer({ args: ['--tls-cert', cert] }), /--tls-cert and --tls-key go together/);
  await assert.rejects(startServer({ args: ['--tls-cert', cert, '--tls-key', path.join(dir, 'missing.pem')] }), /--tls-key: cannot read/);
});
