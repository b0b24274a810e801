// The room connection: one WebSocket with the `tumble.v1` subprotocol, reconnected
// with backoff (0.15 s, then 0.5 s, 1 s, 2 s ... up to 10 s, with a little jitter)
// until the page leaves or the server says something that retrying cannot fix
// (a protocol version mismatch, a refused room id). The first retry is quick: a
// server that goes away (1001) has handed its rooms over within tens of ms, and the
// router sends the same /ws/<room> to the room's next server. Status changes are
// reported so the HUD can say what is going on.
//
// It knows nothing of message contents: an adapter turns bytes into the client's
// internal messages and intents into bytes (net/adapter.js). The socket runs in a
// Worker where there is one (net/socket.js), so every message comes with the time
// it arrived, whatever the main thread was busy with; handlers get it (seconds on
// the performance.now() clock) as onMessage's third argument.
import { openSocket } from './socket.js';

export const SUBPROTOCOL = 'tumble.v1';

export class Connection {
  /**
   * @param {string} url  ws:// or wss:// URL
   * @param {{onOpen(): Uint8Array[], decode(bytes: Uint8Array): object[], encode(intent: object): Uint8Array|null}} adapter
   * @param {{onMessage(msg: object, bytes: number, arrival: number): void, onStatus(st: object): void}} handlers
   */
  constructor(url, adapter, handlers) {
    this.url = url;
    this.adapter = adapter;
    this.h = handlers;
    this.ws = null;
    this.attempt = 0;
    this.closed = false;
    this.timer = null;
    this.bytesIn = 0;
    this.state = 'idle';
  }

  connect() {
    if (this.closed) return;
    this._status('connecting', { attempt: this.attempt });
    let ws;
    try { ws = openSocket(this.url, SUBPROTOCOL); } catch (e) { this._retry(String(e.message || e)); return; }
    this.ws = ws;
    ws.onopen = () => {
      if (ws.protocol && ws.protocol !== SUBPROTOCOL) { this.fail(`server speaks ${ws.protocol}, not ${SUBPROTOCOL}`); return; }
      this._status('open');
      for (const b of this.adapter.onOpen()) ws.send(b);
    };
    ws.onmessage = (ev) => {
      const arrival = (ev.arrival ?? performance.now()) / 1000;
      if (typeof ev.data === 'string') return;
      const bytes = new Uint8Array(ev.data);
      // The backoff resets only once the server talks to us: a server that accepts
      // and drops at once must not be hammered every half second.
      this.attempt = 0;
      this.bytesIn += bytes.byteLength;
      let msgs;
      try { msgs = this.adapter.decode(bytes); } catch (e) { this.h.onMessage({ type: 'error', message: `bad message: ${e.message}` }, bytes.byteLength, arrival); return; }
      for (const m of msgs) {
        if (m.type === 'error' && m.fatal) { this.fail(m.message, { code: m.code, name: m.name }); return; }
        this.h.onMessage(m, bytes.byteLength, arrival);
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed || this.state === 'failed') return;
      this._retry(closeReason(ev));
    };
    ws.onerror = () => { /* onclose follows and schedules the retry */ };
  }

  _retry(reason) {
    if (this.closed) return;
    const base = this.attempt === 0 ? 0.15 : Math.min(10, 0.5 * 2 ** (this.attempt - 1));
    const wait = base * (0.85 + Math.random() * 0.3);
    this.attempt++;
    this._status('reconnecting', { reason, retryAt: performance.now() + wait * 1000, attempt: this.attempt });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), wait * 1000);
  }

  /** Stop for good with a reason the user can read (no retries). */
  fail(reason, extra = {}) {
    this._status('failed', { reason, ...extra });
    clearTimeout(this.timer);
    try { this.ws?.close(1000); } catch { /* already closing */ }
    this.ws = null;
  }

  send(intent) {
    if (!this.ws || this.ws.readyState !== 1) return false;
    const b = this.adapter.encode(intent);
    if (b) this.ws.send(b);
    return !!b;
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    try { this.ws?.close(1000); } catch { /* ignore */ }
    this._status('closed');
  }

  _status(state, extra = {}) {
    this.state = state;
    this.h.onStatus({ state, ...extra });
  }
}

/** What a close means, in words for people (the code stays in the hook's status). */
export function closeReason(ev) {
  switch (ev.code) {
    case 1000: return ev.reason ? `the server closed the connection: ${ev.reason}` : 'the server closed the connection';
    case 1001: return 'the server is restarting';
    case 1006: return 'the server stopped or the network dropped';
    case 1008: return ev.reason ? `the server disconnected this page: ${ev.reason}` : 'the server disconnected this page';
    case 1011: return 'the server hit an error';
    case 1013: return 'the server is busy';
    default: return ev.reason || 'the connection closed';
  }
}
