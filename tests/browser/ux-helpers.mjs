// Helpers for the room-experience browser tests (issue #18): open a room page against a
// real tumble-server, wait for rest, drag, read what the page said, and measure text
// contrast from the pixels on screen.
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
  await page.evaluate((css) => {
    if (!document.getElementById('__hide-text-css')) { const s = document.createElement('style'); s.id = '__hide-text-css'; s.textContent = css; document.head.append(s); }
  }, HIDE_CSS);
  const boxes = await page.evaluate((sels) => {
    const out = [];
    for (const sel of sels) document.querySelectorAll(sel).forEach((el, index) => {
      const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
      if (r.width < 2 || r.height < 2 || cs.display === 'none' || cs.visibility === 'hidden') return;
      el.dataset.contrastProbe = `${out.length}`;
      out.push({ sel, index, label: (el.value || el.textContent || '').trim().slice(0, 30), x: Math.floor(r.left), y: Math.floor(r.top), w: Math.ceil(r.width), h: Math.ceil(r.height) });
    });
    return out;
  }, selectors);
  const shown = await page.screenshot({ animations: 'disabled', caret: 'hide' });
  await page.evaluate(() => document.querySelectorAll('[data-contrast-probe]').forEach((el) => el.classList.add('__hide-text')));
  const hidden = await page.screenshot({ animations: 'disabled', caret: 'hide' });
  await page.evaluate(() => document.querySelectorAll('[data-contrast-probe]').forEach((el) => { el.classList.remove('__hide-text'); delete el.dataset.contrastProbe; }));
  return page.evaluate(measure, [shown.toString('base64'), hidden.toString('base64'), boxes]);
}

/** The same for one element (a hovered button). */
export async function textContrast(page, locator) {
  await locator.evaluate((el) => el.setAttribute('data-contrast-one', ''));
  try { return (await textContrasts(page, ['[data-contrast-one]']))[0]; } finally { await locator.evaluate((el) => el.removeAttribute('data-contrast-one')); }
}

// Runs in the page: decode both PNGs and measure each box.
async function measure([a, b, boxes]) {
  const load = async (b64) => {
    const img = await createImageBitmap(await (await fetch(`data:image/png;base64,${b64}`)).blob());
    const c = new OffscreenCanvas(img.width, img.height), g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return { d: g.getImageData(0, 0, img.width, img.height).data, w: img.width, h: img.height };
  };
  const A = await load(a), B = await load(b);
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
