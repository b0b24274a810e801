// tumble-proto.mjs: the tumble.v1 wire protocol, JavaScript side (browser client, JS tests).
//
// PROTOCOL.md is the specification; proto/c/ is the other implementation and both are
// tested against the golden vectors in proto/vectors/. Every message is a msgpack array
// [type, ...fields]. This module:
//   - encodes client messages (encodeClient) byte-for-byte like the C encoder,
//   - decodes every server message (decodeServer) treating the bytes as hostile,
//   - keeps the snapshot baseline and applies keyframes and deltas (SnapshotState).
// Plain ES module on @msgpack/msgpack; no Node-only APIs.
import { encode, Decoder } from '@msgpack/msgpack';
import {
  POS_SCALE, VERT_SCALE, ROT_BITS, ROT_MAXQ, gridMax, bitsFor, dequantPos, dequantRot, BitReader, unzigzag,
} from './quant.mjs';

export const SUBPROTOCOL = 'tumble.v1';
export const VERSION = 1;

export const MSG = Object.freeze({
  hello: 1, throw: 2, poke: 3, grab_start: 4, grab_move: 5, grab_end: 6, param: 7, action: 8,
  contacts_view: 9, ping: 10, resync: 11, lobby_req: 12,
  welcome: 32, snap_key: 33, snap_delta: 34, contacts: 35, dice: 36, param_changed: 37,
  peer_joined: 38, peer_left: 39, reset: 40, scene: 41, pong: 42, error: 43, lobby: 44,
  watchers: 45,
});
export const MSG_NAME = Object.freeze(Object.fromEntries(Object.entries(MSG).map(([k, v]) => [v, k])));

export const ERR = Object.freeze({
  malformed: 1, bad_message: 2, unknown_type: 3, bad_version: 4, not_joined: 5, already_joined: 6,
  bad_room: 7, room_full: 8, too_many_rooms: 9, bad_value: 10, unknown_param: 11, unknown_body: 12,
  rate_limited: 13, too_big: 14, projectile_cap: 15, not_allowed: 16, bad_snapshot: 17,
  shutting_down: 18, internal: 19, text_frame: 20, watch_only: 21,
});
export const ERR_NAME = Object.freeze(Object.fromEntries(Object.entries(ERR).map(([k, v]) => [v, k])));

export const LIMITS = Object.freeze({
  clientMsg: 4096, serverMsg: 2 * 1024 * 1024, depth: 8, name: 32, text: 200,
  bodies: 4096, meshes: 4, verts: 16384, tris: 32768, pins: 1024, planes: 16, capsules: 32, boxes: 64,
  params: 32, peers: 64, rooms: 256, contacts: 512, dice: 8,
  coord: 10000, speed: 1000, impulse: 100000, paramAbs: 1e9, rttMs: 60000, kbpsMin: 16, kbpsMax: 1000000,
});

/** WebSocket close code that follows a fatal error (0: not fatal). */
export function closeCodeFor(code) {
  return code === ERR.bad_version ? 4004 : code === ERR.too_big ? 1009 : code === ERR.shutting_down ? 1001 : 0;
}

export class ProtoError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
    this.codeName = ERR_NAME[code] ?? 'unknown';
  }
}
const fail = (code, msg) => { throw new ProtoError(code, msg); };

// ---- structural prescan (same rules as tb_proto__prescan) -------------------------------

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Walks one msgpack value filling `bytes` exactly, without allocating per element. */
export function prescan(bytes, maxDepth = LIMITS.depth) {
  const len = bytes.length;
  if (len === 0) fail(ERR.malformed, 'empty frame');
  const remaining = [1];
  let depth = 0, pos = 0;
  const be = (n) => { let v = 0; for (let i = 0; i < n; i++) v = v * 256 + bytes[pos + i]; return v; };
  while (depth >= 0) {
    if (remaining[depth] === 0) { depth--; continue; }
    remaining[depth]--;
    if (pos >= len) fail(ERR.malformed, `truncated msgpack at byte ${pos}`);
    const b = bytes[pos++];
    let skip = 0, count = 0, hdr = 0, container = false;
    const isStr = (b >= 0xa0 && b <= 0xbf) || b === 0xd9 || b === 0xda || b === 0xdb;
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) { /* scalar */ }
    else if (b >= 0x80 && b <= 0x8f) { count = 2 * (b & 0x0f); container = true; }
    else if (b >= 0x90 && b <= 0x9f) { count = b & 0x0f; container = true; }
    else if (b >= 0xa0 && b <= 0xbf) { skip = b & 0x1f; }
    else {
      switch (b) {
        case 0xc4: case 0xd9: hdr = 1; break;
        case 0xc5: case 0xda: hdr = 2; break;
        case 0xc6: case 0xdb: hdr = 4; break;
        case 0xca: skip = 4; break; case 0xcb: skip = 8; break;
        case 0xcc: case 0xd0: skip = 1; break;
        case 0xcd: case 0xd1: skip = 2; break;
        case 0xce: case 0xd2: skip = 4; break;
        case 0xcf: case 0xd3: skip = 8; break;
        case 0xdc: case 0xde: hdr = 2; container = true; break;
        case 0xdd: case 0xdf: hdr = 4; container = true; break;
        default: fail(ERR.malformed, `msgpack type byte 0x${b.toString(16)} not allowed at byte ${pos - 1}`);
      }
      if (hdr) {
        if (len - pos < hdr) fail(ERR.malformed, `truncated msgpack header at byte ${pos}`);
        const n = be(hdr);
        pos += hdr;
        if (container) count = (b === 0xde || b === 0xdf) ? 2 * n : n;
        else skip = n;
      }
    }
    if (skip) {
      if (len - pos < skip) fail(ERR.malformed, `truncated msgpack payload at byte ${pos}`);
      if (isStr) {
        try { utf8.decode(bytes.subarray(pos, pos + skip)); } catch { fail(ERR.malformed, `string at byte ${pos} is not valid UTF-8`); }
      }
      pos += skip;
    }
    if (container) {
      if (count > len - pos) fail(ERR.malformed, `container at byte ${pos} promises ${count} values, ${len - pos} bytes remain`);
      if (depth + 1 > maxDepth) fail(ERR.malformed, `msgpack nested deeper than ${maxDepth}`);
      if (count) remaining[++depth] = count;
    }
  }
  if (pos !== len) fail(ERR.malformed, `${len - pos} trailing bytes after the message`);
}

