// The canvas itself, read back from screenshots (the other browser tests read the
// client's state, which a blank or broken canvas would not change):
//   - the tower's planks are drawn: at the screen point of every plank the pixels
//     differ from the felt around the tower;
//   - the cloth is drawn where it is and moves when dragged: with the wind off, the
//     flag's pixels hardly change while nobody touches it, and change a lot while
//     a drag pulls it.
// Against a real tumble-server; screenshots: build/screenshots/pixels-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { launch, startTumble, hasServer, hasChromium, trackErrors, SHOTS } from './helpers.mjs';

const skip = !hasChromium() ? 'no /usr/bin/chromium (make deps)' : !hasServer() ? 'no build/tumble-server or client-web/dist (make)' : false;
let browser, server;
before(async () => { if (skip) return; server = await startTumble(); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

const uniq = (p) => `${p}-${Math.random().toString(36).slice(2, 8)}`;

// 640x400: the room folds its controls away under 500 px (more of the scene shows);
// the flag test needs its wind field, so it opens at 720x520 where the controls are out.
async function openRoom(room, kind, scene, viewport = { width: 640, height: 400 }) {
  const page = await browser.newPage({ viewport, deviceScaleFactor: 1 });
  page.setDefaultTimeout(120000);
  const errors = trackErrors(page);
  await page.goto(`${server.url}/r/${room}?kind=${kind}&scene=${scene}`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { timeout: 120000, polling: 250 });
  return { page, errors };
}

/** Decode a PNG as Chromium's screenshots write them (8-bit RGB or RGBA, not
 *  interlaced): chunks, inflate, undo each row's filter. */
function decodePng(buf) {
  assert.equal(buf.readUInt32BE(0), 0x89504e47, 'PNG signature');
  let pos = 8, w = 0, h = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString('latin1', pos + 4, pos + 8), data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      w = data.readUInt32BE(0); h = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'bit depth 8');
      assert.equal(data[12], 0, 'not interlaced');
      channels = { 2: 3, 6: 4 }[data[9]];
      assert.ok(channels, `colour type ${data[9]}`);
    } else if (type === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat)), stride = w * channels, px = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? px[y * stride + x - channels] : 0, b = y ? px[(y - 1) * stride + x] : 0;
      const c = x >= channels && y ? px[(y - 1) * stride + x - channels] : 0;
      let v = row[x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) { const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c); v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      px[y * stride + x] = v & 255;
    }
  }
  return { w, h, rgb: (x, y) => { const i = Math.round(y) * stride + Math.round(x) * channels; return [px[i], px[i + 1], px[i + 2]]; } };
}

/** A screenshot of the page, saved under build/screenshots and decoded. */
async function capture(page, name) {
  const png = await page.screenshot({ timeout: 120000 });
  await mkdir(SHOTS, { recursive: true });
  await writeFile(join(SHOTS, `pixels-${name}.png`), png);
  return decodePng(png);
}
const colourDiff = (a, b) => Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]);

/** Screen points (CSS px = screenshot px at scale 1) of world points, in one round trip
 *  (each round trip waits behind a software GL frame). */
function screenOfAll(page, points) {
  return page.evaluate((points) => {
    const s = window.__tumble.stage, r = s.renderer.domElement.getBoundingClientRect();
    return points.map((p) => { const q = s.toScreen(s.camera.position.clone().set(p[0], p[1], p[2])); return { x: q.x + r.left, y: q.y + r.top }; });
  }, points);
}

