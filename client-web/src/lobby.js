// The lobby at `/`: open rooms from GET /api/rooms (refreshed every 2 s) as cards,
// a form to create a room (kind, scene, name -> /r/<name>?kind=&scene=), and a
// shareable link per room.
const KINDS = { rigid: ['tower', 'dice', 'pile'], cloth: ['flag', 'cape'], soft: ['dough'] };
const ROOM_ID = /^[A-Za-z0-9_-]{1,32}$/;
const BLURB = {
  tower: 'A tower of 24 wooden planks and a heavy ball.', dice: 'Three dice on felt: throw and read the sum.',
  pile: 'Hundreds of bodies in one tray.', flag: 'A flag on a pole in the night wind.', cape: 'A knight walks the wall, cape flying.',
  dough: 'Soft dough on a floured board: stretch it.',
};
const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

export function roomUrl(r) {
  return `/r/${encodeURIComponent(r.id)}` + (r.kind ? `?kind=${encodeURIComponent(r.kind)}&scene=${encodeURIComponent(r.scene || '')}` : '');
}

export function startLobby(host, { fetchRooms = defaultFetch, refreshMs = 2000 } = {}) {
  document.body.classList.add('in-lobby');
  const page = h('main', 'lobby');
  const head = h('header', 'lobby-head');
  const title = h('h1', null, 'Tumble');
  const sub = h('p', 'sub', 'Physics rooms you share with friends. Pick a room, or make your own and send the link.');
  head.append(title, sub);

  const create = h('form', 'create');
  create.autocomplete = 'off';
  const kindSel = h('select'); kindSel.name = 'kind'; kindSel.setAttribute('aria-label', 'Kind');
  for (const k of Object.keys(KINDS)) kindSel.append(new Option(k, k));
  const sceneSel = h('select'); sceneSel.name = 'scene'; sceneSel.setAttribute('aria-label', 'Scene');
  const fillScenes = () => { sceneSel.textContent = ''; for (const s of KINDS[kindSel.value]) sceneSel.append(new Option(s, s)); };
  kindSel.addEventListener('change', fillScenes); fillScenes();
  const nameIn = h('input'); nameIn.name = 'name'; nameIn.placeholder = 'room name'; nameIn.maxLength = 32;
  nameIn.pattern = '[A-Za-z0-9_\\-]{1,32}'; // compiled with the v flag: '-' must be escaped
  nameIn.required = true; nameIn.setAttribute('aria-label', 'Room name');
  nameIn.value = `room-${Math.random().toString(36).slice(2, 7)}`;
  const go = h('button', 'primary', 'Create room'); go.type = 'submit';
  const err = h('div', 'form-error');
  const label = h('div', 'create-title', 'New room');
  create.append(label, kindSel, sceneSel, nameIn, go, err);
  create.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = nameIn.value.trim();
    if (!ROOM_ID.test(id)) { err.textContent = 'Use 1–32 letters, digits, - or _'; return; }
    location.href = roomUrl({ id, kind: kindSel.value, scene: sceneSel.value });
  });

  const listHead = h('div', 'list-head');
  const listTitle = h('h2', null, 'Open rooms');
  const status = h('span', 'list-status', 'loading…');
  listHead.append(listTitle, status);
  const grid = h('section', 'rooms');
  page.append(head, create, listHead, grid);
  host.append(page);

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

  function render(rooms) {
    grid.textContent = '';
    if (!rooms.length) grid.append(h('p', 'empty', 'No rooms open yet. Create one above.'));
    for (const r of rooms) {
      const card = h('article', `card kind-${r.kind}`);
      card.dataset.room = r.id;
      const art = h('div', `card-art art-${r.scene || r.kind}`);
      const body = h('div', 'card-body');
      const name = h('h3', null, r.id);
      const meta = h('div', 'meta', `${r.kind} · ${r.scene}`);
      const blurb = h('p', 'blurb', BLURB[r.scene] || '');
      const nums = h('div', 'nums');
      const players = r.clients ?? r.players ?? 0;
      nums.append(h('span', `n-players${players ? '' : ' none'}`, `${players} ${players === 1 ? 'player' : 'players'}`));
      if (r.bodies != null) {
        const awake = r.awake ?? r.awake_bodies ?? 0;
        nums.append(h('span', 'n-bodies', r.kind === 'rigid' ? `${awake} awake / ${r.bodies - awake} asleep` : `${r.bodies} ${r.kind === 'rigid' ? 'bodies' : 'points'}`));
      }
      const step = r.step_us != null ? r.step_us / 1000 : r.step_ms ?? r.mean_step_ms;
      if (step != null) nums.append(h('span', 'n-step', `step ${(+step).toFixed(2)} ms`));
      const row = h('div', 'card-actions');
      const join = h('a', 'primary join', 'Join'); join.href = roomUrl(r);
      const link = h('button', 'ghost', 'Copy link'); link.type = 'button';
      link.addEventListener('click', async (e) => {
        e.stopPropagation();
        const url = location.origin + roomUrl(r);
        try { await navigator.clipboard.writeText(url); link.textContent = 'Copied'; } catch { prompt('Room link', url); }
        setTimeout(() => (link.textContent = 'Copy link'), 1400);
      });
      row.append(join, link);
      body.append(name, meta, blurb, nums, row);
      card.append(art, body);
      card.addEventListener('click', (e) => { if (e.target === card || art.contains(e.target) || e.target === blurb || e.target === name) location.href = roomUrl(r); });
      grid.append(card);
    }
  }
  refresh();
  return { dispose() { alive = false; clearTimeout(timer); page.remove(); }, refresh };
}

async function defaultFetch() {
  const res = await fetch('/api/rooms', { cache: 'no-store' });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const j = await res.json();
  return Array.isArray(j) ? j : j.rooms || [];
}
