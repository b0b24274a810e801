// Helpers for the room-experience browser tests (issue #18): open a room page against a
// real tumble-server, wait for rest, drag, read what the page said, and measure text
// contrast from the pixels on screen.
import zlib from 'node:zlib';
import { trackErrors } from './helpers.mjs';

export const uniq = (p) => `${p}-${Math.random().toString(36).slice(2, 8)}`;
// software GL costs per pixel: functional tests stay small, but not under 500 px
// high, where the room page folds its controls away (client-web/src/room.js small())
export const SMALL = { width: 720, height: 520 };

/** A page in `room` (created as kind/scene if new), connected and drawing. */
export async function openRoom(browser, server, room, kind, scene, { viewport = SMALL, name = null, pages = null } = {}) {
  const page = await browser.newPage({ viewport, deviceScaleFactor: 1 });
  page.setDefaultTimeout(90000); // a step that fails should not hold the suite for minutes
  const errors = trackErrors(page);
  pages?.push({ page, errors });
  if (name) await page.addInitScript((n) => localStorage.setItem('tumble.name', n), name);
  const q = kind ? `?kind=${kind}&scene=${scene}` : '';
  await page.goto(`${server.url}/r/${room}${q}`, { waitUntil: 'domcontentloaded', timeout: 120000 });
  await page.waitForFunction(() => window.__tumble?.connected && window.__tumble.state && window.__tumble.frames > 2, null, { timeout: Number(process.env.UX_OPEN_MS || 150000), polling: 250 });
  return { page, errors };
}

