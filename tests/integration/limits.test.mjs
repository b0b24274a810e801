// limits.test.mjs: the limits of README "Limits and backpressure" that only
// show under pressure, each against a real server:
//   - error replies come from an allowance (32, refilling at 16 a second per
//     client); when it is empty: one rate_limited and close 1008 (PROTOCOL.md
//     §8 "What a flooder gets"); every refusal read is counted;
//   - a client whose must-deliver queue (256) overflows (here: pongs to its
//     own pings once its socket is full) is disconnected at once with 1008
//     "not reading fast enough", long before --slow-reader-timeout;
//   - the network thread takes at most 32 messages from one socket per loop
//     turn, so another client's message is answered before a flooder's burst
//     is through (seen in the pongs' server_time);
//   - the room input queue (256) refuses the excess with rate_limited
//     "room input queue full", counted, and the room keeps stepping.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { encodeClient } from '../../proto/js/tumble-proto.mjs';
import { startServer, stopAll, connect, join, metrics, sleep, roomSteps, stepRate } from './harness.mjs';

after(stopAll);

const rej = (m, k) => m[`tumble_inputs_rejected_total{reason="${k}"}`] ?? 0;
const refused = (m, k) => m[`tumble_connections_refused_total{reason="${k}"}`] ?? 0;
const errorsIn = (c, name) => c.inbox.filter((m) => m.type === 'error' && (!name || m.name === name));

test('error replies: an allowance of 32 refilling at 16 a second, then rate_limited and close 1008; every refusal read is counted', async () => {
  const srv = await startServer();
  const c = await connect(srv.port, { name: 'garbage' });
  const m0 = await metrics(srv.url);
  // 0xc1 is the one byte msgpack never uses: each frame is a malformed message.
  const bad = Buffer.from([0xc1]);
  for (let i = 0; i < 30; i++) c.sendRaw(bad);
  await sleep(500);
  assert.equal(errorsIn(c, 'malformed').length, 30, 'within the allowance every refusal is answered');
  assert.equal(c.closed, null, 'not closed within the allowance');
  // 2 tokens were left; after about 1 s, 16 more. 16 bad messages are all answered.
  c.drop(() => true);
  await sleep(1000);
  for (let i = 0; i < 16; i++) c.sendRaw(bad);
  await sleep(500);
  assert.equal(errorsIn(c, 'malformed').length, 16, 'the allowance refills at 16 a second');
  c.send({ type: 'ping', client_time: 7 });
  assert.equal((await c.type('pong')).client_time, 7, 'the connection still works');
  // A burst of 100 empties it: the rest is not answered; one rate_limited, then 1008.
  c.drop(() => true);
  for (let i = 0; i < 100; i++) c.sendRaw(bad);
  const closed = await Promise.race([c.whenClosed, sleep(10000).then(() => null)]);
  assert.ok(closed, 'closed after the allowance ran out');
  assert.equal(c.closed.code, 1008);
  const third = errorsIn(c, 'malformed').length;
  assert.ok(third >= 2 && third <= 32 + 2, `${third} answers to the burst of 100 (what was left of the allowance)`);
  const last = errorsIn(c, 'rate_limited');
  assert.equal(last.length, 1, 'one rate_limited before the close');
  assert.match(last[0].message, /too many refused/);
  const m1 = await metrics(srv.url);
  const counted = rej(m1, 'malformed') - rej(m0, 'malformed');
  assert.ok(counted >= 30 + 16 + third && counted <= 30 + 16 + 100, `${counted} malformed counted`);
  await srv.stop();
});

test('a client whose must-deliver queue overflows is closed at once with 1008, before the slow-reader timeout', async () => {
  // A long slow-reader timeout: any cut within the test's time is the queue's.
  const srv = await startServer({ args: ['--slow-reader-timeout', '120'] });
  const good = await connect(srv.port, { name: 'good' });
  await join(good, 'overflow', 'pile');
  const slow = await connect(srv.port, { name: 'slow' });
  await join(slow, 'overflow', 'pile');
  // The contacts view is a per-client must-deliver message with every snapshot.
  slow.send({ type: 'contacts_view', on: true });
  await slow.type('contacts', 3000).catch(() => {});
  const m0 = await metrics(srv.url);
  slow.ws._socket.pause(); // stop reading: the kernel buffers fill, then the queue
  const t0 = performance.now();
  let m, kicks = 0;
  let pings = 0;
  do {
    if (kicks++ % 8 === 0) good.send({ type: 'action', action: 'reset', scene: null }); // keep the pile in contact
    // The slow client keeps sending pings within its input rate (100/s of 120/s): once its
    // socket is full, their pongs wait in its must-deliver queue (256) until it overflows.
    for (let i = 0; i < 25; i++) slow.send({ type: 'ping', client_time: ++pings });
    await sleep(250);
    m = await metrics(srv.url);
  } while (refused(m, 'slow_reader') === refused(m0, 'slow_reader') && performance.now() - t0 < 60000);
  const cutMs = performance.now() - t0;
  assert.equal(refused(m, 'slow_reader') - refused(m0, 'slow_reader'), 1, `cut after ${cutMs.toFixed(0)} ms`);
  assert.ok(cutMs < 60000, `cut after ${cutMs.toFixed(0)} ms, well before the 120 s timeout`);
  // Reading again, the client finds the close the server queued behind what it had sent.
  slow.ws._socket.resume();
  const closed = await Promise.race([slow.whenClosed, sleep(20000).then(() => null)]);
  assert.ok(closed, 'the close frame reached the client once it read');
  assert.equal(closed.code, 1008);
  assert.match(closed.reason, /not reading fast enough/);
  // The other client of the room was never disturbed.
  assert.equal(good.closed, null);
  good.dropSnapshots();
  await good.snapshot();
  good.close();
  await srv.stop();
});