// msgpack integers and floats both decode to JS numbers. So that a float where an integer
// is due is refused as in C (1.0 is not a uint), the decoder hands back integral floats
// boxed as IntegralFloat: num() unboxes them, uint() and the type check refuse them.
class IntegralFloat {
  constructor(value) { this.value = value; }
}
const boxIntegral = (v) => (Number.isInteger(v) ? new IntegralFloat(v) : v);
class StrictDecoder extends Decoder {
  readF32() { return boxIntegral(super.readF32()); }
  readF64() { return boxIntegral(super.readF64()); }
}

const decoders = new Map();

function parse(bytes, maxLen, maxDepth) {
  if (!(bytes instanceof Uint8Array)) {
    if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
    else fail(ERR.text_frame, 'messages are binary frames');
  }
  if (bytes.length > maxLen) fail(ERR.too_big, `frame of ${bytes.length} bytes, limit ${maxLen}`);
  prescan(bytes, maxDepth);
  const dec = decoders.get(maxLen) ?? decoders.set(maxLen, new StrictDecoder({
    maxStrLength: maxLen, maxBinLength: maxLen, maxArrayLength: maxLen, maxMapLength: maxLen, maxExtLength: 0,
  })).get(maxLen);
  let v;
  try { v = dec.decode(bytes); } catch (e) { fail(ERR.malformed, `msgpack: ${e.message}`); }
  return v;
}

// ---- field readers ------------------------------------------------------------------------
// Where C insists on an integer a float is refused, even an integral one (see
// IntegralFloat above), with the same code as C.

function uint(v, max, what) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(ERR.bad_message, `${what}: expected unsigned integer`);
  if (v > max || v > 0xffffffff) fail(ERR.bad_value, `${what}: ${v} above ${max}`);
  return v;
}
function num(v, absmax, what) {
  if (v instanceof IntegralFloat) v = v.value;
  if (typeof v !== 'number') fail(ERR.bad_message, `${what}: expected a number`);
  if (!Number.isFinite(v)) fail(ERR.bad_value, `${what}: not finite`);
  if (Math.abs(v) > absmax) fail(ERR.bad_value, `${what}: |${v}| above ${absmax}`);
  return v;
}
function vec(v, n, absmax, what) {
  if (!Array.isArray(v) || v.length !== n) fail(ERR.bad_message, `${what}: expected an array of ${n} numbers`);
  return v.map((x) => num(x, absmax, what));
}
function bool(v, what) {
  if (typeof v !== 'boolean') fail(ERR.bad_message, `${what}: expected a boolean`);
  return v;
}
const utf8len = (s) => new TextEncoder().encode(s).length;
const RE_ID = /^[A-Za-z0-9_-]+$/, RE_TOKEN = /^[a-z0-9_]+$/;
// eslint-disable-next-line no-control-regex
const RE_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
function str(v, kind, max, what) {
  if (typeof v !== 'string') fail(ERR.bad_message, `${what}: expected a string`);
  if (utf8len(v) > max) fail(ERR.bad_value, `${what}: longer than ${max} bytes`);
  const ok = kind === 'text' ? !RE_CONTROL.test(v) : (kind === 'id' ? RE_ID : RE_TOKEN).test(v);
  if (!ok) fail(ERR.bad_value, `${what}: characters not allowed`);
  return v;
}
function arr(v, min, max, what) {
  if (!Array.isArray(v)) fail(ERR.bad_message, `${what}: expected an array`);
  if (v.length < min) fail(ERR.bad_message, `${what}: ${v.length} elements, need ${min}`);
  if (v.length > max) fail(ERR.bad_message, `${what}: ${v.length} elements, limit ${max}`);
  return v;
}
const optUint = (v, max, what) => (v === null ? null : uint(v, max, what));
const optStr = (v, kind, what) => (v === null ? null : str(v, kind, LIMITS.name, what));
function bin(v, what) {
  if (!(v instanceof Uint8Array)) fail(ERR.bad_message, `${what}: expected bin`);
  return v;
}

// ---- client messages ------------------------------------------------------------------------

const L = LIMITS;
/** Field layout of each client message after [type]: [name, reader, writer-normaliser]. */
const CLIENT_FIELDS = {
  hello: [['version', (v) => uint(v, 0xffffffff, 'hello.version')], ['room', (v) => str(v, 'id', L.name, 'hello.room')],
    ['kind', (v) => optStr(v, 'token', 'hello.kind')], ['scene', (v) => optStr(v, 'token', 'hello.scene')],
    ['name', (v) => str(v, 'text', L.name, 'hello.name')]],
  throw: [['seq'], ['origin', (v) => vec(v, 3, L.coord, 'throw.origin')], ['velocity', (v) => vec(v, 3, L.speed, 'throw.velocity')],
    ['shape', (v) => str(v, 'token', L.name, 'throw.shape')]],
  poke: [['seq'], ['body', (v) => optUint(v, 0xffff, 'poke.body')], ['point', (v) => vec(v, 3, L.coord, 'poke.point')],
    ['impulse', (v) => vec(v, 3, L.impulse, 'poke.impulse')]],
  grab_start: [['seq'], ['pointer', (v) => uint(v, 0xffff, 'grab.pointer')], ['point', (v) => vec(v, 3, L.coord, 'grab.point')],
    ['body', (v) => optUint(v, 0xffff, 'grab.body')]],
  grab_move: [['seq'], ['pointer', (v) => uint(v, 0xffff, 'grab.pointer')], ['point', (v) => vec(v, 3, L.coord, 'grab.point')]],
  grab_end: [['seq'], ['pointer', (v) => uint(v, 0xffff, 'grab.pointer')]],
  param: [['seq'], ['name', (v) => str(v, 'token', L.name, 'param.name')], ['value', (v) => num(v, L.paramAbs, 'param.value')]],
  action: [['seq'], ['action', (v) => str(v, 'token', L.name, 'action.action')], ['scene', (v) => optStr(v, 'token', 'action.scene')]],
  contacts_view: [['seq'], ['on', (v) => bool(v, 'contacts_view.on')]],
  ping: [['client_time', (v) => {
    const t = num(v, Number.MAX_SAFE_INTEGER, 'ping.client_time');
    if (t < 0) fail(ERR.bad_value, `ping.client_time: ${t} below 0`);
    return t;
  }]],
  resync: [],
  lobby_req: [],
};
/** Optional trailing fields (absent or nil), written all together when any is given. */
const CLIENT_OPTIONAL = {
  // lag compensation (PROTOCOL.md "Lag compensation"): the tick the player was looking at
  throw: [['view_tick', (v) => optUint(v, 0xffffffff, 'throw.view_tick')]],
  poke: [['view_tick', (v) => optUint(v, 0xffffffff, 'poke.view_tick')]],
  grab_start: [['view_tick', (v) => optUint(v, 0xffffffff, 'grab.view_tick')]],
  // a watcher's hello (PROTOCOL.md "Watchers"): true, else not written (false and nil read as a player)
  // and the bandwidth cap it asks for (PROTOCOL.md "Bandwidth budgets"), kbit/s
  hello: [['watch', (v) => (v === null ? null : (bool(v, 'hello.watch') || null))],
    ['kbps', (v) => {
      const k = optUint(v, 0xffffffff, 'hello.kbps');
      if (k !== null && (k < L.kbpsMin || k > L.kbpsMax)) fail(ERR.bad_value, `hello.kbps: ${k} kbit/s outside ${L.kbpsMin}..${L.kbpsMax}`);
      return k;
    }]],
  // the link report (PROTOCOL.md "Link reports")
  ping: [['ack_tick', (v) => optUint(v, 0xffffffff, 'ping.ack_tick')],
    ['rtt_ms', (v) => {
      if (v === null) return null;
      const r = num(v, L.rttMs, 'ping.rtt_ms');
      if (r < 0) fail(ERR.bad_value, `ping.rtt_ms: ${r} below 0`);
      return r;
    }],
    ['recv_bytes', (v) => optUint(v, 0xffffffff, 'ping.recv_bytes')]],
};
const readSeq = (v) => uint(v, 0xffffffff, 'seq');
/** Optional fields at the end of a client message, which a sender may leave out (PROTOCOL.md §2). */
const TRAILING_OPTIONAL = { grab_start: 1, action: 1 };

