// A small read-only window into the client for browser tests: window.__tumble.
// Tests read poses, stats and parameter values here instead of scraping pixels.
export function installHook() {
  const hook = {
    connected: false,
    status: null,
    kind: null,
    desc: null,
    view: null,
    state: null,
    welcomes: 0,
    snapshots: 0,
    // when the newest welcome and snapshot reached the socket (s, performance.now()
    // clock; stamped by the socket's worker, so a busy page does not delay them),
    // and that snapshot's tick and bodies awake
    arrived: { welcome: NaN, snapshot: NaN, tick: NaN, awake: NaN },
    frames: 0,
    frameMs: 0,
    params: {},
    paramLog: [],
    dice: null,
    stats: null,
    errors: [],
    shownErrors: [],     // the same refusals in the words the page showed
    announcements: [],   // toasts about who did what ("Ana switched the room to dice")
    quietRefusals: 0,    // refusals of a refused grab's moves, not shown again
    offline: false,      // inputs paused while the connection is down
    problem: null,       // what the page said when the room could not be joined
    scene: null,
    resyncs: 0,
    pongs: 0,
    contacts: 0,
    sent: [],
    /** Body poses now on screen: { id: { p: [x,y,z], q: [x,y,z,w], asleep } }. */
    poses() {
      const s = hook.state, out = {};
      if (!s) return out;
      for (let i = 0; i < s.count; i++) {
        out[s.ids[i]] = { p: Array.from(s.pos.subarray(i * 3, i * 3 + 3)), q: Array.from(s.rot.subarray(i * 4, i * 4 + 4)), asleep: !!s.asleep[i] };
      }
      return out;
    },
    /** Tick and time of the picture on screen. */
    shown() { return hook.state ? { tick: hook.state.tick, time: hook.state.time } : null; },
    /** A vertex array on screen (cloth grid, dough) as a plain array. */
    verts(key) { const v = hook.state?.verts?.[key]; return v ? Array.from(v) : null; },
    /** Where a body is on screen (CSS px in the page), for tests that click it. */
    screenOf(id) {
      const p = hook.view?.bodyPosition?.(id);
      if (!p || !hook.stage) return null;
      const s = hook.stage.toScreen(p);
      const r = hook.stage.renderer.domElement.getBoundingClientRect();
      return s && { x: s.x + r.left, y: s.y + r.top };
    },
  };
  window.__tumble = hook;
  return hook;
}
