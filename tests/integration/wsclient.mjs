// wsclient.mjs: a small tumble.v1 WebSocket client for the routing and image tests.
//
// It joins a room through any URL (the router needs the room in the URL:
// ws://HOST/ws/<room>) and reports which server instance answered (the welcome
// names it). It speaks the wire format of proto/PROTOCOL.md (every message a
// msgpack array [type, ...]; hello = 1, welcome = 32 with the instance at index 6)
// and also the server's earlier map form ({type: 'join'} / {type: 'welcome',
// instance}); which one a server speaks is found out once per process.
import { encode, decode } from '@msgpack/msgpack';
import WebSocket from 'ws';

const MSG_NAMES = { 32: 'welcome', 33: 'snap_key', 34: 'snap_delta', 42: 'pong', 43: 'error', 44: 'lobby' };
const SNAPSHOT_TYPES = new Set(['snapshot', 'snap_key', 'snap_delta']);

/** Normalises a decoded server message to {type, room?, instance?, raw}. */
export function normalise(m) {
  if (Array.isArray(m)) {
    const type = MSG_NAMES[m[0]] ?? `type${m[0]}`;
    if (type === 'welcome') return { type, room: m[3], instance: m[6], tick: Array.isArray(m[12]) ? m[12][2] : undefined, raw: m };
    if (type === 'error') return { type, code: m[1], name: m[2], message: m[3], raw: m };
    return { type, raw: m };
  }
  if (m && typeof m === 'object') return { ...m, instance: m.instance ?? m.server, raw: m };
  return { type: '__unknown__', raw: m };
}

function helloFor(form, room, scene) {
  return form === 'array'
    ? encode([1, 1, room, scene === 'tower' || scene === 'dice' || scene === 'pile' ? 'rigid' : null, scene, 'routing-test'])
    : encode({ type: 'join', v: 1, room, scene, name: 'routing-test' });
}

/** Opens a WebSocket to url with subprotocol tumble.v1; resolves a client. */
export function open(url, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['tumble.v1']);
    const c = {
      ws, inbox: [], waiters: [], snapshots: 0, closed: null,
      next(pred, ms = 3000) {
        const i = c.inbox.findIndex(pred);
        if (i >= 0) return Promise.resolve(c.inbox.splice(i, 1)[0]);
        return new Promise((res, rej) => {
          const w = { pred, res };
          const t = setTimeout(() => { c.waiters.splice(c.waiters.indexOf(w), 1); rej(new Error(`${url}: no matching message within ${ms} ms`)); }, ms);
          w.res = (m) => { clearTimeout(t); res(m); };
          c.waiters.push(w);
        });
      },
      close() { try { ws.close(); } catch { /* ignore */ } },
      terminate() { try { ws.terminate(); } catch { /* ignore */ } },
    };
    c.whenClosed = new Promise((res) => ws.on('close', (code) => {
      c.closed = code;
      for (const w of c.waiters.splice(0)) w.res({ type: '__closed__', code });
      res(code);
    }));
    const t = setTimeout(() => { ws.terminate(); reject(new Error(`${url}: no connection within ${timeoutMs} ms`)); }, timeoutMs);
    ws.on('message', (data) => {
      let m;
      try { m = normalise(decode(data)); } catch { m = { type: '__undecodable__' }; }
      if (SNAPSHOT_TYPES.has(m.type)) { c.snapshots++; return; }
      const w = c.waiters.find((x) => x.pred(m));
      if (w) { c.waiters.splice(c.waiters.indexOf(w), 1); w.res(m); return; }
      if (c.inbox.length < 1000) c.inbox.push(m);
    });
    ws.on('open', () => { clearTimeout(t); resolve(c); });
    ws.on('error', (e) => { clearTimeout(t); reject(e); });
    ws.on('unexpected-response', (req, res) => { clearTimeout(t); reject(new Error(`${url}: upgrade refused, HTTP ${res.statusCode}`)); });
  });
}

let wireForm = process.env.TUMBLE_WIRE_FORM || null; // 'array' | 'map', found on first join

/**
 * Connects to base + /ws/<room> and joins room (created with scene when new).
 * Resolves the open client with c.welcome = {room, instance}.
 */
export async function joinRoom(base, room, { scene = 'tower', path = `/ws/${room}` } = {}) {
  const forms = wireForm ? [wireForm] : ['array', 'map'];
  let lastErr;
  for (const form of forms) {
    const c = await open(base + path);
    c.ws.send(helloFor(form, room, scene));
    const m = await c.next((x) => x.type === 'welcome' || x.type === 'error' || x.type === '__closed__', 10000)
      .catch((e) => ({ type: '__timeout__', message: e.message }));
    if (m.type === 'welcome') {
      wireForm = form;
      c.welcome = { room: m.room, instance: m.instance, tick: m.tick };
      return c;
    }
    lastErr = new Error(`join ${room} (${form} form): ${m.type} ${m.message ?? m.code ?? ''}`);
    c.terminate();
  }
  throw lastErr;
}