/**
 * Encode a client message given as {type: 'throw', seq, origin, velocity, shape} (the same
 * shape decodeClient returns). Checks every field first (throws ProtoError), so the client
 * never sends what the server would refuse for form. Returns a Uint8Array.
 */
export function encodeClient(msg) {
  const fields = CLIENT_FIELDS[msg?.type];
  if (!fields) fail(ERR.unknown_type, `unknown client message type ${msg?.type}`);
  const out = [MSG[msg.type]];
  for (const [name, read] of fields) {
    let v = msg[name];
    if (v === undefined && ['kind', 'scene', 'body'].includes(name)) v = null;
    out.push(name === 'seq' ? readSeq(v) : read(v));
  }
  const opt = (CLIENT_OPTIONAL[msg.type] ?? []).map(([name, read]) => read(msg[name] ?? null));
  // hello's optional fields end at the last one given (a watcher's hello stays 7 fields)
  if (msg.type === 'hello') while (opt.length && opt[opt.length - 1] === null) opt.pop();
  if (opt.some((x) => x !== null)) out.push(...opt);
  return encode(out);
}

/** Decode a client frame (the server side; used by tests and tools). */
export function decodeClient(bytes) {
  const v = parse(bytes, L.clientMsg, 3);
  if (!Array.isArray(v) || v.length < 1) fail(ERR.bad_message, 'message must be an array [type, ...]');
  if (typeof v[0] !== 'number' || !Number.isInteger(v[0]) || v[0] < 0) fail(ERR.bad_message, 'type: expected unsigned integer');
  const type = MSG_NAME[v[0]];
  if (!type || v[0] > 12) fail(ERR.unknown_type, `unknown message type ${v[0]}`);
  const fields = CLIENT_FIELDS[type];
  const need = fields.length + 1 - (TRAILING_OPTIONAL[type] ?? 0);
  if (v.length < need) fail(ERR.bad_message, `${type}: ${v.length} fields, need ${need}`);
  const out = { type };
  fields.forEach(([name, read], i) => { out[name] = name === 'seq' ? readSeq(v[i + 1]) : read(v[i + 1] ?? null); });
  const opt = CLIENT_OPTIONAL[type];
  if (opt) {
    const got = opt.map(([, read], i) => (v.length > fields.length + 1 + i ? read(v[fields.length + 1 + i]) : null));
    if (type === 'hello') opt.forEach(([name], i) => { if (got[i] !== null) out[name] = got[i]; }); // each on its own
    else if (got.some((x) => x !== null)) opt.forEach(([name], i) => { out[name] = got[i]; });
  }
  if (type === 'hello' && out.version !== VERSION) {
    fail(ERR.bad_version, `protocol version ${out.version} not supported; this server speaks ${VERSION} (tumble.v1)`);
  }
  return out;
}

// ---- server messages ------------------------------------------------------------------------

function u16list(v, unit, maxCount, below, what) {
  bin(v, what);
  if (v.length % (2 * unit)) fail(ERR.bad_message, `${what}: ${v.length} bytes is not a whole number of records`);
  if (v.length / (2 * unit) > maxCount) fail(ERR.bad_message, `${what}: more than ${maxCount} records`);
  const out = new Array(v.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = v[2 * i] | (v[2 * i + 1] << 8);
    if (out[i] >= below) fail(ERR.bad_value, `${what}: index outside the mesh`);
  }
  return out;
}

