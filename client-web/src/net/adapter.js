// Protocol adapter: proto/PROTOCOL.md (tumble.v1, decoded by proto/js) <-> the
// client's internal messages and intents (client-web/src/README.md). This is the
// only file that knows the wire format; views, HUD and input never see it.
//
// It owns the protocol's SnapshotState (the quantized baseline deltas apply to) and
// turns each applied snapshot into a full-state Snapshot for the buffer: body ids,
// fresh pos/rot arrays, mesh vertices by key ('mesh0', 'mesh1', ...), and the
// figure's capsule end points in world space (static capsules attached to a body
// move with that body's pose). A delta that does not fit is answered with `resync`.
import { encodeClient, decodeServer, SnapshotState, VERSION, ERR } from '../../../proto/js/tumble-proto.mjs';

const SHAPES = ['box', 'sphere', 'capsule'];
const MATERIAL_LOOK = { 1: 'plank', 2: 'die', 3: 'felt', 4: 'glass', 5: 'metal' };
const FATAL = new Set([ERR.bad_version, ERR.bad_room, ERR.room_full, ERR.too_many_rooms]);
const PRESS_IMPULSE = 7.0; // N*s, a double-tap dent: tumble-server presses 0.05 m per N*s (0.35 m on the 1 m dough)
// Action names PROTOCOL.md gives, and what a server may call them instead. If the server
// refuses one as bad_value, the adapter retries once with the alternative and keeps
// using it (seen: 'roll' for throw_dice, no 'rebuild' but 'reset' for the tower).
const ACTION_ALIASES = { throw_dice: 'roll', rebuild: 'reset' };

const hex = (c) => '#' + (c >>> 0).toString(16).padStart(6, '0');

export function bodyInfo(s) {
  const shape = SHAPES[s.shape] || 'box';
  const size = shape === 'box' ? s.size.map((h) => h * 2) : shape === 'sphere' ? [s.size[0]] : [s.size[0], s.size[1]];
  let look = MATERIAL_LOOK[s.material] || (shape === 'sphere' ? 'ball' : 'plain');
  if (shape === 'sphere' && look === 'plain') look = 'ball';
  if (shape === 'box' && look === 'plain') look = 'plank';
  return { id: s.id, shape, size, look, color: s.color ? hex(s.color) : undefined, material: s.material };
}

/** The static description a view is built from, from a welcome or scene message. */
export function describe(m, roomId) {
  const st = m.static;
  const cloths = [], capsules = [], poles = [];
  let soft = null;
  st.meshes.forEach((mesh, i) => {
    const key = `mesh${i}`;
    if (mesh.kind === 'soft') soft = { key, vertexCount: mesh.verts, triangles: Uint32Array.from(mesh.tris), color: hex(mesh.color) };
    else cloths.push({ id: i, key, w: mesh.grid_w, h: mesh.grid_h, verts: mesh.verts, pins: mesh.pins, triangles: mesh.tris, color: hex(mesh.color),
      look: m.scene === 'cape' ? 'cape' : 'flag' });
  });
  const shapeOf = new Map(m.state.bodies.map((b) => [b.id, b]));
  st.capsules.forEach((c) => {
    if (c.body == null) { poles.push({ a: c.a, b: c.b, radius: c.radius, color: hex(c.color) }); return; }
    // Riding a capsule-shaped body: draw that body's own capsule (radius sx, +-sy along
    // its local y), which needs no assumption about the frame a/b are written in.
    const b = shapeOf.get(c.body);
    if (b && b.shape === 2) capsules.push({ id: capsules.length, body: c.body, a: [0, -b.size[1], 0], b: [0, b.size[1], 0], radius: b.size[0], color: hex(c.color), part: '' });
    else capsules.push({ id: capsules.length, body: c.body, a: c.a, b: c.b, radius: c.radius, color: hex(c.color), part: '' });
  });
  // Capsule-shaped bodies no static capsule rides on are drawn as themselves:
  // radius sx, segment +-sy along the body's local y.
  for (const b of m.state.bodies) {
    if (b.shape !== 2 || capsules.some((c) => c.body === b.id)) continue;
    capsules.push({ id: capsules.length, body: b.id, a: [0, -b.size[1], 0], b: [0, b.size[1], 0], radius: b.size[0], color: hex(b.color), part: '' });
  }
  return {
    room: { id: m.room ?? roomId, kind: m.kind, scene: m.scene, tickRate: m.tick_rate, snapshotRate: m.snap_rate },
    bounds: st.bounds,
    planes: st.planes.map((p) => ({ n: p.normal, d: p.offset })),
    boxes: st.boxes,
    bodies: m.state.bodies.map(bodyInfo).filter((b) => b.shape !== 'capsule'),
    cloths, capsules, poles, soft,
    params: m.params.map((p) => ({ name: p.name, label: p.name.replace(/_/g, ' '), min: p.min, max: p.max, step: p.step || undefined, default: p.default, value: p.value })),
  };
}

