// ws-smoke.mjs PORT [ROOM] [SECONDS]: joins ROOM on 127.0.0.1:PORT through /ws/ROOM,
// counts snapshots for SECONDS and prints one JSON line; exits 1 when none came.
import { joinRoom } from '../tests/integration/wsclient.mjs';

const [port, room = 'smoke', seconds = '1'] = process.argv.slice(2);
const c = await joinRoom(`ws://127.0.0.1:${port}`, room);
const start = c.snapshots;
await new Promise((r) => setTimeout(r, Number(seconds) * 1000));
const n = c.snapshots - start;
console.log(JSON.stringify({ room: c.welcome.room, instance: c.welcome.instance, snapshots: n, per_second: n / Number(seconds) }));
c.close();
process.exit(n > 0 ? 0 : 1);
