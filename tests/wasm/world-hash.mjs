// world-hash.mjs: the world-hash lines of the WebAssembly physics, in Node.
//
//   node tests/wasm/world-hash.mjs [build/wasm/tumble-physics.wasm]
//
// Loads the module with the client's loader (client-web/src/physics/wasm.js)
// and runs tb_bench_world_hash, which prints one JSON line per scene exactly
// as `build/tumble-bench world-hash` does natively; tests/world-hash/check.sh
// compares the two with the committed goldens.
import { readFile } from 'node:fs/promises';
import { loadPhysics } from '../../client-web/src/physics/wasm.js';

const path = process.argv[2] ?? new URL('../../build/wasm/tumble-physics.wasm', import.meta.url);
const physics = await loadPhysics(await readFile(path), {
  write: (fd, text) => (fd === 1 ? process.stdout : process.stderr).write(text),
});
physics.exports.tb_bench_world_hash(0); // opts: unused by world-hash
