// When a room link leads nowhere: the room is not there (it closed after everyone
// left, a typo, a restart), its name is in use by a room of another kind, it is full,
// or the name is not a valid one. The page says which, names the room, and offers a
// way on: create it (kind and scene chooser), join the room that holds the name, pick
// another name, or go to the lobby. Also the small "your name" dialog.
import { KINDS, BLURB, ROOM_ID, roomUrl, kindOf } from '../scenes.js';

const h = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };

/**
 * @param {HTMLElement} host
 * @param {{roomId:string, askedKind?:string, askedScene?:string, code?:string, reason?:string,
 *   fetchRooms?:() => Promise<{id:string, kind:string, scene:string}[]>, invalidName?:boolean}} o
 * @returns {{kind:string, el:HTMLElement}} what was shown ('missing', 'taken', 'full', 'invalid', 'other')
 */
export function showRoomProblem(host, { roomId, askedKind, askedScene, code, reason = '', fetchRooms = null, invalidName = false }) {
  document.querySelector('.problem-backdrop')?.remove();
  const back = h('div', 'problem-backdrop');
  const box = h('main', 'problem');
  box.setAttribute('role', 'dialog'); box.setAttribute('aria-modal', 'true'); box.setAttribute('aria-labelledby', 'problem-title');
  back.append(box);
  host.append(back);
  const out = { kind: 'other', el: box };

  const title = h('h1', null, ''); title.id = 'problem-title'; title.tabIndex = -1;
  const text = h('p', 'problem-text', '');
  const ways = h('div', 'problem-ways');
  box.append(title, text, ways);
  const lobby = h('a', 'ghost', 'Go to the lobby'); lobby.href = '/';

  const render = (rooms) => {
    const held = rooms?.find((r) => r.id === roomId);
    if (invalidName) {
      out.kind = 'invalid';
      title.textContent = 'That room name does not work';
      text.textContent = `“${roomId}” is not a room name: use 1–32 letters, digits, - or _ (no spaces).`;
      ways.append(createForm({ name: suggest(roomId), kind: askedKind, scene: askedScene, label: 'Create a room with this name' }), lobby);
    } else if (code === 'bad_room' && (held || /taken/.test(reason))) {
      out.kind = 'taken';
      const sc = held?.scene || /by an? (\w+) room/.exec(reason)?.[1] || 'another';
      title.textContent = `“${roomId}” is taken`;
      text.textContent = `The name “${roomId}” is taken by a ${sc} room${askedScene ? `, so it cannot be a ${askedScene} room` : ''}. Join that room, or pick another name for yours.`;
      const join = h('a', 'primary', `Join the ${sc} room`); join.href = roomUrl(held || { id: roomId });
      ways.append(join, createForm({ name: `${roomId}-${askedScene || 'room'}`.slice(0, 32), kind: askedKind || kindOf(askedScene), scene: askedScene, label: 'Or pick another name' }), lobby);
    } else if (code === 'bad_room') {
      out.kind = 'missing';
      title.textContent = `There is no room “${roomId}”`;
      text.textContent = askedScene || askedKind
        ? `The room “${roomId}” could not be made as asked (${reason}).`
        : `No room is called “${roomId}” right now: it may have closed after everyone left, the link may have a typo, or the server restarted. You can create it, or go to the lobby.`;
      ways.append(createForm({ name: roomId, kind: askedKind, scene: askedScene, label: `Create “${roomId}”`, fixedName: true }), lobby);
    } else if (code === 'room_full' || code === 'too_many_rooms') {
      out.kind = 'full';
      title.textContent = code === 'room_full' ? `“${roomId}” is full` : 'The server is full';
      text.textContent = code === 'room_full' ? 'Every place in this room is taken. Try again in a while, or pick another room.' : 'This server holds as many rooms as it can. Join an open room instead.';
      const again = h('button', 'primary', 'Try again'); again.type = 'button'; again.addEventListener('click', () => location.reload());
      ways.append(again, lobby);
    } else {
      title.textContent = 'This room cannot be opened';
      text.textContent = reason || 'The server refused the connection.';
      const again = h('button', 'primary', 'Try again'); again.type = 'button'; again.addEventListener('click', () => location.reload());
      ways.append(again, lobby);
    }
    box.dataset.problem = out.kind;
    title.focus();
  };
  if (fetchRooms && code === 'bad_room') fetchRooms().then(render, () => render(null));
  else render(null);
  return out;
}

