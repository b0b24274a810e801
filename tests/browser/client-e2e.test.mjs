// End to end: the built client (client-web/dist) in Debian's Chromium against a real
// tumble-server on an ephemeral loopback port. Two pages topple one tower together and
// agree on where every plank ended up; a slider moved on one page moves on the other;
// the dice room shows a sum; cloth and dough take a drag; the lobby lists and creates
// rooms; phone viewports have no overlapping UI; no page logs a console error.
// Screenshots: build/screenshots/e2e-*.png. Needs `make` (server + client) and chromium.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { launch, startTumble, hasServer, hasChromium, trackErrors, shot, hudOverlaps, VIEWPORTS } from './helpers.mjs';
import { holdFrames } from './ux-helpers.mjs';

const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)' : false;
let browser, server;
const pages = [];
before(async () => { if (skip) return; server = await startTumble(); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });
// Pages draw in software GL here: close each test's pages so they do not slow the next.
const errorsSeen = [];
// A page costs 5-10 s before its first frame: a test may hand its pages to the next test
// when that one needs the same kind of room, not a fresh one (carry, take). Pages the next
// test does not take are closed after it.
let carried = null;
function carry(key, value, ...openPages) {
  const entries = pages.filter((e) => openPages.includes(e.page));
  for (const e of entries) pages.splice(pages.indexOf(e), 1);
  carried = { key, value, entries, age: 0 };
}
function take(key) {
  if (!carried || carried.key !== key) return null;
  const c = carried; carried = null;
  pages.push(...c.entries);
  return c.value;
}
afterEach(async () => {
  for (const p of pages.splice(0)) { errorsSeen.push(...p.errors); await p.page.close().catch(() => {}); }
  if (carried && carried.age++ >= 1) {
    for (const p of carried.entries) { errorsSeen.push(...p.errors); await p.page.close().catch(() => {}); }
    carried = null;
  }
});

const uniq = (p) => `${p}-${Math.random().toString(36).slice(2, 8)}`;

// Functional tests use a smaller desktop window: software GL's cost is per pixel, and
// the machine running `make test` may be busy with other suites.
const SMALL = { width: 960, height: 600 };
async function openRoom(room, kind, scene, vp = 'small') {
  const page = await browser.newPage({ viewport: vp === 'small' ? SMALL : VIEWPORTS[vp] });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  pages.push({ page, errors });
  await page.goto(`${server.url}/r/${room}?kind=${kind}&scene=${scene}`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { timeout: 120000, polling: 250 });
  return { page, errors };
}

const poses = (page) => page.evaluate(() => window.__tumble.poses());
const planks = (page) => page.evaluate(() => (window.__tumble.desc.bodies || []).filter((b) => b.look === 'plank').map((b) => b.id));

/** Wait until no body has moved for `quietMs` and at least 4 drawn frames (a page
 *  drawing slowly must not look still just because it has not drawn). */
async function settle(page, { quietMs = 1500, timeoutMs = 90000 } = {}) {
  const t0 = Date.now();
  const read = () => page.evaluate(() => ({ poses: window.__tumble.poses(), frames: window.__tumble.frames }));
  let last = await read(), since = Date.now(), framesAt = last.frames;
  while (Date.now() - t0 < timeoutMs) {
    await page.waitForTimeout(300);
    const now = await read();
    const moved = Object.keys(now.poses).some((id) => !last.poses[id] || Math.hypot(...now.poses[id].p.map((v, k) => v - last.poses[id].p[k])) > 1e-4);
    if (moved) { since = Date.now(); framesAt = now.frames; }
    last = now;
    if (Date.now() - since > quietMs && now.frames - framesAt >= 4) return now.poses;
  }
  throw new Error('bodies did not come to rest');
}

function angleDeg(q1, q2) {
  const d = Math.abs(q1[0] * q2[0] + q1[1] * q2[1] + q1[2] * q2[2] + q1[3] * q2[3]);
  return (2 * Math.acos(Math.min(1, d)) * 180) / Math.PI;
}

