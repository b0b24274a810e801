// The lobby at `/`: open rooms from GET /api/rooms (refreshed every 2 s) as cards,
// a form to create a room (kind, scene, name -> /r/<name>?kind=&scene=), the player's
// own name, and a shareable link per room.
//
// A refresh updates the cards in place (one card per room id, reused), so keyboard
// focus and the scroll position survive it. Creating a room under a name that is in
// use says so and offers to join that room or pick another name.
//
// A server started with --record lists its records (GET /api/records): each opens the
// replay viewer (/replay/<name>), which loads only then. Without --record that
// section stays hidden.
import { KINDS, ROOM_ID, BLURB, roomUrl } from './scenes.js';
import { playerName, setPlayerName } from './net/transport.js';

export { roomUrl };
const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

export function startLobby(host, { fetchRooms = fetchRoomList, refreshMs = 2000 } = {}) {
  document.body.classList.add('in-lobby');
  const page = h('main', 'lobby');
  const head = h('header', 'lobby-head');
  const title = h('h1', null, 'Tumble');
  const sub = h('p', 'sub', 'Physics rooms you share with friends. Pick a room, or make your own and send the link.');
  // The player's name, remembered in this browser and sent when joining a room.
  const me = h('form', 'me-form');
  me.noValidate = true;
  const meLabel = h('label', null, 'Your name ');
  const meIn = h('input'); meIn.name = 'player'; meIn.maxLength = 24; meIn.value = playerName(); meIn.autocomplete = 'nickname';
  meLabel.append(meIn);
  const meSaved = h('span', 'me-saved', ''); meSaved.setAttribute('aria-live', 'polite');
  me.append(meLabel, meSaved);
  const saveName = () => {
    const n = setPlayerName(meIn.value);
    if (n) { meIn.value = n; meSaved.textContent = 'saved'; setTimeout(() => (meSaved.textContent = ''), 1500); }
    else { meIn.value = playerName(); }
  };
  meIn.addEventListener('change', saveName);
  me.addEventListener('submit', (e) => { e.preventDefault(); saveName(); });
  head.append(title, sub, me);

  const create = h('form', 'create');
  create.autocomplete = 'off';
  create.noValidate = true; // our own message, not the browser's "Please match the requested format"
  const kindSel = h('select'); kindSel.name = 'kind'; kindSel.setAttribute('aria-label', 'Kind');
  for (const k of Object.keys(KINDS)) kindSel.append(new Option(k, k));
  const sceneSel = h('select'); sceneSel.name = 'scene'; sceneSel.setAttribute('aria-label', 'Scene');
  const fillScenes = () => { sceneSel.textContent = ''; for (const s of KINDS[kindSel.value]) sceneSel.append(new Option(s, s)); };
  kindSel.addEventListener('change', fillScenes); fillScenes();
  const nameIn = h('input'); nameIn.name = 'name'; nameIn.placeholder = 'room name'; nameIn.maxLength = 32;
  nameIn.setAttribute('aria-label', 'Room name'); nameIn.setAttribute('aria-describedby', 'create-error');
  nameIn.value = `room-${Math.random().toString(36).slice(2, 7)}`;
  const go = h('button', 'primary', 'Create room'); go.type = 'submit';
  const err = h('div', 'form-error'); err.id = 'create-error'; err.setAttribute('role', 'alert');
  const label = h('div', 'create-title', 'New room');
  create.append(label, kindSel, sceneSel, nameIn, go, err);
  const badName = 'Room names use 1–32 letters, digits, - or _ (no spaces).';
  nameIn.addEventListener('input', () => {
    const ok = ROOM_ID.test(nameIn.value.trim()) || !nameIn.value;
    nameIn.setAttribute('aria-invalid', String(!ok));
    err.textContent = ok ? '' : badName;
  });
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = nameIn.value.trim();
    err.textContent = '';
    if (!ROOM_ID.test(id)) { err.textContent = badName; nameIn.setAttribute('aria-invalid', 'true'); nameIn.focus(); return; }
    // A name in use: say by what, and offer to join it or pick another.
    let held = null;
    try { held = (await fetchRooms()).find((r) => r.id === id); } catch { /* the server decides */ }
    if (held) {
      err.textContent = '';
      const msg = h('span', null, `“${id}” is taken by a ${held.scene} room. `);
      const join = h('a', null, `Join it`); join.href = roomUrl(held);
      err.append(msg, join, h('span', null, ', or pick another name.'));
      nameIn.setAttribute('aria-invalid', 'true');
      nameIn.focus(); nameIn.select();
      return;
    }
    location.href = roomUrl({ id, kind: kindSel.value, scene: sceneSel.value });
  });

  const listHead = h('div', 'list-head');
  const listTitle = h('h2', null, 'Open rooms');
  const status = h('span', 'list-status', 'loading…');
  listHead.append(listTitle, status);
  const grid = h('section', 'rooms');
  grid.setAttribute('aria-label', 'Open rooms');
  const records = h('section', 'records');
  records.setAttribute('aria-label', 'Recorded sessions');
  records.hidden = true;
  page.append(head, create, listHead, grid, records);
  host.append(page);
  showRecords(records).catch(() => { /* not recording, or an older server: nothing to show */ });

  let timer = null, alive = true;
  async function refresh() {
    try {
      const rooms = await fetchRooms();
      render(rooms);
      status.textContent = `${rooms.length} room${rooms.length === 1 ? '' : 's'} · updated ${new Date().toLocaleTimeString()}`;
      status.className = 'list-status';
    } catch (e) {
      status.textContent = `can't reach the server (${e.message}); retrying`;
      status.className = 'list-status bad';
    }
    if (alive) timer = setTimeout(refresh, refreshMs);
  }

  const cards = new Map(); // room id -> { card, set(r) }
  const empty = h('p', 'empty', 'No rooms open yet. Create one above.');
  function render(rooms) {
    // In place: existing cards are updated and kept (with any focus inside them),
    // new ones added, gone ones removed, the order follows the list.
    const seen = new Set();
    let before = grid.firstChild === empty ? empty.nextSibling : grid.firstChild;
    for (const r of rooms) {
      seen.add(r.id);
      let c = cards.get(r.id);
      if (!c) { c = makeCard(r); cards.set(r.id, c); }
      c.set(r);
      if (c.card !== before) grid.insertBefore(c.card, before);
      else before = before.nextSibling;
    }
    for (const [id, c] of cards) if (!seen.has(id)) { c.card.remove(); cards.delete(id); }
    if (!rooms.length && empty.parentNode !== grid) grid.prepend(empty);
    if (rooms.length) empty.remove();
  }
  refresh();
  return { dispose() { alive = false; clearTimeout(timer); page.remove(); }, refresh };
}

