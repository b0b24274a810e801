// compose-smoke.mjs PORT PHASE [STATE_FILE]: checks the compose deployment through its
// router on 127.0.0.1:PORT. Prints one "ok ..." or "FAIL ..." line per check and exits
// non-zero on any failure.
//   before: 12 rooms, two clients each, all of a room on one instance; at least two
//           instances used; the router's /api/rooms names the right server. Writes the
//           placement to STATE_FILE.
//   after:  (one server stopped) rooms of the running servers stayed; the stopped
//           server's rooms moved, with their worlds: restored from the checkpoint the
//           stopped server wrote to Redis as it drained (tick carried on, not a new
//           room); the lobby still answers.
//   ready:  (before the others) joins rooms until all three servers have answered.
import fs from 'node:fs';
import { joinRoom } from '../tests/integration/wsclient.mjs';

const [port, phase, stateFile] = process.argv.slice(2);
const base = `ws://127.0.0.1:${port}`;
const rooms = Array.from({ length: 12 }, (_, i) => `compose-${i}`);
let failed = 0;
const check = (ok, what) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failed++; };

if (phase === 'ready') {
  const seen = new Set();
  for (let i = 0; i < 60 && seen.size < 3; i++) {
    try { const c = await joinRoom(base, `ready-${i}`); seen.add(c.welcome.instance); c.terminate(); } catch { await new Promise((r) => setTimeout(r, 200)); }
  }
  check(seen.size === 3, `servers answering through the router: ${[...seen].sort().join(' ')}`);
  process.exit(failed ? 1 : 0);
}

const placement = {};
const ticks = {};
const clients = [];
for (const room of rooms) {
  const a = await joinRoom(base, room);
  const b = await joinRoom(base, room);
  clients.push(a, b);
  placement[room] = a.welcome.instance;
  ticks[room] = a.welcome.tick;
  if (a.welcome.instance !== b.welcome.instance) check(false, `${room}: ${a.welcome.instance} and ${b.welcome.instance}`);
}
const lobby = await (await fetch(`http://127.0.0.1:${port}/api/rooms`)).json();
const lobbyOk = rooms.every((room) => lobby.some((x) => x.id === room && x.server === placement[room]));
check(lobbyOk, 'router /api/rooms lists every room with the server the welcome named');

if (phase === 'before') {
  const used = new Set(Object.values(placement));
  check(used.size >= 2, `12 rooms, two clients each, one instance per room; instances used: ${[...used].join(' ')}`);
  fs.writeFileSync(stateFile, JSON.stringify({ placement, ticks }));
} else {
  const { placement: old, ticks: oldTicks } = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
  const gone = process.argv[5];
  let moved = 0, stayed = 0;
  for (const room of rooms) {
    if (old[room] === gone) {
      if (placement[room] === gone) check(false, `${room} still on ${gone}`);
      else if (!(ticks[room] >= oldTicks[room])) check(false, `${room} moved to ${placement[room]} as a new room (tick ${oldTicks[room]} -> ${ticks[room]})`);
      else moved++;
    }
    else if (placement[room] === old[room]) stayed++;
    else check(false, `${room} moved from ${old[room]} to ${placement[room]} though its server runs`);
  }
  check(moved + stayed === rooms.length, `${gone} stopped: ${moved} rooms moved with their worlds (tick carried on), ${stayed} stayed`);
}
for (const c of clients) c.terminate();
process.exit(failed ? 1 : 0);
