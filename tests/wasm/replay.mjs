// replay.mjs: a `--record` file replayed by the WebAssembly build, in Node, through the
// viewer's own code (client-web/src/replay/replay.js over server/wasm/viewer.c).
//
//   node tests/wasm/replay.mjs FILE [build/wasm/tumble-physics.wasm]
//
// Prints the line `tumble-server --replay FILE` prints (room, scene, ticks, inputs,
// hashes matched; "first mismatch at tick N" when one differs) and exits alike:
// 0 every hash matched, 1 one did not, 2 not a record. It also takes the viewer's
// welcome and snapshot messages on the way and decodes them with the JS codec, so
// a record whose states the page could not draw fails here too.
import { readFile } from 'node:fs/promises';
import { loadPhysics } from '../../client-web/src/physics/wasm.js';
import { openReplay } from '../../client-web/src/replay/replay.js';
import { decodeServer } from '../../proto/js/tumble-proto.mjs';

const [file, wasmPath = new URL('../../build/wasm/tumble-physics.wasm', import.meta.url)] = process.argv.slice(2);
if (!file) { console.error('usage: node tests/wasm/replay.mjs FILE [wasm]'); process.exit(2); }
const physics = await loadPhysics(await readFile(wasmPath), { write: (fd, t) => process.stderr.write(t) });
let r;
try { r = openReplay(physics, await readFile(file)); } catch (e) {
  console.error(`replay ${file}: ${e.message}`);
  process.exit(2);
}
const start = r.startTick;
let welcomes = 0, snapshots = 0;
decodeServer(r.welcome()); welcomes++;
let statics = r.staticChanges;
// Half a second at a time, as a viewer playing at 1x would ask for every frame's state.
for (let t = start + 60; ; t += 60) {
  let end;
  try { end = r.advance(Math.min(t, r.endTick)); } catch (e) { console.error(`replay ${file}: ${e.message}`); process.exit(2); }
  if (r.staticChanges !== statics) { statics = r.staticChanges; decodeServer(r.welcome()); welcomes++; }
  const snap = r.snapshot();
  if (!snap) throw new Error('snapshot refused after a fresh welcome');
  decodeServer(snap); snapshots++;
  if (end || t >= r.endTick) break;
}
const matched = r.checks.filter((c) => c.ok).length, hashes = r.checks.length;
const bad = r.firstMismatch;
console.log(`replay ${file}: room ${r.room} (${r.scene}), ${r.tick - start} ticks, ${r.inputs} inputs, ${matched}/${hashes} hashes match${bad ? ' -- MISMATCH' : ''}`);
if (bad) console.log(`first mismatch at tick ${bad.tick}`);
console.error(`(wasm: ${welcomes} welcomes, ${snapshots} snapshots decoded)`);
r.close();
process.exit(bad ? 1 : 0);
