// The room's heads-up display: plain DOM over the canvas, laid out as a grid
// (top bar / middle / bottom bar) so nothing overlaps on a phone. Owns no state
// beyond what is shown; room.js calls the setters.
//
// What a person reads here is announced too: the toast, the connection banner and the
// dice sum are live regions, and every control is a real button.
const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

/**
 * @param {HTMLElement} host
 * @param {{roomId:string, kind:string, scene?:string, actions:{action:string,label:string,title?:string}[],
 *   scenes?:string[], onAction(a:string):void, onSelectScene?(s:string):void, onRename?():void,
 *   hint?:{long:string, short:string}, watching?:boolean}} o  watching: a watcher's page (controls off)
 */
export function createHud(host, { roomId, kind, scene, actions, scenes = [], onAction, onSelectScene, onRename, hint: hintText, watching = false }) {
  const hud = h('div', 'hud');
  const top = h('header', 'bar top');
  const brand = h('a', 'brand', 'Tumble'); brand.href = '/'; brand.title = 'All rooms';
  const room = h('div', 'room');
  const name = h('span', 'room-name', roomId);
  const kindTag = h('span', 'room-kind', scene || kind);
  const copy = h('button', 'chip copy', 'Copy link'); copy.type = 'button'; copy.title = 'Copy a link to this room';
  copy.addEventListener('click', async () => {
    const url = location.origin + '/r/' + encodeURIComponent(roomId) + (scene ? `?kind=${kind}&scene=${scene}` : '');
    try { await navigator.clipboard.writeText(url); copy.textContent = 'Copied'; }
    catch { prompt('Room link', url); }
    setTimeout(() => (copy.textContent = 'Copy link'), 1400);
  });
  room.append(name, kindTag);
  // Switching the scene is its own, labelled choice (it changes the room for everyone).
  let sceneBtn = null, sceneMenu = null;
  const others = scenes.filter((s) => s !== scene);
  if (others.length && onSelectScene) {
    sceneBtn = h('button', 'chip scene-switch', 'Switch scene'); sceneBtn.type = 'button';
    sceneBtn.setAttribute('aria-haspopup', 'true'); sceneBtn.setAttribute('aria-expanded', 'false');
    sceneBtn.title = 'Change this room to another scene, for everyone in it';
    sceneMenu = h('div', 'scene-menu hidden'); sceneMenu.setAttribute('role', 'group'); sceneMenu.setAttribute('aria-label', 'Switch the room to');
    sceneMenu.append(h('div', 'scene-menu-note', 'Changes the room for everyone in it'));
    for (const s of others) {
      const b = h('button', 'chip', `Switch everyone to ${s}`); b.type = 'button'; b.dataset.scene = s;
      b.addEventListener('click', () => { closeMenu(); onSelectScene(s); });
      sceneMenu.append(b);
    }
    sceneBtn.addEventListener('click', () => (sceneMenu.classList.contains('hidden') ? openMenu() : closeMenu()));
    sceneMenu.addEventListener('keydown', (e) => { if (e.key === 'Escape') { closeMenu(); sceneBtn.focus(); } });
    room.append(sceneBtn);
  }
  function openMenu() {
    const r = sceneBtn.getBoundingClientRect();
    sceneMenu.style.left = `${Math.max(8, Math.min(r.left, innerWidth - 240))}px`; sceneMenu.style.top = `${r.bottom + 6}px`;
    sceneMenu.classList.remove('hidden'); sceneBtn.setAttribute('aria-expanded', 'true'); sceneMenu.querySelector('button')?.focus(); }
  function closeMenu() { sceneMenu?.classList.add('hidden'); sceneBtn?.setAttribute('aria-expanded', 'false'); }
  room.append(copy);
  const players = h('div', 'players', '');
  const conn = h('div', 'conn', 'connecting');
  conn.setAttribute('role', 'status');
  top.append(brand, room, players, conn);

  const middle = h('div', 'middle');
  const banner = h('div', 'banner hidden');
  banner.setAttribute('role', 'status'); banner.setAttribute('aria-live', 'polite');
  const diceSum = h('div', 'dice-sum hidden');
  diceSum.setAttribute('aria-live', 'polite'); diceSum.setAttribute('role', 'status');
  const side = h('div', 'side'); // lil-gui lives here
  middle.append(banner, diceSum, side);

  const bottom = h('footer', 'bar bottom');
  const acts = h('div', 'actions');
  for (const a of actions) {
    const b = h('button', 'action', a.label); b.type = 'button'; b.dataset.action = a.action;
    if (a.title) b.title = a.title;
    b.addEventListener('click', () => onAction(a.action));
    acts.append(b);
  }
  const stats = h('div', 'stats hidden', '');
  const statsBtn = h('button', 'chip stats-toggle', 'Stats'); statsBtn.type = 'button';
  statsBtn.setAttribute('aria-pressed', 'false'); statsBtn.title = 'Show network and server numbers';
  statsBtn.addEventListener('click', () => {
    const on = stats.classList.toggle('hidden') === false;
    statsBtn.setAttribute('aria-pressed', String(on));
  });
  // The hint in two lengths: phones show the short one (the long one does not fit).
  const hint = h('div', 'hint');
  const hintLong = h('span', 'hint-long', hintText?.long ?? '');
  const hintShort = h('span', 'hint-short', hintText?.short ?? hintText?.long ?? '');
  if (watching) { hintLong.textContent = 'You are watching: the room plays on, your controls are off.'; hintShort.textContent = 'Watching'; }
  hint.append(hintLong, hintShort);
  bottom.append(acts, hint, statsBtn, stats);
  hud.append(top, middle, bottom);
  if (sceneMenu) hud.append(sceneMenu);

  const labels = h('div', 'labels');
  const toast = h('div', 'toast hidden');
  toast.setAttribute('role', 'status'); toast.setAttribute('aria-live', 'polite');
  host.append(labels, hud, toast);

  let toastTimer = null;
  let slow = false; // a poor link: the "live" sign reads "slow connection" (room.js decides)
  const dieLabels = new Map();
  let offline = false;
  return {
    el: hud, side, stats, conn,
    /** The players, and how many watch (PROTOCOL.md §14); `watching`: this page is one of them. */
    setPlayers(list, youId, watchers = 0, watching = false) {
      players.textContent = '';
      const n = list.length;
      const dot = h('span', 'dot');
      const names = list.map((p) => (p.id === youId ? 'you' : p.name));
      const shown = names.slice(0, 3).join(', ') + (n > 3 ? ` +${n - 3}` : '');
      players.append(dot, h('span', 'count', `${n} ${n === 1 ? 'player' : 'players'}`), h('span', 'names', shown));
      if (watchers > 0) players.append(h('span', 'watchers', `${watchers} watching`));
      if (watching) {
        const tag = h('span', 'chip watching', 'watching');
        tag.title = 'You are watching this room: you see everything, your controls are off';
        players.append(tag);
      }
      players.title = list.map((p) => (p.id === youId ? `${p.name} (you)` : p.name)).join(', ');
      const me = list.find((p) => p.id === youId);
      if (me && onRename) {
        const b = h('button', 'chip me', me.name); b.type = 'button';
        b.title = 'Your name in this room: change it'; b.setAttribute('aria-label', `Your name: ${me.name}. Change it`);
        b.addEventListener('click', () => onRename());
        players.append(b);
      }
    },
    setConnection(st) {
      conn.className = 'conn ' + st.state + (slow && st.state === 'open' ? ' slow' : '');
      const txt = { connecting: 'connecting…', open: slow ? 'slow connection' : 'live', reconnecting: 'offline', failed: 'disconnected', closed: 'closed' }[st.state] || st.state;
      conn.textContent = txt;
      if (!slow) conn.title = '';
      if (st.state === 'reconnecting') {
        const left = Math.max(0, Math.ceil((st.retryAt - performance.now()) / 1000));
        banner.textContent = `Offline — reconnecting${left ? ` in ${left} s` : '…'}: ${st.reason}. Controls are paused until the room is back.`;
        banner.className = 'banner warn';
      } else if (st.state === 'failed') {
        banner.textContent = `Disconnected: ${st.reason}`;
        banner.className = 'banner error';
      } else if (st.state === 'connecting' && st.attempt > 0) {
        banner.textContent = `Offline — reconnecting… (attempt ${st.attempt}). Controls are paused until the room is back.`;
        banner.className = 'banner warn';
      } else banner.className = 'banner hidden';
    },
    /** Offline: inputs are paused (disabled, and said so), the players pill is not green. */
    setOffline(on) {
      offline = on;
      hud.classList.toggle('offline', on);
      for (const b of acts.querySelectorAll('button')) b.disabled = on || watching;
      if (sceneBtn) sceneBtn.disabled = on || watching;
      if (on) closeMenu();
    },
    get offline() { return offline; },
    /** The link is poor (or good again): shown on the connection sign while live. */
    setSlow(on) {
      slow = on;
      if (conn.classList.contains('open')) { conn.classList.toggle('slow', on); conn.textContent = on ? 'slow connection' : 'live'; }
      if (!on) conn.title = '';
    },
    setSlowDetail(text) { conn.title = text; },
    setStats(text) { stats.textContent = text; },
    toast(text) {
      toast.textContent = text; toast.className = 'toast';
      clearTimeout(toastTimer); toastTimer = setTimeout(() => (toast.className = 'toast hidden'), 3200);
    },
    /** Dice result: per-die labels positioned each frame by room.js, and the sum badge. */
    setDice(result) {
      for (const el of dieLabels.values()) el.remove();
      dieLabels.clear();
      if (!result) { diceSum.className = 'dice-sum hidden'; diceSum.textContent = ''; return; }
      for (const f of result.faces) {
        const el = h('div', 'die-label', String(f.value));
        el.setAttribute('aria-hidden', 'true');
        labels.append(el); dieLabels.set(f.id, el);
      }
      diceSum.textContent = `${result.faces.map((f) => f.value).join(' + ')} = ${result.sum}`;
      diceSum.setAttribute('aria-label', `Dice: ${result.faces.map((f) => f.value).join(', ')}. Sum ${result.sum}`);
      diceSum.className = 'dice-sum';
    },
    placeDieLabel(id, pt) {
      const el = dieLabels.get(id);
      if (!el) return;
      if (!pt) { el.style.display = 'none'; return; }
      el.style.display = '';
      el.style.transform = `translate(${pt.x.toFixed(1)}px, ${pt.y.toFixed(1)}px) translate(-50%, -100%)`;
    },
    setActionLabel(action, label) { const b = acts.querySelector(`[data-action="${action}"]`); if (b) b.textContent = label; },
    dispose() { hud.remove(); labels.remove(); toast.remove(); },
  };
}
