// The client's protocol adapter against the protocol's golden vectors: the same bytes
// the server sends become the descriptions and states the views are built from.
import { test as t } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

// The adapter imports proto/js; until the protocol branch is merged there is nothing to test.
const VEC = join(dirname(fileURLToPath(import.meta.url)), '../../proto/vectors');
const ready = existsSync(join(VEC, '../js/tumble-proto.mjs'));
const { createAdapter } = ready ? await import('../../client-web/src/net/adapter.js') : {};
const { decodeClient } = ready ? await import('../../proto/js/tumble-proto.mjs') : {};
const test = (name, fn) => t(name, { skip: !ready && 'proto/js not merged yet' }, fn);
const bytes = (name) => new Uint8Array(readFileSync(join(VEC, `${name}.mpk`)));
const json = (name) => JSON.parse(readFileSync(join(VEC, `${name}.json`), 'utf8'));
const seq = (scene) => readdirSync(VEC).filter((f) => f.startsWith(`seq_${scene}_`) && f.endsWith('.mpk')).map((f) => f.slice(0, -4)).sort();

function feed(scene) {
  const a = createAdapter({ roomId: scene, kind: 'rigid', scene, name: 'Tester' });
  const out = [];
  for (const name of seq(scene)) {
    const msgs = a.decode(bytes(name));
    if (msgs[0]?.type === 'welcome') bounds = msgs[0].desc.bounds;
    out.push({ name, msgs, want: json(name) });
  }
  return { a, out };
}

let bounds = null; // of the last welcome/scene fed: mesh cells are 1/1024 m from bounds.min
function assertStateMatches(snap, want, label) {
  const bodies = want.bodies || [];
  assert.equal(snap.ids.length, bodies.length, `${label}: body count`);
  bodies.forEach((b, i) => {
    assert.equal(snap.ids[i], b.id, `${label}: id`);
    for (let k = 0; k < 3; k++) assert.ok(Math.abs(snap.pos[i * 3 + k] - b.pos[k]) < 1e-5, `${label}: body ${b.id} pos`);
    for (let k = 0; k < 4; k++) assert.ok(Math.abs(snap.rot[i * 4 + k] - b.rot[k]) < 1e-5, `${label}: body ${b.id} rot`);
  });
  (want.meshes || []).forEach((m, i) => {
    const v = snap.verts[`mesh${i}`];
    const wantPos = m.q.map((q, k) => bounds.min[k % 3] + q / 1024);
    assert.equal(v.length, wantPos.length, `${label}: mesh ${i} length`);
    for (let k = 0; k < v.length; k++) assert.ok(Math.abs(v[k] - wantPos[k]) < 1e-5, `${label}: mesh ${i} vertex value ${k}`);
  });
}

test('tower sequence: welcome becomes a description, every snapshot the decoded state', () => {
  const { out } = feed('tower');
  const w = out[0].msgs[0];
  assert.equal(w.type, 'welcome');
  assert.equal(w.desc.room.kind, 'rigid');
  assert.equal(w.you.id, 3);
  assert.deepEqual(w.players.map((p) => p.name), ['Ada', 'Grace']);
  const plank = w.desc.bodies.find((b) => b.look === 'plank');
  assert.deepEqual(plank.size.map((x) => +x.toFixed(3)), [1.5, 0.15, 0.5], 'full extents from half extents');
  assert.deepEqual(w.desc.params.map((p) => [p.name, p.min, p.max]), [['restitution', 0, 0.9], ['friction', 0, 1.2]]);
  assertStateMatches(w.snapshot, out[0].want.state, out[0].name);
  for (const step of out.slice(1)) {
    const snap = step.msgs.find((m) => m.type === 'snapshot');
    assert.ok(snap, `${step.name}: a snapshot`);
    assert.equal(snap.snap.time, snap.snap.tick / 120);
    assertStateMatches(snap.snap, step.want.state, step.name);
  }
  assert.ok(out.some((s) => s.msgs.some((m) => m.type === 'body_added')), 'a spawn announces its body');
});

