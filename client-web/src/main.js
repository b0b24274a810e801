// Entry point: `/` is the lobby, `/r/<room-id>` a room (the server serves the same
// index.html for both). ?kind=&scene= on a room link say what to create if the room
// does not exist yet.
import { startLobby } from './lobby.js';
import { startRoom } from './room.js';
import { createWsTransport } from './net/transport.js';

const app = document.getElementById('app');
const m = location.pathname.match(/^\/r\/([A-Za-z0-9_-]{1,32})\/?$/);
if (m) {
  const q = new URLSearchParams(location.search);
  const roomId = m[1], kind = q.get('kind') || undefined, scene = q.get('scene') || undefined;
  // The room id in the path lets a router in front of several servers hash it (DESIGN.md).
  // ?ws-port=N: the WebSocket goes to another port of the same host (tests put the link
  // emulator, build/tumble-netem, there while the page itself loads directly).
  const wsPort = /^\d{1,5}$/.test(q.get('ws-port') || '') ? `${location.hostname}:${q.get('ws-port')}` : location.host;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${wsPort}/ws/${roomId}`;
  document.title = `${roomId} · Tumble`;
  const fetchRoomStats = async (id) => {
    const res = await fetch('/api/rooms', { cache: 'no-store' });
    const r = (await res.json()).find((x) => x.id === id);
    return r && { stepMs: r.step_us != null ? r.step_us / 1000 : r.step_ms };
  };
  startRoom({ host: app, roomId, kind, scene, transport: createWsTransport({ roomId, kind, scene, url }), fetchRoomStats });
} else if (location.pathname.startsWith('/r/')) {
  app.innerHTML = '<main class="lobby"><h1>Tumble</h1><p class="sub">That room name is not valid: use 1–32 letters, digits, - or _.</p><p><a class="primary" href="/">All rooms</a></p></main>';
} else {
  startLobby(app);
}
