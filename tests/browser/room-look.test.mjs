// What the room looks like and how its pointer feels (issue #18, points 2 and 3):
// every text in the HUD and the controls meets WCAG AA (4.5:1) on every scene,
// measured from the pixels on screen, at rest and hovered (a hovered or just-clicked
// button stays readable and does not look disabled); and grabbing the walking
// knight's cape aims at the cloth the player sees. Built client in Debian's Chromium
// against a real tumble-server. Screenshots: build/screenshots/look-*.png.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { launch, startTumble, hasServer, hasChromium, shot, VIEWPORTS } from './helpers.mjs';
import { openRoom, settle, uniq, textContrasts, textContrast, holdFrames } from './ux-helpers.mjs';
import { connect, join } from '../integration/harness.mjs';

const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)' : false;
let browser, server;
const pages = [];
before(async () => { if (skip) return; server = await startTumble(); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });
const errorsSeen = [];
afterEach(async () => {
  for (const p of pages.splice(0)) { errorsSeen.push(...p.errors); await p.page.close().catch(() => {}); }
});

const AA = 4.5;
const TEXTS = ['.brand', '.room-name', '.room-kind', '.chip.copy', '.scene-switch', '.players .count', '.players .me', '.conn',
  '.actions .action', '.hint-long', '.stats-toggle', '.tumble-gui .lil-title', '.tumble-gui [data-param] .lil-name',
  '.tumble-gui [data-param] input[type=text]', '.tumble-gui .lil-function .lil-name'];
const SCENES = [['rigid', 'tower'], ['rigid', 'dice'], ['rigid', 'pile'], ['cloth', 'flag'], ['cloth', 'cape'], ['soft', 'dough']];

for (const [kind, scene] of SCENES) {
  test(`${scene}: every HUD and control text meets 4.5:1 measured from pixels, at rest and hovered`, { skip }, async () => {
    // 960x600: a desktop layout at half the pixels of 1280x800 (software GL draws and
    // screenshots them all; this file takes ten screenshots a scene); the tower's controls
    // are taller than 600 px (their end scrolls out of sight), so it gets 1280x800
    const viewport = scene === 'tower' ? VIEWPORTS.desktop : { width: 960, height: 600 };
    const { page } = await openRoom(browser, server, uniq(`look-${scene}`), kind, scene, { viewport, pages });
    if (scene === 'tower' || scene === 'dice') await settle(page).catch(() => {});
    else await page.waitForTimeout(1500);
    // The pixels are measured on one drawn frame of the room: its frame loop is held (the
    // 3D view keeps that frame; the HUD, its hover transitions and clicks go on), so the
    // two shots of each pair see the same picture and software GL does not slow each step.
    const release = await holdFrames(page);
    await page.mouse.move(2, 400); // nothing hovered
    const all = await textContrasts(page, TEXTS);
    const low = all.filter((r) => !(r.ratio >= AA)).map((r) => `${r.sel} "${r.label}" ${r.ratio}:1 (${r.fg} on ${r.bg})`);
    assert.ok(all.length >= 12, `measured ${all.length} texts`);
    assert.deepEqual(low, [], `below ${AA}:1 on ${scene}`);
    await shot(page, `look-${scene}`);
    // Hovered: each action and a chip; readable, visibly different from rest, not faded like a disabled one.
    for (const sel of ['.actions .action >> nth=0', '.actions .action >> nth=-1', '.chip.copy']) {
      const el = page.locator(sel);
      // at rest first: a scene with one action has the same button first and last
      await page.mouse.move(2, 400);
      await page.waitForTimeout(350); // the 0.15 s transition back
      const rest = await el.evaluate((e) => getComputedStyle(e).backgroundColor);
      await el.hover();
      await page.waitForTimeout(350); // the 0.15 s transition
      const r = await textContrast(page, el);
      const look = await el.evaluate((e) => ({ bg: getComputedStyle(e).backgroundColor, opacity: getComputedStyle(e).opacity, disabled: e.disabled }));
      assert.ok(r.ratio >= AA, `${sel} hovered on ${scene}: ${r.ratio}:1 (${r.fg} on ${r.bg})`);
      assert.notEqual(look.bg, rest, `${sel} shows the hover`);
      assert.equal(look.opacity, '1', `${sel} hovered does not look disabled`);
      if (sel === '.chip.copy' && scene === 'tower') await shot(page, 'look-tower-hover-chip');
    }
    // Just clicked (the pointer stays on it): the same rules.
    const second = page.locator('.actions .action >> nth=-1');
    await second.click();
    await page.waitForTimeout(350);
    const clicked = await textContrast(page, second);
    assert.ok(clicked.ratio >= AA, `just-clicked ${scene}: ${clicked.ratio}:1`);
    if (scene === 'tower') await shot(page, 'look-tower-clicked');
    await release();
  });
}