function readStatic(o) {
  if (o === null || typeof o !== 'object' || Array.isArray(o) || o instanceof Uint8Array) fail(ERR.bad_message, 'static: expected a map');
  const st = { bounds: null, planes: [], capsules: [], boxes: [], meshes: [] };
  if (!Object.hasOwn(o, 'bounds')) fail(ERR.bad_message, 'static: no bounds');
  const b = vec(o.bounds, 6, L.coord, 'static.bounds');
  st.bounds = { min: b.slice(0, 3), max: b.slice(3) };
  if (Object.hasOwn(o, 'planes')) {
    st.planes = arr(o.planes, 0, L.planes, 'static.planes').map((p) => {
      const v = vec(p, 4, L.coord, 'static.planes[]');
      return { normal: v.slice(0, 3), offset: v[3] };
    });
  }
  if (Object.hasOwn(o, 'capsules')) {
    st.capsules = arr(o.capsules, 0, L.capsules, 'static.capsules').map((c) => {
      arr(c, 9, Infinity, 'static.capsules[]');
      return {
        body: optUint(c[0], 0xffff, 'capsule.body'),
        a: [1, 2, 3].map((i) => num(c[i], L.coord, 'capsule.a')), b: [4, 5, 6].map((i) => num(c[i], L.coord, 'capsule.b')),
        radius: num(c[7], L.coord, 'capsule.radius'), color: uint(c[8], 0xffffff, 'capsule.color'),
      };
    });
  }
  if (Object.hasOwn(o, 'boxes')) {
    st.boxes = arr(o.boxes, 0, L.boxes, 'static.boxes').map((x) => {
      arr(x, 12, Infinity, 'static.boxes[]');
      return {
        center: [0, 1, 2].map((i) => num(x[i], L.coord, 'box.center')), half: [3, 4, 5].map((i) => num(x[i], L.coord, 'box.half')),
        rot: [6, 7, 8, 9].map((i) => num(x[i], 1 + 1e-6, 'box.rot')),
        color: uint(x[10], 0xffffff, 'box.color'), material: uint(x[11], 0xff, 'box.material'),
      };
    });
  }
  if (Object.hasOwn(o, 'meshes')) {
    st.meshes = arr(o.meshes, 0, L.meshes, 'static.meshes').map((m) => {
      arr(m, 7, Infinity, 'static.meshes[]');
      const verts = uint(m[1], L.verts, 'mesh.verts');
      return {
        kind: str(m[0], 'token', L.name, 'mesh.kind'), verts,
        tris: u16list(m[2], 3, L.tris, verts, 'mesh.tris'), pins: u16list(m[3], 1, L.pins, verts, 'mesh.pins'),
        color: uint(m[4], 0xffffff, 'mesh.color'), grid_w: uint(m[5], L.verts, 'mesh.grid_w'), grid_h: uint(m[6], L.verts, 'mesh.grid_h'),
      };
    });
  }
  for (let a = 0; a < 3; a++) {
    if (gridMax(st.bounds.min[a], st.bounds.max[a], POS_SCALE) < 0 || gridMax(st.bounds.min[a], st.bounds.max[a], VERT_SCALE) < 0) {
      fail(ERR.bad_value, `bounds axis ${a}: need finite min < max and at most ${2 ** 24 - 1} cells of 1/${POS_SCALE} m`);
    }
  }
  return st;
}

function readParams(v) {
  return arr(v, 0, L.params, 'params').map((p) => {
    arr(p, 6, Infinity, 'params[]');
    return {
      name: str(p[0], 'token', L.name, 'param.name'), value: num(p[1], L.paramAbs, 'param.value'),
      min: num(p[2], L.paramAbs, 'param.min'), max: num(p[3], L.paramAbs, 'param.max'),
      default: num(p[4], L.paramAbs, 'param.default'), step: num(p[5], L.paramAbs, 'param.step'),
    };
  });
}

function readShape(b) {
  arr(b, 7, Infinity, 'body');
  const size = [2, 3, 4].map((i) => {
    const s = num(b[i], L.coord, 'body.size');
    if (s < 0) fail(ERR.bad_value, 'body.size: negative');
    return Math.fround(s);
  });
  return {
    id: uint(b[0], 0xffff, 'body.id'), shape: uint(b[1], 2, 'body.shape'), size,
    color: uint(b[5], 0xffffff, 'body.color'), material: uint(b[6], 0xff, 'body.material'),
  };
}

function readSnapKey(v) {
  arr(v, 6, Infinity, 'snap_key');
  return {
    type: 'snap_key', last_seq: uint(v[1], 0xffffffff, 'snap_key.last_seq'), tick: uint(v[2], 0xffffffff, 'snap_key.tick'),
    awake: uint(v[3], L.bodies, 'snap_key.awake'), bodies: arr(v[4], 0, L.bodies, 'snap_key.bodies').map(readShape),
    bin: bin(v[5], 'snap_key.bin'),
  };
}

function readState(v) {
  if (!Array.isArray(v) || v[0] !== MSG.snap_key) fail(ERR.bad_message, 'state: expected a snap_key message');
  return readSnapKey(v);
}

