// Room parameters as lil-gui controls, built from the welcome's parameter list
// ({name, label, min, max, step, default, value}). Moving a control sends a param
// intent (throttled); a change from anyone - including our own, echoed by the
// server - moves the control and says who changed it. The control never changes the
// world by itself: the server decides and broadcasts.
//
// People's terms: each parameter the server is known to send has a label, a unit and,
// where the wire unit is not the one people think in, a display scale (wind direction
// in degrees, sent in radians). On/off parameters (0/1) are checkboxes, not sliders.
// A parameter that does nothing in this scene (the knight's walking in the flag room)
// is not shown. Sliders are announced as sliders with their range (role=slider).
import GUI from 'lil-gui';

// Parameters whose change rebuilds the room's meshes (the server answers with a new
// scene, and this panel is rebuilt): sent once, when the slider is let go.
const REBUILDS = new Set(['grid']);
const DEG = 180 / Math.PI;

/** How each known parameter is shown. Unknown ones fall back to their name, unscaled. */
export const PARAM_UI = {
  restitution: { label: 'bounce' },
  friction: { label: 'friction' },
  iterations: { label: 'accuracy', unit: 'passes' },
  wind: { label: 'wind', unit: 'm/s' },
  wind_direction: { label: 'wind direction', unit: '°', scale: DEG, step: 5 },
  grid: { label: 'cloth detail', unit: 'points' },
  walking: { label: 'knight walks', bool: true, scenes: ['cape'] },
  stiffness: { label: 'stiffness' },
  plasticity: { label: 'keeps new shape', bool: true },
  volume: { label: 'keeps its volume', bool: true },
};

/** A parameter's value in people's terms: "144°", "24 points", "on". */
export function describeParam(name, value) {
  const ui = PARAM_UI[name] || {};
  if (ui.bool) return value >= 0.5 ? 'on' : 'off';
  const v = (+value) * (ui.scale || 1);
  const d = ui.scale ? 0 : Math.abs(v) >= 10 || Number.isInteger(v) ? 0 : 2;
  const num = v.toFixed(d);
  return ui.unit === '°' ? `${num}°` : ui.unit ? `${num} ${ui.unit}` : num;
}
export const paramLabel = (name) => PARAM_UI[name]?.label || name.replace(/_/g, ' ');

