// The replay viewer (client-web/src/replay/, the server's input application and kernels
// as WebAssembly) in Debian's Chromium against a real tumble-server started with
// --record: a 30 s two-client session in a tower, a flag and a dough room is recorded,
// each record is listed by the server (GET /api/records) and in the lobby, opened at
// /replay/<name>, and replayed to its end with every state hash matching, as
// `tumble-server --replay` finds too; playing at 4x and scrubbing back (re-simulation
// from the start state) keep every hash matching. A record with one flipped hash bit
// shows the mismatch: its tick, in red, on the page. Times are printed with the load
// average (BENCHMARKS.md "WebAssembly").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { launch, startTumble, hasServer, hasChromium, trackErrors, shot, SERVER_BIN, ROOT } from './helpers.mjs';
import { connect, join, sleep } from '../integration/harness.mjs';

const SESSION_MS = 30000;
const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)'
  : !fs.existsSync(path.join(ROOT, 'client-web/dist/tumble-physics.wasm')) ? 'no client-web/dist/tumble-physics.wasm (make)' : false;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-viewer-'));
let browser, server;
before(async () => { if (skip) return; // Rooms drop a second after their last player leaves, which ends their records.
  server = await startTumble({ args: ['--record', dir, '--throw-rate', '5', '--room-idle-timeout', '1'] }); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); fs.rmSync(dir, { recursive: true, force: true }); });

// Two players per room, each doing what its world offers (tests/integration/replay.test.mjs).
async function play(room, scene, act) {
  const a = await connect(server.port, { name: `${room}-a` });
  const b = await connect(server.port, { name: `${room}-b` });
  await join(a, room, scene);
  await join(b, room);
  const t0 = performance.now();
  for (let i = 0; performance.now() - t0 < SESSION_MS; i++) {
    act(i, a, b);
    await sleep(100);
  }
  a.close();
  b.close();
}

