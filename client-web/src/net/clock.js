// Clock sync from ping/pong: the client sends its local time, the server answers
// with that time and its own. For one exchange
//     rtt    = receive - sent
//     offset = serverTime + rtt / 2 - receive      (server clock minus local clock)
// assuming a symmetric path. Of the recent exchanges the one with the smallest
// RTT has the least queueing in it, so its offset is the best; we keep a window of
// samples, take the offset of the fastest one and smooth it so it never jumps.
// RTT shown to the user is the median of the window (what a person feels).
// Pure JS, no DOM.

export class ClockSync {
  /** @param {{window?: number}} [opts] */
  constructor(opts = {}) {
    this.window = opts.window ?? 16;
    this.reset();
  }

  reset() {
    this.samples = [];
    this.offset = NaN; // server - local (s)
    this.rtt = NaN;    // median round trip (s)
  }

  /**
   * Record one pong.
   * @param {number} sent     local time the ping left (s)
   * @param {number} server   server time in the pong (s)
   * @param {number} received local time the pong arrived (s)
   */
  addSample(sent, server, received) {
    const rtt = received - sent;
    if (!(rtt >= 0) || !Number.isFinite(server)) return;
    this.samples.push({ rtt, offset: server + rtt / 2 - received });
    if (this.samples.length > this.window) this.samples.shift();
    let best = this.samples[0];
    for (const s of this.samples) if (s.rtt < best.rtt) best = s;
    if (!Number.isFinite(this.offset) || Math.abs(best.offset - this.offset) > 0.5) this.offset = best.offset;
    else this.offset += (best.offset - this.offset) * 0.25;
    const r = this.samples.map((s) => s.rtt).sort((a, b) => a - b);
    this.rtt = r[r.length >> 1];
  }

  get synced() { return Number.isFinite(this.offset); }

  /** Server time now, from a local time. */
  serverTime(local) { return local + this.offset; }
}
