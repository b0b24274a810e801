// A player whose server stops is back in the same, still-falling tower within 2 s
// (issue 19, point 11), in Debian's Chromium with the built client: three servers
// sharing a private redis-server behind the project's nginx router (as in
// tests/integration/fleet-routing.test.mjs). The page opens a tower through the
// router and knocks it down; the server holding the room gets SIGTERM (a drain:
// last checkpoint, close 1001); the page says it is reconnecting, reconnects to the
// same /ws/<room> through the router without a reload, and shows the same falling
// tower from another server, its tick carrying on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, startTumble, hasServer, hasChromium, trackErrors, shot } from './helpers.mjs';
import { startRedis, stopAllRedis, redisAvailable } from '../integration/redis.mjs';
import { startRouter, nginxAvailable } from '../integration/router.mjs';

const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)'
  : !hasServer() ? 'no build/tumble-server or client-web/dist (make)'
  : !redisAvailable() ? 'redis-server not installed (make deps)'
  : !nginxAvailable() ? 'nginx not installed (make deps)' : false;

const NAMES = ['web-a', 'web-b', 'web-c'];
let browser, redis, router;
const servers = [];

before(async () => {
  if (skip) return;
  redis = await startRedis();
  for (const name of NAMES) {
    servers.push(await startTumble({ args: ['--redis', redis.url, '--instance', name, '--workers', '1',
      '--max-conns-per-address', '1000', '--room-create-rate', '100000'] }));
  }
  router = await startRouter({ upstreams: servers.map((s) => s.port) });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await router?.stop();
  for (const s of servers) await s.stop();
  await stopAllRedis();
});

/** The server holding the room: the one whose own rows (always fresh) list it. */
async function holderOf(room) {
  for (let i = 0; i < servers.length; i++) {
    if (servers[i].proc.exitCode !== null) continue;
    const rows = await (await fetch(`${servers[i].url}/api/rooms`)).json();
    if (rows.some((r) => r.id === room && r.instance === NAMES[i])) return i;
  }
  return -1;
}

const displaced = (a, b) => Object.keys(a).filter((id) => b[id] && Math.hypot(...a[id].p.map((v, k) => v - b[id].p[k])) > 0.1).length;

