// The WebSocket transport a room page uses: Connection (reconnects) + adapter (wire format).
import { Connection } from './connection.js';
import { createAdapter } from './adapter.js';

/** A display name kept per browser: "Guest 4821" until the user picks one. */
export function playerName() {
  try {
    let n = localStorage.getItem('tumble.name');
    if (!n) { n = `Guest ${Math.floor(1000 + Math.random() * 9000)}`; localStorage.setItem('tumble.name', n); }
    return n.slice(0, 32);
  } catch { return `Guest ${Math.floor(1000 + Math.random() * 9000)}`; }
}

export function createWsTransport({ roomId, kind, scene, url, name = playerName() }) {
  const adapter = createAdapter({ roomId, kind, scene, name });
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
    close() { conn?.close(); },
  };
}
