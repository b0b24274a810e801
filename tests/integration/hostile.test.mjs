// hostile.test.mjs: hostile and broken clients against a real server. Every
// case runs beside a well-behaved client in the same room; for each case:
//   - the good client keeps >= 95 % of the set snapshot rate (57 of 60/s,
//     counted in room ticks, so this test process's own stalls do not count),
//   - the hostile client gets the documented error or close (PROTOCOL.md §9)
//     and a /metrics counter moves,
//   - the server's open descriptors come back to where they started and its
//     RSS stays bounded (/proc/<pid>/status, /proc/<pid>/fd).
// ws.test.mjs already covers single garbage frames, a 2^32 array header, a
// text frame, a wrong version, a 20 kB frame and a 2,000-input burst; these
// cases go further (every numeric field, nesting, 1 MB, sustained floods,
// grabs, room creations, 300 connections, never-reading, half-close,
// disconnect mid-frame).
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import crypto from 'node:crypto';
import { encode } from '@msgpack/msgpack';
import { startServer, stopAll, connect, join, metrics, sleep, snapshotStats, ALLOCATOR_SLACK_KB } from './harness.mjs';

const RATE = 60;
const ROOM = 'hostile';
let srv, good, goodWelcome, base;

const isSnap = (m) => m.type === 'snap_delta' || m.type === 'snap_key';
const rej = (m, k) => m[`tumble_inputs_rejected_total{reason="${k}"}`] ?? 0;
const refused = (m, k) => m[`tumble_connections_refused_total{reason="${k}"}`] ?? 0;

function procStats(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)[1]), fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

async function fdsBackTo(pid, fds, ms = 6000) {
  const t0 = performance.now();
  let now = procStats(pid);
  while (now.fds > fds && performance.now() - t0 < ms) {
    await sleep(100);
    now = procStats(pid);
  }
  return now;
}

before(async () => {
  srv = await startServer({ args: ['--workers', '2', '--slow-reader-timeout', '3', '--snapshot-rate', String(RATE)] });
  good = await connect(srv.port, { name: 'good' });
  goodWelcome = await join(good, ROOM, 'pile'); // 96 cubes: a big contacts stream for the never-reading case
  await good.snapshot();
  await sleep(300);
  base = procStats(srv.proc.pid);
});
after(async () => {
  // Whole-suite bounds: descriptors back to the start, RSS near it. The
  // server is stopped even when a bound fails (a live child would keep this
  // test process from ever exiting).
  try {
    if (srv && srv.exitCode === null) {
      const end = await fdsBackTo(srv.proc.pid, base.fds);
      good?.close();
      assert.equal(end.fds, base.fds, `fds ${base.fds} -> ${end.fds}`);
      assert.ok(end.rssKb <= base.rssKb * 1.5 + 16384 + ALLOCATOR_SLACK_KB, `RSS ${base.rssKb} kB -> ${end.rssKb} kB`);
    }
  } finally {
    await stopAll();
  }
});

// Runs one hostile case for at least minMs and checks the guards around it.
async function guarded(name, fn, { minMs = 1500, rssSlackKb = 32768 } = {}) {
  const pid = srv.proc.pid;
  const start = procStats(pid);
  const m0 = await metrics(srv.url);
  good.dropSnapshots();
  const t0 = performance.now();
  let peak = start.rssKb;
  const sampler = setInterval(() => { try { peak = Math.max(peak, procStats(pid).rssKb); } catch { /* gone */ } }, 50);
  try {
    await fn(m0);
    const left = minMs - (performance.now() - t0);
    if (left > 0) await sleep(left);
  } finally {
    clearInterval(sampler);
  }
  const stats = snapshotStats(good);
  const mAfter = await metrics(srv.url);
  const dm = (k) => mAfter[k] - m0[k];
  assert.ok(stats.rate >= 0.95 * RATE, `${name}: good client got ${stats.rate.toFixed(1)} snapshots/s over ${stats.seconds.toFixed(2)} s ` +
    `(server: ${dm('tumble_snapshots_skipped_total')} skipped for slow sessions, ${dm('tumble_overrun_steps_total')} overrun steps, ` +
    `${dm('tumble_snapshots_dropped_total')} dropped, ${dm('tumble_stream_rate_changes_total{direction="down"}')} stream rate steps down)`);
  assert.equal(good.closed, null, `${name}: good client closed`);
  assert.deepEqual(good.snapErrors, [], `${name}: good client could not apply a snapshot`);
  const end = await fdsBackTo(pid, start.fds);
  assert.ok(end.fds <= start.fds, `${name}: fds ${start.fds} -> ${end.fds}`);
  assert.ok(peak - start.rssKb <= rssSlackKb, `${name}: RSS peaked ${peak - start.rssKb} kB above the start`);
  assert.equal(srv.exitCode, null, `${name}: server exited\n${srv.stderr}`);
  return { stats, m1: await metrics(srv.url), peakKb: peak - start.rssKb };
}