const SERVER_READERS = {
  watchers(v) {
    arr(v, 2, Infinity, 'watchers');
    return { type: 'watchers', count: uint(v[1], 0xffffffff, 'watchers.count') };
  },
  welcome(v) {
    arr(v, 13, Infinity, 'welcome');
    const m = {
      type: 'welcome', version: uint(v[1], 0xffffffff, 'welcome.version'), client_id: uint(v[2], 0xffffffff, 'welcome.client_id'),
      room: str(v[3], 'id', L.name, 'welcome.room'), kind: str(v[4], 'token', L.name, 'welcome.kind'),
      scene: str(v[5], 'token', L.name, 'welcome.scene'), server: str(v[6], 'text', L.name, 'welcome.server'),
      tick_rate: uint(v[7], 10000, 'welcome.tick_rate'), snap_rate: uint(v[8], 10000, 'welcome.snap_rate'),
      peers: arr(v[9], 0, L.peers, 'welcome.peers').map((p) => {
        arr(p, 2, Infinity, 'welcome.peers[]');
        return { id: uint(p[0], 0xffffffff, 'peer.id'), name: str(p[1], 'text', L.name, 'peer.name') };
      }),
      params: readParams(v[10]), static: readStatic(v[11]), state: readState(v[12]),
    };
    // watchers? (PROTOCOL.md "Watchers"): left out when the room has none
    const watchers = optUint(v[13] ?? null, 0xffffffff, 'welcome.watchers');
    if (watchers) m.watchers = watchers;
    if (m.version !== VERSION) fail(ERR.bad_version, `server speaks protocol version ${m.version}`);
    return m;
  },
  scene(v) {
    arr(v, 6, Infinity, 'scene');
    return {
      type: 'scene', kind: str(v[1], 'token', L.name, 'scene.kind'), scene: str(v[2], 'token', L.name, 'scene.scene'),
      params: readParams(v[3]), static: readStatic(v[4]), state: readState(v[5]),
    };
  },
  snap_key: readSnapKey,
  snap_delta(v) {
    arr(v, 6, Infinity, 'snap_delta');
    return {
      type: 'snap_delta', last_seq: uint(v[1], 0xffffffff, 'snap_delta.last_seq'), tick: uint(v[2], 0xffffffff, 'snap_delta.tick'),
      tick_gap: uint(v[3], 0xffffffff, 'snap_delta.tick_gap'), awake: uint(v[4], L.bodies, 'snap_delta.awake'),
      bin: v[5] === null ? null : bin(v[5], 'snap_delta.bin'),
      spawns: v.length > 6 ? arr(v[6], 0, L.bodies, 'snap_delta.spawns').map(readShape) : [],
      removes: v.length > 7 ? arr(v[7], 0, L.bodies, 'snap_delta.removes').map((x) => uint(x, 0xffff, 'snap_delta.removes')) : [],
    };
  },
  contacts(v) {
    arr(v, 3, Infinity, 'contacts');
    const tick = uint(v[1], 0xffffffff, 'contacts.tick');
    const raw = v[2];
    if (!(raw instanceof Uint8Array) || raw.length % 28 || raw.length / 28 > L.contacts) {
      fail(ERR.bad_message, `contacts.points: expected bin of up to ${L.contacts} 28-byte records`);
    }
    const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const points = [];
    for (let i = 0; i < raw.length / 28; i++) {
      const f = [];
      for (let k = 0; k < 7; k++) {
        const x = dv.getFloat32(28 * i + 4 * k, true);
        if (!Number.isFinite(x) || Math.abs(x) > Math.fround(L.impulse)) fail(ERR.bad_value, 'contacts: non-finite or huge value');
        f.push(x);
      }
      points.push({ point: f.slice(0, 3), normal: f.slice(3, 6), impulse: f[6] });
    }
    return { type: 'contacts', tick, points };
  },
  dice(v) {
    arr(v, 4, Infinity, 'dice');
    const faces = arr(v[2], 0, L.dice, 'dice.faces').map((f) => {
      uint(f, 6, 'dice.faces[]');
      if (f < 1) fail(ERR.bad_value, 'dice.faces[]: 0');
      return f;
    });
    const sum = uint(v[3], 6 * L.dice, 'dice.sum');
    if (faces.reduce((a, b) => a + b, 0) !== sum) fail(ERR.bad_value, 'dice.sum does not match the faces');
    return { type: 'dice', tick: uint(v[1], 0xffffffff, 'dice.tick'), faces, sum };
  },
  param_changed(v) {
    arr(v, 5, Infinity, 'param_changed');
    return {
      type: 'param_changed', name: str(v[1], 'token', L.name, 'param_changed.name'), value: num(v[2], L.paramAbs, 'param_changed.value'),
      by: uint(v[3], 0xffffffff, 'param_changed.by'), by_name: str(v[4], 'text', L.name, 'param_changed.by_name'),
    };
  },
  peer_joined(v) {
    arr(v, 3, Infinity, 'peer_joined');
    return { type: 'peer_joined', id: uint(v[1], 0xffffffff, 'peer_joined.id'), name: str(v[2], 'text', L.name, 'peer_joined.name') };
  },
  peer_left(v) {
    arr(v, 2, Infinity, 'peer_left');
    return { type: 'peer_left', id: uint(v[1], 0xffffffff, 'peer_left.id') };
  },
  reset(v) {
    arr(v, 4, Infinity, 'reset');
    return {
      type: 'reset', action: str(v[1], 'token', L.name, 'reset.action'), by: uint(v[2], 0xffffffff, 'reset.by'),
      by_name: str(v[3], 'text', L.name, 'reset.by_name'),
    };
  },
  pong(v) {
    arr(v, 3, Infinity, 'pong');
    return {
      type: 'pong', client_time: num(v[1], Number.MAX_SAFE_INTEGER, 'pong.client_time'),
      server_time: num(v[2], Number.MAX_SAFE_INTEGER, 'pong.server_time'),
    };
  },
  error(v) {
    arr(v, 4, Infinity, 'error'); // seq: optional at the end, may be left out
    return {
      type: 'error', code: uint(v[1], 0xffffffff, 'error.code'), name: str(v[2], 'token', L.name, 'error.name'),
      message: str(v[3], 'text', L.text, 'error.message'), seq: optUint(v[4] ?? null, 0xffffffff, 'error.seq'),
    };
  },
  lobby(v) {
    arr(v, 2, Infinity, 'lobby');
    return {
      type: 'lobby',
      rooms: arr(v[1], 0, L.rooms, 'lobby.rooms').map((r) => {
        arr(r, 6, Infinity, 'lobby.rooms[]');
        const room = {
          id: str(r[0], 'id', L.name, 'room.id'), kind: str(r[1], 'token', L.name, 'room.kind'), scene: str(r[2], 'token', L.name, 'room.scene'),
          clients: uint(r[3], 0xffffffff, 'room.clients'), bodies: uint(r[4], 0xffffffff, 'room.bodies'), awake: uint(r[5], 0xffffffff, 'room.awake'),
        };
        const watchers = optUint(r[6] ?? null, 0xffffffff, 'room.watchers'); // left out when 0
        if (watchers) room.watchers = watchers;
        return room;
      }),
    };
  },
};

/**
 * Decode one server frame (Uint8Array or ArrayBuffer). Returns a plain object
 * {type: 'welcome' | 'snap_key' | ..., ...fields}; throws ProtoError {code, codeName, message}.
 * Snapshots come back undecoded (bin); give them to SnapshotState.apply().
 */
export function decodeServer(bytes) {
  const v = parse(bytes, L.serverMsg, L.depth);
  if (!Array.isArray(v) || v.length < 1) fail(ERR.bad_message, 'message must be an array [type, ...]');
  if (typeof v[0] !== 'number' || !Number.isInteger(v[0]) || v[0] < 0) fail(ERR.bad_message, 'type: expected unsigned integer');
  const type = v[0] >= 32 ? MSG_NAME[v[0]] : undefined;
  if (!type) fail(ERR.unknown_type, `unknown message type ${v[0]}`);
  return SERVER_READERS[type](v);
}

// ---- snapshot state ------------------------------------------------------------------------

