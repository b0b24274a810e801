// replay.test.mjs: --record writes each room's inputs and state hashes;
// `tumble-server --replay FILE` re-simulates the room headless and must
// match every hash (exit 0). A 30 s session with two clients in each world
// kind (rigid tower, cloth flag, soft dough) runs concurrently; a tampered
// record must fail (exit 1) and a file that is not a record must be refused
// (exit 2). Each record is also replayed by the WebAssembly build in Node through
// the browser viewer's code (tests/wasm/replay.mjs), which must print the same line.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startServer, stopAll, connect, join, sleep, SERVER_BIN, ROOT } from './harness.mjs';

after(stopAll);

const SESSION_MS = 30000;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-rec-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function replay(file) {
  const r = spawnSync(SERVER_BIN, ['--replay', file], { encoding: 'utf8', timeout: 60000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}
// The same record replayed by the WebAssembly build in Node, through the browser
// viewer's code (tests/wasm/replay.mjs): the same line on stdout, the same exit code.
const WASM = path.join(ROOT, 'build/wasm/tumble-physics.wasm');
function replayWasm(file) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'tests/wasm/replay.mjs'), file, WASM],
    { encoding: 'utf8', timeout: 180000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// Two players per room, each doing what its world offers, at human rates.
async function play(room, scene, act) {
  const a = await connect(srv.port, { name: `${room}-a` });
  const b = await connect(srv.port, { name: `${room}-b` });
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

let srv;
test('a recorded 30 s two-client session in each world kind replays with every hash matching', async () => {
  srv = await startServer({ args: ['--record', dir, '--workers', '2', '--throw-rate', '5'] });
  const r = (lo, hi) => lo + Math.random() * (hi - lo);
  await Promise.all([
    play('rec-tower', 'tower', (i, a, b) => {
      if (i === 5) a.send({ type: 'action', action: 'knock', scene: null });
      if (i % 10 === 3) b.send({ type: 'throw', origin: [r(-2, 2), 2, r(-1, 1)], velocity: [r(-5, 5), r(0, 4), r(-5, 5)], shape: 'ball' });
      if (i % 7 === 0) a.send({ type: 'poke', body: i % 24, point: [0, 0.5, 0], impulse: [r(-2, 2), 1, r(-2, 2)] });
      if (i % 40 === 10) b.send({ type: 'grab_start', pointer: 1, point: [0, 0.3, 0], body: 2 });
      if (i % 40 > 10 && i % 40 < 20) b.send({ type: 'grab_move', pointer: 1, point: [r(-1, 1), 1.5, r(-1, 1)] });
      if (i % 40 === 20) b.send({ type: 'grab_end', pointer: 1 });
      if (i === 150) a.send({ type: 'param', name: 'friction', value: 0.8 });
      if (i === 200) b.send({ type: 'action', action: 'reset', scene: null });
    }),
    play('rec-flag', 'flag', (i, a, b) => {
      if (i % 25 === 0) a.send({ type: 'param', name: 'wind', value: r(2, 14) });
      if (i % 30 === 5) b.send({ type: 'grab_start', pointer: 0, point: [1, 2.5, 0], body: null });
      if (i % 30 > 5 && i % 30 < 15) b.send({ type: 'grab_move', pointer: 0, point: [1 + r(0, 1), 2.5 + r(-0.5, 0.5), r(-1, 1)] });
      if (i % 30 === 15) b.send({ type: 'grab_end', pointer: 0 });
      if (i % 11 === 0) a.send({ type: 'poke', body: null, point: [1.5, 2.2, 0], impulse: [0, 0, r(-5, 5)] });
    }),
    play('rec-dough', 'dough', (i, a, b) => {
      if (i % 30 === 2) { a.send({ type: 'grab_start', pointer: 0, point: [0, 1.6, 0], body: null }); b.send({ type: 'grab_start', pointer: 3, point: [1, 0.8, 0], body: null }); }
      if (i % 30 > 2 && i % 30 < 12) { a.send({ type: 'grab_move', pointer: 0, point: [r(-0.3, 0.3), 2.0, 0] }); b.send({ type: 'grab_move', pointer: 3, point: [1.6, 0.8, r(-0.3, 0.3)] }); }
      if (i % 30 === 12) { a.send({ type: 'grab_end', pointer: 0 }); b.send({ type: 'grab_end', pointer: 3 }); }
      if (i % 30 === 20) a.send({ type: 'poke', body: null, point: [-1, 0.8, 0], impulse: [5, 0, 0] });
    }),
  ]);
  await srv.stop();

  for (const room of ['rec-tower', 'rec-flag', 'rec-dough']) {
    const files = fs.readdirSync(dir).filter((f) => f.startsWith(`${room}-`) && f.endsWith('.rec'));
    assert.equal(files.length, 1, `${room}: ${files}`);
    const { code, out } = replay(path.join(dir, files[0]));
    assert.equal(code, 0, out);
    const m = /(\d+) ticks, (\d+) inputs, (\d+)\/(\d+) hashes match/.exec(out);
    assert.ok(m, out);
    const [ticks, inputs, matched, hashes] = m.slice(1).map(Number);
    assert.ok(ticks >= 120 * 29, `${room}: ${ticks} ticks`);
    assert.ok(inputs >= 100, `${room}: ${inputs} inputs`);
    assert.ok(hashes >= 58 && matched === hashes, `${room}: ${out}`);
    if (fs.existsSync(WASM)) {
      const w = replayWasm(path.join(dir, files[0]));
      assert.equal(w.code, 0, w.out + w.err);
      assert.equal(w.out.trim(), out.trim(), `${room}: the WebAssembly replay differs from the server's`);
    }
  }
});

test('a tampered record fails the replay (exit 1); a file that is not a record is refused (exit 2)', () => {
  const file = fs.readdirSync(dir).find((f) => f.startsWith('rec-tower-'));
  const buf = fs.readFileSync(path.join(dir, file));
  // Walk the records ('I' + tick + tb_input, 'H' + tick + hash; the input
  // record size is found as the one that walks exactly to the end) and flip
  // a bit in the hash of a record in the middle.
  const first = 16 + Number(buf.readBigUInt64LE(8));
  let hashes = null;
  for (let size = 120; size <= 200 && !hashes; size += 4) {
    const found = [];
    let p = first;
    while (p < buf.length && (buf[p] === 0x49 || buf[p] === 0x48)) {
      if (buf[p] === 0x48) found.push(p);
      p += 9 + (buf[p] === 0x49 ? size : 8);
    }
    if (p === buf.length) hashes = found;
  }
  assert.ok(hashes && hashes.length > 10, 'record walked');
  const bad = Buffer.from(buf);
  bad[hashes[hashes.length >> 1] + 12] ^= 0x10;
  const tampered = path.join(dir, 'tampered.rec');
  fs.writeFileSync(tampered, bad);
  const t = replay(tampered);
  assert.equal(t.code, 1, t.out);
  assert.match(t.out, /MISMATCH/);
  if (fs.existsSync(WASM)) {
    const w = replayWasm(tampered);
    assert.equal(w.code, 1, w.out + w.err);
    assert.equal(w.out.trim(), t.out.trim());
  }
  const junk = path.join(dir, 'junk.rec');
  fs.writeFileSync(junk, 'not a record at all');
  assert.equal(replay(junk).code, 2);
});
