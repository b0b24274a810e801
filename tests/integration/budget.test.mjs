// budget.test.mjs: per-client bandwidth budgets (issue 17 point 3; PROTOCOL.md
// "Bandwidth budgets"). A client that asks for a cap in its hello (kbps), or
// every client of a server started with --client-kbps, is sent snapshots that
// stay within that budget: when the room's changes would cost more, the
// server sends the bodies that are furthest off and longest unsent first
// (a priority accumulator) and the rest keep their last pose for a while,
// never more than 0.5 s. Once the room rests, the budgeted client's world is
// the same as everyone else's. An unbudgeted client is sent what it always was.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join, sleep } from './harness.mjs';

after(stopAll);

const SNAP_KEY = 33, SNAP_DELTA = 34;

// Counts the bytes of the snapshot frames a client receives from now on.
function countBytes(client) {
  const c = { bytes: 0, keys: 0, since: performance.now(), start() { c.bytes = 0; c.keys = 0; c.since = performance.now(); } };
  client.ws.on('message', (data) => {
    const type = data[1];
    if (type === SNAP_DELTA || type === SNAP_KEY) c.bytes += data.length;
    if (type === SNAP_KEY) c.keys++;
  });
  c.kbps = () => (c.bytes * 8) / (performance.now() - c.since);
  return c;
}

// The dough pulled around by its top for ms: every vertex moves (PROTOCOL.md: a
// grab without a body takes the nearest vertex).
async function knead(client, ms) {
  client.dropSnapshots();
  const mesh = (await client.snapshot()).state.meshes[0];
  let top = 0;
  for (let v = 1; v < mesh.length / 3; v++) if (mesh[3 * v + 1] > mesh[3 * top + 1]) top = v;
  const p = [mesh[3 * top], mesh[3 * top + 1], mesh[3 * top + 2]];
  client.send({ type: 'grab_start', pointer: 0, point: p, body: null });
  const t0 = performance.now();
  for (let t = 0; t < ms; t = performance.now() - t0) {
    const a = (t / 1000) * 2 * Math.PI;
    client.send({ type: 'grab_move', pointer: 0, point: [p[0] + 0.5 * Math.cos(a), p[1] + 0.4 + 0.2 * Math.sin(2 * a), p[2] + 0.5 * Math.sin(a)] });
    await sleep(30);
  }
  client.send({ type: 'grab_end', pointer: 0 });
}

// The two clients' pictures of the dough, coordinate by coordinate: the largest
// difference. Each picture is within the encoder's tolerance of the truth per
// axis (0.98 mm, PROTOCOL.md §7.7), so two caught-up pictures differ by at most
// 1.96 mm on any axis (in 3D up to 3.4 mm).
function largestDifference(a, b) {
  const [x, y] = [a.meshes[0], b.meshes[0]];
  assert.equal(x.length, y.length);
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  return worst;
}

async function restingState(client, timeoutMs = 15000) {
  const end = performance.now() + timeoutMs;
  for (;;) {
    client.dropSnapshots();
    const s = (await client.snapshot()).state;
    if (s.awake === 0 || performance.now() > end) return s;
    await sleep(200);
  }
}

test('a client that asks for a budget is sent no more than it, and sees every vertex again once the dough rests', async () => {
  const s = await startServer();
  const full = await connect(s.port, { name: 'Near' });
  const thin = await connect(s.port, { name: 'Far' });
  const fullBytes = countBytes(full), thinBytes = countBytes(thin);
  await join(full, 'b-dough', 'dough');
  await join(thin, 'b-dough', null, { kbps: 32 });
  await sleep(1000); // the lane's first keyframe has come
  fullBytes.start(); thinBytes.start();
  await knead(full, 4000);
  const fullRate = fullBytes.kbps(), thinRate = thinBytes.kbps();
  const note = `unbudgeted ${fullRate.toFixed(1)} kbit/s, budget 32: ${thinRate.toFixed(1)} kbit/s (${thinBytes.keys} keyframes)`;
  assert.ok(fullRate > 48, `the dough must need more than the budget for this test to mean anything: ${note}`);
  assert.ok(thinRate <= 32 * 1.15, note);
  assert.equal(thin.snapErrors.length, 0, 'every budgeted delta chains');
  assert.equal(full.snapErrors.length, 0);

  // while it moves, the budgeted client's picture lags; once the dough rests, it is the same
  const rest = await restingState(full);
  assert.equal(rest.awake, 0, 'the dough came to rest');
  // the catch-up is budgeted too: 812 vertices at ~30 bits each take about a second at 32 kbit/s
  const t0 = performance.now();
  let worst = Infinity;
  while (performance.now() - t0 < 3000) {
    full.dropSnapshots(); thin.dropSnapshots();
    const [a, b] = [(await full.snapshot()).state, (await thin.snapshot()).state];
    worst = largestDifference(a, b);
    if (worst <= 0.002) break; // each within 0.98 mm of the truth on every axis
    await sleep(100);
  }
  const took = performance.now() - t0;
  assert.ok(worst <= 0.002, `the budgeted picture is still ${(worst * 1000).toFixed(2)} mm (on one axis) from the full one 3 s after the rest`);
  console.log(`# ${note}; the budgeted picture caught up ${took.toFixed(0)} ms after the dough slept`);
  full.close(); thin.close();
});