/** Kind + scene + name -> /r/<name>?kind=&scene= (the form a room is created from). */
function createForm({ name, kind, scene, label, fixedName = false }) {
  const form = h('form', 'create problem-create');
  form.noValidate = true;
  const title = h('div', 'create-title', label);
  const kindSel = h('select'); kindSel.name = 'kind'; kindSel.setAttribute('aria-label', 'Kind');
  for (const k of Object.keys(KINDS)) kindSel.append(new Option(k, k));
  const sceneSel = h('select'); sceneSel.name = 'scene'; sceneSel.setAttribute('aria-label', 'Scene');
  const blurb = h('p', 'blurb', '');
  const fill = () => { sceneSel.textContent = ''; for (const s of KINDS[kindSel.value]) sceneSel.append(new Option(s, s)); blurb.textContent = BLURB[sceneSel.value] || ''; };
  kindSel.value = kind && KINDS[kind] ? kind : kindOf(scene) || 'rigid';
  kindSel.addEventListener('change', fill); fill();
  if (scene && KINDS[kindSel.value].includes(scene)) sceneSel.value = scene;
  sceneSel.addEventListener('change', () => (blurb.textContent = BLURB[sceneSel.value] || ''));
  blurb.textContent = BLURB[sceneSel.value] || '';
  const nameIn = h('input'); nameIn.name = 'name'; nameIn.value = name; nameIn.maxLength = 32; nameIn.setAttribute('aria-label', 'Room name');
  if (fixedName) nameIn.type = 'hidden';
  const go = h('button', 'primary', fixedName ? 'Create it' : 'Create room'); go.type = 'submit';
  const err = h('div', 'form-error'); err.setAttribute('role', 'alert');
  form.append(title, kindSel, sceneSel, nameIn, go, blurb, err);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = nameIn.value.trim();
    if (!ROOM_ID.test(id)) { err.textContent = 'Room names use 1–32 letters, digits, - or _ (no spaces).'; return; }
    location.href = roomUrl({ id, kind: kindSel.value, scene: sceneSel.value });
  });
  return form;
}

/** A name that is valid, from one that is not ("bad name" -> "bad-name"). */
export function suggest(name) {
  const s = String(name).normalize('NFKD').replace(/[\u0300-\u036f]/g, '').replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 32);
  return s || `room-${Math.random().toString(36).slice(2, 7)}`;
}

/** The player's display name, asked in a small dialog; onSave(name) with a trimmed, non-empty name. */
export function askName(host, { current = '', onSave }) {
  document.querySelector('.name-dialog')?.remove();
  const form = h('form', 'name-dialog');
  form.setAttribute('role', 'dialog'); form.setAttribute('aria-label', 'Your name');
  const label = h('label', null, 'Your name, as others see it');
  const input = h('input'); input.name = 'player'; input.value = current; input.maxLength = 24; input.required = true;
  input.autocomplete = 'nickname';
  label.append(input);
  const save = h('button', 'primary', 'Save'); save.type = 'submit';
  const cancel = h('button', 'ghost', 'Cancel'); cancel.type = 'button';
  const err = h('div', 'form-error'); err.setAttribute('role', 'alert');
  form.append(label, save, cancel, err);
  form.noValidate = true;
  cancel.addEventListener('click', () => form.remove());
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') form.remove(); });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const n = input.value.trim().replace(/\s+/g, ' ');
    if (!n) { err.textContent = 'Type a name (up to 24 characters).'; return; }
    form.remove();
    onSave(n);
  });
  host.append(form);
  input.focus(); input.select();
  return form;
}