export function createParamsPanel(container, params, { send, scene, showContacts = false, contactsOn = false, onContacts, showPredict = false, predictOn = false, onPredict, compact = false }) {
  const gui = new GUI({ container, title: 'Room controls', width: 260 });
  gui.domElement.classList.add('tumble-gui');
  const values = {};
  const ctrls = new Map();
  const last = {};
  const shown = params.filter((p) => !PARAM_UI[p.name]?.scenes || !scene || PARAM_UI[p.name].scenes.includes(scene));
  for (const p of shown) {
    const ui = PARAM_UI[p.name] || {};
    const label = ui.label || p.label || p.name;
    const unit = ui.unit && ui.unit !== '°' ? ` (${ui.unit})` : ui.unit === '°' ? ' (°)' : '';
    if (ui.bool) {
      values[p.name] = (p.value ?? p.default) >= 0.5;
      const c = gui.add(values, p.name).name(label);
      c._label = label; c._bool = true;
      c.domElement.dataset.param = p.name;
      c.onChange((on) => { c._localAt = performance.now(); send({ type: 'param', name: p.name, value: on ? 1 : 0 }); });
      ctrls.set(p.name, c);
      continue;
    }
    const scale = ui.scale || 1;
    const step = ui.step || (p.step ? p.step * scale : niceStep(p.min * scale, p.max * scale));
    const decimals = Math.max(0, Math.min(4, Math.ceil(-Math.log10(step) - 1e-9)));
    const lo = roundTo(p.min * scale, decimals), hi = roundTo(p.max * scale, decimals);
    values[p.name] = roundTo((p.value ?? p.default) * scale, decimals);
    const c = gui.add(values, p.name, lo, hi, step).name(label + unit).decimals(decimals);
    c._decimals = decimals; c._label = label; c._scale = scale;
    c.domElement.dataset.param = p.name;
    // Back to the wire's unit, inside the server's range (the display range is rounded).
    const wire = (v) => Math.min(p.max, Math.max(p.min, v / scale));
    accessibleSlider(c, label + unit, lo, hi, step);
    if (REBUILDS.has(p.name)) {
      c.onFinishChange((v) => { c._localAt = performance.now(); send({ type: 'param', name: p.name, value: wire(v) }); });
      ctrls.set(p.name, c);
      continue;
    }
    c.onChange((v) => {
      const now = performance.now();
      c._localAt = now;
      last[p.name] = v;
      if (now - (c._sentAt || 0) > 66) { c._sentAt = now; send({ type: 'param', name: p.name, value: wire(v) }); }
      clearTimeout(c._trail);
      c._trail = setTimeout(() => { if (last[p.name] === v) send({ type: 'param', name: p.name, value: wire(v) }); }, 80);
    });
    ctrls.set(p.name, c);
  }
  const extras = {
    'Show contacts': contactsOn,
    'Predict my grabs': predictOn,
    'Reset settings': () => {
      // Only what differs from the default (a grid change rebuilds the cloth).
      for (const p of shown) {
        const c = ctrls.get(p.name);
        const now = c._bool ? (values[p.name] ? 1 : 0) : values[p.name] / (c._scale || 1);
        if (Math.abs(now - p.default) > 1e-6) send({ type: 'param', name: p.name, value: p.default });
      }
    },
  };
  let contactsCtrl = null;
  if (showContacts) contactsCtrl = gui.add(extras, 'Show contacts').onChange((on) => onContacts(on));
  if (showPredict) {
    const c = gui.add(extras, 'Predict my grabs').onChange((on) => onPredict(on));
    c.domElement.title = 'Drag a body: this page steps the server\'s physics itself, so what you hold follows your pointer now, not a round trip later';
  }
  const resetCtrl = gui.add(extras, 'Reset settings');
  resetCtrl.domElement.title = 'Put every control back to its default (the room keeps its bodies)';
  const who = document.createElement('div');
  who.className = 'param-who';
  who.setAttribute('aria-live', 'polite');
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
      if (!(mine && performance.now() - (c._localAt || 0) < 400)) {
        values[name] = c._bool ? value >= 0.5 : roundTo(value * (c._scale || 1), c._decimals);
        c.updateDisplay();
      }
      who.textContent = `${c._label} → ${describeParam(name, value)} by ${byName}`;
      c.domElement.classList.remove('flash'); void c.domElement.offsetWidth; c.domElement.classList.add('flash');
    },
    /** Offline: every control paused (and shown so). */
    setEnabled(on) {
      for (const c of ctrls.values()) c.enable(on);
      contactsCtrl?.enable(on); resetCtrl.enable(on);
    },
    dispose() { for (const c of ctrls.values()) clearTimeout(c._trail); gui.destroy(); },
  };
}

/** lil-gui's slider is a bare div: make it a keyboard-operable, announced slider. */
function accessibleSlider(c, label, min, max, step) {
  const el = c.$slider;
  if (!el) return;
  el.setAttribute('role', 'slider');
  el.tabIndex = 0;
  el.setAttribute('aria-label', label);
  el.setAttribute('aria-valuemin', String(min));
  el.setAttribute('aria-valuemax', String(max));
  c.$input.setAttribute('aria-label', `${label}, value`);
  const sync = () => { const v = c.getValue(); el.setAttribute('aria-valuenow', String(v)); el.setAttribute('aria-valuetext', String(+(+v).toFixed(c._decimals ?? 2))); };
  const upd = c.updateDisplay.bind(c);
  c.updateDisplay = () => { const r = upd(); sync(); return r; };
  sync();
  el.addEventListener('keydown', (e) => {
    if (c._disabled) return;
    const big = (max - min) / 10;
    const d = { ArrowRight: step, ArrowUp: step, ArrowLeft: -step, ArrowDown: -step, PageUp: big, PageDown: -big }[e.key];
    let v = c.getValue();
    if (d != null) v += d; else if (e.key === 'Home') v = min; else if (e.key === 'End') v = max; else return;
    e.preventDefault();
    v = Math.min(max, Math.max(min, Math.round(v / step) * step));
    c.setValue(+v.toFixed(c._decimals ?? 4));
    c._callOnFinishChange?.();
  });
}

// Server values arrive as float32 widened to float64 (0.30000001): show them at the step's precision.
const roundTo = (v, d) => +(+v).toFixed(d);

function niceStep(min, max) {
  const r = max - min;
  return r <= 2 ? 0.01 : r <= 20 ? 0.1 : 1;
}
