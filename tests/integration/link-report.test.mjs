// link-report.test.mjs: a ping carrying a link report (PROTOCOL.md §13) against a
// real server: answered like any ping; a report with a bad value is refused with
// bad_value and the session carries on; an old client's plain ping still works.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join } from './harness.mjs';

after(stopAll);

test('a ping with a link report is answered like any ping', async () => {
  const srv = await startServer();
  const c = await connect(srv.port);
  await join(c, 'link-report', 'tower');
  const snap = await c.snapshot();
  c.send({ type: 'ping', client_time: 1234, ack_tick: snap.state.tick, rtt_ms: 12.5, recv_bytes: 4096 });
  const pong = await c.type('pong');
  assert.equal(pong.client_time, 1234);
  c.send({ type: 'ping', client_time: 1235 }); // an old client's ping
  assert.equal((await c.type('pong')).client_time, 1235);
  c.close();
});

test('a link report with a bad value is refused and the session carries on', async () => {
  const srv = await startServer();
  const c = await connect(srv.port);
  await join(c, 'link-report-bad', 'tower');
  // [10, 1, 5, -3, nil]: rtt_ms below 0 (the x_ping_report_negative_rtt vector)
  c.sendRaw(Buffer.from([0x95, 0x0a, 0x01, 0x05, 0xfd, 0xc0]));
  const err = await c.error();
  assert.equal(err.name, 'bad_value');
  assert.match(err.message, /rtt_ms/);
  c.send({ type: 'ping', client_time: 77, ack_tick: 1, rtt_ms: null, recv_bytes: null });
  assert.equal((await c.type('pong')).client_time, 77);
  assert.ok(await c.snapshot(), 'still streaming');
  c.close();
});