test('a player whose server stops is back in the same, still-falling tower within 2 s', { skip, timeout: 240000 }, async (t) => {
  const room = `fleet-web-${Math.random().toString(36).slice(2, 8)}`;
  const page = await browser.newPage({ viewport: { width: 640, height: 400 } });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  await page.goto(`${router.url}/r/${room}?kind=rigid&scene=tower${process.env.FLEET_QS || ""}`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { polling: 100 });
  const standing = await page.evaluate(() => window.__tumble.poses());
  const before = await holderOf(room);
  assert.ok(before >= 0, 'one server holds the room');

  // knock it down (the K key) and wait until the stream says it is falling (the
  // server's count of bodies awake; the picture on screen may lag on a busy machine)
  await page.locator('.stage-canvas').focus();
  await page.keyboard.press('k');
  await page.waitForFunction(() => window.__tumble.arrived.awake > 10, null, { polling: 20 });
  // from here on the page logs, with its own clock, every connection state, welcome
  // and the first snapshot after each welcome (a slow test loop cannot blur the times)
  const seen = await page.evaluate(() => {
    window.__samePage = true;
    const hook = window.__tumble, log = (window.__fleetLog = []);
    let status = hook.status, welcomes = hook.welcomes, snapshots = hook.snapshots, fresh = false;
    const banner = () => log.push({ at: Date.now(), what: 'banner', reason: document.querySelector('.banner')?.textContent || '' });
    Object.defineProperty(hook, 'status', { get: () => status, set: (v) => {
      status = v; log.push({ at: Date.now(), what: v.state, reason: v.reason });
      if (v.state === 'reconnecting') setTimeout(banner, 0); // once the HUD has drawn it
    } });
    // arrival: when the message reached the socket (its worker's stamp); at: when the page handled it
    const arrival = (t) => Math.round(performance.timeOrigin + t * 1000);
    Object.defineProperty(hook, 'welcomes', { get: () => welcomes, set: (v) => {
      welcomes = v; fresh = true; log.push({ at: Date.now(), arrival: arrival(hook.arrived.welcome), what: 'welcome' });
    } });
    Object.defineProperty(hook, 'snapshots', { get: () => snapshots, set: (v) => {
      snapshots = v;
      if (fresh) {
        fresh = false;
        log.push({ at: Date.now(), arrival: arrival(hook.arrived.snapshot), what: 'snapshot', tick: hook.arrived.tick, awake: hook.arrived.awake });
      }
    } });
    return { tick: hook.arrived.tick };
  });

  // the room's server stops
  const t0 = Date.now();
  const stopped = servers[before].stop();
  let log = [];
  for (let waited = 0; waited < 20000 && !log.some((e) => e.what === 'snapshot'); waited += 100) {
    await page.waitForTimeout(100);
    log = await page.evaluate(() => window.__fleetLog);
  }
  const story = log.map((e) => `${e.at - t0} ms ${e.what}${e.arrival ? ` (arrived ${e.arrival - t0} ms)` : ''}${e.reason ? ` (${e.reason})` : ''}`).join(', ');
  assert.equal((await stopped).code, 0, 'the stopped server exited cleanly');
  assert.ok(await page.evaluate(() => window.__samePage === true), 'the page was not reloaded');
  assert.ok(log.some((e) => e.what === 'reconnecting'), `the page said it was reconnecting: ${story}`);
  const welcome = log.find((e) => e.what === 'welcome');
  const live = log.find((e) => e.what === 'snapshot');
  assert.ok(welcome && live, `the page got a welcome and snapshots again: ${story}`);
  t.diagnostic(`after SIGTERM: ${story}; tick ${seen.tick} -> ${live.tick}, ${live.awake} awake`);
  // the same room, still falling: the new server's first snapshot carries on from the
  // tick last seen and has bodies awake
  assert.ok(live.tick >= seen.tick, `tick ${seen.tick} -> ${live.tick}: carried on, not a new room`);
  assert.ok(live.awake > 0, `still falling on the new server (${live.awake} bodies awake)`);
  // Back within 2 s: the welcome and the first snapshot from the room's new server
  // reached the page (its socket worker's arrival stamps). Drawing them takes the
  // page's main thread longer here (software GL builds the room's meshes and shaders
  // anew on the welcome: seconds on a loaded machine), which is bounded loosely.
  assert.ok(live.arrival - t0 < 2000, `back in the room ${welcome.arrival - t0} ms (welcome) / ${live.arrival - t0} ms (snapshot) after the stop: ${story}`);
  assert.ok(live.at - t0 < 20000, `the page showed the room again ${live.at - t0} ms after the stop: ${story}`);

  // and it shows the knocked tower, stepping on
  const after1 = await page.evaluate(() => ({ tick: window.__tumble.shown()?.tick, poses: window.__tumble.poses(), scene: window.__tumble.scene }));
  assert.equal(after1.scene, 'tower');
  assert.ok(displaced(after1.poses, standing) >= 6, 'the knocked tower, not a fresh one');
  await page.waitForTimeout(300);
  const after2 = await page.evaluate(() => ({ tick: window.__tumble.shown()?.tick }));
  assert.ok(after2.tick > after1.tick, 'the room steps on');
  assert.ok(log.some((e) => e.what === 'banner' && /reconnecting/i.test(e.reason)), `the banner said it was reconnecting: ${story}`);
  const now = await holderOf(room);
  assert.ok(now >= 0 && now !== before, `another server holds it now (${NAMES[before]} -> ${NAMES[now]})`);
  await shot(page, 'fleet-reconnect');
  await page.close();
  assert.deepEqual(errors.filter((e) => !/WebSocket|ERR_CONNECTION|503|Failed to load resource/.test(e)), []);
});
