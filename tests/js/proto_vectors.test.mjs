// proto_vectors.test.mjs: the JS codec against the golden vectors in proto/vectors/
// (written by the C codec; see tests/unit/test_proto_vectors.c). Byte-for-byte agreement
// for client messages, identical decoded forms and snapshot states for server messages,
// and the same error code for every hostile frame.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeClient, decodeServer, encodeClient, SnapshotState, ProtoError } from '../../proto/js/tumble-proto.mjs';
import { VECTORS, jsClientVectors } from '../../proto/js/gen-vectors.mjs';

const files = readdirSync(VECTORS).filter((f) => f.endsWith('.json')).sort();
const load = (name) => ({
  bytes: new Uint8Array(readFileSync(join(VECTORS, `${name}.mpk`))),
  want: JSON.parse(readFileSync(join(VECTORS, `${name}.json`), 'utf8')),
});

function errorOf(fn) {
  try { fn(); } catch (e) {
    if (e instanceof ProtoError) return { code: e.code, name: e.codeName };
    throw e;
  }
  return null;
}

test('there are vectors of every message type', () => {
  const types = new Set();
  for (const f of files) {
    const { want } = load(f.slice(0, -5));
    if (want.message) types.add(want.message.type);
  }
  for (const t of ['hello', 'throw', 'poke', 'grab_start', 'grab_move', 'grab_end', 'param', 'action', 'contacts_view', 'ping',
    'resync', 'lobby_req', 'welcome', 'snap_key', 'snap_delta', 'contacts', 'dice', 'param_changed', 'peer_joined', 'peer_left',
    'reset', 'scene', 'pong', 'error', 'lobby', 'watchers']) {
    assert.ok(types.has(t), `no vector for ${t}`);
  }
});

for (const f of files.filter((x) => /^[cx]_/.test(x))) {
  const name = f.slice(0, -5);
  test(`client vector ${name}`, () => {
    const { bytes, want } = load(name);
    if (want.error) {
      assert.deepEqual(errorOf(() => decodeClient(bytes)), want.error);
      return;
    }
    assert.deepEqual(decodeClient(bytes), want.message);
    if (name.startsWith('c_')) assert.deepEqual(encodeClient(want.message), bytes, 'JS encoder bytes == C encoder bytes');
  });
}

test('js_*.mpk are what the JS encoder writes now (node proto/js/gen-vectors.mjs)', () => {
  const vs = jsClientVectors();
  assert.ok(vs.length >= 10);
  for (const v of vs) assert.deepEqual(new Uint8Array(readFileSync(join(VECTORS, v.file))), v.bytes, v.file);
});

const MESSAGE_KEYS = { snap_key: ['type', 'last_seq', 'tick', 'awake'], snap_delta: ['type', 'last_seq', 'tick', 'tick_gap', 'awake'] };
function messageForm(m) {
  if (MESSAGE_KEYS[m.type]) return Object.fromEntries(MESSAGE_KEYS[m.type].map((k) => [k, m[k]]));
  if (m.type === 'welcome' || m.type === 'scene') { const { state, ...rest } = m; return rest; }
  return m;
}

function checkServer(name, state) {
  const { bytes, want } = load(name);
  const err = errorOf(() => {
    const m = decodeServer(bytes);
    if (state.handles(m)) state.apply(m);
    assert.deepEqual(messageForm(m), want.message);
    if (want.state) assert.deepEqual(state.toJSON(), want.state);
  });
  assert.deepEqual(err, want.error ?? null);
}

for (const f of files.filter((x) => /^[sy]_/.test(x))) {
  const name = f.slice(0, -5);
  test(`server vector ${name}`, () => checkServer(name, new SnapshotState({ maxBodies: 64 })));
}

const sequences = [...new Set(files.filter((x) => x.startsWith('seq_')).map((x) => x.split('_')[1]))];
for (const seq of sequences) {
  test(`snapshot sequence ${seq}: every step decodes to the C state`, () => {
    const state = new SnapshotState({ maxBodies: 64 });
    for (const f of files.filter((x) => x.startsWith(`seq_${seq}_`))) checkServer(f.slice(0, -5), state);
  });
}
