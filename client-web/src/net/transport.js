// The WebSocket transport a room page uses: Connection (reconnects) + adapter (wire format).
import { Connection } from './connection.js';
import { createAdapter } from './adapter.js';

export function createWsTransport({ roomId, kind, scene, url }) {
  const adapter = createAdapter({ roomId, kind, scene });
  let conn = null;
  return {
    connect(handlers) {
      adapter.reset?.();
      conn = new Connection(url, {
        onOpen: () => adapter.onOpen(),
        decode: (b) => adapter.decode(b),
        encode: (i) => adapter.encode(i),
      }, {
        onMessage: handlers.onMessage,
        onStatus: (st) => { if (st.state === 'connecting') adapter.reset?.(); handlers.onStatus(st); },
      });
      conn.connect();
    },
    send(intent) { return conn ? conn.send(intent) : false; },
    close() { conn?.close(); },
  };
}
