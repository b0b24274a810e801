// Room parameters as lil-gui sliders, built from the welcome's parameter list
// ({name, label, min, max, step, default, value}). Moving a slider sends a param
// intent (throttled); a change from anyone - including our own, echoed by the
// server - moves the slider and says who changed it. The slider never changes the
// world by itself: the server decides and broadcasts.
import GUI from 'lil-gui';

// Parameters whose change rebuilds the room's meshes (the server answers with a new
// scene, and this panel is rebuilt): sent once, when the slider is let go.
const REBUILDS = new Set(['grid']);

export function createParamsPanel(container, params, { send, showContacts = false, onContacts, compact = false }) {
  const gui = new GUI({ container, title: 'Room controls', width: 260 });
  gui.domElement.classList.add('tumble-gui');
  const values = {};
  const ctrls = new Map();
  const last = {};
  for (const p of params) {
    const step = p.step || niceStep(p.min, p.max);
    const decimals = Math.max(0, Math.min(4, Math.ceil(-Math.log10(step) - 1e-9)));
    values[p.name] = roundTo(p.value ?? p.default, decimals);
    const c = gui.add(values, p.name, p.min, p.max, step).name(p.label || p.name).decimals(decimals);
    c._decimals = decimals;
    c.domElement.dataset.param = p.name;
    if (REBUILDS.has(p.name)) {
      c.onFinishChange((v) => { c._localAt = performance.now(); send({ type: 'param', name: p.name, value: v }); });
      ctrls.set(p.name, c);
      continue;
    }
    c.onChange((v) => {
      const now = performance.now();
      c._localAt = now;
      last[p.name] = v;
      if (now - (c._sentAt || 0) > 66) { c._sentAt = now; send({ type: 'param', name: p.name, value: v }); }
      clearTimeout(c._trail);
      c._trail = setTimeout(() => { if (last[p.name] === v) send({ type: 'param', name: p.name, value: v }); }, 80);
    });
    ctrls.set(p.name, c);
  }
  const extras = { 'Show contacts': false };
  if (showContacts) {
    gui.add(extras, 'Show contacts').onChange((on) => onContacts(on));
  }
  const who = document.createElement('div');
  who.className = 'param-who';
  gui.domElement.querySelector('.lil-children, .children')?.append(who) ?? gui.domElement.append(who);
  if (compact) gui.close();
  return {
    gui,
    values,
    /** A change broadcast by the server. */
    applyChange(name, value, byName, mine = false) {
      const c = ctrls.get(name);
      if (!c) return;
      // Our own echo while we are still dragging would yank the slider back: skip it.
      if (!(mine && performance.now() - (c._localAt || 0) < 400)) { values[name] = roundTo(value, c._decimals); c.updateDisplay(); }
      who.textContent = `${c._name} → ${fmt(value)} by ${byName}`;
      c.domElement.classList.remove('flash'); void c.domElement.offsetWidth; c.domElement.classList.add('flash');
    },
    dispose() { gui.destroy(); },
  };
}

// Server values arrive as float32 widened to float64 (0.30000001): show them at the step's precision.
const roundTo = (v, d) => +(+v).toFixed(d);

function niceStep(min, max) {
  const r = max - min;
  return r <= 2 ? 0.01 : r <= 20 ? 0.1 : 1;
}
const fmt = (v) => (Math.abs(v) >= 10 ? v.toFixed(0) : v.toFixed(2));
