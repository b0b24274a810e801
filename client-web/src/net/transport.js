// The WebSocket transport a room page uses: Connection (reconnects) + adapter (wire format).
import { Connection } from './connection.js';
import { createAdapter } from './adapter.js';

const NAME_KEY = 'tumble.name';
/** At most `max` bytes of UTF-8 (the protocol's text limit), cut on a character boundary. */
export function capBytes(text, max = 32) {
  const enc = new TextEncoder();
  let out = '';
  for (const ch of text) { if (enc.encode(out + ch).length > max) break; out += ch; }
  return out;
}

/** A display name kept per browser: the one the player chose, or "Guest 4821" until they do. */
export function playerName() {
  try {
    let n = localStorage.getItem(NAME_KEY);
    if (!n) { n = `Guest ${Math.floor(1000 + Math.random() * 9000)}`; localStorage.setItem(NAME_KEY, n); }
    return capBytes(n);
  } catch { return `Guest ${Math.floor(1000 + Math.random() * 9000)}`; }
}

/** Remember the player's chosen name (sent in every later hello). */
export function setPlayerName(name) {
  const n = capBytes(String(name).trim().replace(/\s+/g, ' '));
  if (!n) return null;
  try { localStorage.setItem(NAME_KEY, n); } catch { /* private mode: this page only */ }
  return n;
}

export function createWsTransport({ roomId, kind, scene, url, name = playerName(), watch = false, kbps = null }) {
  const adapter = createAdapter({ roomId, kind, scene, name, watch, kbps });
  let conn = null;
  return {
    adapter,
    connect(handlers) {
      conn = new Connection(url, {
        onOpen: () => { adapter.reset(); return adapter.onOpen(); },
        decode: (b) => adapter.decode(b),
        encode: (i) => adapter.encode(i),
      }, handlers);
      adapter.setSender((bytes) => { if (conn.ws && conn.ws.readyState === 1) conn.ws.send(bytes); });
      conn.connect();
    },
    send(intent) { return conn ? conn.send(intent) : false; },
    /** A new name reaches the room through a new hello: remember it and join again. */
    rename(name) { if (setPlayerName(name)) location.reload(); },
    close() { conn?.close(); },
  };
}
