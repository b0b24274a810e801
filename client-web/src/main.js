// Entry point: `/` is the lobby, `/r/<room-id>` a room (the server serves the same
// index.html for both, and for any `/r/<name>`, so a bad name gets a page that says
// what is wrong with it). ?kind=&scene= on a room link say what to create if the room
// does not exist yet; ?watch=1 joins as a watcher (PROTOCOL.md §14: sees everything,
// sends no inputs, not counted as a player). `/replay` and `/replay/<record>` are the replay viewer, a
// separate chunk loaded only there (with the physics as WebAssembly).
import { startLobby, fetchRoomList } from './lobby.js';
import { startRoom } from './room.js';
import { showRoomProblem } from './ui/room-problem.js';
import { createWsTransport } from './net/transport.js';

const app = document.getElementById('app');
const m = location.pathname.match(/^\/r\/([A-Za-z0-9_-]{1,32})\/?$/);
const replay = location.pathname.match(/^\/replay(?:\/([^/]*))?\/?$/);
const q = new URLSearchParams(location.search);
if (replay) {
  let name = replay[1] || null;
  try { name = name && decodeURIComponent(name); } catch { /* shown as typed */ }
  import('./replay/viewer.js').then(({ startViewer }) => startViewer(app, { name }));
} else if (m) {
  const roomId = m[1], kind = q.get('kind') || undefined, scene = q.get('scene') || undefined;
  const watch = q.get('watch') === '1';
  // ?kbps=N: a cap on the snapshots this page is sent (PROTOCOL.md "Bandwidth budgets", 16..1000000)
  const kbps = /^\d{2,7}$/.test(q.get('kbps') || '') ? Math.min(1e6, Math.max(16, Number(q.get('kbps')))) : null;
  // The room id in the path lets a router in front of several servers hash it (DESIGN.md).
  // ?ws-port=N: the WebSocket goes to another port of the same host (tests put the link
  // emulator, build/tumble-netem, there while the page itself loads directly).
  const wsPort = /^\d{1,5}$/.test(q.get('ws-port') || '') ? `${location.hostname}:${q.get('ws-port')}` : location.host;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${wsPort}/ws/${roomId}`;
  document.title = `${roomId} · Tumble`;
  const fetchRoomStats = async (id) => {
    const r = (await fetchRoomList()).find((x) => x.id === id);
    return r && { stepMs: r.step_us != null ? r.step_us / 1000 : r.step_ms };
  };
  startRoom({ host: app, roomId, kind, scene, watch, transport: createWsTransport({ roomId, kind, scene, url, watch, kbps }), fetchRoomStats, fetchRooms: fetchRoomList });
} else if (location.pathname.startsWith('/r/')) {
  let name = location.pathname.slice(3).replace(/\/$/, '');
  try { name = decodeURIComponent(name); } catch { /* shown as typed */ }
  document.title = 'Not a room name · Tumble';
  document.body.classList.add('in-lobby');
  showRoomProblem(app, { roomId: name, invalidName: true, askedKind: q.get('kind') || undefined, askedScene: q.get('scene') || undefined });
} else {
  startLobby(app);
}