test('two pages topple one tower and agree on every pose', { skip }, async () => {
  const room = uniq('tower');
  const a = await openRoom(room, 'rigid', 'tower');
  const b = await openRoom(room, 'rigid', 'tower');
  await b.page.waitForFunction(() => window.__tumble.stats?.snapsPerSec > 0, null, { polling: 250 }); // b is receiving snapshots
  const ids = await planks(a.page);
  assert.equal(ids.length, 24, 'a tower of 24 planks');
  const before = await settle(a.page);
  await shot(a.page, 'e2e-tower-standing');
  await a.page.getByRole('button', { name: 'Knock it down' }).click();
  // Both pages see the planks fall.
  for (const p of [a.page, b.page]) {
    await p.waitForFunction(({ ids, before }) => {
      const now = window.__tumble.poses();
      return ids.filter((id) => now[id] && Math.hypot(...now[id].p.map((v, k) => v - before[id].p[k])) > 0.25).length >= 12;
    }, { ids, before }, { timeout: 120000, polling: 250 });
  }
  const pa = await settle(a.page), pb = await settle(b.page);
  await shot(a.page, 'e2e-tower-fallen-a');
  await shot(b.page, 'e2e-tower-fallen-b');
  // Same quantized snapshots on both pages: at rest, poses agree within the protocol's bounds.
  for (const id of ids) {
    const d = Math.hypot(...pa[id].p.map((v, k) => v - pb[id].p[k]));
    assert.ok(d < 1e-3, `plank ${id} differs by ${d} m`);
    assert.ok(angleDeg(pa[id].q, pb[id].q) < 0.2, `plank ${id} differs by ${angleDeg(pa[id].q, pb[id].q)} deg`);
  }
  carry('tower-pair', { a, b }, a.page, b.page); // two pages in one tower room, for the slider test
});

test('a slider change on one page shows on the other with its author', { skip }, async () => {
  // the two pages of the test before (its fallen tower) when it passed, else two new ones
  const pair = take('tower-pair');
  const room = uniq('slider');
  const a = pair?.a ?? await openRoom(room, 'rigid', 'tower');
  const b = pair?.b ?? await openRoom(room, 'rigid', 'tower');
  // Both pages have drawn; what follows is controls and messages: their frame loops are
  // held (ux-helpers.mjs holdFrames), so two software GL pages do not slow each step.
  await holdFrames(a.page);
  const releaseB = await holdFrames(b.page);
  const input = a.page.locator('[data-param="friction"] input');
  await input.fill('0.95');
  await input.press('Enter');
  await b.page.waitForFunction(() => Math.abs((window.__tumble.params.friction ?? -1) - 0.95) < 1e-6, null, { timeout: 120000, polling: 250 });
  const shown = await b.page.locator('[data-param="friction"] input').inputValue();
  assert.equal(+shown, 0.95);
  const who = await b.page.locator('.param-who').textContent();
  assert.match(who, /friction/);
  assert.doesNotMatch(who, /by you/);
  await releaseB();
  await shot(b.page, 'e2e-slider-other-page');
});

test('the dice room shows the faces and their sum after a throw settles', { skip }, async () => {
  const { page } = await openRoom(uniq('dice'), 'rigid', 'dice');
  // The room rolled once on creation: that result arrives first. A click rolls again,
  // and a result counts only if it is a new one (each dice event is a new object), so
  // dice that never reset cannot pass on the first roll.
  await page.waitForFunction(() => window.__tumble.dice?.sum >= 3, null, { timeout: 120000, polling: 250 });
  await page.evaluate(() => { window.__firstRoll = window.__tumble.dice; });
  await page.getByRole('button', { name: 'Throw dice' }).click();
  await page.waitForFunction(() => window.__tumble.dice?.sum >= 3 && window.__tumble.dice !== window.__firstRoll, null, { timeout: 120000, polling: 250 });
  // Read result, label and poses at one moment.
  const { sum, faces, poses, text } = await page.evaluate(() => ({ ...window.__tumble.dice, poses: window.__tumble.poses(), text: document.querySelector('.dice-sum').textContent }));
  assert.match(text, new RegExp(`= ${sum}$`));
  // The faces agree with the poses on screen read with the die convention the pips are
  // painted by (+x 1, +y 2, +z 3, opposite faces 7 - n).
  for (const f of faces) {
    const [x, y, z, w] = poses[f.id].q;
    const up = [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)];
    const i = [0, 1, 2].reduce((b, k) => (Math.abs(up[k]) > Math.abs(up[b]) ? k : b), 0);
    assert.equal(up[i] >= 0 ? i + 1 : 6 - i, f.value, `die ${f.id}`);
  }
  await page.waitForTimeout(500);
  await shot(page, 'e2e-dice-sum');
  carry('dice', page, page); // a dice room at rest, for the contacts test
});

