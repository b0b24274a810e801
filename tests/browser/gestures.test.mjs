// The rigid gestures in Chromium against a real tumble-server (client-preview checks
// them against a fake transport only): a tap on a plank pokes it and the server moves
// that plank; a tap on the felt drops a ball that the server adds and lets fall; a
// flick throws a ball that flies across the tray. Each effect is read from the poses
// the page shows, i.e. from the server's snapshots. Screenshots: build/screenshots/gestures-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, startTumble, hasServer, hasChromium, trackErrors, shot } from './helpers.mjs';

const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)' : false;
let browser, server;
before(async () => { if (skip) return; server = await startTumble(); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Where a world point is on the page (CSS px). */
function screenOfPoint(page, p) {
  return page.evaluate((p) => {
    const s = window.__tumble.stage, r = s.renderer.domElement.getBoundingClientRect();
    const q = s.toScreen(s.camera.position.clone().set(p[0], p[1], p[2]));
    return { x: q.x + r.left, y: q.y + r.top };
  }, p);
}

/** Wait until pred(poses) holds on the page (poses as window.__tumble.poses()). */
async function until(page, fn, arg, what, timeout = 90000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 250 });
  } catch (e) {
    const poses = await page.evaluate(() => window.__tumble.poses());
    throw new Error(`${what}: not seen within ${timeout} ms (${Object.keys(poses).length} bodies on screen): ${e.message}`);
  }
}

test('tap pokes a plank, tap on the felt drops a ball, a flick throws one: the server does each', { skip }, async () => {
  const page = await browser.newPage({ viewport: { width: 960, height: 600 } });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  const room = `gestures-${Math.random().toString(36).slice(2, 8)}`;
  await page.goto(`${server.url}/r/${room}?kind=rigid&scene=tower`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { timeout: 120000, polling: 250 });
  const planks = await page.evaluate(() => window.__tumble.desc.bodies.filter((b) => b.look === 'plank').map((b) => b.id));
  assert.equal(planks.length, 24);
  const p0 = await page.evaluate(() => window.__tumble.poses());
  const ids0 = Object.keys(p0).map(Number);

  // 1. Poke: a tap on the top plank. The server moves it (any plank of the tower that
  //    moves more than 2 cm: the poked one, or what it pushes).
  const top = planks.reduce((a, b) => (p0[b].p[1] > p0[a].p[1] ? b : a));
  const at = await page.evaluate((id) => window.__tumble.screenOf(id), top);
  await page.mouse.click(at.x, at.y);
  await until(page, ({ planks, p0 }) => {
    const now = window.__tumble.poses();
    return planks.some((id) => now[id] && Math.hypot(...now[id].p.map((v, k) => v - p0[id].p[k])) > 0.02);
  }, { planks, p0 }, 'a plank moved by the poke');
  let sent = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type !== 'ping'));
  assert.equal(sent[0].type, 'poke', JSON.stringify(sent));
  assert.ok(planks.includes(sent[0].body), `poked body ${sent[0].body}`);

  // 2. Drop: a tap on the felt, on the other side of the tray from the tower. The
  //    server adds a ball there and it falls to the felt.
  const cx = planks.reduce((s, id) => s + p0[id].p[0], 0) / planks.length;
  const felt = await screenOfPoint(page, [cx > 0 ? -2.6 : 2.6, 0, 0.8]);
  await page.mouse.click(felt.x, felt.y);
  await until(page, (ids0) => Object.keys(window.__tumble.poses()).some((id) => !ids0.includes(Number(id))), ids0, 'a dropped ball');
  const p1 = await page.evaluate(() => window.__tumble.poses());
  const dropped = Object.keys(p1).map(Number).find((id) => !ids0.includes(id));
  sent = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'throw'));
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].velocity, [0, 0, 0], 'a drop, not a throw');
  await until(page, ({ id, y0 }) => { const b = window.__tumble.poses()[id]; return b && b.p[1] < y0 - 0.5; },
    { id: dropped, y0: sent[0].from[1] }, 'the dropped ball falling');
  assert.ok(Math.abs(p1[dropped].p[0] - sent[0].from[0]) < 0.5 && Math.abs(p1[dropped].p[2] - sent[0].from[2]) < 0.5,
    `ball ${dropped} at ${p1[dropped].p} where it was dropped (${sent[0].from})`);
  await shot(page, 'gestures-dropped');

  // 3. Flick: pointer events 15 ms apart in one task (a page drawing in software GL
  //    would see driver input too far apart to be a flick); the server throws a ball
  //    that travels across the tray.
  const ids1 = Object.keys(await page.evaluate(() => window.__tumble.poses())).map(Number);
  const start = await screenOfPoint(page, [cx > 0 ? -2.5 : 2.5, 0, -1.2]);
  await page.evaluate(({ x, y, dir }) => {
    const el = document.querySelector('.stage-canvas');
    const ev = (type, px, py) => el.dispatchEvent(new PointerEvent(type, { pointerId: 1, pointerType: 'mouse', button: 0, clientX: px, clientY: py, bubbles: true }));
    const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end) { /* wait */ } };
    ev('pointerdown', x, y);
    for (let i = 1; i <= 6; i++) { spin(15); ev('pointermove', x + dir * i * 30, y - i * 20); }
    ev('pointerup', x + dir * 180, y - 120);
  }, { ...start, dir: cx > 0 ? 1 : -1 });
  sent = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'throw'));
  assert.equal(sent.length, 2, `a flick is a throw: ${JSON.stringify(sent)}`);
  const flick = sent[1];
  assert.ok(Math.hypot(flick.velocity[0], flick.velocity[2]) > 1, `flick velocity ${flick.velocity}`);
  await until(page, (ids1) => Object.keys(window.__tumble.poses()).some((id) => !ids1.includes(Number(id))), ids1, 'a thrown ball');
  const p2 = await page.evaluate(() => window.__tumble.poses());
  const thrown = Object.keys(p2).map(Number).find((id) => !ids1.includes(id));
  await until(page, ({ id, from }) => {
    const b = window.__tumble.poses()[id];
    return b && Math.hypot(b.p[0] - from[0], b.p[2] - from[2]) > 0.8;
  }, { id: thrown, from: flick.from }, 'the thrown ball travelling');
  await shot(page, 'gestures-thrown');
  assert.deepEqual(errors, []);
  await page.close();
});
