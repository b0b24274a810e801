// gen-vectors.mjs: writes proto/vectors/js_<name>.mpk, the JS encoder's bytes for every
// c_<name>.json client vector. The C tests decode them (tests/unit/test_proto_vectors.c)
// and tests/js/proto_vectors.test.mjs checks they are current.
//   node proto/js/gen-vectors.mjs
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { encodeClient } from './tumble-proto.mjs';

export const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');

export function jsClientVectors() {
  return readdirSync(VECTORS).filter((f) => /^c_.*\.json$/.test(f)).sort().map((f) => {
    const name = f.slice(2, -5);
    const { message } = JSON.parse(readFileSync(join(VECTORS, f), 'utf8'));
    return { file: `js_${name}.mpk`, bytes: encodeClient(message) };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const v of jsClientVectors()) writeFileSync(join(VECTORS, v.file), v.bytes);
  console.log('wrote js_*.mpk');
}