/** Name the figure's capsules once we see them standing: the highest is the head, the thickest the torso. */
function nameParts(capsules, ends) {
  if (!capsules.length || capsules[0].part) return;
  // A lone, long, thin capsule is a flag pole, not a figure.
  if (capsules.length === 1) {
    const len = Math.hypot(ends[3] - ends[0], ends[4] - ends[1], ends[5] - ends[2]);
    if (len > 4 * capsules[0].radius && capsules[0].radius < 0.1) { capsules[0].part = 'pole'; return; }
  }
  let head = 0, torso = -1;
  capsules.forEach((c, i) => {
    const y = Math.max(ends[i * 6 + 1], ends[i * 6 + 4]);
    if (y > Math.max(ends[head * 6 + 1], ends[head * 6 + 4])) head = i;
  });
  capsules.forEach((c, i) => { if (i !== head && (torso < 0 || c.radius > capsules[torso].radius)) torso = i; });
  // Of the rest, the two reaching highest are arms (the second of them carries the torch).
  const top = (i) => Math.max(ends[i * 6 + 1], ends[i * 6 + 4]);
  const rest = capsules.map((c, i) => i).filter((i) => i !== head && i !== torso).sort((x, y) => top(y) - top(x));
  const arms = rest.slice(0, rest.length >= 4 ? 2 : 0).sort((x, y) => x - y);
  capsules.forEach((c, i) => {
    c.part = i === head ? 'head' : i === torso ? 'torso' : i === arms[1] ? 'arm_r' : i === arms[0] ? 'arm_l' : 'limb';
  });
}