/** Struct-of-arrays storage for up to `cap` bodies (quantized state). */
class BodySet {
  constructor(cap) {
    this.n = 0;
    this.ids = new Uint16Array(cap);
    this.qp = new Int32Array(3 * cap); this.vp = new Int32Array(3 * cap);
    this.ri = new Uint8Array(cap);
    this.rc = new Int32Array(3 * cap); this.vr = new Int32Array(3 * cap);
    this.shapes = new Array(cap);
  }
  copyFrom(o) {
    const n = o.n;
    this.n = n;
    this.ids.set(o.ids.subarray(0, n));
    this.qp.set(o.qp.subarray(0, 3 * n)); this.vp.set(o.vp.subarray(0, 3 * n));
    this.ri.set(o.ri.subarray(0, n));
    this.rc.set(o.rc.subarray(0, 3 * n)); this.vr.set(o.vr.subarray(0, 3 * n));
    for (let i = 0; i < n; i++) this.shapes[i] = o.shapes[i];
  }
  copyOne(i, o, j) {
    this.ids[i] = o.ids[j]; this.ri[i] = o.ri[j]; this.shapes[i] = o.shapes[j];
    for (let a = 0; a < 3; a++) {
      this.qp[3 * i + a] = o.qp[3 * j + a]; this.vp[3 * i + a] = o.vp[3 * j + a];
      this.rc[3 * i + a] = o.rc[3 * j + a]; this.vr[3 * i + a] = o.vr[3 * j + a];
    }
  }
  indexOf(id) {
    let lo = 0, hi = this.n;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (this.ids[mid] < id) lo = mid + 1; else hi = mid; }
    return lo < this.n && this.ids[lo] === id ? lo : -1;
  }
}

/**
 * The client's copy of the room: static frame, bodies (ascending id) and mesh vertices,
 * kept quantized exactly like the server's encoder so deltas apply bit-exactly.
 *
 *   const st = new SnapshotState();
 *   ws.onmessage = (e) => { const m = decodeServer(new Uint8Array(e.data)); if (st.handles(m)) st.apply(m); };
 *   st.tick, st.lastSeq, st.awake, st.bodyCount
 *   st.ids[i], st.shapes[i] = {id, shape, size, color, material}        (i < bodyCount, ascending id)
 *   st.pos  Float32Array(3 * bodyCount), st.rot Float32Array(4 * bodyCount) (x y z w)
 *   st.meshes[m].pos  Float32Array(3 * verts)
 * pos, rot and meshes[m].pos are fresh arrays after every apply(), so a client may keep the
 * previous ones for interpolation. apply() throws ProtoError(bad_snapshot) when a delta does
 * not fit the baseline; the state is then unchanged and the client should send
 * {type: 'resync'} to get a keyframe.
 */
export class SnapshotState {
  constructor({ maxBodies = LIMITS.bodies } = {}) {
    this.maxBodies = Math.min(maxBodies, LIMITS.bodies);
    this.ready = false;
    this.static = null;
    this.tick = 0; this.lastSeq = 0; this.awake = 0;
    this.cur = new BodySet(this.maxBodies);
    this.next = new BodySet(this.maxBodies);
    this.bodyCount = 0;
    this.ids = this.cur.ids;
    this.shapes = this.cur.shapes;
    this.pos = new Float32Array(0);
    this.rot = new Float32Array(0);
    this.meshes = [];
    this._q = new Float64Array(4);
  }

  handles(msg) { return msg.type === 'welcome' || msg.type === 'scene' || msg.type === 'snap_key' || msg.type === 'snap_delta'; }

  _frameOf(st) {
    return {
      static: st,
      min: st.bounds.min,
      pmax: [0, 1, 2].map((a) => gridMax(st.bounds.min[a], st.bounds.max[a], POS_SCALE)),
      vmax: [0, 1, 2].map((a) => gridMax(st.bounds.min[a], st.bounds.max[a], VERT_SCALE)),
      meshes: st.meshes.map((m) => ({ verts: m.verts, q: new Int32Array(3 * m.verts), v: new Int32Array(3 * m.verts), pos: new Float32Array(3 * m.verts) })),
    };
  }

  /** Apply a decoded welcome / scene / snap_key / snap_delta (or raw bytes). */
  apply(msg) {
    if (msg instanceof Uint8Array || msg instanceof ArrayBuffer) msg = decodeServer(msg);
    switch (msg.type) {
      case 'welcome': case 'scene': {
        const fr = this._frameOf(msg.static);
        this._applyKey(msg.state, fr);
        return this;
      }
      case 'snap_key':
        if (!this.static) fail(ERR.bad_snapshot, 'keyframe before welcome');
        this._applyKey(msg, this);
        return this;
      case 'snap_delta': this._applyDelta(msg); return this;
      default: fail(ERR.unknown_type, `message type ${msg.type} carries no snapshot`);
    }
    return this;
  }

  // An ABS record into set index i (frame fr gives the grid).
  static _readAbs(r, set, i, kp, kr, fr) {
    const pbits0 = bitsFor(fr.pmax[0]), pbits1 = bitsFor(fr.pmax[1]), pbits2 = bitsFor(fr.pmax[2]);
    const x = r.get(pbits0), y = r.get(pbits1), z = r.get(pbits2);
    if (x > fr.pmax[0] || y > fr.pmax[1] || z > fr.pmax[2]) fail(ERR.bad_snapshot, 'snapshot bin: position outside the room grid');
    set.qp[3 * i] = x; set.qp[3 * i + 1] = y; set.qp[3 * i + 2] = z;
    set.ri[i] = r.get(2);
    for (let a = 0; a < 3; a++) set.rc[3 * i + a] = r.get(ROT_BITS);
    for (let a = 0; a < 3; a++) set.vp[3 * i + a] = unzigzag(r.eg(kp));
    for (let a = 0; a < 3; a++) set.vr[3 * i + a] = unzigzag(r.eg(kr));
    for (let a = 0; a < 3; a++) {
      if (Math.abs(set.vp[3 * i + a]) > fr.pmax[a] || Math.abs(set.vr[3 * i + a]) > ROT_MAXQ) fail(ERR.bad_snapshot, 'snapshot bin: velocity state out of range');
    }
    if (r.error) fail(ERR.bad_snapshot, 'snapshot bin: body record (bits run out or over-long code)');
  }