test('grabbing the cape while the knight walks: aimed at the cloth as drawn, sent where it is now, a near miss still grabs, refusals said once', { skip }, async () => {
  const room = uniq('cape-walk');
  const { page } = await openRoom(browser, server, room, 'cloth', 'cape', { pages });
  // A second client in the room, in this process, reads where the server has the cloth.
  const watcher = await connect(server.port);
  await join(watcher, room, 'cape');
  let latest = null;
  watcher.ws.on('message', () => { const m = watcher.inbox.filter((x) => x.state).pop(); if (m) latest = m.state; watcher.inbox.length = 0; });
  try {
    await page.waitForTimeout(1500);
    const results = [];
    for (let n = 0; n < 5; n++) {
      // One task in the page, as a person does it: look at the cloth, press there, drag.
      const r = await page.evaluate(async (n) => {
        const t = window.__tumble, cl = t.desc.cloths[0], el = document.querySelector('.stage-canvas');
        const k = (cl.h - 2 - n) * cl.w + (cl.w >> 1);
        const v = t.verts(cl.key), s = t.stage, rect = el.getBoundingClientRect();
        const q = s.toScreen(s.camera.position.clone().set(v[k * 3], v[k * 3 + 1], v[k * 3 + 2]));
        const x = q.x + rect.left, y = q.y + rect.top;
        const ev = (type, px, py) => el.dispatchEvent(new PointerEvent(type, { pointerId: 1, pointerType: 'mouse', button: 0, buttons: type === 'pointerup' ? 0 : 1, clientX: px, clientY: py, bubbles: true }));
        const shown0 = t.shownErrors.length;
        ev('pointerdown', x, y);
        const start = t.sent.filter((i) => i.type === 'grab' && i.phase === 'start').pop();
        return { k, vertex: start?.vertex, sent: start?.point, drawn: [v[k * 3], v[k * 3 + 1], v[k * 3 + 2]], x, y, shown0 };
      }, n);
      const S = latest.meshes[0], k = r.vertex ?? r.k;
      const srv = [S[k * 3], S[k * 3 + 1], S[k * 3 + 2]];
      const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
      // Drag and let go, then count what the page said about it.
      await page.evaluate(async ({ x, y }) => {
        const el = document.querySelector('.stage-canvas');
        const ev = (type, px, py) => el.dispatchEvent(new PointerEvent(type, { pointerId: 1, pointerType: 'mouse', button: 0, buttons: type === 'pointerup' ? 0 : 1, clientX: px, clientY: py, bubbles: true }));
        for (let i = 1; i <= 12; i++) { ev('pointermove', x + i * 8, y - i * 4); await new Promise((res) => setTimeout(res, 40)); }
        ev('pointerup', x + 96, y - 48);
      }, r);
      await page.waitForTimeout(1200);
      const said = await page.evaluate((n0) => window.__tumble.shownErrors.length - n0, r.shown0);
      results.push({ picked: r.vertex != null, sentErr: r.sent ? dist(r.sent, srv) : NaN, drawnErr: dist(r.drawn, srv), said });
    }
    const mean = (f) => results.reduce((a, x) => a + f(x), 0) / results.length;
    const report = results.map((x) => `sent ${x.sentErr.toFixed(2)} m / drawn ${x.drawnErr.toFixed(2)} m off, said ${x.said}`).join('; ');
    console.log(`# cape grabs: ${report}; accepted ${results.filter((x) => x.said === 0).length} of 5`);
    assert.ok(results.every((x) => x.picked), 'every press on the drawn cape starts a grab');
    assert.ok(mean((x) => x.sentErr) < 0.6 * mean((x) => x.drawnErr), `the grab is sent nearer where the cloth is now: ${report}`);
    assert.ok(results.every((x) => x.said <= 1), `a refused grab is said once, not once per move: ${report}`);
    // A near miss: a pointer 0.2 m below the hem as drawn still takes the cloth: the hem, or
    // whatever part of the walking cape is drawn nearer that pointer (a swinging cape can fold
    // a higher row below its hem; measured on a fresh machine: row 14). Taken at a moment when
    // the pointer is off the cloth as drawn (a fold can also cover it).
    let near = null;
    for (let attempt = 0; attempt < 10 && !(near && near.exact === null); attempt++) {
      if (attempt) await page.waitForTimeout(200);
      near = await page.evaluate(() => {
        const t = window.__tumble, cl = t.desc.cloths[0], v = t.verts(cl.key), s = t.stage, el = document.querySelector('.stage-canvas'), rect = el.getBoundingClientRect();
        const k = (cl.h - 1) * cl.w + (cl.w >> 1);
        const V = (i) => s.camera.position.clone().set(v[i * 3], v[i * 3 + 1], v[i * 3 + 2]);
        const aim = V(k).setY(v[k * 3 + 1] - 0.2);
        const q = s.toScreen(aim.clone());
        const exact = t.pickAt(q.x + rect.left, q.y + rect.top);
        const hit = t.pickAt(q.x + rect.left, q.y + rect.top, { tolerance: 0.35 });
        // distance of a drawn vertex from the pointer's ray (the camera through the aim point)
        const o = s.camera.position.clone(), d = aim.clone().sub(o).normalize();
        const off = (i) => { const x = V(i).sub(o); return x.sub(d.clone().multiplyScalar(x.dot(d))).length(); };
        let nearest = Infinity;
        for (let i = 0; i < v.length / 3; i++) nearest = Math.min(nearest, off(i));
        return { exact, hit, row: hit && Math.floor(hit.vertex / cl.w), h: cl.h, hemOff: off(k), hitOff: hit ? off(hit.vertex) : NaN, nearest };
      });
    }
    const nearWhy = `row ${near.row} of ${near.h}, ${near.hitOff.toFixed(3)} m off the ray, the hem ${near.hemOff.toFixed(3)} m, the nearest vertex ${near.nearest.toFixed(3)} m`;
    assert.equal(near.exact, null, 'the pointer is off the cloth as drawn (in one of 10 tries)');
    assert.ok(near.hit && near.hit.near, `a near miss still takes the cloth: ${nearWhy}`);
    assert.ok(near.hitOff <= near.nearest + 0.01, `it takes the vertex drawn nearest the pointer: ${nearWhy}`);
    assert.ok(near.row >= near.h - 2 || near.hitOff < near.hemOff, `the hem, unless a fold is drawn nearer: ${nearWhy}`);
    await shot(page, 'look-cape-grab');
  } finally { watcher.close(); }
});

test('no page logged a console error', { skip }, () => {
  assert.deepEqual(errorsSeen, []);
});
