// proto_codec.test.mjs: the JS codec on its own (proto/js/): client round trips, hostile
// frames, quantization bounds, bit packing. Agreement with C is in proto_vectors.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import {
  encodeClient, decodeClient, decodeServer, prescan, SnapshotState, ProtoError, ERR, closeCodeFor, LIMITS, MSG,
} from '../../proto/js/tumble-proto.mjs';
import { quantRot, dequantRot, quantPos, dequantPos, gridMax, BitReader, BitWriter, zigzag, unzigzag, POS_SCALE, VERT_SCALE } from '../../proto/js/quant.mjs';

const code = (fn) => { try { fn(); } catch (e) { if (e instanceof ProtoError) return e.codeName; throw e; } return 'ok'; };

test('every client message round trips', () => {
  const msgs = [
    { type: 'hello', version: 1, room: 'tower', kind: 'rigid', scene: 'tower', name: 'Ada' },
    { type: 'throw', seq: 1, origin: [0, 1.5, 3], velocity: [0.1, 2, -9.5], shape: 'ball' },
    { type: 'poke', seq: 2, body: 7, point: [0, 0, 0], impulse: [0, 0, -1] },
    { type: 'poke', seq: 3, body: null, point: [0, 1, 0], impulse: [0, -0.5, 0] },
    { type: 'grab_start', seq: 4, pointer: 2, point: [0.1, 0.2, 0.3], body: null },
    { type: 'grab_move', seq: 5, pointer: 2, point: [0.1, 0.25, 0.3] },
    { type: 'grab_end', seq: 6, pointer: 2 },
    { type: 'param', seq: 7, name: 'wind', value: 6.5 },
    { type: 'action', seq: 8, action: 'throw_dice', scene: null },
    { type: 'contacts_view', seq: 9, on: true },
    { type: 'ping', client_time: 1234.5 },
    { type: 'resync' },
    { type: 'lobby_req' },
  ];
  for (const m of msgs) assert.deepEqual(decodeClient(encodeClient(m)), m);
});

test('optional fields may be left out when encoding', () => {
  assert.deepEqual(decodeClient(encodeClient({ type: 'hello', version: 1, room: 'r', name: 'n' })),
    { type: 'hello', version: 1, room: 'r', kind: null, scene: null, name: 'n' });
});

test('the encoder refuses what the server would refuse', () => {
  assert.equal(code(() => encodeClient({ type: 'throw', seq: 1, origin: [0, NaN, 0], velocity: [0, 0, 0], shape: 'ball' })), 'bad_value');
  assert.equal(code(() => encodeClient({ type: 'param', seq: -1, name: 'x', value: 1 })), 'bad_message');
  assert.equal(code(() => encodeClient({ type: 'hello', version: 1, room: 'a/b', name: 'n' })), 'bad_value');
  assert.equal(code(() => encodeClient({ type: 'nope' })), 'unknown_type');
});

test('hostile frames get the documented codes', () => {
  assert.equal(code(() => decodeClient(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff]))), 'malformed');
  assert.equal(code(() => decodeClient(new Uint8Array(LIMITS.clientMsg + 1))), 'too_big');
  assert.equal(code(() => decodeClient('text')), 'text_frame');
  assert.equal(code(() => decodeClient(encode([1, 2, 'tower', null, null, 'x']))), 'bad_version');
  assert.equal(code(() => decodeClient(encode([99]))), 'unknown_type');
  assert.equal(code(() => decodeClient(encode([MSG.welcome]))), 'unknown_type');
  assert.equal(code(() => decodeServer(encode([MSG.hello]))), 'unknown_type');
  assert.equal(code(() => decodeClient(encode([7, 1, 'friction', Infinity]))), 'bad_value');
  assert.equal(code(() => decodeClient(encode([7, 1, 'friction']))), 'bad_message');
  let deep = [0];
  for (let i = 0; i < 20; i++) deep = [deep];
  assert.equal(code(() => decodeServer(encode([MSG.lobby, deep]))), 'malformed');
  assert.equal(code(() => prescan(new Uint8Array([0x91, 0xd4, 0x01, 0x00]))), 'malformed');   // ext
  assert.equal(code(() => prescan(new Uint8Array([0xa2, 0xc3, 0x28]))), 'malformed');         // bad UTF-8
  assert.equal(closeCodeFor(ERR.bad_version), 4004);
  assert.equal(closeCodeFor(ERR.too_big), 1009);
});

test('random bytes only ever throw ProtoError', () => {
  let x = 99;
  for (let t = 0; t < 20000; t++) {
    const n = 1 + (t % 48);
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) >>> 0; b[i] = x >>> 24; }
    if (t % 2) b[0] = 0x90 | (n % 8);
    for (const fn of [() => decodeClient(b), () => decodeServer(b), () => new SnapshotState().apply(b)]) {
      try { fn(); } catch (e) { assert.ok(e instanceof ProtoError, `${e}`); }
    }
  }
});

test('orientation error stays under 0.1 degree, positions under the grid bounds', () => {
  let worst = 0;
  let s = 7;
  const r = () => { s = (s * 16807) % 2147483647; return s / 2147483647; };
  for (let i = 0; i < 100000; i++) {
    const q = i % 2 ? [r() - 0.5, r() - 0.5, r() - 0.5, r() - 0.5] : [0.5 + 0.01 * (r() - 0.5), 0.5 + 0.01 * (r() - 0.5), -0.5 + 0.01 * (r() - 0.5), 0.5];
    const n = Math.hypot(...q);
    const { index, c } = quantRot(q);
    const back = dequantRot(index, c[0], c[1], c[2]);
    const d = Math.min(1, Math.abs((q[0] * back[0] + q[1] * back[1] + q[2] * back[2] + q[3] * back[3]) / n));
    worst = Math.max(worst, (2 * Math.acos(d) * 180) / Math.PI);
  }
  assert.ok(worst < 0.1, `worst ${worst} degrees`);
  const g = gridMax(-8, 8, POS_SCALE);
  for (let i = 0; i < 10000; i++) {
    const p = -8 + 16 * r();
    assert.ok(Math.abs(dequantPos(quantPos(p, -8, g, POS_SCALE), -8, POS_SCALE) - p) <= 0.0005);
    const gv = gridMax(-8, 8, VERT_SCALE);
    assert.ok(Math.abs(dequantPos(quantPos(p, -8, gv, VERT_SCALE), -8, VERT_SCALE) - p) <= 0.001);
  }
  const id = quantRot([0, 0, 0, 1]);
  assert.deepEqual(Array.from(dequantRot(id.index, ...id.c)), [0, 0, 0, 1]);   // identity is exact
});

test('exp-Golomb bit packing round trips and refuses over-long codes', () => {
  const w = new BitWriter();
  const vals = [0, 1, 2, 3, 100, 65535, 2 ** 25];
  for (const k of [0, 3, 15]) for (const v of vals) w.eg(zigzag(v % 2 ? -v : v), k);
  w.put(5, 3);
  const rd = new BitReader(w.finish());
  for (const k of [0, 3, 15]) for (const v of vals) assert.equal(unzigzag(rd.eg(k)), v % 2 ? -v : v);
  assert.equal(rd.get(3), 5);
  assert.equal(rd.error, false);
  const zeros = new BitReader(new Uint8Array(8));
  zeros.eg(0);
  assert.equal(zeros.error, true);
});

test('a delta before any keyframe is a bad snapshot and leaves the state alone', () => {
  const st = new SnapshotState();
  assert.equal(code(() => st.apply(encode([MSG.snap_delta, 0, 10, 2, 0, null]))), 'bad_snapshot');
  assert.equal(st.ready, false);
});
