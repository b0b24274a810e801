// Pointer gestures on the canvas, one record per pointer id so several fingers can
// act at once (stretching the dough with two hands). Turns raw pointer events into:
//   down(p) -> true to claim the pointer (a grab); then move(p) ... up(p)
//   tap(p), doubleTap(p)         pressed and released without moving
//   dragMove(p), dragEnd(p)      an unclaimed pointer that moved (p.vx, p.vy in px/s)
// Only the primary mouse button and touches/pens count: the right button orbits.

const MOVE_PX = 8, DOUBLE_MS = 320, DOUBLE_PX = 40, VEL_WINDOW_MS = 90;

export function attachGestures(el, h) {
  const live = new Map();
  let lastTap = null;

  function rec(e) {
    const r = el.getBoundingClientRect();
    // Event time, not handler time: on a busy page events queue up, and a flick's
    // speed must come from when the pointer actually moved.
    return { x: e.clientX - r.left, y: e.clientY - r.top, clientX: e.clientX, clientY: e.clientY, t: e.timeStamp || performance.now() };
  }
  // Touch and pen pointers are ours alone: the camera controls (mouse-only) never see
  // them, so they cannot capture or cancel a finger that is stretching the dough.
  const own = (e) => { if (e.pointerType !== 'mouse') e.stopImmediatePropagation(); };
  function onDown(e) {
    own(e);
    if (e.pointerType === 'mouse' && e.button !== 0) return;
    const s = rec(e);
    const p = { id: e.pointerId, type: e.pointerType, x0: s.x, y0: s.y, ...s, t0: s.t, moved: false, claimed: false, samples: [s], vx: 0, vy: 0 };
    live.set(e.pointerId, p);
    try { el.setPointerCapture(e.pointerId); } catch { /* synthetic events */ }
    p.claimed = !!h.down?.(p, e);
    e.preventDefault();
  }
  function onMove(e) {
    own(e);
    const p = live.get(e.pointerId);
    if (!p) return;
    const s = rec(e);
    Object.assign(p, s);
    p.samples.push(s);
    while (p.samples.length > 2 && s.t - p.samples[0].t > VEL_WINDOW_MS) p.samples.shift();
    if (!p.moved && Math.hypot(s.x - p.x0, s.y - p.y0) > MOVE_PX) p.moved = true;
    if (p.claimed) h.move?.(p, e);
    else if (p.moved) h.dragMove?.(p, e);
  }
  function velocity(p) {
    const a = p.samples[0], b = p.samples[p.samples.length - 1];
    const dt = (b.t - a.t) / 1000;
    if (dt > 0.005) { p.vx = (b.x - a.x) / dt; p.vy = (b.y - a.y) / dt; }
  }
  function onUp(e) {
    own(e);
    const p = live.get(e.pointerId);
    if (!p) return;
    live.delete(e.pointerId);
    const s = rec(e);
    Object.assign(p, s);
    // A release that comes long after the last motion is a placed release, not a flick.
    if (s.t - p.samples[p.samples.length - 1].t > VEL_WINDOW_MS) p.samples = [s];
    else p.samples.push(s);
    velocity(p);
    if (p.claimed) h.up?.(p, e);
    if (e.type === 'pointercancel') return;
    if (!p.moved) {
      if (lastTap && s.t - lastTap.t < DOUBLE_MS && Math.hypot(s.x - lastTap.x, s.y - lastTap.y) < DOUBLE_PX) {
        lastTap = null;
        h.doubleTap?.(p, e);
      } else {
        lastTap = { t: s.t, x: s.x, y: s.y };
        h.tap?.(p, e);
      }
    } else if (!p.claimed) h.dragEnd?.(p, e);
  }
  // Capture phase: runs before the camera controls' listeners on the same canvas.
  el.addEventListener('pointerdown', onDown, true);
  el.addEventListener('pointermove', onMove, true);
  el.addEventListener('pointerup', onUp, true);
  el.addEventListener('pointercancel', onUp, true);
  return {
    active: live,
    dispose() {
      el.removeEventListener('pointerdown', onDown, true);
      el.removeEventListener('pointermove', onMove, true);
      el.removeEventListener('pointerup', onUp, true);
      el.removeEventListener('pointercancel', onUp, true);
    },
  };
}