test('at most 32 messages are taken from one socket per loop turn: a flooder does not hold up another client', async () => {
  const srv = await startServer({ args: ['--input-rate', '20000'] });
  const flood = await connect(srv.port, { name: 'flood' });
  const other = await connect(srv.port, { name: 'other' });
  const N = 3000;
  // Every ping in one TCP write (the socket corked while the frames are queued),
  // then one from the other client: both are in the server's socket buffers at once.
  const frame = (i) => Buffer.from(encodeClient({ type: 'ping', client_time: i }));
  flood.ws._socket.cork();
  for (let i = 1; i <= N; i++) flood.sendRaw(frame(i));
  flood.ws._socket.uncork();
  other.sendRaw(frame(0));
  const mine = await other.type('pong', 10000);
  assert.equal(mine.client_time, 0);
  const deadline = performance.now() + 20000;
  while (flood.inbox.filter((x) => x.type === 'pong').length < N && performance.now() < deadline) await sleep(50);
  const pongs = flood.inbox.filter((x) => x.type === 'pong');
  const before = pongs.filter((p) => p.server_time < mine.server_time).length;
  const times = pongs.map((p) => p.server_time);
  const span = Math.max(...times) - Math.min(...times);
  // The flood is read 32 at a time, one turn apart (a 1 ms timer resumes it):
  // the other client's ping comes in the first turns, not after the flood. Its frame
  // goes out on its own socket just after the flood's, so it may reach the server a
  // few turns after the flood's first bytes (a clean clone saw 4 turns, 128 pongs):
  // 8 turns (256 of 3,000) still tells pacing from none.
  assert.ok(before <= 8 * 32, `${before} of the flood's ${N} pings were answered before the other client's one`);
  // Read all at once, the flood's 3,000 pongs would also overflow its own
  // must-deliver queue (128) and get it closed: paced, every one is answered.
  assert.equal(pongs.length, N, `every ping of the flood answered (flood client closed: ${JSON.stringify(flood.closed)})`);
  assert.ok(span >= 0.5 * (N / 32 - 1), `the flood was read over ${span.toFixed(1)} ms (${N} pings, 32 a turn)`);
  flood.close(); other.close();
  await srv.stop();
});

test('the room input queue refuses the excess with rate_limited "room input queue full"; the room keeps stepping', async () => {
  const srv = await startServer({ args: ['--input-rate', '20000'] });
  const clients = [];
  for (let i = 0; i < 4; i++) {
    const c = await connect(srv.port, { name: `p${i}` });
    await join(c, 'queue', 'tower');
    clients.push(c);
  }
  await clients[0].snapshot();
  const m0 = await metrics(srv.url);
  const steps0 = await roomSteps(srv.url, 'queue');
  const per = 800;
  const frame = (seq) => Buffer.from(encodeClient({ type: 'poke', seq, body: 3, point: [1.7, 0.5, 0], impulse: [0, 0.001, 0] })); // plank 3, gently
  // Each client's inputs in one TCP write: the network thread takes 32 a turn from
  // each socket, four sockets a turn, far more than the worker's 256 a step.
  for (const c of clients) {
    c.ws._socket.cork();
    for (let k = 0; k < per; k++) c.sendRaw(frame(k + 1));
  }
  for (const c of clients) c.ws._socket.uncork();
  const full = await Promise.any(clients.map((c) => c.next((x) => x.type === 'error' && /room input queue full/.test(x.message), 10000)))
    .catch(async () => assert.fail(`no "room input queue full" error; errors seen: ${clients.flatMap((c) => errorsIn(c).map((e) => e.message)).slice(0, 5)}; ` +
      `applied ${(await metrics(srv.url)).tumble_inputs_applied_total - m0.tumble_inputs_applied_total}`));
  assert.equal(full.name, 'rate_limited');
  await sleep(1000);
  const m1 = await metrics(srv.url);
  const applied = m1.tumble_inputs_applied_total - m0.tumble_inputs_applied_total;
  const limited = rej(m1, 'rate_limited') - rej(m0, 'rate_limited');
  assert.ok(limited > 0, 'the refusals are counted');
  assert.equal(applied + limited + rej(m1, 'unknown_body') - rej(m0, 'unknown_body'), 4 * per, `${applied} applied + ${limited} refused of ${4 * per}`);
  const steps = stepRate(steps0, await roomSteps(srv.url, 'queue'));
  assert.ok(steps >= 100, `the room stepped ${steps.toFixed(1)}/s`);
  for (const c of clients) assert.equal(c.closed, null);
  clients.forEach((c) => c.close());
  await srv.stop();
});
