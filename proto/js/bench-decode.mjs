// bench-decode.mjs: JS decode cost per snapshot on frames dumped by tumble-bench.
//   mkdir -p build/proto-frames && TB_BENCH_PROTO_DUMP=build/proto-frames build/tumble-bench --runs 1 proto
//   node proto/js/bench-decode.mjs build/proto-frames
// Prints one JSON line per scene: js_decode_us = process CPU time of decodeServer + SnapshotState.apply
// per snapshot: the least and the median of 9 passes.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeServer, SnapshotState } from './tumble-proto.mjs';

const dir = process.argv[2] ?? 'build/proto-frames';
for (const f of readdirSync(dir).filter((x) => x.endsWith('.frames')).sort()) {
  const buf = readFileSync(join(dir, f));
  const frames = [];
  for (let p = 0; p < buf.length;) {
    const n = buf.readUInt32LE(p);
    frames.push(new Uint8Array(buf.buffer, buf.byteOffset + p + 4, n));
    p += 4 + n;
  }
  const times = [];
  for (let pass = 0; pass < 9; pass++) {
    const st = new SnapshotState();
    st.apply(decodeServer(frames[0]));
    const t0 = process.cpuUsage();   // CPU time: the machine is shared, wall time is noise
    for (let i = 1; i < frames.length; i++) st.apply(decodeServer(frames[i]));
    const t = process.cpuUsage(t0);
    times.push((t.user + t.system) / (frames.length - 1));
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ scenario: f.replace('.frames', ''), snapshots: frames.length - 1, js_decode_us: Number(times[0].toFixed(1)), js_decode_us_median: Number(times[4].toFixed(1)) }));
}
