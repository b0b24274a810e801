// world-hash.js: the world-hash lines (tests/bench/bench_world_hash.c: every scene after
// its fixed input script, FNV-1a over the kernel's saved state) computed by this page's
// own physics module. Native, Node and this browser print the same lines exactly when
// they step bit for bit alike (tests/browser/wasm-parity.test.mjs compares them).
//
//   const { lines, ms } = await worldHashLines(physics);
//   // lines: ['{"scene":"tower","steps":1200,"hash":"…"}', …]; ms[i]: time spent on lines[i]
import { loadPhysics } from './wasm.js';

export async function worldHashLines(physics) {
  // The driver prints through the module's fd_write; a fresh instance keeps the
  // printing apart from anything else the page's module is doing.
  const lines = [], ms = [];
  let partial = '', last = performance.now();
  const own = await loadPhysics(physics.module, {
    write: (fd, text) => {
      if (fd !== 1) return;
      partial += text;
      for (let i; (i = partial.indexOf('\n')) >= 0;) {
        const now = performance.now();
        lines.push(partial.slice(0, i));
        ms.push(now - last);
        last = now;
        partial = partial.slice(i + 1);
      }
    },
  });
  last = performance.now();
  own.exports.tb_bench_world_hash(0);
  return { lines, ms };
}
