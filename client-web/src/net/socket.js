// The room's WebSocket, owned by a Worker thread when the browser has them.
//
// Why: the page's main thread also draws. In headless Chromium (software GL) a
// frame blocks it for hundreds of milliseconds while the GPU process catches up,
// and a WebSocket message waits for it like any other task: a pong that came
// back in 0.3 ms was timed at 230-590 ms, and the snapshot buffer saw every
// arrival late by a random amount, took that for network jitter and held its
// interpolation delay at the 300 ms ceiling. In a Worker the socket's events run
// on a thread that does nothing else, so each message is stamped with the time
// it really arrived (`ev.arrival`, ms on this page's performance.now() clock)
// and the main thread decodes it whenever it gets to it.
//
// openSocket() returns an object with the part of the WebSocket interface the
// connection uses (readyState, protocol, send, close, onopen, onmessage,
// onclose, onerror). Without Worker (Node tests, old browsers) or when the
// worker cannot start it is a plain WebSocket whose messages are stamped on
// the main thread.

// Runs inside the worker; self-contained (it is turned into source text). One
// socket at a time; each open names its socket (id), and every event carries it,
// so a late event of the previous socket is told apart.
function socketWorker() {
  let ws = null;
  const origin = performance.timeOrigin;
  self.onmessage = (e) => {
    const m = e.data;
    if (m.op === 'open') {
      const id = m.id;
      try { if (ws && ws.readyState < 2) ws.close(1000); } catch { /* already closing */ }
      try { ws = new WebSocket(m.url, m.protocol); } catch (err) {
        self.postMessage({ id, ev: 'close', code: 1006, reason: String((err && err.message) || err) });
        return;
      }
      const sock = ws;
      sock.binaryType = 'arraybuffer';
      sock.onopen = () => self.postMessage({ id, ev: 'open', protocol: sock.protocol });
      sock.onmessage = (ev) => {
        const at = origin + performance.now();
        if (typeof ev.data === 'string') self.postMessage({ id, ev: 'message', data: ev.data, at });
        else self.postMessage({ id, ev: 'message', data: ev.data, at }, [ev.data]);
      };
      sock.onclose = (ev) => self.postMessage({ id, ev: 'close', code: ev.code, reason: ev.reason });
      sock.onerror = () => self.postMessage({ id, ev: 'error' });
    } else if (m.op === 'send') {
      if (ws && ws.readyState === 1) ws.send(m.data);
    } else if (m.op === 'close') {
      try { if (ws) ws.close(m.code, m.reason); } catch { /* already closing */ }
    }
  };
}

let workerUrl = null;
function workerSource() {
  if (!workerUrl) workerUrl = URL.createObjectURL(new Blob([`(${socketWorker.toString()})();`], { type: 'text/javascript' }));
  return workerUrl;
}

// The worker of a closed socket, kept for the next one: a reconnect then opens its
// socket at once instead of waiting for a new worker thread to start (hundreds of
// ms on a busy machine).
let idleWorker = null;
let nextSocketId = 1;

class WorkerSocket {
  constructor(url, protocol) {
    this.readyState = 0;
    this.protocol = '';
    this.binaryType = 'arraybuffer';
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
    this.worker = idleWorker || new Worker(workerSource());
    idleWorker = null;
    this.id = nextSocketId++;
    const shift = performance.timeOrigin;
    this.worker.onmessage = (e) => {
      const m = e.data;
      if (m.id !== this.id) return; // the previous socket's last words
      if (m.ev === 'open') { this.readyState = 1; this.protocol = m.protocol; this.onopen?.({}); }
      else if (m.ev === 'message') { if (this.readyState === 1) this.onmessage?.({ data: m.data, arrival: m.at - shift }); }
      else if (m.ev === 'error') this.onerror?.({});
      else if (m.ev === 'close') { this._closed(m.code, m.reason); }
    };
    this.worker.onerror = () => this._closed(1006, 'socket worker failed', true);
    this.worker.postMessage({ op: 'open', id: this.id, url: new URL(url, location.href).href, protocol });
  }

  send(bytes) {
    if (this.readyState !== 1) return;
    this.worker.postMessage({ op: 'send', data: bytes });
  }

  close(code = 1000, reason = '') {
    if (this.readyState >= 2) return;
    this.readyState = 2;
    this.worker.postMessage({ op: 'close', code, reason });
    // The worker reports the close; if it never does, end it anyway.
    setTimeout(() => this._closed(code, reason), 3000);
  }

  _closed(code, reason, workerFailed = false) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.worker.onmessage = null;
    if (workerFailed || idleWorker) this.worker.terminate();
    else idleWorker = this.worker;
    this.onclose?.({ code, reason });
  }
}

/** Whether sockets run in a worker here (the page can turn it off with ?socket-worker=0). */
export function workerSockets() {
  if (typeof Worker === 'undefined' || typeof Blob === 'undefined' || typeof URL?.createObjectURL !== 'function') return false;
  try { return new URLSearchParams(location.search).get('socket-worker') !== '0'; } catch { return true; }
}

/** A WebSocket-like object; its message events carry `arrival` (ms, performance.now()). */
export function openSocket(url, protocol) {
  if (workerSockets()) {
    try { return new WorkerSocket(url, protocol); } catch { /* fall back to the main thread */ }
  }
  const ws = new WebSocket(url, protocol);
  ws.binaryType = 'arraybuffer';
  return ws;
}
