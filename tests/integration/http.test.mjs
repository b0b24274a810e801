// http.test.mjs: the HTTP side of a real tumble-server: the app at / and
// /r/<id>, client files with content types, /healthz, /api/rooms,
// /metrics, and refusal of every path that leads outside the client folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, rawGet, metrics, connect, join, sleep } from './harness.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(stopAll);

test('root serves the client index.html', async () => {
  const res = await fetch(`${srv.url}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/html/);
  assert.match(await res.text(), /TUMBLE-INDEX/);
});

test('a room link /r/<id> serves the same page', async () => {
  for (const p of ['/r/abc', '/r/abc/', '/r/Some_room-1']) {
    const res = await fetch(`${srv.url}${p}`);
    assert.equal(res.status, 200, p);
    assert.match(await res.text(), /TUMBLE-INDEX/, p);
  }
  // A bad name still gets the page, which says what is wrong with it; deeper paths do not.
  for (const p of ['/r/bad%20name', `/r/${'x'.repeat(33)}`]) assert.match(await (await fetch(`${srv.url}${p}`)).text(), /TUMBLE-INDEX/, p);
  assert.equal((await fetch(`${srv.url}/r/abc/def`)).status, 404);
});

test('client files are served with their content type', async () => {
  const js = await fetch(`${srv.url}/app.js`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type'), /javascript/);
  const css = await fetch(`${srv.url}/assets/style.css`);
  assert.equal(css.status, 200);
  assert.match(css.headers.get('content-type'), /text\/css/);
  assert.equal((await fetch(`${srv.url}/nope.js`)).status, 404);
});

test('healthz is 200 JSON while serving', async () => {
  const res = await fetch(`${srv.url}/healthz`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.status, 'ok');
  assert.equal(body.rooms, 5);
});

test('api/rooms lists the default rooms with their statistics', async () => {
  const rooms = await (await fetch(`${srv.url}/api/rooms`)).json();
  const ids = rooms.map((r) => r.id).sort();
  assert.deepEqual(ids, ['cape', 'dice', 'dough', 'flag', 'tower']);
  const kinds = Object.fromEntries(rooms.map((r) => [r.id, r.kind]));
  assert.deepEqual(kinds, { tower: 'rigid', dice: 'rigid', flag: 'cloth', cape: 'cloth', dough: 'soft' });
  for (const r of rooms) {
    for (const k of ['clients', 'bodies', 'awake', 'step_us']) assert.equal(typeof r[k], 'number', `${r.id}.${k}`);
    assert.equal(r.scene, r.id);
  }
});

test('traversal, encoded traversal and symlinks out of the folder are refused', async () => {
  const paths = [
    '/../../etc/passwd',
    '/..%2f..%2f..%2fetc%2fpasswd',
    '/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
    '/%2E%2E/%2E%2E/etc/passwd',
    '/%252e%252e/%252e%252e/etc/passwd',
    '/assets/../../secret.txt',
    '/assets/%2e%2e/%2e%2e/secret.txt',
    '/link.txt',
    '//etc/passwd',
    '/etc/passwd',
    '/..\\..\\etc\\passwd',
    '/app.js%00.html',
  ];
  for (const p of paths) {
    const res = await rawGet(srv.port, p);
    assert.notEqual(res.status, 200, `${p} answered 200`);
    assert.ok(res.status >= 400 || res.status === 0, `${p}: status ${res.status}`);
    assert.doesNotMatch(res.body, /root:|TOP-SECRET/, p);
  }
  const m = await metrics(srv.url);
  assert.ok(m.tumble_http_refused_paths_total >= 3, `refused paths counted: ${m.tumble_http_refused_paths_total}`);
});

test('metrics are Prometheus text and count what happened', async () => {
  const before = await metrics(srv.url);
  await fetch(`${srv.url}/healthz`);
  await fetch(`${srv.url}/healthz`);
  const res = await fetch(`${srv.url}/metrics`);
  assert.match(res.headers.get('content-type'), /text\/plain/);
  const text = await res.text();
  for (const name of ['tumble_rooms', 'tumble_clients', 'tumble_steps_total', 'tumble_step_seconds_bucket',
    'tumble_tick_lateness_seconds_bucket', 'tumble_overrun_steps_total', 'tumble_snapshots_total',
    'tumble_bytes_sent_total', 'tumble_inputs_applied_total', 'tumble_inputs_rejected_total',
    'tumble_connections_refused_total']) {
    assert.match(text, new RegExp(`^${name}`, 'm'), name);
  }
  assert.match(text, /^# TYPE tumble_step_seconds histogram$/m);
  // The workers step every room once per 8.33 ms period (each on its phase):
  // on a quiet machine the requests above can all fit inside one, so give the
  // rooms a few periods.
  await sleep(50);
  const after = await metrics(srv.url);
  assert.ok(after.tumble_http_requests_total >= before.tumble_http_requests_total + 3);
  assert.equal(after.tumble_rooms, 5);
  assert.ok(after.tumble_steps_total > before.tumble_steps_total);
});

test('without a built client, / serves the built-in lobby page', async () => {
  const bare = await startServer({ index: false });
  const res = await fetch(`${bare.url}/`);
  assert.equal(res.status, 200);
  const html = await res.text();
  assert.match(html, /api\/rooms/);
  assert.equal((await fetch(`${bare.url}/r/tower`)).status, 200);
  const exit = await bare.stop();
  assert.equal(exit.code, 0);
});

// Issue 9's silent exits: /metrics was written into a buffer sized by an
// earlier measuring pass while the workers kept counting; when the text grew
// in between, the rest was written past the heap block (ASan: heap-buffer-
// overflow in tb__metrics; plain build: a later malloc abort). Every response
// must be whole and the server must live, while rooms step and a client's
// inputs move the counters.
async function metricsText(server) {
  try {
    return await (await fetch(`${server.url}/metrics`)).text();
  } catch (e) {
    await sleep(300); // the harness sees the exit, if that is what happened
    throw new Error(`${e.message}: ${server.report ?? 'server still running'}`);
  }
}

test('/metrics stays whole while the counters change under it', async () => {
  const busy = await startServer({ args: ['--workers', '2'] });
  const c = await connect(busy.port);
  await join(c, 'counting', 'pile');
  let stop = false;
  const churn = (async () => {
    for (let i = 0; !stop; i++) {
      c.send({ type: 'ping', client_time: i });
      if (i % 50 === 0) c.send({ type: 'action', action: 'reset', scene: null });
      await sleep(2);
    }
  })();
  const t0 = performance.now();
  let n = 0;
  try {
    while (performance.now() - t0 < 4000) {
      const batch = await Promise.all(Array.from({ length: 8 }, () => metricsText(busy)));
      for (const text of batch) {
        n++;
        assert.ok(text.endsWith('\n') && text.includes('tumble_worker_steps_total{worker="1"}'), `response ${n} is cut short:\n${text.slice(-200)}`);
      }
    }
  } finally {
    stop = true;
    await churn;
  }
  assert.ok(n >= 100, `${n} responses`);
  assert.equal(busy.exitCode, null, busy.report ?? 'server exited');
  c.close();
  assert.equal((await busy.stop()).code, 0);
});
