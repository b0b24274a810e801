// The client's connection: tumble.v1 subprotocol, reconnect with growing backoff,
// a fatal error stops retrying. Runs the browser module in Node with the `ws` package
// standing in for the browser's WebSocket.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket, { WebSocketServer } from 'ws';
import { Connection, SUBPROTOCOL } from '../../client-web/src/net/connection.js';

globalThis.WebSocket = WebSocket;
const servers = [];
after(() => { for (const s of servers) s.close(); });

function server(onConnection) {
  return new Promise((resolve) => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (ps) => (ps.has(SUBPROTOCOL) ? SUBPROTOCOL : false) });
    wss.on('connection', onConnection);
    wss.on('listening', () => resolve(wss));
    servers.push(wss);
  });
}

const adapter = (extra = {}) => ({
  onOpen: () => [Uint8Array.of(1, 2, 3)],
  decode: (b) => [{ type: 'raw', bytes: b.length }],
  encode: () => Uint8Array.of(9),
  ...extra,
});

test('connects with tumble.v1, sends the hello, delivers decoded messages', async () => {
  let got = null;
  const wss = await server((ws, req) => {
    got = req.headers['sec-websocket-protocol'];
    ws.on('message', (m) => ws.send(Buffer.from([...m, 7])));
  });
  const msgs = [], states = [];
  const c = new Connection(`ws://127.0.0.1:${wss.address().port}/ws/x`, adapter(), { onMessage: (m) => msgs.push(m), onStatus: (s) => states.push(s.state) });
  c.connect();
  while (!msgs.length) await new Promise((r) => setTimeout(r, 10));
  assert.equal(got, SUBPROTOCOL);
  assert.deepEqual(msgs[0], { type: 'raw', bytes: 4 });
  assert.deepEqual(states, ['connecting', 'open']);
  c.close();
});

test('a dropped connection is retried with growing backoff, then reconnects', async () => {
  let accepts = 0;
  const wss = await server((ws) => { accepts++; if (accepts <= 3) ws.close(1011, 'boom'); });
  const waits = [];
  const c = new Connection(`ws://127.0.0.1:${wss.address().port}/`, adapter(), {
    onMessage: () => {},
    onStatus: (s) => { if (s.state === 'reconnecting') waits.push(s.retryAt - performance.now()); },
  });
  c.connect();
  while (c.state !== 'open' || accepts < 4) await new Promise((r) => setTimeout(r, 20));
  assert.equal(waits.length, 3);
  assert.ok(waits[0] < waits[1] && waits[1] < waits[2], `backoff grows: ${waits.map((w) => w.toFixed(0))}`);
  assert.ok(waits[0] > 100 && waits[0] < 250 && waits[1] > 300 && waits[2] < 1500,
    `backoff 0.15 s, 0.5 s, 1 s (± 15 %): ${waits.map((w) => w.toFixed(0))}`);
  c.close();
});

test('a fatal error from the server stops retrying', async () => {
  const wss = await server((ws) => ws.send(Buffer.from([0])));
  const states = [];
  const c = new Connection(`ws://127.0.0.1:${wss.address().port}/`, adapter({ decode: () => [{ type: 'error', fatal: true, message: 'bad version' }] }),
    { onMessage: () => {}, onStatus: (s) => states.push(s) });
  c.connect();
  while (!states.some((s) => s.state === 'failed')) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 800));
  assert.equal(states.filter((s) => s.state === 'connecting').length, 1, 'no retry after a fatal error');
  assert.match(states.find((s) => s.state === 'failed').reason, /bad version/);
});