/** One room's card; set(r) updates what changes (players, motion, scene) without rebuilding it. */
function makeCard(r0) {
  const card = h('article', `card kind-${r0.kind}`);
  card.dataset.room = r0.id;
  const art = h('div', 'card-art');
  const body = h('div', 'card-body');
  const name = h('h3', null, r0.id);
  const meta = h('div', 'meta', '');
  const blurb = h('p', 'blurb', '');
  const nums = h('div', 'nums');
  const nPlayers = h('span', 'n-players'), nBodies = h('span', 'n-bodies');
  nums.append(nPlayers, nBodies);
  const row = h('div', 'card-actions');
  const join = h('a', 'primary join', 'Join');
  const link = h('button', 'ghost', 'Copy link'); link.type = 'button';
  let cur = r0;
  link.addEventListener('click', async (e) => {
    e.stopPropagation();
    const url = location.origin + roomUrl(cur);
    try { await navigator.clipboard.writeText(url); link.textContent = 'Copied'; } catch { prompt('Room link', url); }
    setTimeout(() => (link.textContent = 'Copy link'), 1400);
  });
  row.append(join, link);
  body.append(name, meta, blurb, nums, row);
  card.append(art, body);
  card.addEventListener('click', (e) => { if (e.target === card || art.contains(e.target) || e.target === blurb || e.target === name) location.href = roomUrl(cur); });
  const text = (el, t) => { if (el.textContent !== t) el.textContent = t; };
  return {
    card,
    set(r) {
      cur = r;
      card.className = `card kind-${r.kind}`;
      art.className = `card-art art-${r.scene || r.kind}`;
      text(meta, `${r.kind} · ${r.scene}`);
      text(blurb, BLURB[r.scene] || '');
      const players = r.clients ?? r.players ?? 0;
      nPlayers.className = `n-players${players ? '' : ' none'}`;
      text(nPlayers, players ? `${players} ${players === 1 ? 'player' : 'players'}` : 'nobody here yet');
      // People's terms: is anything moving (no step times, no point counts).
      const awake = r.awake ?? r.awake_bodies;
      nBodies.hidden = r.kind !== 'rigid' || r.bodies == null;
      if (!nBodies.hidden) text(nBodies, awake ? `${awake} of ${r.bodies} moving` : `${r.bodies} pieces, all at rest`);
      const href = roomUrl(r);
      if (join.getAttribute('href') !== href) join.href = href;
      join.setAttribute('aria-label', `Join ${r.id} (${r.scene})`);
      link.setAttribute('aria-label', `Copy a link to ${r.id}`);
    },
  };
}

/** The server's records (with --record), newest first, each a link to the replay viewer. */
async function showRecords(section) {
  const res = await fetch('/api/records', { cache: 'no-store' });
  if (!res.ok) return;
  const list = await res.json();
  if (!Array.isArray(list) || !list.length) return; // a server without --record lists none
  const head = h('div', 'list-head');
  head.append(h('h2', null, 'Recorded sessions'), h('span', 'list-status', `${list.length} record${list.length === 1 ? '' : 's'} · replayed in your browser`));
  const ul = h('ul', 'record-list');
  for (const r of list.slice(0, 50)) {
    const li = h('li');
    const a = h('a', null, r.room); a.href = `/replay/${encodeURIComponent(r.name)}`;
    a.setAttribute('aria-label', `Replay ${r.name}`);
    const when = Number.isFinite(r.modified_ms) ? new Date(r.modified_ms).toLocaleString() : '';
    li.append(a, h('span', 'record-meta', ` ${when} · ${(r.bytes / 1024).toFixed(0)} KiB`));
    ul.append(li);
  }
  const open = h('a', 'ghost record-open', 'Open a record file…'); open.href = '/replay';
  section.append(head, ul, open);
  section.hidden = false;
}

export async function fetchRoomList() {
  const res = await fetch('/api/rooms', { cache: 'no-store' });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const j = await res.json();
  return Array.isArray(j) ? j : j.rooms || [];
}
