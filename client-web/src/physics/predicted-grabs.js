// predicted-grabs.js: the room page's side of predicted grabs (physics/predict.js).
//
// Off by default: the page stays the thin interpolating client, and nothing of the
// physics is fetched. Turned on (the "Predict my grabs" control, or ?predict=1), the
// WebAssembly physics is fetched once, a predictor is made for the room's description
// (again after a scene change), every snapshot is handed to it, a drag that starts on
// a body grabs that body (input/intents.js), and each frame the held body is drawn
// where the predictor has it. window.__tumble.predict shows the state and the log.
// The predictor and the module are loaded on first use (their own chunk): a room's
// first paint does not wait for them.
let loaded = null; // { physics, createPredictor }, one per page
const load = () => (loaded ??= (async () => {
  const [{ fetchPhysics }, { createPredictor }] = await Promise.all([import('./wasm.js'), import('./predict.js')]);
  return { physics: await fetchPhysics(), createPredictor };
})());

export function createGrabPrediction({ hook, onNote }) {
  let on = false, desc = null, predictor = null, newest = null;
  const api = {
    get on() { return on; },
    get ready() { return !!predictor; },
    get log() { return predictor?.log ?? null; },
    setOn(v) {
      on = !!v;
      if (!on) { predictor?.dispose(); predictor = null; } else ensure();
    },
    setDesc(d) { predictor?.dispose(); predictor = null; desc = d; newest = null; ensure(); },
    onSnapshot(s) { newest = s; predictor?.onSnapshot(s); },
    /** Does a drag that starts on a body grab it? Only with prediction on, in rigid rooms. */
    get grabsBodies() { return on && desc?.room?.kind === 'rigid'; },
    grab(id, point, t, drawn) { predictor?.grab(id, point, t, drawn); },
    move(point, t) { predictor?.move(point, t); },
    release(t) { predictor?.release(t); },
    /** After the view drew the interpolated state `st`: the held body, predicted. */
    frame(t, buffer, clock, st, view) {
      const id = predictor?.current;
      if (id == null) return;
      let interp = null;
      for (let i = 0; st && i < st.count; i++) {
        if (st.ids[i] !== id) continue;
        interp = { pos: Array.from(st.pos.subarray(i * 3, i * 3 + 3)), rot: Array.from(st.rot.subarray(i * 4, i * 4 + 4)) };
        break;
      }
      const pose = predictor.frame(t, buffer.baseLag, clock.rtt, interp);
      if (pose) view.overridePose?.(pose.id, pose.pos, pose.rot);
    },
    dispose() { predictor?.dispose(); predictor = null; },
  };
  hook.predict = api;

  async function ensure() {
    if (!on || predictor || desc?.room?.kind !== 'rigid') return;
    try {
      const { physics, createPredictor } = await load();
      if (on && desc?.room?.kind === 'rigid' && !predictor) {
        predictor = createPredictor(physics, desc, { tickRate: desc.room.tickRate || 120 });
        if (newest) predictor.onSnapshot(newest);
      }
    } catch (e) {
      loaded = null;
      on = false;
      onNote?.(`Prediction is not available here: ${e.message}`);
    }
  }
  return api;
}
