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

test('a player whose server stops is back in the same, still-falling tower within 2 s', { skip, timeout: 240000 }, async () => {
  const room = `fleet-web-${Math.random().toString(36).slice(2, 8)}`;
  const page = await browser.newPage({ viewport: { width: 640, height: 400 } });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  await page.goto(`${router.url}/r/${room}?kind=rigid&scene=tower`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { polling: 100 });
  const standing = await page.evaluate(() => window.__tumble.poses());
  const before = await holderOf(room);
  assert.ok(before >= 0, 'one server holds the room');

  // knock it down (the K key) and wait until the page shows it falling
  await page.locator('.stage-canvas').focus();
  await page.keyboard.press('k');
  await page.waitForFunction((s) => {
    const p = window.__tumble.poses();
    return Object.keys(s).filter((id) => p[id] && Math.hypot(...p[id].p.map((v, k) => v - s[id].p[k])) > 0.1).length >= 3;
  }, standing, { polling: 50 });
  const seen = await page.evaluate(() => { window.__samePage = true; return { tick: window.__tumble.shown().tick, welcomes: window.__tumble.welcomes }; });

  // the room's server stops; watch the page from here on at 20 Hz
  const t0 = Date.now();
  const stopped = servers[before].stop();
  let reconnecting = false, bannerSaid = '', back = null;
  while (Date.now() - t0 < 10000) {
    const st = await page.evaluate(() => ({
      state: window.__tumble.status?.state, welcomes: window.__tumble.welcomes, snapshots: window.__tumble.snapshots,
      banner: document.querySelector('.banner')?.textContent || '', same: window.__samePage === true,
    }));
    assert.ok(st.same, 'the page was not reloaded');
    if (st.state === 'reconnecting') { reconnecting = true; bannerSaid = bannerSaid || st.banner; }
    if (st.welcomes > seen.welcomes) {
      if (!back) back = { ms: Date.now() - t0, snapshots: st.snapshots };
      else if (st.snapshots > back.snapshots) { back.live = Date.now() - t0; break; }
    }
    await page.waitForTimeout(50);
  }
  assert.equal((await stopped).code, 0, 'the stopped server exited cleanly');
  assert.ok(reconnecting, 'the page said it was reconnecting');
  assert.match(bannerSaid, /reconnecting/i, 'the banner says so');
  assert.ok(back?.live, 'the page got a welcome and snapshots again');
  assert.ok(back.live < 2000, `back in the room, snapshots flowing, ${back.live} ms after the stop`);

  // the same room, from another server: the tick carries on, the tower is still the knocked one and still falling
  const after1 = await page.evaluate(() => ({ tick: window.__tumble.shown()?.tick, poses: window.__tumble.poses(), scene: window.__tumble.scene }));
  assert.equal(after1.scene, 'tower');
  assert.ok(after1.tick >= seen.tick, `tick ${seen.tick} -> ${after1.tick}: carried on, not a new room`);
  assert.ok(displaced(after1.poses, standing) >= 6, 'the knocked tower, not a fresh one');
  await page.waitForTimeout(300);
  const after2 = await page.evaluate(() => ({ tick: window.__tumble.shown()?.tick, poses: window.__tumble.poses() }));
  assert.ok(after2.tick > after1.tick, 'the room steps on');
  assert.ok(Object.keys(after2.poses).some((id) => Math.hypot(...after2.poses[id].p.map((v, k) => v - after1.poses[id].p[k])) > 1e-3),
    'planks still moving');
  const now = await holderOf(room);
  assert.ok(now >= 0 && now !== before, `another server holds it now (${NAMES[before]} -> ${NAMES[now]})`);
  await shot(page, 'fleet-reconnect');
  await page.close();
  assert.deepEqual(errors.filter((e) => !/WebSocket|ERR_CONNECTION|503|Failed to load resource/.test(e)), []);
});