export function createAdapter({ roomId, kind, scene, name, watch = false, kbps = null }) {
  let st, seq, desc, tickRate, clientId, awaitingKey, peers, prev, sender, recvBytes, myName = name;
  const actionAlias = new Map();   // learned: protocol action -> the name this server takes
  const pendingActions = new Map(); // seq -> {action, scene} of recent actions
  const grabStarts = new Map();     // seq -> pointer of recent grab_starts
  const deadPointers = new Set();   // pointers whose grab_start was refused
  const grabFollow = new Map();     // seq -> pointer of recent grab_moves and grab_ends
  function reset() {
    st = new SnapshotState();
    seq = 0; desc = null; tickRate = 120; clientId = 0; awaitingKey = false; peers = new Map(); prev = null; recvBytes = 0;
    grabStarts.clear(); deadPointers.clear(); grabFollow.clear();
  }
  reset();

  const players = () => [...peers].map(([id, n]) => ({ id, name: n }));

  // One full state for the buffer, from the SnapshotState just applied.
  function snapshot() {
    const n = st.bodyCount;
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) ids[i] = st.ids[i];
    const pos = st.pos, rot = st.rot;
    // "At rest" = unchanged since the previous snapshot (the encoder does not resend
    // bodies whose pose is within tolerance), used to clear the dice labels.
    const asleep = new Uint8Array(n);
    let index = null;
    const indexOf = () => { if (!index) { index = new Map(); for (let i = 0; i < n; i++) index.set(ids[i], i); } return index; };
    if (prev) {
      let same = prev.ids.length === n;
      for (let i = 0; same && i < n; i++) same = prev.ids[i] === ids[i];
      const pp = prev.pos, pr = prev.rot;
      for (let i = 0; i < n; i++) {
        const j = same ? i : prev.indexOf().get(ids[i]);
        if (j === undefined) continue;
        asleep[i] = pos[i * 3] === pp[j * 3] && pos[i * 3 + 1] === pp[j * 3 + 1] && pos[i * 3 + 2] === pp[j * 3 + 2] &&
          rot[i * 4] === pr[j * 4] && rot[i * 4 + 1] === pr[j * 4 + 1] && rot[i * 4 + 2] === pr[j * 4 + 2] && rot[i * 4 + 3] === pr[j * 4 + 3] ? 1 : 0;
      }
    }
    const verts = {};
    st.meshes.forEach((m, i) => { verts[`mesh${i}`] = m.pos; });
    if (desc?.capsules?.length) {
      const ends = new Float32Array(desc.capsules.length * 6);
      desc.capsules.forEach((c, k) => {
        const i = indexOf().get(c.body);
        if (i === undefined) return;
        transform(ends, k * 6, c.a, pos, rot, i);
        transform(ends, k * 6 + 3, c.b, pos, rot, i);
      });
      nameParts(desc.capsules, ends);
      verts.capsules = ends;
    }
    prev = { ids, pos, rot, indexOf };
    return { tick: st.tick, time: st.tick / tickRate, ids, pos, rot, asleep, verts, awake: st.awake, lastSeq: st.lastSeq };
  }

  function diceIds() {
    const out = [];
    for (let i = 0; i < st.bodyCount; i++) if (st.shapes[i]?.material === 2) out.push(st.ids[i]);
    return out.sort((a, b) => a - b);
  }

  function onWelcome(m, isScene) {
    if (!isScene) {
      clientId = m.client_id;
      for (const p of m.peers) peers.set(p.id, p.name);
      myName = peers.get(clientId) || myName;
    }
    const full = isScene ? { ...m, room: desc?.room?.id ?? roomId, tick_rate: tickRate, snap_rate: desc?.room?.snapshotRate } : m;
    tickRate = full.tick_rate || 120;
    st.apply(m);
    awaitingKey = false; prev = null;
    desc = describe(full, roomId);
    return { type: 'welcome', desc, you: { id: clientId, name: myName }, players: players(), snapshot: snapshot(), scene: isScene,
      watchers: isScene ? undefined : (m.watchers ?? 0) };
  }

  function decodeOne(m) {
    switch (m.type) {
      case 'welcome': return [onWelcome(m, false)];
      case 'scene': return [onWelcome(m, true)];
      case 'snap_key': case 'snap_delta': {
        if (!desc) return [];
        if (awaitingKey && m.type === 'snap_delta') return [];
        try { st.apply(m); } catch (e) {
          if (e.code === ERR.bad_snapshot) { awaitingKey = true; sender?.(encodeClient({ type: 'resync' })); return [{ type: 'resync', reason: e.message }]; }
          throw e;
        }
        awaitingKey = false;
        const out = [];
        for (const s of m.type === 'snap_delta' ? m.spawns : m.bodies) {
          if (s.shape === 2 || desc.bodies.some((b) => b.id === s.id)) continue;
          const b = bodyInfo(s);
          desc.bodies.push(b);
          out.push({ type: 'body_added', body: b });
        }
        if (m.type === 'snap_delta' && m.removes.length) desc.bodies = desc.bodies.filter((b) => !m.removes.includes(b.id));
        out.push({ type: 'snapshot', snap: snapshot() });
        return out;
      }
      case 'contacts': return [{ type: 'contacts', tick: m.tick, contacts: m.points.map((p) => ({ p: p.point, n: p.normal, impulse: p.impulse })) }];
      case 'dice': {
        const ids = diceIds();
        return [{ type: 'dice', tick: m.tick, faces: m.faces.map((v, i) => ({ id: ids[i], value: v })), sum: m.sum }];
      }
      case 'param_changed': return [{ type: 'param', name: m.name, value: m.value, by: { id: m.by, name: m.by === 0 ? 'the server' : m.by_name } }];
      case 'peer_joined': peers.set(m.id, m.name); return [{ type: 'players', players: players(), joined: { id: m.id, name: m.name } }];
      case 'peer_left': { const n = peers.get(m.id); peers.delete(m.id); return [{ type: 'players', players: players(), left: { id: m.id, name: n } }]; }
      case 'watchers': return [{ type: 'watchers', count: m.count }]; // PROTOCOL.md §14
      case 'reset': return [{ type: 'reset', action: m.action, by: { id: m.by, name: m.by === clientId ? 'You' : m.by_name || 'The server' } }];
      case 'pong': return [{ type: 'pong', sent: m.client_time / 1000, server: m.server_time / 1000 }];
      case 'error': {
        const grab = m.seq != null ? grabStarts.get(m.seq) : undefined;
        if (grab != null) { deadPointers.add(grab); grabStarts.delete(m.seq); }
        // A move or release already on its way when its grab was refused: refused too, and
        // nothing new to tell (the start's refusal said it).
        const follow = m.seq != null ? grabFollow.get(m.seq) : undefined;
        if (follow != null && m.code === ERR.unknown_body) return [{ type: 'grab_refused', pointer: follow, seq: m.seq }];
        const act = m.seq != null && pendingActions.get(m.seq);
        const alt = act && ACTION_ALIASES[act.action];
        if (m.code === ERR.bad_value && alt && !actionAlias.has(act.action)) {
          actionAlias.set(act.action, alt);
          sender?.(encodeClient({ type: 'action', seq: ++seq, action: alt, scene: act.scene }));
          return [];
        }
        return [{ type: 'error', code: m.code, name: m.name, message: m.message, seq: m.seq, fatal: FATAL.has(m.code), grab: grab ?? undefined }];
      }
      default: return [];
    }
  }

  return {
    reset,
    setSender(fn) { sender = fn; },
    onOpen() {
      return [encodeClient({ type: 'hello', version: VERSION, room: roomId, kind: kind ?? null, scene: scene ?? null, name: myName, watch, kbps })];
    },
    decode(bytes) {
      recvBytes = (recvBytes + bytes.byteLength) >>> 0; // for the link report (PROTOCOL.md §13)
      let m;
      try { m = decodeServer(bytes); } catch (e) {
        if (e.code === ERR.bad_version) return [{ type: 'error', fatal: true, message: e.message }];
        if (e.code === ERR.unknown_type) return []; // newer server message: ignore (PROTOCOL.md §10)
        throw e;
      }
      return decodeOne(m);
    },
    /** Intent -> bytes, or null if it has no message (or does not fit the protocol). */
    encode(intent) {
      const msg = toMessage(intent);
      if (!msg) return null;
      try { return encodeClient(msg); } catch (e) { console.warn('tumble: not sent:', intent.type, e.message); return null; }
    },
    get clientId() { return clientId; },
    get desc() { return desc; },
  };

  // The tick of the picture the person aimed at (PROTOCOL.md §15): room.js stamps a poke or
  // grab with the server time it was drawing (seconds; a snapshot's time is tick / tickRate).
  function viewTick(i) {
    const t = Math.round(i.viewTime * tickRate);
    return Number.isFinite(t) && t > 0 && t <= 0xffffffff ? t : null;
  }

  function toMessage(i) {
    const next = () => ++seq;
    const s3 = (v) => v.map((x) => +x);
    switch (i.type) {
      // Every ping carries the link report (PROTOCOL.md §13): the newest snapshot applied,
      // the RTT measured so far and the bytes received, so the server can know this link.
      case 'ping': return {
        type: 'ping', client_time: Math.max(0, Math.round(i.sent * 1000)),
        ack_tick: desc ? st.tick : null,
        rtt_ms: Number.isFinite(i.rtt) ? Math.min(60000, Math.round(i.rtt * 10000) / 10) : null,
        recv_bytes: recvBytes,
      };
      case 'resync': return { type: 'resync' };
      case 'poke': return { type: 'poke', seq: next(), body: i.body, point: s3(i.point), impulse: s3(i.impulse), view_tick: viewTick(i) };
      case 'press': return { type: 'poke', seq: next(), body: null, point: s3(i.point), impulse: s3(i.direction).map((x) => x * PRESS_IMPULSE) };
      case 'throw': return { type: 'throw', seq: next(), origin: s3(i.from), velocity: s3(i.velocity), shape: i.shape === 'die' ? 'die' : 'ball', view_tick: viewTick(i) };
      case 'grab': {
        const pointer = i.pointer & 0xffff;
        if (i.phase === 'start') {
          const n = next();
          deadPointers.delete(pointer);
          grabStarts.set(n, pointer);
          if (grabStarts.size > 64) grabStarts.delete(grabStarts.keys().next().value);
          return { type: 'grab_start', seq: n, pointer, point: s3(i.point), body: i.body ?? null, view_tick: viewTick(i) };
        }
        // The server refused this pointer's grab: its moves and release would only be refused too.
        if (deadPointers.has(pointer)) { if (i.phase === 'end') deadPointers.delete(pointer); return null; }
        const n = next();
        grabFollow.set(n, pointer);
        if (grabFollow.size > 256) grabFollow.delete(grabFollow.keys().next().value);
        if (i.phase === 'move') return { type: 'grab_move', seq: n, pointer, point: s3(i.point) };
        return { type: 'grab_end', seq: n, pointer };
      }
      case 'param': return { type: 'param', seq: next(), name: i.name, value: +i.value };
      case 'contacts': return { type: 'contacts_view', seq: next(), on: !!i.on };
      case 'scene': {
        const cur = desc?.room?.scene;
        const act = (action, sc = null) => {
          const n = next();
          pendingActions.set(n, { action, scene: sc });
          if (pendingActions.size > 32) pendingActions.delete(pendingActions.keys().next().value);
          return { type: 'action', seq: n, action: actionAlias.get(action) ?? action, scene: sc };
        };
        // A scene's own actions only: switching the scene is its own, labelled choice
        // ('select'), never the side effect of another scene's button.
        switch (i.action) {
          case 'throw_dice': return cur === 'dice' ? act('throw_dice') : null;
          case 'build_tower': return cur === 'tower' ? act('rebuild') : null;
          case 'knock_down': return cur === 'tower' ? act('knock') : null;
          case 'select': return i.scene ? act('select', i.scene) : null;
          default: return act('reset');
        }
      }
      default: return null;
    }
  }
}

// out[o..o+2] = pos_i + rot_i * local
function transform(out, o, local, pos, rot, i) {
  const x = rot[i * 4], y = rot[i * 4 + 1], z = rot[i * 4 + 2], w = rot[i * 4 + 3];
  const vx = local[0], vy = local[1], vz = local[2];
  // t = 2 * cross(q.xyz, v); v' = v + w * t + cross(q.xyz, t)
  const tx = 2 * (y * vz - z * vy), ty = 2 * (z * vx - x * vz), tz = 2 * (x * vy - y * vx);
  out[o] = pos[i * 3] + vx + w * tx + (y * tz - z * ty);
  out[o + 1] = pos[i * 3 + 1] + vy + w * ty + (z * tx - x * tz);
  out[o + 2] = pos[i * 3 + 2] + vz + w * tz + (x * ty - y * tx);
}