test('the tower\'s planks are drawn: their pixels differ from the felt around them', { skip }, async () => {
  const { page, errors } = await openRoom(uniq('pix-tower'), 'rigid', 'tower');
  await page.waitForTimeout(1500);
  const poses = await page.evaluate(() => window.__tumble.poses());
  const planks = await page.evaluate(() => window.__tumble.desc.bodies.filter((b) => b.look === 'plank').map((b) => b.id));
  const img = await capture(page, 'tower');
  // The felt: world points on the tray floor well away from the tower, on screen.
  const cx = planks.reduce((s, id) => s + poses[id].p[0], 0) / planks.length;
  const cz = planks.reduce((s, id) => s + poses[id].p[2], 0) / planks.length;
  const feltPoints = [];
  const felt = [[-2, -1.2], [-2, 1.2], [2, -1.2], [2, 1.2]].map(([dx, dz]) => [Math.max(-3.6, Math.min(3.6, cx + dx)), 0, Math.max(-2.2, Math.min(2.2, cz + dz))]);
  for (const s of await screenOfAll(page, felt)) {
    if (s.x >= 0 && s.y >= 0 && s.x < img.w && s.y < img.h) feltPoints.push(img.rgb(s.x, s.y));
  }
  assert.ok(feltPoints.length >= 2, 'felt visible on screen');
  let drawn = 0, onScreen = 0;
  const seen = [];
  // (points under the HUD are left out: they would differ from the felt anyway)
  const centres = await page.evaluate((ids) => ids.map((id) => {
    const q = window.__tumble.screenOf(id);
    return q && { ...q, canvas: document.elementFromPoint(q.x, q.y)?.classList.contains('stage-canvas') };
  }), planks);
  for (const s of centres) {
    if (!s || !s.canvas || s.x < 0 || s.y < 0 || s.x >= img.w || s.y >= img.h) continue;
    onScreen++;
    const c = img.rgb(s.x, s.y);
    const d = Math.min(...feltPoints.map((f) => colourDiff(c, f)));
    seen.push(d);
    if (d > 40) drawn++;
  }
  assert.ok(onScreen >= 16, `${onScreen} plank centres on screen, not under the HUD`);
  assert.ok(drawn >= 0.8 * onScreen, `${drawn} of ${onScreen} plank centres differ from the felt (colour distances ${seen.join(',')}; felt ${JSON.stringify(feltPoints)})`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the flag is drawn where it is and its pixels move when it is dragged', { skip }, async () => {
  const { page, errors } = await openRoom(uniq('pix-flag'), 'cloth', 'flag', { width: 720, height: 520 });
  // No wind: the flag hangs still, so what changes on screen is the drag's doing.
  const field = page.locator('[data-param="wind"] input').first();
  await field.fill('0');
  await field.press('Enter');
  await page.waitForFunction(() => window.__tumble.params.wind === 0, null, { timeout: 60000, polling: 250 });
  const desc = await page.evaluate(() => window.__tumble.desc.cloths[0]);
  // Let it come to rest: wait until no vertex moves more than 5 mm in 1 s.
  const verts = () => page.evaluate((key) => window.__tumble.verts(key), desc.key);
  let last = await verts(), moved = Infinity;
  for (let i = 0; i < 30 && moved >= 0.005; i++) {
    await page.waitForTimeout(1000);
    const now = await verts();
    moved = 0;
    for (let k = 0; k < now.length; k += 3) moved = Math.max(moved, Math.hypot(now[k] - last[k], now[k + 1] - last[k + 1], now[k + 2] - last[k + 2]));
    last = now;
  }
  assert.ok(moved < 0.005, `the windless flag comes to rest within 30 s (a vertex still moved ${(1000 * moved).toFixed(1)} mm in the last second)`);
  // The flag's screen box, from its vertices.
  const world = [];
  for (let k = 0; k < last.length; k += 3) world.push([last[k], last[k + 1], last[k + 2]]);
  const pts = await screenOfAll(page, world);
  const box = { x0: Math.min(...pts.map((p) => p.x)), x1: Math.max(...pts.map((p) => p.x)), y0: Math.min(...pts.map((p) => p.y)), y1: Math.max(...pts.map((p) => p.y)) };
  const changed = (p, q) => {
    let n = 0, all = 0;
    for (let y = Math.max(0, box.y0 - 40); y < Math.min(p.h, box.y1 + 40); y += 2) {
      for (let x = Math.max(0, box.x0 - 40); x < Math.min(p.w, box.x1 + 40); x += 2) {
        all++;
        if (colourDiff(p.rgb(x, y), q.rgb(x, y)) > 30) n++;
      }
    }
    return n / all;
  };
  // Two screenshots a second apart show how much of the box changes by itself (the
  // last swing dying out, the HUD's figures); the quietest of up to three pairs is
  // the baseline the drag must exceed.
  let a = null, still = Infinity;
  for (let i = 0; i < 3 && still > 0.005; i++) {
    const p = await capture(page, `flag-still-${i}a`);
    await page.waitForTimeout(1000);
    const q = await capture(page, `flag-still-${i}b`);
    const share = changed(p, q);
    if (share < still) { still = share; a = q; }
  }
  // Drawn where the vertices are: the flag's centre pixel is not the background's.
  const mid = pts[Math.floor(pts.length / 2)];
  assert.ok(colourDiff(a.rgb(mid.x, mid.y), a.rgb(Math.min(a.w - 1, box.x1 + 60), mid.y)) > 20 || colourDiff(a.rgb(mid.x, mid.y), a.rgb(Math.max(0, box.x0 - 60), mid.y)) > 20,
    'the flag differs from what is beside it');
  // Drag a free vertex (two columns in from the pole, half way up) well away and hold it.
  const pin = desc.pins[Math.floor(desc.pins.length / 2)];
  const k = pin + (pin % desc.w === 0 ? 2 : -2);
  const from = pts[k];
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) { await page.mouse.move(from.x + 10 * i, from.y + 12 * i); await page.waitForTimeout(40); }
  const v0 = last.slice(3 * k, 3 * k + 3);
  await page.waitForFunction(({ key, k, v0 }) => {
    const v = window.__tumble.verts(key);
    return Math.hypot(v[3 * k] - v0[0], v[3 * k + 1] - v0[1], v[3 * k + 2] - v0[2]) > 0.1;
  }, { key: desc.key, k, v0 }, { timeout: 60000, polling: 250 });
  const c = await capture(page, 'flag-dragged');
  await page.mouse.up();
  const dragged = changed(a, c);
  assert.ok(dragged > 0.02 && dragged > 4 * still, `share of the flag's box that changed: ${(100 * still).toFixed(2)} % still, ${(100 * dragged).toFixed(2)} % dragged`);
  assert.deepEqual(errors, []);
  await page.close();
});
