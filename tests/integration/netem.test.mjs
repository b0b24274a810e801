// netem.test.mjs: the link emulator (build/tumble-netem, tests/netem/netem.c)
// does what it says. A TCP server in this process stands at the far end, so
// one clock times both ends: the one-way delay of each direction, the spread
// that jitter adds without reordering the stream, the bandwidth cap, a stall,
// and tumble-load running through a link against a real tumble-server.
// Tolerances are wide enough for a shared 2-core machine (timers have 1 ms
// resolution, the event loop of this process adds a few ms) and narrow enough
// that a link doing something else fails.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startLink, startServer, stopAll, sleep } from './harness.mjs';

after(stopAll);

const load = () => `load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`;
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

// A TCP server whose connections hand every chunk to onData(sock, buf, at).
async function farEnd(onData, onConn = () => {}) {
  const socks = new Set();
  const server = net.createServer((sock) => {
    sock.setNoDelay(true);
    socks.add(sock);
    sock.on('close', () => socks.delete(sock));
    sock.on('error', () => {});
    onConn(sock);
    sock.on('data', (buf) => onData(sock, buf, performance.now()));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    close: () => { for (const s of socks) s.destroy(); return new Promise((r) => server.close(r)); },
  };
}

function dial(port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => { sock.setNoDelay(true); resolve(sock); });
    sock.on('error', reject);
  });
}

// One-way times of 1-byte probes, sent one at a time: the far end notes when
// each arrives (up) and echoes it; the echo's arrival gives down.
async function probe(linkOpts, n = 12) {
  let arrivedUp = null;
  const far = await farEnd((sock, buf, at) => { arrivedUp = at; sock.write(buf); });
  const link = await startLink(far.port, linkOpts);
  const sock = await dial(link.port);
  const up = [], down = [];
  try {
    for (let i = 0; i < n; i++) {
      const sent = performance.now();
      const echoed = new Promise((r) => sock.once('data', () => r(performance.now())));
      sock.write(Buffer.from([i]));
      const back = await echoed;
      up.push(arrivedUp - sent);
      down.push(back - arrivedUp);
      await sleep(10);
    }
  } finally {
    sock.destroy(); await link.stop(); await far.close();
  }
  return { up: median(up), down: median(down) };
}

test('delay_is_added_per_direction', async () => {
  const { up, down } = await probe({ up: { delay: 20 }, down: { delay: 60 } });
  const why = `up ${up.toFixed(1)} ms, down ${down.toFixed(1)} ms, ${load()}`;
  assert.ok(up >= 19 && up < 35, `up ~20 ms: ${why}`);
  assert.ok(down >= 59 && down < 75, `down ~60 ms: ${why}`);
});

test('a link without options passes bytes through at once', async () => {
  const { up, down } = await probe({});
  assert.ok(up < 25 && down < 25, `up ${up.toFixed(2)} ms, down ${down.toFixed(2)} ms, ${load()}`);
});

test('jitter_spreads_the_delay_and_keeps_the_stream_in_order', async () => {
  // 150 numbered 4-byte messages, one every 4 ms, through 50 ms +- 20 ms up.
  const got = [];
  const far = await farEnd((sock, buf, at) => { for (let o = 0; o + 4 <= buf.length; o += 4) got.push({ i: buf.readUInt32LE(o), at }); });
  const link = await startLink(far.port, { up: { delay: 50, jitter: 20 } });
  const sock = await dial(link.port);
  const sentAt = [];
  try {
    for (let i = 0; i < 150; i++) {
      const b = Buffer.alloc(4); b.writeUInt32LE(i);
      sentAt.push(performance.now()); sock.write(b);
      await sleep(4);
    }
    for (let k = 0; k < 100 && got.length < 150; k++) await sleep(10);
  } finally { sock.destroy(); await link.stop(); await far.close(); }
  assert.equal(got.length, 150, 'every message arrived');
  assert.deepEqual(got.map((g) => g.i), [...Array(150).keys()], 'in order, none lost or repeated');
  const delays = got.map((g) => g.at - sentAt[g.i]);
  const lo = Math.min(...delays), hi = Math.max(...delays);
  const why = `delays ${lo.toFixed(1)}..${hi.toFixed(1)} ms, median ${median(delays).toFixed(1)}, ${load()}`;
  assert.ok(lo >= 29, `never less than delay - jitter: ${why}`);
  assert.ok(hi - lo >= 15, `jitter spreads the delay: ${why}`);
  assert.ok(median(delays) >= 45 && median(delays) <= 80, `centred near 50 ms (order kept: a bit above): ${why}`);
});

test('bandwidth_cap_holds_the_rate', async () => {
  // The far end writes 96 KiB at once; the client sees it trickle in at 384 kbit/s (2 s).
  const bytes = 96 * 1024, kbps = 384;
  const far = await farEnd(() => {}, (sock) => sock.write(Buffer.alloc(bytes, 7)));
  const link = await startLink(far.port, { down: { kbps } });
  const sock = await dial(link.port);
  let first = 0, last = 0, n = 0, firstLen = 0;
  try {
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`only ${n} of ${bytes} bytes in 6 s`)), 6000);
      sock.on('data', (d) => {
        const at = performance.now();
        if (!n) { first = at; firstLen = d.length; }
        n += d.length; last = at;
        if (n >= bytes) { clearTimeout(t); resolve(); }
      });
    });
  } finally { sock.destroy(); await link.stop(); await far.close(); }
  const rate = ((n - firstLen) * 8) / (last - first); // kbit/s (bits per ms)
  assert.ok(Math.abs(rate - kbps) / kbps < 0.08, `${rate.toFixed(1)} kbit/s measured for a ${kbps} kbit/s cap, ${load()}`);
});