test('flag sequence: cloth grid, pole and the figure capsule in world space', () => {
  const { out } = feed('flag');
  const d = out[0].msgs[0].desc;
  assert.equal(d.cloths.length, 1);
  assert.equal(d.cloths[0].w * d.cloths[0].h, d.cloths[0].verts);
  assert.equal(d.poles.length, 1, 'the world capsule is the pole');
  assert.equal(d.capsules.length, 1, 'the body capsule is the figure');
  for (const step of out.slice(1)) {
    const m = step.msgs.find((x) => x.type === 'snapshot');
    assertStateMatches(m.snap, step.want.state, step.name);
    const caps = m.snap.verts.capsules, b = step.want.state.bodies[0];
    // Capsule (0,-0.5,0)-(0,0.5,0) in the body's frame, placed at the body pose.
    assert.ok(Math.hypot(caps[0] + caps[3] - 2 * b.pos[0], caps[1] + caps[4] - 2 * b.pos[1], caps[2] + caps[5] - 2 * b.pos[2]) < 1e-4);
  }
});

test('dough sequence: soft mesh topology and a scene change rebuilds the description', () => {
  const { out } = feed('dough');
  const d = out[0].msgs[0].desc;
  assert.equal(d.soft.vertexCount, 12);
  assert.equal(d.soft.triangles.length, 60);
  const last = out[out.length - 1];
  assert.equal(last.msgs[0].type, 'welcome');
  assert.equal(last.msgs[0].scene, true);
  assertStateMatches(last.msgs[0].snapshot, last.want.state, last.name);
});

test('events: dice faces map to die ids, param changes name their author, pong in seconds', () => {
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  a.decode(bytes('seq_tower_00_welcome'));
  const [p] = a.decode(bytes('s_param_changed'));
  assert.equal(p.type, 'param');
  assert.ok(p.by.name);
  const [pong] = a.decode(bytes('s_pong'));
  assert.equal(pong.sent, json('s_pong').message.client_time / 1000);
  const [dice] = a.decode(bytes('s_dice'));
  assert.equal(dice.sum, dice.faces.reduce((s, f) => s + f.value, 0));
});

test('intents become protocol messages with increasing seq', () => {
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  const hello = decodeClient(a.onOpen()[0]);
  assert.deepEqual([hello.type, hello.room, hello.kind, hello.scene, hello.name], ['hello', 'tower', 'rigid', 'tower', 'T']);
  a.decode(bytes('seq_tower_00_welcome'));
  const m1 = decodeClient(a.encode({ type: 'scene', action: 'knock_down' }));
  assert.deepEqual([m1.type, m1.seq, m1.action], ['action', 1, 'knock']);
  const m2 = decodeClient(a.encode({ type: 'throw', shape: 'sphere', from: [0, 2, 0], velocity: [1, 2, 3] }));
  assert.deepEqual([m2.type, m2.seq, m2.shape], ['throw', 2, 'ball']);
  const m3 = decodeClient(a.encode({ type: 'param', name: 'friction', value: 0.8 }));
  assert.deepEqual([m3.type, m3.seq, m3.name, m3.value], ['param', 3, 'friction', 0.8]);
  const m4 = decodeClient(a.encode({ type: 'grab', phase: 'start', pointer: 70000, point: [0, 1, 0] }));
  assert.equal(m4.pointer, 70000 & 0xffff);
  const m5 = decodeClient(a.encode({ type: 'press', point: [0, 1, 0], direction: [0, -1, 0] }));
  assert.deepEqual([m5.type, m5.body], ['poke', null]);
  // Another scene's action is not sent (it used to switch the room to dice); switching is 'select'.
  assert.equal(a.encode({ type: 'scene', action: 'throw_dice' }), null);
  const m6 = decodeClient(a.encode({ type: 'scene', action: 'select', scene: 'dice' }));
  assert.deepEqual([m6.action, m6.scene], ['select', 'dice']);
  assert.equal(a.encode({ type: 'param', name: 'friction', value: NaN }), null, 'a value the protocol refuses is not sent');
});

test('a watcher: its hello says watch, the watcher count comes from the welcome and the watchers message', () => {
  const player = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  assert.equal(decodeClient(player.onOpen()[0]).watch, undefined, "a player's hello is the one it always was");
  assert.equal(player.decode(bytes('seq_tower_00_welcome'))[0].watchers, 0);
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T', watch: true });
  assert.equal(decodeClient(a.onOpen()[0]).watch, true);
  const [w] = a.decode(bytes('s_welcome_watchers'));
  assert.deepEqual([w.type, w.watchers], ['welcome', 2]);
  assert.deepEqual(a.decode(bytes('s_watchers')), [{ type: 'watchers', count: 3 }]);
});