const nativeReplay = (file) => {
  const r = spawnSync(SERVER_BIN, ['--replay', file], { encoding: 'utf8', timeout: 120000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

async function openViewer(name) {
  const page = await browser.newPage({ viewport: { width: 960, height: 600 } });
  page.setDefaultTimeout(300000);
  const errors = trackErrors(page);
  await page.goto(`${server.url}/replay/${name}`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => window.__tumble?.replay?.status() || window.__tumble?.replayError, null, { polling: 200 });
  const err = await page.evaluate(() => window.__tumble.replayError);
  assert.equal(err, undefined, `${name}: ${err}`);
  return { page, errors, status: () => page.evaluate(() => window.__tumble.replay.status()) };
}

const records = {};
test('a recorded 30 s tower/flag/dough session replays in Chromium with every hash matching', { skip, timeout: 900000 }, async () => {
  const r = (lo, hi) => lo + Math.random() * (hi - lo);
  await Promise.all([
    play('view-tower', 'tower', (i, a, b) => {
      if (i === 5) a.send({ type: 'action', action: 'knock', scene: null });
      if (i % 10 === 3) b.send({ type: 'throw', origin: [r(-2, 2), 2, r(-1, 1)], velocity: [r(-5, 5), r(0, 4), r(-5, 5)], shape: 'ball' });
      if (i % 7 === 0) a.send({ type: 'poke', body: i % 24, point: [0, 0.5, 0], impulse: [r(-2, 2), 1, r(-2, 2)] });
      if (i % 40 === 10) b.send({ type: 'grab_start', pointer: 1, point: [0, 0.3, 0], body: 2 });
      if (i % 40 > 10 && i % 40 < 20) b.send({ type: 'grab_move', pointer: 1, point: [r(-1, 1), 1.5, r(-1, 1)] });
      if (i % 40 === 20) b.send({ type: 'grab_end', pointer: 1 });
      if (i === 150) a.send({ type: 'param', name: 'friction', value: 0.8 });
      if (i === 200) b.send({ type: 'action', action: 'reset', scene: null });
    }),
    play('view-flag', 'flag', (i, a, b) => {
      if (i % 25 === 0) a.send({ type: 'param', name: 'wind', value: r(2, 14) });
      if (i % 30 === 5) b.send({ type: 'grab_start', pointer: 0, point: [1, 2.5, 0], body: null });
      if (i % 30 > 5 && i % 30 < 15) b.send({ type: 'grab_move', pointer: 0, point: [1 + r(0, 1), 2.5 + r(-0.5, 0.5), r(-1, 1)] });
      if (i % 30 === 15) b.send({ type: 'grab_end', pointer: 0 });
      if (i % 11 === 0) a.send({ type: 'poke', body: null, point: [1.5, 2.2, 0], impulse: [0, 0, r(-5, 5)] });
      if (i === 120) a.send({ type: 'param', name: 'grid', value: 20 }); // another mesh: the viewer takes a new welcome
    }),
    play('view-dough', 'dough', (i, a, b) => {
      if (i % 30 === 2) { a.send({ type: 'grab_start', pointer: 0, point: [0, 1.6, 0], body: null }); b.send({ type: 'grab_start', pointer: 3, point: [1, 0.8, 0], body: null }); }
      if (i % 30 > 2 && i % 30 < 12) { a.send({ type: 'grab_move', pointer: 0, point: [r(-0.3, 0.3), 2.0, 0] }); b.send({ type: 'grab_move', pointer: 3, point: [1.6, 0.8, r(-0.3, 0.3)] }); }
      if (i % 30 === 12) { a.send({ type: 'grab_end', pointer: 0 }); b.send({ type: 'grab_end', pointer: 3 }); }
      if (i % 30 === 20) a.send({ type: 'poke', body: null, point: [-1, 0.8, 0], impulse: [5, 0, 0] });
    }),
  ]);
  // The rooms drop once idle, closing their records: 30 s sessions, complete.
  for (let i = 0; i < 100; i++) {
    const rooms = await (await fetch(`${server.url}/api/rooms`)).json();
    if (!rooms.some((x) => x.id.startsWith('view-'))) break;
    await sleep(200);
  }

  const list = await (await fetch(`${server.url}/api/records`)).json();
  for (const room of ['view-tower', 'view-flag', 'view-dough']) {
    const rec = list.find((x) => x.room === room);
    assert.ok(rec, `${room} listed in /api/records: ${JSON.stringify(list)}`);
    assert.ok(rec.bytes > 0 && /^view-\w+-\d+\.rec$/.test(rec.name), JSON.stringify(rec));
    records[room] = rec.name;
  }

  for (const room of ['view-tower', 'view-flag', 'view-dough']) {
    const name = records[room];
    const native = nativeReplay(path.join(dir, name));
    assert.equal(native.code, 0, native.out);
    const m = /(\d+) ticks, (\d+) inputs, (\d+)\/(\d+) hashes match/.exec(native.out);
    const [ticks, inputs, , hashes] = m.slice(1).map(Number);
    assert.ok(ticks >= 120 * 29 && ticks <= 120 * 45 && inputs >= 100 && hashes >= 58, native.out);

    const v = await openViewer(name);
    const s0 = await v.status();
    assert.equal(s0.room, room);
    const load = os.loadavg()[0];
    const t0 = Date.now();
    await v.page.evaluate((t) => window.__tumble.replay.seek(t), s0.end);
    const ms = Date.now() - t0;
    const s = await v.status();
    console.log(`# ${room}: ${s.end - s.start} ticks replayed in Chromium in ${ms} ms (load ${load.toFixed(2)}); ${s.matched}/${s.checked} hashes match; native: ${native.out.trim()}`);
    assert.equal(s.tick, s.end);
    assert.equal(s.end - s.start, ticks, `${room}: the viewer's record is the server's`);
    assert.equal(s.checked, hashes, `${room}: ${s.checked} hashes checked, --replay checked ${hashes}`);
    assert.equal(s.matched, s.checked, `${room}: ${JSON.stringify(s.firstMismatch)}`);
    assert.equal(s.firstMismatch, null);
    assert.equal(s.shownMismatch, null);
    assert.match(s.hashText, new RegExp(`^hashes: ${s.checked}/${s.checked} match$`));
    assert.equal(s.inputs, inputs, `${room}: inputs applied`);
    await v.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await shot(v.page, `replay-${room}`);

    // Scrub back to the middle: re-simulated from the start state, hashes checked again.
    const mid = Math.floor((s.start + s.end) / 2);
    await v.page.evaluate((t) => window.__tumble.replay.seek(t), mid);
    const back = await v.status();
    assert.equal(back.tick, mid);
    assert.ok(back.checked > 0 && back.checked < s.checked && back.matched === back.checked, JSON.stringify(back));
    // Play at 4x for a while: the frame loop steps on and keeps matching.
    await v.page.evaluate(() => window.__tumble.replay.play(4));
    await v.page.waitForFunction((t) => window.__tumble.replay.status().tick > t + 120, mid, { polling: 100 });
    await v.page.evaluate(() => window.__tumble.replay.pause());
    const played = await v.status();
    assert.equal(played.speed, 4);
    assert.ok(played.matched === played.checked && played.checked > back.checked, JSON.stringify(played));
    assert.deepEqual(v.errors, []);
    await v.page.close();
  }
});

test('the lobby lists the records, each a link to its replay', { skip, timeout: 120000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 960, height: 600 } });
  const errors = trackErrors(page);
  await page.goto(server.url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.records:not([hidden]) .record-list a', { timeout: 60000 });
  const hrefs = await page.$$eval('.record-list a', (as) => as.map((a) => a.getAttribute('href')));
  for (const name of Object.values(records)) assert.ok(hrefs.includes(`/replay/${name}`), `${name} in ${hrefs}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a record with one flipped hash bit shows the mismatch on the page', { skip, timeout: 600000 }, async () => {
  assert.ok(records['view-tower'], 'the recorded session ran');
  const buf = fs.readFileSync(path.join(dir, records['view-tower']));
  // Walk the records ('I' + u64 tick + 152-byte tb_input, 'H' + u64 tick + u64 hash).
  let p = 16 + Number(buf.readBigUInt64LE(8));
  const hashes = [];
  while (p + 17 <= buf.length && (buf[p] === 0x49 || buf[p] === 0x48)) {
    if (buf[p] === 0x48) hashes.push(p);
    p += 9 + (buf[p] === 0x49 ? 152 : 8);
  }
  assert.ok(hashes.length > 20, `${hashes.length} hash records`);
  const at = hashes[hashes.length >> 1];
  const tick = Number(buf.readBigUInt64LE(at + 1));
  const bad = Buffer.from(buf.subarray(0, p));
  bad[at + 9] ^= 0x01; // the lowest bit of that hash
  fs.writeFileSync(path.join(dir, 'tampered-1.rec'), bad);
  assert.equal(nativeReplay(path.join(dir, 'tampered-1.rec')).code, 1);

  const v = await openViewer('tampered-1.rec');
  const s0 = await v.status();
  await v.page.evaluate((t) => window.__tumble.replay.seek(t), s0.end);
  const s = await v.status();
  assert.equal(s.firstMismatch?.tick, tick, JSON.stringify(s));
  assert.notEqual(s.firstMismatch.want, s.firstMismatch.got);
  assert.equal(s.matched, s.checked - 1, 'only the tampered hash differs');
  assert.match(s.shownMismatch || '', new RegExp(`MISMATCH at tick ${tick}\\b`));
  assert.match(s.hashText, new RegExp(`^hashes: ${s.checked - 1}/${s.checked} match`));
  // Shown, not hidden: the note and the red badge are on screen.
  assert.ok(await v.page.isVisible('.replay-note.bad'));
  assert.ok(await v.page.isVisible('.replay-hashes.bad'));
  await shot(v.page, 'replay-mismatch');
  assert.deepEqual(v.errors, []);
  await v.page.close();
});
