// What a person is told about each kind and scene, in one place: the lobby's cards
// and create form, a room's buttons and hints, and the page for a room that is not
// there all read it.
export const KINDS = { rigid: ['tower', 'dice', 'pile'], cloth: ['flag', 'cape'], soft: ['dough'] };
export const ROOM_ID = /^[A-Za-z0-9_-]{1,32}$/;
export const kindOf = (scene) => Object.keys(KINDS).find((k) => KINDS[k].includes(scene));

export const BLURB = {
  tower: 'A tower of 24 wooden planks. Knock it down with a heavy ball, or poke a plank out.',
  dice: 'Three dice and two balls on felt: throw the dice and read the sum.',
  pile: 'Hundreds of bodies in one tray.', flag: 'A flag on a pole in the night wind.', cape: 'A knight walks the wall, cape flying.',
  dough: 'Soft dough on a floured board: stretch it.',
};

/** Each scene's own buttons, its own action first (the highlighted one). Resets keep the settings. */
const RESET_TITLE = 'Start the scene over; the controls keep their settings ("Reset settings" puts those back)';
export const ACTIONS = {
  tower: [{ action: 'knock_down', label: 'Knock it down', title: 'Roll the heavy ball into the tower' },
    { action: 'build_tower', label: 'Rebuild tower', title: RESET_TITLE }],
  dice: [{ action: 'throw_dice', label: 'Throw dice', title: 'Throw the three dice again' }],
  pile: [{ action: 'reset', label: 'Refill the tray', title: RESET_TITLE }],
  flag: [{ action: 'reset', label: 'Reset flag', title: RESET_TITLE }],
  cape: [{ action: 'reset', label: 'Reset cape', title: RESET_TITLE }],
  dough: [{ action: 'reset', label: 'New dough', title: RESET_TITLE }],
};

/** The hint under the scene: long on a desktop, short on a phone. */
export const HINTS = {
  tower: { long: 'Tap a plank to poke it · tap the felt to drop a ball · drag and release to throw', short: 'Tap: poke · drag: throw' },
  dice: { long: 'Tap a die or ball to poke it · tap the felt to drop a ball · drag and release to throw', short: 'Tap: poke · drag: throw' },
  pile: { long: 'Tap a body to poke it · tap the felt to drop a ball · drag and release to throw', short: 'Tap: poke · drag: throw' },
  flag: { long: 'Drag the flag to pull it', short: 'Drag the flag to pull it' },
  cape: { long: 'Drag the cape to pull it, even while the knight walks', short: 'Drag the cape to pull it' },
  dough: { long: 'Drag to stretch (use several fingers) · double-tap to press a dent', short: 'Drag: stretch · double-tap: dent' },
};

/** Keyboard help for the 3D view (it takes focus with Tab). */
export const KEYS = {
  rigid: '←/→ pick a body · Enter poke it · T throw a ball at it',
  cloth: 'G grab the cloth · arrows pull it · G again to let go',
  soft: 'G grab the dough · arrows pull it · G to let go · D press a dent',
};

export function roomUrl(r) {
  return `/r/${encodeURIComponent(r.id)}` + (r.kind ? `?kind=${encodeURIComponent(r.kind)}&scene=${encodeURIComponent(r.scene || '')}` : '');
}