  static _finish(r) {
    if (r.error) fail(ERR.bad_snapshot, 'snapshot bin: truncated');
    const left = r.total - r.bit;
    if (left >= 8) fail(ERR.bad_snapshot, `snapshot bin: ${left >> 3} unused bytes`);
    if (r.get(left) !== 0) fail(ERR.bad_snapshot, 'snapshot bin: padding bits not zero');
  }

  _applyKey(m, fr) {
    if (m.bodies.length > this.maxBodies) fail(ERR.bad_message, `snap_key.bodies: limit ${this.maxBodies}`);
    const nx = this.next;
    m.bodies.forEach((s, i) => {
      if (i > 0 && s.id <= m.bodies[i - 1].id) fail(ERR.bad_snapshot, 'snap_key.bodies: ids not increasing');
      nx.ids[i] = s.id;
      nx.shapes[i] = s;
    });
    nx.n = m.bodies.length;
    const r = new BitReader(m.bin);
    r.get(1);
    const kp = r.get(4), kr = r.get(4);
    const kv = fr.meshes.map(() => { r.get(1); return r.get(4); });
    for (let i = 0; i < nx.n; i++) SnapshotState._readAbs(r, nx, i, kp, kr, fr);
    const mq = fr.meshes.map((mesh, mi) => {
      const q = new Int32Array(3 * mesh.verts), v = new Int32Array(3 * mesh.verts);
      const vb = fr.vmax.map(bitsFor);
      for (let i = 0; i < q.length; i++) {
        q[i] = r.get(vb[i % 3]);
        if (q[i] > fr.vmax[i % 3]) fail(ERR.bad_snapshot, 'snapshot bin: vertex outside the room grid');
      }
      for (let i = 0; i < v.length; i++) {
        v[i] = unzigzag(r.eg(kv[mi]));
        if (Math.abs(v[i]) > fr.vmax[i % 3]) fail(ERR.bad_snapshot, 'snapshot bin: vertex velocity out of range');
      }
      if (r.error) fail(ERR.bad_snapshot, 'snapshot bin: vertex records');
      return [q, v];
    });
    SnapshotState._finish(r);
    if (fr !== this) {
      this.static = fr.static; this.min = fr.min; this.pmax = fr.pmax; this.vmax = fr.vmax; this.meshes = fr.meshes;
    }
    this._commit(null, mq, m.tick, m.last_seq, m.awake);
    this.ready = true;
  }

  _applyDelta(m) {
    if (!this.ready) fail(ERR.bad_snapshot, 'delta without a baseline');
    if (m.tick_gap === 0) fail(ERR.bad_value, 'snap_delta.tick_gap: must be >= 1');
    const base = (m.tick - m.tick_gap) >>> 0;
    if (base !== this.tick) fail(ERR.bad_snapshot, `delta against tick ${base}, baseline is tick ${this.tick}`);
    const old = this.cur, nx = this.next;
    const simple = m.removes.length === 0 && m.spawns.length === 0;
    let nkept;
    if (simple) {
      nx.copyFrom(old);
      nx.vp.fill(0, 0, 3 * old.n); nx.vr.fill(0, 0, 3 * old.n);
      nkept = old.n;
    } else {
      if (m.removes.length > old.n) fail(ERR.bad_message, 'snap_delta.removes: more than the bodies');
      m.removes.forEach((id, k) => {
        if (k > 0 && id <= m.removes[k - 1]) fail(ERR.bad_snapshot, 'snap_delta.removes: ids not increasing');
        if (old.indexOf(id) < 0) fail(ERR.bad_snapshot, `snap_delta.removes: unknown body ${id}`);
      });
      nkept = 0;
      for (let i = 0, k = 0; i < old.n; i++) {
        while (k < m.removes.length && m.removes[k] < old.ids[i]) k++;
        if (k < m.removes.length && m.removes[k] === old.ids[i]) continue;
        nx.copyOne(nkept, old, i);
        for (let a = 0; a < 3; a++) { nx.vp[3 * nkept + a] = 0; nx.vr[3 * nkept + a] = 0; }
        nkept++;
      }
      nx.n = nkept;
      if (nkept + m.spawns.length > this.maxBodies) fail(ERR.bad_snapshot, `snap_delta: more bodies than capacity ${this.maxBodies}`);
      m.spawns.forEach((s, k) => {
        if (k > 0 && s.id <= m.spawns[k - 1].id) fail(ERR.bad_snapshot, 'snap_delta.spawns: ids not increasing');
        if (nx.indexOf(s.id) >= 0) fail(ERR.bad_snapshot, `snap_delta.spawns: body ${s.id} already exists`);
        nx.ids[nkept + k] = s.id; nx.shapes[nkept + k] = s;
      });
    }
    // kept bodies are nx[0, nkept); spawned ones nx[nkept, nkept + spawns)
    const mq = this.meshes.map((mesh) => [mesh.q.slice(), new Int32Array(mesh.q.length)]);
    let changed = null;
    if (m.bin === null) {
      if (m.spawns.length) fail(ERR.bad_snapshot, 'snap_delta: spawns without a bin');
    } else {
      const r = new BitReader(m.bin);
      const pred = r.get(1), kp = r.get(4), kr = r.get(4);
      const mp = this.meshes.map(() => [r.get(1), r.get(4)]);
      for (let k = 0; k < m.spawns.length; k++) SnapshotState._readAbs(r, nx, nkept + k, kp, kr, this);
      const nch = r.eg(0);
      if (r.error || nch > nkept) fail(ERR.bad_snapshot, 'snapshot bin: changed-body count');
      changed = new Int32Array(nch);
      let idx = -1;
      for (let c = 0; c < nch; c++) {
        idx += r.eg(0) + 1;
        if (r.error || idx >= nkept) fail(ERR.bad_snapshot, 'snapshot bin: changed-body index');
        changed[c] = idx;
        const o = simple ? idx : old.indexOf(nx.ids[idx]);
        for (let a = 0; a < 3; a++) {
          const base3 = old.qp[3 * o + a];
          const q = base3 + pred * old.vp[3 * o + a] + unzigzag(r.eg(kp));
          if (r.error || q < 0 || q > this.pmax[a]) fail(ERR.bad_snapshot, 'snapshot bin: body position outside the room grid');
          nx.qp[3 * idx + a] = q; nx.vp[3 * idx + a] = q - base3;
        }
        if (r.get(1) === 0) {
          for (let a = 0; a < 3; a++) {
            const base3 = old.rc[3 * o + a];
            const q = base3 + pred * old.vr[3 * o + a] + unzigzag(r.eg(kr));
            if (r.error || q < 0 || q > ROT_MAXQ) fail(ERR.bad_snapshot, 'snapshot bin: rotation component out of range');
            nx.rc[3 * idx + a] = q; nx.vr[3 * idx + a] = q - base3;
          }
        } else {
          nx.ri[idx] = r.get(2);
          for (let a = 0; a < 3; a++) { nx.rc[3 * idx + a] = r.get(ROT_BITS); nx.vr[3 * idx + a] = 0; }
        }
        if (r.error) fail(ERR.bad_snapshot, 'snapshot bin: body record');
      }
      for (let mi = 0; mi < this.meshes.length; mi++) {
        const mesh = this.meshes[mi], nq = mq[mi][0], nv = mq[mi][1], oq = mesh.q, ov = mesh.v;
        const mpred = mp[mi][0], kv = mp[mi][1], verts = mesh.verts;
        const vmax0 = this.vmax[0], vmax1 = this.vmax[1], vmax2 = this.vmax[2];
        const n = r.eg(0);
        if (r.error || n > verts) fail(ERR.bad_snapshot, 'snapshot bin: changed-vertex count');
        let v = -1;
        for (let c = 0; c < n; c++) {
          v += r.eg(0) + 1;
          if (r.error || v >= verts) fail(ERR.bad_snapshot, 'snapshot bin: changed-vertex index');
          const at = 3 * v;
          const q0 = oq[at] + mpred * ov[at] + unzigzag(r.eg(kv));
          const q1 = oq[at + 1] + mpred * ov[at + 1] + unzigzag(r.eg(kv));
          const q2 = oq[at + 2] + mpred * ov[at + 2] + unzigzag(r.eg(kv));
          if (r.error || q0 < 0 || q0 > vmax0 || q1 < 0 || q1 > vmax1 || q2 < 0 || q2 > vmax2) {
            fail(ERR.bad_snapshot, 'snapshot bin: vertex outside the room grid');
          }
          nq[at] = q0; nv[at] = q0 - oq[at];
          nq[at + 1] = q1; nv[at + 1] = q1 - oq[at + 1];
          nq[at + 2] = q2; nv[at + 2] = q2 - oq[at + 2];
        }
      }
      SnapshotState._finish(r);
    }
    if (!simple && m.spawns.length) {
      // merge the spawned tail into id order (both runs ascending)
      const total = nkept + m.spawns.length;
      const tmp = this._tmp || (this._tmp = new BodySet(this.maxBodies));
      let a = 0, b = nkept, o = 0;
      while (a < nkept || b < total) tmp.copyOne(o++, nx, (b >= total || (a < nkept && nx.ids[a] < nx.ids[b])) ? a++ : b++);
      tmp.n = total;
      this._tmp = nx; this.next = tmp;
    }
    this._commit(simple ? changed : null, mq, m.tick, m.last_seq, m.awake);
  }

