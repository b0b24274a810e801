// wasm.js: loads the physics built as WebAssembly (`make wasm` ->
// build/wasm/tumble-physics.wasm), in the browser or in Node, and gives back
// its exports: every tb_* function of server/physics (the same code the
// server steps, the same bits), plus memory.
//
// The module is a WASI reactor compiled against wasi-libc. The physics itself
// calls nothing outside; only the C library's stdio reaches the host, when a
// driver prints (tb_bench_world_hash). So the host side is this small
// preview1 shim: stdout and stderr go to `write(fd, text)`, anything else a
// module might import answers ENOSYS. No file system, clock or randomness is
// handed in: a world's steps depend on its inputs alone.
//
//   const physics = await loadPhysics(bytesOrModule, { write: (fd, text) => ... });
//   physics.exports.tb_bench_world_hash(0);

const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_NOSYS = 52;
const ERRNO_SPIPE = 70;
const FILETYPE_CHARACTER_DEVICE = 2;

export async function loadPhysics(source, { write = () => {} } = {}) {
  const module = source instanceof WebAssembly.Module ? source : await WebAssembly.compile(source);
  let memory = null;
  const decoders = { 1: new TextDecoder(), 2: new TextDecoder() };
  const wasi = {
    // iovs: iovsLen pairs (pointer, length) of u32, little-endian
    fd_write(fd, iovs, iovsLen, writtenPtr) {
      if (fd !== 1 && fd !== 2) return ERRNO_BADF;
      const view = new DataView(memory.buffer);
      let total = 0;
      for (let i = 0; i < iovsLen; i++) {
        const ptr = view.getUint32(iovs + 8 * i, true), len = view.getUint32(iovs + 8 * i + 4, true);
        write(fd, decoders[fd].decode(new Uint8Array(memory.buffer, ptr, len), { stream: true }));
        total += len;
      }
      view.setUint32(writtenPtr, total, true);
      return ERRNO_SUCCESS;
    },
    // struct fdstat { u8 filetype; u16 flags; u64 rights_base, rights_inheriting } (24 bytes)
    fd_fdstat_get(fd, statPtr) {
      if (fd !== 1 && fd !== 2) return ERRNO_BADF;
      new Uint8Array(memory.buffer, statPtr, 24).fill(0);
      new DataView(memory.buffer).setUint8(statPtr, FILETYPE_CHARACTER_DEVICE);
      return ERRNO_SUCCESS;
    },
    fd_seek() { return ERRNO_SPIPE; },
    fd_close() { return ERRNO_SUCCESS; },
    proc_exit(code) { throw new Error(`tumble-physics: exit(${code})`); },
  };
  const imports = {
    wasi_snapshot_preview1: new Proxy(wasi, { get: (shim, name) => shim[name] ?? (() => ERRNO_NOSYS) }),
  };
  const instance = await WebAssembly.instantiate(module, imports);
  memory = instance.exports.memory;
  instance.exports._initialize(); // the C library's constructors
  return { exports: instance.exports, memory, module };
}

/**
 * The module the server serves with the client (client-web/dist/tumble-physics.wasm,
 * copied there by client-web/build.mjs), compiled while it downloads where the browser
 * can (application/wasm), then loaded as above. Fetched only by pages that step
 * physics (the replay viewer): a room or the lobby never waits for it.
 */
export async function fetchPhysics(url = '/tumble-physics.wasm', opts = {}) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const module = WebAssembly.compileStreaming && /application\/wasm/.test(res.headers.get('content-type') || '')
    ? await WebAssembly.compileStreaming(res)
    : await WebAssembly.compile(await res.arrayBuffer());
  return loadPhysics(module, opts);
}