/** Wait until no body has moved for `quietMs` (and the page drew meanwhile). */
export async function settle(page, { quietMs = 1500, timeoutMs = 90000 } = {}) {
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

export async function drag(page, from, to, { steps = 8, stepMs = 40, holdMs = 0 } = {}) {
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  for (let i = 1; i <= steps; i++) { await page.mouse.move(from.x + ((to.x - from.x) * i) / steps, from.y + ((to.y - from.y) * i) / steps); await page.waitForTimeout(stepMs); }
  if (holdMs) await page.waitForTimeout(holdMs);
  await page.mouse.up();
}

/** Where a world point is on the page (CSS px). */
export function screenOfPoint(page, p) {
  return page.evaluate((p) => {
    const s = window.__tumble.stage, r = s.renderer.domElement.getBoundingClientRect();
    const q = s.toScreen(s.camera.position.clone().set(p[0], p[1], p[2]));
    return { x: q.x + r.left, y: q.y + r.top };
  }, p);
}

/** The toast's text once it contains `re` (toasts replace each other; the hook keeps them all). */
export async function waitAnnouncement(page, re, timeout = 60000) {
  await page.waitForFunction((src) => {
    const r = new RegExp(src);
    return window.__tumble.announcements.some((a) => r.test(a)) || window.__tumble.shownErrors.some((a) => r.test(a));
  }, re.source, { timeout, polling: 200 });
}

/**
 * Hold the page's frame loop: requestAnimationFrame callbacks queue instead of running,
 * so the 3D view keeps its last drawn frame and software GL stops drawing. Everything
 * else goes on (CSS transitions and hover, the socket, timers, Playwright's own checks,
 * which use their own world's requestAnimationFrame). In software GL each frame takes
 * the GPU process hundreds of ms, and every evaluate and screenshot waits behind it:
 * held, they take milliseconds. Returns release(), which runs the queued callbacks.
 */
export async function holdFrames(page) {
  await page.evaluate(() => {
    if (window.__heldFrames) return;
    const raf = window.requestAnimationFrame, held = [];
    window.__heldFrames = { raf, held };
    window.requestAnimationFrame = (cb) => { held.push(cb); return 0; };
  });
  return () => page.evaluate(() => {
    const h = window.__heldFrames;
    if (!h) return;
    delete window.__heldFrames;
    window.requestAnimationFrame = h.raf;
    for (const cb of h.held) h.raf.call(window, cb);
  }).catch((e) => { if (!page.isClosed()) throw e; }); // a page already closed has nothing to release
}

// ---- contrast from pixels -----------------------------------------------------------------

const HIDE_CSS = `.__hide-text, .__hide-text *, .__hide-text *::before, .__hide-text *::after, .__hide-text::before, .__hide-text::after {
  color: transparent !important; -webkit-text-fill-color: transparent !important; text-shadow: none !important; caret-color: transparent !important; }`;

/**
 * WCAG contrast of text as drawn, for every element matching `selectors`: two
 * screenshots of the page, with the text and with the text made transparent. In each
 * element's box the pixels that differ are its text; the text colour is the most
 * extreme of them, the background is what the second shot has under the text, taken
 * at its worst (the 5th percentile of contrast against the text colour).
 * Returns [{ sel, index, label, ratio, fg, bg, textPixels }].
 */
export async function textContrasts(page, selectors) {
  // The pair is valid only if nothing it measures changed between the two shots (a HUD
  // sign that flips, a panel that moves on a slow page): else it is taken again.
  for (let attempt = 1; ; attempt++) {
    const r = await contrastPair(page, selectors);
    if (r.stable || attempt === 3) return r.results;
  }
}

async function contrastPair(page, selectors) {
  await page.evaluate((css) => {
    if (!document.getElementById('__hide-text-css')) { const s = document.createElement('style'); s.id = '__hide-text-css'; s.textContent = css; document.head.append(s); }
  }, HIDE_CSS);
  const boxes = await page.evaluate((sels) => {
    const out = [];
    for (const sel of sels) document.querySelectorAll(sel).forEach((el, index) => {
      const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
      if (r.width < 2 || r.height < 2 || cs.display === 'none' || cs.visibility === 'hidden') return;
      el.dataset.contrastProbe = `${out.length}`;
      out.push({ sel, index, label: (el.value || el.textContent || '').trim().slice(0, 30), x: Math.floor(r.left), y: Math.floor(r.top), w: Math.ceil(r.width), h: Math.ceil(r.height),
        look: `${el.className} ${el.value || el.textContent || ''}` });
    });
    return out;
  }, selectors);
  // Both shots cover just the boxes measured (their union, inside the viewport): software
  // GL makes every pixel of a shot dear, and the pixels are decoded here, in Node, not in
  // the page (whose main thread is busy drawing the room).
  const vp = page.viewportSize();
  const x0 = Math.max(0, Math.min(...boxes.map((b) => b.x))), y0 = Math.max(0, Math.min(...boxes.map((b) => b.y)));
  const x1 = Math.min(vp.width, Math.max(...boxes.map((b) => b.x + b.w))), y1 = Math.min(vp.height, Math.max(...boxes.map((b) => b.y + b.h)));
  const clip = boxes.length && x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : undefined;
  const shown = await page.screenshot({ animations: 'disabled', caret: 'hide', clip });
  await page.evaluate(() => document.querySelectorAll('[data-contrast-probe]').forEach((el) => el.classList.add('__hide-text')));
  const hidden = await page.screenshot({ animations: 'disabled', caret: 'hide', clip });
  const after = await page.evaluate(() => [...document.querySelectorAll('[data-contrast-probe]')].map((el) => {
    el.classList.remove('__hide-text');
    const r = el.getBoundingClientRect(), i = Number(el.dataset.contrastProbe);
    delete el.dataset.contrastProbe;
    return { i, x: Math.floor(r.left), y: Math.floor(r.top), look: `${el.className} ${el.value || el.textContent || ''}` };
  }));
  const stable = after.length === boxes.length && after.every((a) => a.x === boxes[a.i].x && a.y === boxes[a.i].y && a.look === boxes[a.i].look);
  const at = clip ? { x: clip.x, y: clip.y } : { x: 0, y: 0 };
  const results = measure(decodePng(shown), decodePng(hidden), boxes.map(({ look, ...b }) => ({ ...b, x: b.x - at.x, y: b.y - at.y })));
  return { stable, results };
}

/** The same for one element (a hovered button). */
export async function textContrast(page, locator) {
  await locator.evaluate((el) => el.setAttribute('data-contrast-one', ''));
  try { return (await textContrasts(page, ['[data-contrast-one]']))[0]; } finally { await locator.evaluate((el) => el.removeAttribute('data-contrast-one')); }
}

// Measure each box in the two decoded shots (box coordinates relative to the shots).
function measure(A, B, boxes) {
  const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const L = (d, i) => 0.2126 * lin(d[i]) + 0.7152 * lin(d[i + 1]) + 0.0722 * lin(d[i + 2]);
  const ratio = (x, y) => (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  const px = (d, i) => `rgb(${d[i]},${d[i + 1]},${d[i + 2]})`;
  return boxes.map((bx) => {
    let best = -1, bestD = 0;
    const text = [];
    for (let y = Math.max(0, bx.y); y < Math.min(A.h, bx.y + bx.h); y++) {
      for (let x = Math.max(0, bx.x); x < Math.min(A.w, bx.x + bx.w); x++) {
        const i = (y * A.w + x) * 4, D = A.d, E = B.d;
        const d = Math.abs(D[i] - E[i]) + Math.abs(D[i + 1] - E[i + 1]) + Math.abs(D[i + 2] - E[i + 2]);
        if (d > 60) text.push(i);
        if (d > bestD) { bestD = d; best = i; }
      }
    }
    if (!text.length) return { ...bx, ratio: NaN, textPixels: 0 };
    const fgL = L(A.d, best);
    const rs = text.map((i) => [ratio(fgL, L(B.d, i)), i]).sort((x, y) => x[0] - y[0]);
    const [worst, at] = rs[Math.floor(rs.length * 0.05)];
    return { sel: bx.sel, index: bx.index, label: bx.label, ratio: +worst.toFixed(2), fg: px(A.d, best), bg: px(B.d, at), textPixels: text.length };
  });
}

/** Decode an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots are) to RGBA. */
export function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8, w = 0, h = 0, ct = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off), type = buf.toString('latin1', off + 4, off + 8), data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      w = data.readUInt32BE(0); h = data.readUInt32BE(4); ct = data[9];
      if (data[8] !== 8 || (ct !== 2 && ct !== 6) || data[12] !== 0) throw new Error(`PNG: depth ${data[8]}, colour type ${ct}, interlace ${data[12]} not handled`);
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const bpp = ct === 6 ? 4 : 3, stride = w * bpp, raw = zlib.inflateSync(Buffer.concat(idat));
  const out = new Uint8Array(w * h * 4), prev = new Uint8Array(stride), cur = new Uint8Array(stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? cur[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
      let v = line[i];
      if (f === 1) v += a; else if (f === 2) v += b; else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) { const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c); v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      cur[i] = v;
    }
    for (let x = 0; x < w; x++) { const o = (y * w + x) * 4; out[o] = cur[x * bpp]; out[o + 1] = cur[x * bpp + 1]; out[o + 2] = cur[x * bpp + 2]; out[o + 3] = bpp === 4 ? cur[x * bpp + 3] : 255; }
    prev.set(cur);
  }
  return { d: out, w, h };
}
