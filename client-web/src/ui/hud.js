// The room's heads-up display: plain DOM over the canvas, laid out as a grid
// (top bar / middle / bottom bar) so nothing overlaps on a phone. Owns no state
// beyond what is shown; room.js calls the setters.
const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

export function createHud(host, { roomId, kind, scene, actions, onAction }) {
  const hud = h('div', 'hud');
  const top = h('header', 'bar top');
  const brand = h('a', 'brand', 'Tumble'); brand.href = '/'; brand.title = 'All rooms';
  const room = h('div', 'room');
  const name = h('span', 'room-name', roomId);
  const kindTag = h('span', 'room-kind', `${kind}${scene ? ' · ' + scene : ''}`);
  const copy = h('button', 'chip copy', 'Copy link'); copy.type = 'button'; copy.title = 'Copy a link to this room';
  copy.addEventListener('click', async () => {
    const url = location.origin + '/r/' + encodeURIComponent(roomId) + (scene ? `?kind=${kind}&scene=${scene}` : '');
    try { await navigator.clipboard.writeText(url); copy.textContent = 'Copied'; }
    catch { prompt('Room link', url); }
    setTimeout(() => (copy.textContent = 'Copy link'), 1400);
  });
  room.append(name, kindTag, copy);
  const players = h('div', 'players', '');
  const conn = h('div', 'conn', 'connecting');
  top.append(brand, room, players, conn);

  const middle = h('div', 'middle');
  const banner = h('div', 'banner hidden');
  const diceSum = h('div', 'dice-sum hidden');
  const side = h('div', 'side'); // lil-gui lives here
  middle.append(banner, diceSum, side);

  const bottom = h('footer', 'bar bottom');
  const acts = h('div', 'actions');
  for (const a of actions) {
    const b = h('button', 'action', a.label); b.type = 'button'; b.dataset.action = a.action;
    b.addEventListener('click', () => onAction(a.action));
    acts.append(b);
  }
  const stats = h('div', 'stats', '');
  const hint = h('div', 'hint', '');
  bottom.append(acts, hint, stats);
  hud.append(top, middle, bottom);

  const labels = h('div', 'labels');
  const toast = h('div', 'toast hidden');
  host.append(labels, hud, toast);

  let toastTimer = null;
  let slow = false; // a poor link: the "live" sign reads "slow connection" (room.js decides)
  const dieLabels = new Map();
  return {
    el: hud, side, stats, conn,
    setPlayers(list, youId) {
      players.textContent = '';
      const n = list.length;
      const dot = h('span', 'dot');
      const names = list.map((p) => (p.id === youId ? 'you' : p.name));
      const shown = names.slice(0, 3).join(', ') + (n > 3 ? ` +${n - 3}` : '');
      players.append(dot, h('span', 'count', `${n} ${n === 1 ? 'player' : 'players'}`), h('span', 'names', shown));
      players.title = list.map((p) => (p.id === youId ? `${p.name} (you)` : p.name)).join(', ');
    },
    setConnection(st) {
      conn.className = 'conn ' + st.state + (slow && st.state === 'open' ? ' slow' : '');
      const txt = { connecting: 'connecting…', open: slow ? 'slow connection' : 'live', reconnecting: 'offline', failed: 'disconnected', closed: 'closed' }[st.state] || st.state;
      conn.textContent = txt;
      if (!slow) conn.title = '';
      if (st.state === 'reconnecting') {
        const left = Math.max(0, Math.ceil((st.retryAt - performance.now()) / 1000));
        banner.textContent = `Connection lost (${st.reason}). Reconnecting${left ? ` in ${left} s` : '…'} (attempt ${st.attempt})`;
        banner.className = 'banner warn';
      } else if (st.state === 'failed') {
        banner.textContent = `Disconnected: ${st.reason}`;
        banner.className = 'banner error';
      } else if (st.state === 'connecting' && st.attempt > 0) {
        banner.textContent = `Reconnecting… (attempt ${st.attempt})`;
        banner.className = 'banner warn';
      } else banner.className = 'banner hidden';
    },
    setHint(text) { hint.textContent = text; },
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
      clearTimeout(toastTimer); toastTimer = setTimeout(() => (toast.className = 'toast hidden'), 2600);
    },
    /** Dice result: per-die labels positioned each frame by room.js, and the sum badge. */
    setDice(result) {
      for (const el of dieLabels.values()) el.remove();
      dieLabels.clear();
      if (!result) { diceSum.className = 'dice-sum hidden'; return; }
      for (const f of result.faces) {
        const el = h('div', 'die-label', String(f.value));
        labels.append(el); dieLabels.set(f.id, el);
      }
      diceSum.textContent = `${result.faces.map((f) => f.value).join(' + ')} = ${result.sum}`;
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