test('the cap is per direction: the other one stays fast', async () => {
  // Down capped at 64 kbit/s: 32 KiB up still arrive at once (capped, they would take 4 s).
  const size = 32 * 1024;
  let got = 0, done;
  const all = new Promise((r) => { done = r; });
  const far = await farEnd((sock, buf) => { got += buf.length; if (got >= size) done(performance.now()); });
  const link = await startLink(far.port, { down: { kbps: 64 } });
  const sock = await dial(link.port);
  try {
    const t0 = performance.now();
    sock.write(Buffer.alloc(size, 5));
    const took = (await Promise.race([all, sleep(6000).then(() => NaN)])) - t0;
    assert.ok(took < 1000, `32 KiB up took ${took.toFixed(0)} ms with only down capped (${got} bytes), ${load()}`);
  } finally { sock.destroy(); await link.stop(); await far.close(); }
});

test('every byte arrives before the link closes a connection both ends ended', async () => {
  // The client half-closes at once; the far end answers with 8 MiB and ends. The
  // client reads nothing for 300 ms, so the proxy's writes to it are still queued
  // when both FINs have passed: they must be written before the connection closes.
  const size = 8 * 1024 * 1024;
  const far = await farEnd(() => {}, (sock) => { sock.on('end', () => {}); sock.end(Buffer.alloc(size, 3)); });
  const link = await startLink(far.port, {});
  const sock = await dial(link.port);
  let n = 0;
  try {
    sock.end();
    sock.pause();
    await sleep(300);
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`stuck at ${n} of ${size} bytes`)), 10000);
      sock.on('data', (d) => { n += d.length; });
      sock.on('close', () => { clearTimeout(t); resolve(); });
      sock.resume();
    });
  } finally { sock.destroy(); await link.stop(); await far.close(); }
  assert.equal(n, size, `${n} of ${size} bytes arrived`);
});

test('stall_stops_the_link_then_releases_what_waited', async () => {
  // A message every 10 ms for 1.6 s; the link stalls 400 ms from 500 ms on.
  const arrivals = [];
  const far = await farEnd(() => {}, (sock) => {
    let i = 0;
    const timer = setInterval(() => { if (i++ >= 160 || sock.destroyed) clearInterval(timer); else sock.write(Buffer.from([i & 255])); }, 10);
  });
  const link = await startLink(far.port, { stall: { ms: 400, every: 100000, phase: 500 } });
  const t0 = performance.now();
  const sock = await dial(link.port);
  sock.on('data', (d) => arrivals.push({ at: performance.now() - t0, n: d.length }));
  try { await sleep(2000); } finally { sock.destroy(); await link.stop(); await far.close(); }
  let gap = 0, gapEnd = 0;
  for (let i = 1; i < arrivals.length; i++) {
    const g = arrivals[i].at - arrivals[i - 1].at;
    if (g > gap) { gap = g; gapEnd = arrivals[i].at; }
  }
  const total = arrivals.reduce((a, x) => a + x.n, 0);
  const why = `longest silence ${gap.toFixed(0)} ms ending at ${gapEnd.toFixed(0)} ms, ${total} bytes, ${load()}`;
  assert.ok(gap >= 380 && gap < 480, `a ~400 ms silence: ${why}`);
  // The link's clock starts before it prints its port, a little before t0 (spawn and
  // the pipe take 10-300 ms on a busy machine): the stall ends 900 ms after that.
  assert.ok(gapEnd >= 600 && gapEnd < 920, `ending when the stall ends (900 ms after the link started): ${why}`);
  assert.ok(total >= 140, `what waited came out after the stall: ${why}`);
});

test('tumble-load runs through a link (50 ms each way)', { timeout: 60_000 }, async () => {
  const srv = await startServer({ args: ['--max-conns-per-address', '100', '--room-create-rate', '100000'] });
  const link = await startLink(srv.port, { delay: 50 });
  const loadBin = process.env.TUMBLE_LOAD_BIN || path.join(ROOT, 'build/tumble-load');
  const proc = spawn(loadBin, ['--url', `ws://127.0.0.1:${link.port}`, '--rooms', '2', '--clients-per-room', '2', '--scene', 'tower',
    '--duration', '6', '--warmup', '1', '--server-pid', String(srv.proc.pid), '--json', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((r) => proc.on('exit', r));
  await sleep(300);
  // 4 clients closing while the server still writes to them: the proxy's writes to
  // closed sockets fail (EPIPE), which must close those connections, not kill it.
  const alive = link.proc.exitCode === null && link.proc.signalCode === null;
  const ended = `${link.proc.exitCode ?? link.proc.signalCode}`;
  await link.stop();
  assert.ok(alive, `the link outlived the clients (it ended: ${ended})`);
  let r;
  try { r = JSON.parse(out); } catch { throw new Error(`tumble-load printed no JSON (exit ${code}): ${out}\n${err}`); }
  const why = `ack latency ${JSON.stringify(r.ack_latency_ms)}, rtt ${JSON.stringify(r.rtt_ms)}, errors ${r.errors}, ${load()}`;
  assert.equal(r.errors, 0, why);
  assert.equal(r.clients_joined, 4, why);
  // an input reaches the server 50 ms later and its snapshot comes back 50 ms after that
  assert.ok(r.ack_latency_ms.p50 >= 98 && r.ack_latency_ms.p50 < 200, `input to acknowledging snapshot ~100 ms: ${why}`);
  if (r.rtt_ms.p50 != null) assert.ok(r.rtt_ms.p50 >= 99 && r.rtt_ms.p50 < 150, `ping RTT ~100 ms: ${why}`);
});