test('"Show contacts" streams contact points while bodies touch', { skip }, async () => {
  const page = take('dice') ?? (await openRoom(uniq('contacts'), 'rigid', 'dice')).page;
  const release = await holdFrames(page); // the contacts are counted as they arrive, not drawn
  await page.locator('.lil-gui .lil-controller.lil-boolean input, .lil-gui .controller.boolean input').first().check();
  await page.getByRole('button', { name: 'Throw dice' }).click();
  await page.waitForFunction(() => window.__tumble.contacts > 0, null, { timeout: 120000, polling: 250 });
  const sent = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'contacts'));
  assert.deepEqual(sent.map((i) => i.on), [true]);
  await release();
  await shot(page, 'e2e-contacts');
});

async function screenOfVertex(page, key, k) {
  return page.evaluate(({ key, k }) => {
    const t = window.__tumble, v = t.verts(key), s = t.stage, r = s.renderer.domElement.getBoundingClientRect();
    const p = s.camera.position.clone().set(v[k * 3], v[k * 3 + 1], v[k * 3 + 2]);
    const q = s.toScreen(p);
    return { x: q.x + r.left, y: q.y + r.top };
  }, { key, k });
}

test('the flag renders and a drag pulls it', { skip }, async () => {
  const { page } = await openRoom(uniq('flag'), 'cloth', 'flag');
  const desc = await page.evaluate(() => window.__tumble.desc.cloths[0]);
  // Two columns in from a pinned vertex half way up the pole: it flaps least, so it is
  // still under the pointer when a slow (software GL) page takes the press.
  const pin = desc.pins[Math.floor(desc.pins.length / 2)];
  const k = pin + (pin % desc.w === 0 ? 2 : -2);
  const from = await screenOfVertex(page, desc.key, k);
  const at = (key, k) => page.evaluate(({ key, k }) => window.__tumble.verts(key).slice(3 * k, 3 * k + 3), { key, k });
  const v0 = await at(desc.key, k);
  // Hold the pointer at the end of the drag until the server's cloth has followed it
  // into the snapshots on screen: the grabbed vertex is seen to move.
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) { await page.mouse.move(from.x + (60 * i) / 8, from.y + (80 * i) / 8); await page.waitForTimeout(40); }
  let moved = 0;
  for (let tries = 0; tries < 40 && moved < 0.1; tries++) {
    await page.waitForTimeout(250);
    const v = await at(desc.key, k);
    moved = Math.hypot(v[0] - v0[0], v[1] - v0[1], v[2] - v0[2]);
  }
  await shot(page, 'e2e-flag');
  await page.mouse.up();
  const grabs = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'grab').map((i) => i.phase));
  assert.equal(grabs[0], 'start');
  assert.equal(grabs[grabs.length - 1], 'end');
  assert.ok(moved >= 0.1, `the grabbed vertex moved ${moved.toFixed(3)} m on screen`);
  carry('flag', page, page); // a flag room at its first resolution, for the grid test
});

test('the cloth grid slider rebuilds the flag at the new resolution', { skip }, async () => {
  const page = take('flag') ?? (await openRoom(uniq('grid'), 'cloth', 'flag')).page;
  const size = (p) => p.evaluate(() => { const c = window.__tumble.desc.cloths[0]; return [c.w, c.h, window.__tumble.verts(c.key)?.length]; });
  assert.deepEqual(await size(page), [16, 10, 3 * 160]);
  // lil-gui's number field: type a value and press Enter (the slider sends on release only).
  const field = page.locator('[data-param="grid"] input').first();
  await field.fill('24');
  await field.press('Enter');
  await page.waitForFunction(() => window.__tumble.desc.cloths[0].w === 24 && window.__tumble.verts(window.__tumble.desc.cloths[0].key)?.length === 3 * 360,
    null, { timeout: 60000, polling: 250 });
  assert.deepEqual(await size(page), [24, 15, 3 * 360]);
  const sent = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'param' && i.name === 'grid').map((i) => i.value));
  assert.deepEqual(sent, [24], 'one param message, on release');
  assert.equal(await page.evaluate(() => window.__tumble.params.grid), 24);
  await shot(page, 'e2e-flag-grid-24');
});

