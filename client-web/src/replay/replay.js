// replay.js: a `--record` file replayed by the physics in WebAssembly (server/wasm/viewer.c
// over sim/replay.c: the server's own input application and kernels, the same bits), with
// the record's state hashes checked as it goes. Pure JS over the module's exports: the
// same code runs in the viewer page and in Node (tests/wasm/replay.mjs).
//
//   const r = openReplay(physics, bytes);     // throws with the reason when it is not a record
//   r.advance(tick);  r.welcome();  r.snapshot();  r.checks;  r.reopen();  r.close();
//
// welcome() and snapshot() give wire bytes (a `welcome` and a `snap_key`, proto/PROTOCOL.md),
// exactly what a live room's page decodes, so the viewer draws with the room views.

const TB_ENOTSUP = -10; // sim/error.h: the static description changed, ask for a welcome

export function openReplay(physics, bytes) {
  const x = physics.exports;
  const u8 = () => new Uint8Array(physics.memory.buffer);
  const cstr = (ptr) => { const m = u8(); let e = ptr; while (m[e]) e++; return new TextDecoder().decode(m.subarray(ptr, e)); };
  // The record's bytes stay in the module for reopen (scrubbing back restarts from the start state).
  const src = x.malloc(bytes.length || 1);
  if (!src) throw new Error('replay: out of memory');
  u8().set(bytes, src);
  const scratch = x.malloc(4 + 200);
  let view = 0, checksRead = 0;
  const checks = [];  // { tick, want, got, ok } in record order, each hash record met so far

  function open() {
    const rc = x.tb_view_open(src, bytes.length, scratch, scratch + 4, 200);
    if (rc < 0) throw new Error(`not a replayable record: ${cstr(scratch + 4)}`);
    view = new DataView(physics.memory.buffer).getUint32(scratch, true);
    checksRead = 0;
    checks.length = 0;
  }
  open();

  function readChecks() {
    const n = Number(x.tb_view_check_count(view));
    if (n === checksRead) return;
    const ptr = x.tb_view_checks(view);
    const a = new BigUint64Array(physics.memory.buffer, ptr, n * 3);
    for (let i = checksRead; i < n; i++) {
      const want = a[i * 3 + 1], got = a[i * 3 + 2];
      checks.push({ tick: Number(a[i * 3]), want: want.toString(16).padStart(16, '0'), got: got.toString(16).padStart(16, '0'), ok: want === got });
    }
    checksRead = n;
  }
  const bytesOut = (rc, what) => {
    if (rc < 0) throw new Error(`replay: ${what} failed (${rc})`);
    const p = x.tb_view_bytes(view), n = x.tb_view_bytes_len(view);
    return u8().slice(p, p + n);
  };

  const r = {
    get startTick() { return x.tb_view_start_tick(view); },
    get endTick() { return x.tb_view_end_tick(view); },
    get tick() { return x.tb_view_tick(view); },
    get hashCount() { return x.tb_view_hash_count(view); },
    get inputs() { return x.tb_view_inputs(view); },
    get refused() { return x.tb_view_refused(view); },
    get staticChanges() { return x.tb_view_static_changes(view); },
    get scene() { return cstr(x.tb_view_scene(view)); },
    get room() { return cstr(x.tb_view_room(view)); },
    checks,
    /** The first hash that did not match, or null. */
    get firstMismatch() { return checks.find((c) => !c.ok) || null; },
    /** Apply every record up to `tick` and step there. true at the end of the record. */
    advance(tick) {
      const rc = x.tb_view_advance(view, tick);
      readChecks();
      if (rc < 0) throw new Error(`record broken: ${cstr(x.tb_view_error(view))}`);
      return rc === 1;
    },
    /** Back to the record's start state (scrubbing back re-simulates from there). */
    reopen() { x.tb_view_close(view); view = 0; open(); },
    welcome() { return bytesOut(x.tb_view_welcome(view), 'welcome'); },
    /** A snap_key of the state now, or null when the room's static description changed
     *  since the last welcome (a scene select, a cloth grid change): call welcome(). */
    snapshot() {
      const rc = x.tb_view_snapshot(view);
      if (rc === TB_ENOTSUP) return null;
      return bytesOut(rc, 'snapshot');
    },
    close() { if (view) x.tb_view_close(view); view = 0; x.free(src); x.free(scratch); },
  };
  return r;
}
