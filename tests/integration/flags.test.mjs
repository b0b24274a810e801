// flags.test.mjs: the server flags that change what a client sees, at
// values other than their defaults (the other suites mostly run with the
// defaults): --snapshot-rate, --max-message-bytes, --input-rate.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, metrics, sleep, snapshotStats } from './harness.mjs';
import { encodeClient } from '../../proto/js/tumble-proto.mjs';

after(stopAll);

const rej = (m, k) => m[`tumble_inputs_rejected_total{reason="${k}"}`] ?? 0;
const isSnap = (m) => (m.type === 'snap_delta' || m.type === 'snap_key') && m.state;

test('--snapshot-rate 20: the welcome says 20, snapshots come every 6th tick, about 20 a second', async () => {
  const srv = await startServer({ args: ['--snapshot-rate', '20'] });
  const c = await connect(srv.port);
  const w = await join(c, 'slow-snaps', 'dice');
  assert.equal(w.snap_rate, 20);
  await c.snapshot();
  c.dropSnapshots();
  await sleep(2000);
  const snaps = c.inbox.filter(isSnap);
  const stats = snapshotStats(c);
  for (let i = 1; i < snaps.length; i++) {
    const gap = snaps[i].state.tick - snaps[i - 1].state.tick;
    assert.equal(gap % 6, 0, `tick gap ${gap} between snapshots ${i - 1} and ${i}`);
  }
  assert.ok(snaps.length >= 30 && snaps.length <= 44, `${snaps.length} snapshots in 2 s (${stats.note})`);
  const m = await metrics(srv.url);
  c.close();
  await srv.stop();
  assert.ok(m.tumble_snapshots_total > 0);
});

test('--snapshot-rate that does not divide 120 is refused at start with exit status 2', async () => {
  await assert.rejects(startServer({ args: ['--snapshot-rate', '50'] }), /exited \(2\)[^]*snapshot/);
});

test('--max-message-bytes 300: a 400-byte message is refused with too_big and close 1009; 250 bytes are read', async () => {
  const srv = await startServer({ args: ['--max-message-bytes', '300'] });
  const m0 = await metrics(srv.url);
  // 250 bytes: under the limit, so it is decoded (and refused for what it is: not msgpack).
  const a = await connect(srv.port);
  a.sendRaw(Buffer.alloc(250, 0xc1));
  const e = await a.error();
  assert.notEqual(e.name, 'too_big', `${e.name}: ${e.message}`);
  assert.equal(a.closed, null);
  // 400 bytes: over it (the default, 4096, would take it).
  a.sendRaw(Buffer.alloc(400, 0xc1));
  const big = await a.error('too_big');
  assert.match(big.message, /300/);
  assert.equal((await a.whenClosed).code, 1009);
  const m1 = await metrics(srv.url);
  assert.equal(rej(m1, 'too_big') - rej(m0, 'too_big'), 1);
  await srv.stop();
});

test('--input-rate 10: a burst of 20, then 10 a second; pings count; a flood of twice that closes', async () => {
  const srv = await startServer({ args: ['--input-rate', '10'] });
  const c = await connect(srv.port);
  const ping = (i) => Buffer.from(encodeClient({ type: 'ping', client_time: i }));
  // 30 at once: the bucket's 20 (plus what refills meanwhile) answered, the rest
  // rate_limited (10 of the flood allowance's 20): throttled, not closed.
  for (let i = 0; i < 30; i++) c.sendRaw(ping(i));
  await sleep(600);
  const first = c.inbox.filter((m) => m.type === 'pong').length;
  assert.ok(first >= 20 && first <= 20 + 7, `${first} pongs for 30 pings at once (bursts of 2 x 10)`);
  assert.ok(c.inbox.some((m) => m.type === 'error' && m.name === 'rate_limited'), 'the excess is told rate_limited');
  assert.equal(c.closed, null, 'throttled, not closed');
  c.drop(() => true);
  await sleep(1000);
  // about 1.6 s of refill at 10/s since the burst: 12 pings are answered
  for (let i = 0; i < 12; i++) c.sendRaw(ping(100 + i));
  await sleep(400);
  const second = c.inbox.filter((m) => m.type === 'pong').length;
  assert.ok(second >= 10 && second <= 12, `${second} pongs for 12 pings after about 1.6 s of refill at 10/s`);
  // 100 at once is more than the input bucket plus the flood allowance: close 1008.
  for (let i = 0; i < 100; i++) c.sendRaw(ping(200 + i));
  const closed = await Promise.race([c.whenClosed, sleep(10000).then(() => null)]);
  assert.ok(closed, 'a flood of 10 times the rate is closed');
  assert.equal(c.closed.code, 1008);
  const m = await metrics(srv.url);
  assert.ok(rej(m, 'rate_limited') >= 10, `rate_limited counted: ${rej(m, 'rate_limited')}`);
  await srv.stop();
});