  // Swap next into cur; dequantize (only the changed bodies when the order is unchanged).
  _commit(changed, mq, tick, lastSeq, awake) {
    const nx = this.next;
    this.next = this.cur; this.cur = nx;
    const n = nx.n;
    const pos = new Float32Array(3 * n), rot = new Float32Array(4 * n), q = this._q;
    if (changed && this.pos.length === 3 * n) {
      pos.set(this.pos); rot.set(this.rot);
      for (let c = 0; c < changed.length; c++) this._dequantBody(changed[c], pos, rot, q);
    } else {
      for (let i = 0; i < n; i++) this._dequantBody(i, pos, rot, q);
    }
    this.pos = pos; this.rot = rot;
    this.bodyCount = n; this.ids = nx.ids; this.shapes = nx.shapes;
    const min0 = this.min[0], min1 = this.min[1], min2 = this.min[2];
    for (let mi = 0; mi < this.meshes.length; mi++) {
      const mesh = this.meshes[mi], q = mq[mi][0];
      mesh.q = q; mesh.v = mq[mi][1];
      const p = new Float32Array(q.length);
      for (let i = 0; i < p.length; i += 3) {
        p[i] = min0 + q[i] / VERT_SCALE;            // = dequantPos(), inlined
        p[i + 1] = min1 + q[i + 1] / VERT_SCALE;
        p[i + 2] = min2 + q[i + 2] / VERT_SCALE;
      }
      mesh.pos = p;
    }
    this.tick = tick; this.lastSeq = lastSeq; this.awake = awake;
  }

  _dequantBody(i, pos, rot, q) {
    const set = this.cur;
    for (let a = 0; a < 3; a++) pos[3 * i + a] = dequantPos(set.qp[3 * i + a], this.min[a], POS_SCALE);
    dequantRot(set.ri[i], set.rc[3 * i], set.rc[3 * i + 1], set.rc[3 * i + 2], q);
    rot[4 * i] = q[0]; rot[4 * i + 1] = q[1]; rot[4 * i + 2] = q[2]; rot[4 * i + 3] = q[3];
  }

  /** Plain-object view (the form of the golden vectors' "state"). */
  toJSON() {
    const c = this.cur;
    const bodies = [];
    for (let i = 0; i < this.bodyCount; i++) {
      const s = c.shapes[i];
      bodies.push({
        id: c.ids[i], shape: s.shape, size: s.size, color: s.color, material: s.material,
        qp: Array.from(c.qp.subarray(3 * i, 3 * i + 3)), ri: c.ri[i], rc: Array.from(c.rc.subarray(3 * i, 3 * i + 3)),
        vp: Array.from(c.vp.subarray(3 * i, 3 * i + 3)), vr: Array.from(c.vr.subarray(3 * i, 3 * i + 3)),
        pos: Array.from(this.pos.subarray(3 * i, 3 * i + 3)), rot: Array.from(this.rot.subarray(4 * i, 4 * i + 4)),
      });
    }
    return {
      tick: this.tick, last_seq: this.lastSeq, awake: this.awake, bodies,
      meshes: this.meshes.map((m) => ({ q: Array.from(m.q), v: Array.from(m.v) })),
    };
  }
}

export { POS_SCALE, VERT_SCALE, ROT_BITS };