test('the cape room shows the walking figure with its cape', { skip }, async () => {
  const { page } = await openRoom(uniq('cape'), 'cloth', 'cape');
  const info = await page.evaluate(() => ({ caps: window.__tumble.desc.capsules.length, cloth: window.__tumble.desc.cloths[0].key }));
  assert.ok(info.caps >= 2, 'a figure of capsules');
  const a = await page.evaluate(() => window.__tumble.verts('capsules'));
  await page.waitForTimeout(1500);
  const b = await page.evaluate(() => window.__tumble.verts('capsules'));
  assert.ok(a.some((v, i) => Math.abs(v - b[i]) > 1e-3), 'the figure walks');
  await shot(page, 'e2e-cape');
});

test('the dough renders, two pointers stretch it and it keeps the shape', { skip }, async () => {
  const { page } = await openRoom(uniq('dough'), 'soft', 'dough');
  const extent = () => page.evaluate(() => {
    const v = window.__tumble.verts(window.__tumble.desc.soft.key); let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < v.length; i += 3) { lo = Math.min(lo, v[i]); hi = Math.max(hi, v[i]); }
    return hi - lo;
  });
  // The soft world has no floor (it holds the dough's centre on the origin): the board
  // follows the dough's lowest point, so the dough rests on it in any shape.
  const resting = () => page.evaluate(() => {
    const v = window.__tumble.verts(window.__tumble.desc.soft.key); let lo = Infinity;
    for (let i = 1; i < v.length; i += 3) lo = Math.min(lo, v[i]);
    return { lowest: lo, board: window.__tumble.view.floorY() };
  });
  const r0 = await resting();
  assert.ok(Math.abs(r0.lowest - r0.board) < 0.02, `round dough on the board: lowest ${r0.lowest.toFixed(3)}, board ${r0.board.toFixed(3)}`);
  const w0 = await extent();
  const c = await page.evaluate(() => { const r = document.querySelector('.stage-canvas').getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
  // Two pointers at once (touch-like ids), pulling left and right.
  await page.evaluate(async ({ x, y }) => {
    const el = document.querySelector('.stage-canvas');
    const ev = (type, id, px, py) => el.dispatchEvent(new PointerEvent(type, { pointerId: id, pointerType: 'touch', clientX: px, clientY: py, bubbles: true }));
    ev('pointerdown', 21, x - 30, y); ev('pointerdown', 22, x + 30, y);
    for (let i = 1; i <= 16; i++) { ev('pointermove', 21, x - 30 - i * 16, y); ev('pointermove', 22, x + 30 + i * 16, y); await new Promise((r) => setTimeout(r, 60)); }
    await new Promise((r) => setTimeout(r, 800));
    ev('pointerup', 21, x - 286, y); ev('pointerup', 22, x + 286, y);
  }, c);
  await page.waitForTimeout(2500);
  const w1 = await extent();
  const grabs = await page.evaluate(() => window.__tumble.sent.filter((i) => i.type === 'grab' && i.phase === 'start').map((i) => i.pointer));
  assert.deepEqual(grabs.sort(), [21, 22], 'one grab per pointer');
  assert.ok(w1 > w0 * 1.08, `dough width ${w0.toFixed(2)} -> ${w1.toFixed(2)}`);
  const r1 = await resting();
  assert.ok(Math.abs(r1.lowest - r1.board) < 0.02, `stretched dough on the board: lowest ${r1.lowest.toFixed(3)}, board ${r1.board.toFixed(3)}`);
  await shot(page, 'e2e-dough-stretched');
});

test('the lobby lists the default rooms and creates a new one', { skip }, async () => {
  const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  pages.push({ page, errors });
  await page.goto(server.url + '/', { waitUntil: 'domcontentloaded' });
  for (const id of ['tower', 'dice', 'flag', 'cape', 'dough']) await page.locator(`.card[data-room="${id}"]`).waitFor({ timeout: 60000 });
  await shot(page, 'e2e-lobby');
  const name = uniq('made');
  await page.locator('select[name=kind]').selectOption('soft');
  await page.locator('input[name=name]').fill(name);
  await page.getByRole('button', { name: 'Create room' }).click();
  await page.waitForURL(`**/r/${name}**`);
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.kind === 'soft', null, { timeout: 120000, polling: 250 });
  await page.goto(server.url + '/');
  await page.locator(`.card[data-room="${name}"]`).waitFor({ timeout: 60000 });
});

// Phone viewports without overlapping UI: client-preview.test.mjs (every scene, one page
// resized to each viewport) and room-ux.test.mjs (the short hint on phones).

test('no page logged a console error', { skip }, () => {
  assert.deepEqual(errorsSeen, []);
});