test('a page given ?kbps asks for that budget in its hello; without it the hello is the one it always was', () => {
  const plain = createAdapter({ roomId: 'pile', kind: 'rigid', scene: 'pile', name: 'T' });
  const hello = decodeClient(plain.onOpen()[0]);
  assert.equal(hello.kbps, undefined);
  assert.equal(hello.watch, undefined);
  const far = createAdapter({ roomId: 'pile', kind: 'rigid', scene: 'pile', name: 'T', kbps: 128 });
  const capped = decodeClient(far.onOpen()[0]);
  assert.equal(capped.kbps, 128);
  assert.equal(capped.watch, undefined, 'still a player');
  const both = createAdapter({ roomId: 'pile', kind: 'rigid', scene: 'pile', name: 'T', kbps: 64, watch: true });
  assert.deepEqual([decodeClient(both.onOpen()[0]).watch, decodeClient(both.onOpen()[0]).kbps], [true, 64]);
});

test('a poke or grab start carries the tick of the picture it was aimed at (lag compensation)', () => {
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  a.decode(bytes('seq_tower_00_welcome'));
  const p = decodeClient(a.encode({ type: 'poke', body: 3, point: [0, 1, 0], impulse: [0, 0, -1], viewTime: 1010 / 120 }));
  assert.equal(p.view_tick, 1010);
  const g = decodeClient(a.encode({ type: 'grab', phase: 'start', pointer: 0, point: [0, 1, 0], viewTime: 8.5 }));
  assert.equal(g.view_tick, 1020);
  const old = decodeClient(a.encode({ type: 'poke', body: 3, point: [0, 1, 0], impulse: [0, 0, -1] }));
  assert.equal(old.view_tick, undefined, 'no picture time: the poke is the one it always was');
});

test('pings carry the link report: newest applied tick, RTT, bytes received', () => {
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  const before = decodeClient(a.encode({ type: 'ping', sent: 1.5, rtt: NaN }));
  assert.deepEqual(before, { type: 'ping', client_time: 1500, ack_tick: null, rtt_ms: null, recv_bytes: 0 }, 'before the welcome');
  let received = 0, tick = 0;
  for (const name of seq('tower').slice(0, 4)) {
    const b = bytes(name);
    received += b.length;
    for (const m of a.decode(b)) if (m.snapshot || m.snap) tick = (m.snapshot || m.snap).tick;
  }
  assert.ok(tick > 0);
  const p = decodeClient(a.encode({ type: 'ping', sent: 2, rtt: 0.0845 }));
  assert.deepEqual(p, { type: 'ping', client_time: 2000, ack_tick: tick, rtt_ms: 84.5, recv_bytes: received });
});

test('a delta that does not fit the baseline asks for a keyframe and waits for it', () => {
  const a = createAdapter({ roomId: 'tower', kind: 'rigid', scene: 'tower', name: 'T' });
  const sent = [];
  a.setSender((b) => sent.push(decodeClient(b)));
  a.decode(bytes('seq_tower_00_welcome'));
  const names = seq('tower');
  const skipped = a.decode(bytes(names[2])); // baseline is 00, this delta is against 01
  assert.deepEqual(skipped.map((m) => m.type), ['resync']);
  assert.deepEqual(sent.map((m) => m.type), ['resync']);
  const key = names.find((n) => n.includes('_key'));
  const later = names.slice(3, names.indexOf(key));
  for (const n of later) assert.deepEqual(a.decode(bytes(n)), [], `${n} ignored while waiting for the keyframe`);
  const after = a.decode(bytes(key));
  assert.equal(after[after.length - 1].type, 'snapshot');
});

test('an action the server knows by another name is retried once under that name', async () => {
  const { encode } = await import('@msgpack/msgpack');
  const a = createAdapter({ roomId: 'dice', kind: 'rigid', scene: 'dice', name: 'T' });
  const sent = [];
  a.setSender((b) => sent.push(decodeClient(b)));
  a.decode(bytes('seq_tower_00_welcome'));
  const m = decodeClient(a.encode({ type: 'scene', action: 'build_tower' })); // scene is 'tower': rebuild
  assert.equal(m.action, 'rebuild');
  const out = a.decode(encode([43, 10, 'bad_value', "action: 'rebuild' is not reset, knock, roll or select", m.seq]));
  assert.deepEqual(out, [], 'the refusal is handled, not shown');
  assert.deepEqual(sent.map((x) => [x.type, x.action]), [['action', 'reset']]);
  assert.equal(decodeClient(a.encode({ type: 'scene', action: 'build_tower' })).action, 'reset', 'and remembered');
});