test('a client joining a budget that is holding bodies back gets that budget\'s state, not a delta from another', async () => {
  // Two clients share a budget's stream (a lane). While the first one's budget
  // binds, the lane holds another state than the room's own stream of the same
  // tick; the second one, welcomed on the room's own stream, must move to the
  // lane with its keyframe: a lane delta of the right base tick would apply to
  // the wrong state, and the budget would never resend what it believes sent.
  const s = await startServer();
  const full = await connect(s.port, { name: 'Near' });
  const first = await connect(s.port, { name: 'Far' });
  const late = await connect(s.port, { name: 'Later' });
  await join(full, 'b-late', 'dough');
  await join(first, 'b-late', null, { kbps: 32 });
  await sleep(500);
  const kneading = knead(full, 4000);
  await sleep(1500); // the lane binds now
  await join(late, 'b-late', null, { kbps: 32 });
  await kneading;
  const rest = await restingState(full);
  assert.equal(rest.awake, 0, 'the dough came to rest');
  const t0 = performance.now();
  let worst = Infinity;
  while (performance.now() - t0 < 3000) {
    full.dropSnapshots(); late.dropSnapshots();
    const [a, b] = [(await full.snapshot()).state, (await late.snapshot()).state];
    worst = largestDifference(a, b);
    if (worst <= 0.002) break;
    await sleep(100);
  }
  assert.equal(late.snapErrors.length, 0, `every snapshot the late client was sent applies: ${late.snapErrors.join('; ')}`);
  assert.ok(worst <= 0.002, `the late client's picture is still ${(worst * 1000).toFixed(2)} mm (on one axis) from the full one 3 s after the rest`);
  full.close(); first.close(); late.close();
});

test('--client-kbps budgets every client; a hello may lower its budget, not raise it', async () => {
  const s = await startServer({ args: ['--client-kbps', '48'] });
  const plain = await connect(s.port, { name: 'Plain' });
  const greedy = await connect(s.port, { name: 'Greedy' });
  const modest = await connect(s.port, { name: 'Modest' });
  const bytes = [countBytes(plain), countBytes(greedy), countBytes(modest)];
  await join(plain, 'b-default', 'dough');
  await join(greedy, 'b-default', null, { kbps: 500 });
  await join(modest, 'b-default', null, { kbps: 24 });
  await sleep(1000);
  for (const b of bytes) b.start();
  await knead(plain, 4000);
  const [p, g, m] = bytes.map((b) => b.kbps());
  const note = `plain ${p.toFixed(1)}, asked 500: ${g.toFixed(1)}, asked 24: ${m.toFixed(1)} kbit/s`;
  assert.ok(p <= 48 * 1.15, note);
  assert.ok(g <= 48 * 1.15, `a hello cannot raise the server's budget: ${note}`);
  assert.ok(m <= 24 * 1.15, note);
  assert.ok(p > 30, `the dough fills the server's budget: ${note}`);
  for (const c of [plain, greedy, modest]) assert.equal(c.snapErrors.length, 0);
  plain.close(); greedy.close(); modest.close();
});

test('a hello asking for less than 16 kbit/s is refused with bad_value; the room plays on', async () => {
  const s = await startServer();
  const player = await connect(s.port, { name: 'Ada' });
  await join(player, 'b-bad', 'tower');
  const bad = await connect(s.port, { name: 'Tiny' });
  bad.sendRaw(Buffer.from([0x98, 0x01, 0x01, 0xa5, 0x62, 0x2d, 0x62, 0x61, 0x64, 0xc0, 0xc0, 0xa1, 0x54, 0xc0, 0x08]));
  const e = await bad.error();
  assert.equal(e.name, 'bad_value');
  assert.match(e.message, /kbps/);
  player.dropSnapshots();
  const before = player.snapshots;
  await sleep(500);
  assert.ok(player.snapshots > before + 10, 'the player is still streamed');
  // the same connection may still join, within the range
  const welcome = await join(bad, 'b-bad', null, { kbps: 16 });
  assert.equal(welcome.room, 'b-bad');
  player.close(); bad.close();
});