// Clients a case opened are closed after it even when it fails, so that a
// failed case does not leave a joined client behind to fail the next ones.
const opened = new Set();
afterEach(() => {
  for (const c of opened) c.close();
  opened.clear();
});

async function joined(name = 'bad') {
  const c = await connect(srv.port, { name });
  opened.add(c);
  await join(c, ROOM);
  return c;
}

// ---- a raw WebSocket, for what the ws package will not send ----------------

function wsFrame(opcode, payload, { fin = true, declaredLen } = {}) {
  const len = declaredLen ?? payload.length;
  const head = [(fin ? 0x80 : 0) | opcode];
  if (len < 126) head.push(0x80 | len);
  else if (len < 65536) head.push(0x80 | 126, len >> 8, len & 255);
  else { head.push(0x80 | 127, 0, 0, 0, 0); for (let s = 24; s >= 0; s -= 8) head.push((len >>> s) & 255); }
  const mask = crypto.randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([Buffer.from(head), mask, body]);
}

function rawWs(port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const key = crypto.randomBytes(16).toString('base64');
    let buf = Buffer.alloc(0);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      if (!/^HTTP\/1\.1 101/.test(buf.toString('latin1'))) return reject(new Error(buf.toString('latin1', 0, 80)));
      sock.closedP = new Promise((res) => sock.on('close', res));
      resolve(sock);
    };
    sock.on('data', onData);
    sock.on('error', () => {});
    sock.on('connect', () => sock.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tumble.v1\r\n\r\n`));
  });
}

// ---- malformed frames ----------------------------------------------------

// PROTOCOL.md §8 "What a flooder gets": refused messages are answered while
// the connection's error allowance lasts (32, +16/s); the next refusal closes
// it with 1008 after a last rate_limited.
const ERROR_BURST = 32;
const errorsOf = (c) => c.inbox.filter((m) => m.type === 'error');

test('truncated, over-nested, huge-header msgpack and random bytes: 32 errors, then rate_limited and close 1008', async () => {
  const c = await joined();
  let sent = 0;
  const { m1 } = await guarded('malformed', async (m0) => {
    const hello = Buffer.from(encode([1, 1, ROOM, null, null, 'x']));
    const nested = (d) => (d === 0 ? 1 : [nested(d - 1)]);
    const frames = [
      hello.subarray(0, 5), hello.subarray(0, hello.length - 1), // truncated
      Buffer.from(encode([2, 1, nested(20)])), Buffer.from(encode(nested(64))), // over-nested
      Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff]), // map of 2^32 - 1 pairs
      Buffer.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]), // str of 4 GB
      Buffer.from([0xc6, 0xff, 0xff, 0xff, 0xff]), // bin of 4 GB
      Buffer.from([0x93, 0x02, 0xdd, 0x7f, 0xff, 0xff, 0xff]), // nested array header promising 2^31
      Buffer.from([0xc7, 0x01, 0x05, 0x00]), // ext type
      Buffer.alloc(0), // empty binary frame
    ];
    for (let i = 0; i < 300; i++) frames.push(crypto.randomBytes(1 + (i % 200)));
    for (const f of frames) c.sendRaw(f);
    sent = frames.length;
    assert.equal((await c.whenClosed).code, 1008);
    c.__m0 = m0;
  });
  const errs = errorsOf(c);
  const answered = errs.filter((e) => ['malformed', 'bad_message', 'unknown_type'].includes(e.name));
  // Random bytes may decode into a valid message (answered otherwise): a few.
  assert.ok(answered.length >= ERROR_BURST - 3 && answered.length <= ERROR_BURST + 1, `${answered.length} answered of ${sent}`);
  assert.equal(errs.at(-1).name, 'rate_limited');
  assert.match(errs.at(-1).message, /too many refused messages/);
  const d = ['malformed', 'bad_message', 'unknown_type'].reduce((s, k) => s + rej(m1, k) - rej(c.__m0, k), 0);
  assert.ok(d >= ERROR_BURST - 3 && d < 40, `${d} counted: the rest of the flood was never read`);
  assert.ok(refused(m1, 'flood') - refused(c.__m0, 'flood') >= 1);
});

test('a 1 MB frame is refused with too_big and close 1009, without buffering it', async () => {
  let m0;
  const { m1 } = await guarded('1 MB frame', async (m) => {
    m0 = m;
    const c = await joined();
    c.sendRaw(crypto.randomBytes(1 << 20));
    assert.equal((await c.error('too_big', 5000)).name, 'too_big');
    assert.equal((await c.whenClosed).code, 1009);
  }, { rssSlackKb: 16384 });
  assert.equal(rej(m1, 'too_big') - rej(m0, 'too_big'), 1);
});

test('text frames get text_frame errors, each counted; 50 in a row close the connection after 32', async () => {
  let m0;
  const c = await joined();
  const { m1 } = await guarded('text', async (m) => {
    m0 = m;
    for (let i = 0; i < 20; i++) c.sendRaw(`{"type":"hello","n":${i}}`, { binary: false });
    assert.equal((await c.error('text_frame')).name, 'text_frame');
    await sleep(300);
    assert.equal(c.closed, null, '20 refused frames are answered, not fatal');
    for (let i = 20; i < 50; i++) c.sendRaw(`{"type":"hello","n":${i}}`, { binary: false });
    assert.equal((await c.whenClosed).code, 1008);
  });
  const errs = errorsOf(c);
  assert.ok(errs.filter((e) => e.name === 'text_frame').length >= ERROR_BURST - 1);
  assert.equal(errs.at(-1).name, 'rate_limited');
  // 20, then up to the allowance (32 plus what 16/s refilled meanwhile) and the one that closed
  const counted = rej(m1, 'text_frame') - rej(m0, 'text_frame');
  assert.ok(counted >= ERROR_BURST + 1 && counted <= 50, `${counted} counted`);
});

// ---- bad numbers and counts ---------------------------------------------------

// Every numeric field of every client message, with values that must be refused.
const BAD_NUMS = [NaN, Infinity, -Infinity, 1e300, -1e300];
const BAD_UINTS = [-1, 2 ** 40, 1.5, NaN, Infinity];
function badMessages() {
  const v = [0.5, 0.5, 0];
  const out = [];
  const vecs = {
    2: (x) => [[2, 1, x, v, 'ball'], [2, 1, v, x, 'ball']],
    3: (x) => [[3, 1, 0, x, v], [3, 1, 0, v, x]],
    4: (x) => [[4, 1, 0, x, null]],
    5: (x) => [[5, 1, 0, x]],
  };
  for (const n of BAD_NUMS) {
    for (const f of Object.values(vecs)) for (const tmpl of [[n, 0, 0], [0, n, 0], [0, 0, n]]) out.push(...f(tmpl));
    out.push([7, 1, 'friction', n], [10, n]);
  }
  for (const u of BAD_UINTS) {
    out.push([2, u, v, v, 'ball'], [3, 1, u, v, v], [4, 1, u, v, null], [4, 1, 0, v, u], [5, 1, u, v], [6, 1, u], [6, u, 0], [9, u, true]);
  }
  // Wrong counts: missing, extra-long vectors, absurd lengths.
  out.push([2, 1, [0, 0], v, 'ball'], [2, 1, [0, 0, 0, 0], v, 'ball'], [3, 1], [4], [2, 1, new Array(300).fill(0), v, 'ball']);
  return out;
}

test('NaN, Inf, huge and negative numbers in every numeric field, and wrong counts: refused, nothing applied', async () => {
  const msgs = badMessages();
  const clients = [];
  let m0;
  const { m1 } = await guarded('bad numbers', async (m) => {
    m0 = m;
    // 30 per connection: within the error allowance, so each is answered
    for (let i = 0; i < msgs.length; i += 30) {
      const c = await joined();
      clients.push(c);
      for (const msg of msgs.slice(i, i + 30)) c.sendRaw(Buffer.from(encode(msg)));
      const e = await c.error();
      assert.ok(['bad_value', 'bad_message'].includes(e.name), `${e.name}: ${e.message}`);
    }
    await sleep(300);
    clients.forEach((c, i) => {
      assert.equal(c.closed, null);
      const answered = errorsOf(c).length + 1; // + the one c.error() took
      assert.equal(answered, Math.min(30, msgs.length - 30 * i), 'every refused message answered');
      c.close();
    });
    await Promise.all(clients.map((c) => c.whenClosed));
  });
  const d = ['bad_value', 'bad_message', 'malformed'].reduce((s, k) => s + rej(m1, k) - rej(m0, k), 0);
  assert.equal(d, msgs.length, `${d} of ${msgs.length} bad messages refused`);
  assert.equal(m1.tumble_inputs_applied_total - m0.tumble_inputs_applied_total, 0, 'no bad message was applied');
  // The world is not poisoned: every streamed pose is finite and inside the tray.
  const last = good.inbox.filter(isSnap).pop().state;
  for (const [id, b] of last.bodies) for (const x of b.pos) assert.ok(Number.isFinite(x) && Math.abs(x) < 20, `body ${id}`);
});

test('unknown message types and server-only types are refused; wrong protocol versions are closed with 4004', async () => {
  let m0;
  const { m1 } = await guarded('types and versions', async (m) => {
    m0 = m;
    const c = await joined();
    for (const t of [0, 13, 31, 32, 43, 127, 255, 65536, -1]) c.sendRaw(Buffer.from(encode([t, 1])));
    assert.ok(['unknown_type', 'bad_message'].includes((await c.error()).name));
    await sleep(200);
    c.close();
    await Promise.all([0, 2, 255, 2 ** 32 - 1].map(async (version) => {
      const v = await connect(srv.port);
      v.sendRaw(Buffer.from(encode([1, version, ROOM, null, null, 'old'])));
      assert.equal((await v.error('bad_version')).name, 'bad_version');
      assert.equal((await v.whenClosed).code, 4004);
    }));
  });
  assert.ok(rej(m1, 'unknown_type') - rej(m0, 'unknown_type') >= 6);
  assert.equal(rej(m1, 'bad_version') - rej(m0, 'bad_version'), 4);
});

test('every input before hello gets not_joined', async () => {
  let m0;
  const inputs = [
    { type: 'throw', origin: [0, 1, 0], velocity: [1, 0, 0], shape: 'ball' },
    { type: 'poke', body: 1, point: [0, 1, 0], impulse: [0, 1, 0] },
    { type: 'grab_start', pointer: 1, point: [0, 1, 0], body: null },
    { type: 'grab_move', pointer: 1, point: [0, 1, 0] },
    { type: 'grab_end', pointer: 1 },
    { type: 'param', name: 'friction', value: 0.5 },
    { type: 'action', action: 'reset', scene: null },
    { type: 'contacts_view', on: true },
  ];
  const { m1 } = await guarded('before join', async (m) => {
    m0 = m;
    const c = await connect(srv.port);
    for (const i of inputs) c.send(i);
    assert.equal((await c.error('not_joined')).name, 'not_joined');
    await sleep(200);
    c.close();
  });
  assert.equal(rej(m1, 'not_joined') - rej(m0, 'not_joined'), inputs.length);
});

// ---- floods ---------------------------------------------------------------------

test('200 inputs/s for 3 s (under twice the input rate): the excess is refused, one rate_limited per 250 ms, not closed', async () => {
  const f = await joined('eager');
  let m0;
  const { m1 } = await guarded('eager client', async (m) => {
    m0 = m;
    const poke = { type: 'poke', body: 30, point: [0, 0.5, 0], impulse: [0, 0.001, 0] };
    const t0 = performance.now();
    for (let tick = 0; tick < 300; tick++) { // 2 every 10 ms
      f.send(poke); f.send(poke);
      const wait = t0 + (tick + 1) * 10 - performance.now();
      if (wait > 0) await sleep(wait);
    }
    await sleep(300);
  }, { minMs: 3000 });
  assert.equal(f.closed, null, 'throttled, not closed');
  const limited = rej(m1, 'rate_limited') - rej(m0, 'rate_limited');
  // 600 sent; 240 burst + 120/s x 3 s pass; the rest is refused and counted
  assert.ok(limited >= 1 && limited <= 600 - 240 - 300, `${limited} of 600 refused`);
  const replies = errorsOf(f).filter((e) => e.name === 'rate_limited');
  assert.ok(replies.length >= 1 && replies.length <= 4 * 3.5, `${replies.length} rate_limited replies`);
  assert.ok(replies.every((e) => Number.isInteger(e.seq)), 'each names the refused input');
  f.close();
});

test('10,000 inputs/s from one client: rate_limited, then past twice the input rate closed with 1008; the room keeps its pace', async () => {
  const f = await joined('flood');
  let m0;
  const { m1 } = await guarded('input flood', async (m) => {
    m0 = m;
    const poke = { type: 'poke', body: 30, point: [0, 0.5, 0], impulse: [0, 0.001, 0] };
    const t0 = performance.now();
    for (let tick = 0; tick < 200 && f.closed === null; tick++) { // 100 every 10 ms
      for (let i = 0; i < 100; i++) f.send(poke);
      const wait = t0 + (tick + 1) * 10 - performance.now();
      if (wait > 0) await sleep(wait);
    }
    assert.equal((await f.whenClosed).code, 1008);
  }, { minMs: 2000 });
  const errs = errorsOf(f);
  assert.ok(errs.length >= 2 && errs.every((e) => e.name === 'rate_limited'), errs.map((e) => e.name).join());
  assert.match(errs[0].message, /input rate/);
  assert.match(errs.at(-1).message, /flooding/);
  const limited = rej(m1, 'rate_limited') - rej(m0, 'rate_limited');
  // 240 pass, then a flood allowance of 240 refusals (+120/s): the next closes
  assert.ok(limited >= 240 && limited <= 240 + 120 * 2.5, `${limited} refused before the close`);
  assert.ok(refused(m1, 'flood') - refused(m0, 'flood') >= 1);
});

test('1,000 grabs with distinct pointer ids: at most --max-grabs-per-client held, others can still grab', async () => {
  const g = await joined('grabber');
  const other = await joined('other');
  const bodies = [...goodWelcome.state.bodies.entries()].filter(([id]) => id < 24);
  let m0;
  const { m1 } = await guarded('grab flood', async (m) => {
    m0 = m;
    for (let p = 0; p < 1000; p++) {
      const [id, b] = bodies[p % bodies.length];
      g.send({ type: 'grab_start', pointer: p, point: b.pos, body: id });
    }
    const e = await g.error('rate_limited');
    assert.match(e.message, /grab limit|rate/);
    await sleep(300);
    // The room's grab slots are not all taken by one client.
    const [id, b] = bodies[5];
    const seq = other.send({ type: 'grab_start', pointer: 7, point: b.pos, body: id });
    await sleep(300);
    const errs = other.inbox.filter((x) => x.type === 'error' && x.seq === seq);
    assert.deepEqual(errs.map((x) => x.name), [], 'a second client can still grab');
    other.send({ type: 'grab_end', pointer: 7 });
  });
  // 4 held, then refusals (grab limit, then input rate), each taking a token
  // of the flood allowance (240): when it is spent, closed with 1008
  assert.equal((await g.whenClosed).code, 1008);
  const counted = rej(m1, 'rate_limited') - rej(m0, 'rate_limited');
  assert.ok(counted >= 240 && counted < 1000, `${counted} refused grabs counted`);
  other.close();
});

test('500 room creations from one address: --room-create-rate refuses the excess, counted', async () => {
  let m0;
  const { m1 } = await guarded('room creations', async (m) => {
    m0 = m;
    // 60 connections (10 at a time), each trying up to 10 new rooms in turn
    // (a refused hello leaves the connection unjoined, so it may try again;
    // one that created a room has joined it): 10 + 50 x 10 = 510 attempts.
    let created = 0, limited = 0;
    for (let wave = 0; wave < 6; wave++) {
      await Promise.all(Array.from({ length: 10 }, async (_, i) => {
        const c = await connect(srv.port);
        for (let k = 0; k < 10; k++) {
          c.send({ type: 'hello', version: 1, room: `made-${wave}-${i}-${k}`, kind: null, scene: 'dice', name: 'maker' });
          const r = await c.next((x) => x.type === 'welcome' || x.type === 'error');
          if (r.type === 'welcome') { created++; break; }
          if (r.name === 'rate_limited') limited++;
        }
        c.close();
        await c.whenClosed;
      }));
    }
    assert.ok(created <= 10, `${created} rooms created`);
    assert.ok(created + limited >= 500 && limited >= 490, `${created} created, ${limited} refused`);
  }, { rssSlackKb: 49152 });
  assert.ok(m1.tumble_room_creations_refused_total - m0.tumble_room_creations_refused_total >= 490);
  assert.ok(m1.tumble_rooms - m0.tumble_rooms <= 10, `rooms ${m0.tumble_rooms} -> ${m1.tumble_rooms}`);
});

test('300 connections from one address: the per-address limit refuses the excess, counted', async () => {
  let m0, opened = [];
  const { m1 } = await guarded('300 connections', async (m) => {
    m0 = m;
    // 300 attempts in 10 waves of 30, 100 ms apart (all at once mostly
    // measures this test process's own handshake work on a 2-core machine)
    const results = [];
    for (let wave = 0; wave < 10; wave++) {
      const t = performance.now();
      results.push(...await Promise.allSettled(Array.from({ length: 30 }, () => connect(srv.port))));
      await sleep(Math.max(0, 100 - (performance.now() - t)));
    }
    opened = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    // the good client holds one of the 32
    assert.ok(opened.length <= 31, `${opened.length} accepted`);
    assert.ok(opened.length >= 20, `${opened.length} accepted`);
    opened.forEach((c) => c.close());
    await Promise.all(opened.map((c) => c.whenClosed));
  }, { rssSlackKb: 49152 });
  assert.equal(refused(m1, 'per_address') - refused(m0, 'per_address'), 300 - opened.length);
});

// ---- broken transports ----------------------------------------------------------

test('a client that never reads: memory stays bounded, it is disconnected as a slow reader', async () => {
  let m0;
  const { m1, peakKb } = await guarded('never reads', async (m) => {
    m0 = m;
    const slow = await joined('slow');
    slow.send({ type: 'contacts_view', on: true });
    slow.ws._socket.pause();
    const t0 = performance.now();
    let mm, kicks = 0;
    do {
      // keep the pile tumbling so the stream stays big (a sleeping pile sends little)
      if (kicks++ % 6 === 0) slow.send({ type: 'action', action: 'reset', scene: null });
      await sleep(250);
      mm = await metrics(srv.url);
    } while (refused(mm, 'slow_reader') === refused(m0, 'slow_reader') && performance.now() - t0 < 15000);
    slow.ws._socket.resume();
    await Promise.race([slow.whenClosed, sleep(3000)]);
    const closed = slow.closed;
    slow.ws.terminate();
    assert.ok(closed, 'the never-reading client is closed');
  }, { rssSlackKb: 32768 });
  assert.equal(refused(m1, 'slow_reader') - refused(m0, 'slow_reader'), 1);
  assert.ok(peakKb < 32768, `RSS rose ${peakKb} kB`);
});

test('half-close and disconnect in the middle of a frame: the server cleans up', async () => {
  let m0;
  const { m1 } = await guarded('half-close, mid-frame', async (m) => {
    m0 = m;
    const hello = Buffer.from(encode([1, 1, ROOM, null, null, 'half']));
    // Half-close: join, then FIN our side while the server is streaming.
    const half = await rawWs(srv.port);
    half.write(wsFrame(2, hello));
    await sleep(200);
    half.end();
    await Promise.race([half.closedP, sleep(4000)]);
    assert.ok(half.destroyed || half.readableEnded, 'server ended the half-closed connection');
    half.destroy();
    // Mid-frame: a frame header promising 1000 bytes, 10 sent, then gone.
    for (let i = 0; i < 20; i++) {
      const mid = await rawWs(srv.port);
      if (i % 2) mid.write(wsFrame(2, hello));
      const partial = wsFrame(2, Buffer.alloc(1000, 0x90)).subarray(0, 16);
      mid.write(partial);
      await sleep(20);
      mid.destroy();
    }
    await sleep(300);
  });
  assert.ok(m1.tumble_connections_total - m0.tumble_connections_total >= 21);
  let clients = m1.tumble_clients;
  for (let i = 0; i < 30 && clients !== 1; i++) { await sleep(100); clients = (await metrics(srv.url)).tumble_clients; }
  assert.equal(clients, 1, 'only the good client is left joined');
});
