// The client's words for people (issue #18): parameter values in people's units, what a
// closed connection means, names made valid, player names kept inside the protocol's
// 32-byte limit. Pure functions of client-web/src, no browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeParam, paramLabel } from '../../client-web/src/ui/params.js';
import { closeReason } from '../../client-web/src/net/connection.js';
import { suggest } from '../../client-web/src/ui/room-problem.js';
import { capBytes } from '../../client-web/src/net/transport.js';
import { ACTIONS, HINTS } from '../../client-web/src/scenes.js';

test('parameter values read in people\'s units: degrees, m/s, points, on/off', () => {
  assert.equal(describeParam('wind_direction', (144 * Math.PI) / 180), '144°');
  assert.equal(describeParam('wind_direction', 2.51), '144°');
  assert.equal(describeParam('grid', 24), '24 points');
  assert.equal(describeParam('wind', 12), '12 m/s');
  assert.equal(describeParam('walking', 0), 'off');
  assert.equal(describeParam('plasticity', 1), 'on');
  assert.equal(describeParam('restitution', 0.75), '0.75');
  assert.equal(paramLabel('grid'), 'cloth detail');
  assert.equal(paramLabel('some_new_thing'), 'some new thing');
});

test('a closed connection is said in words, not as a code', () => {
  assert.equal(closeReason({ code: 1006, reason: '' }), 'the server stopped or the network dropped');
  assert.equal(closeReason({ code: 1001, reason: '' }), 'the server is restarting');
  assert.match(closeReason({ code: 1008, reason: 'not reading fast enough' }), /not reading fast enough/);
  for (const code of [1000, 1001, 1006, 1008, 1011, 1013, 4000]) assert.doesNotMatch(closeReason({ code, reason: '' }), /\d{4}/);
});

test('a bad room name is turned into a valid one to offer', () => {
  assert.equal(suggest('bad name'), 'bad-name');
  assert.equal(suggest('  ünïcode room!  '), 'unicode-room');
  assert.match(suggest('💥'), /^room-[a-z0-9]+$/);
  assert.match(suggest('x'.repeat(40)), /^x{32}$/);
});

test('a chosen player name is cut to the protocol\'s 32 bytes on a character boundary', () => {
  assert.equal(capBytes('Ana'), 'Ana');
  const cut = capBytes('é'.repeat(20));
  assert.equal(new TextEncoder().encode(cut).length, 32);
  assert.equal(capBytes('😀'.repeat(9)), '😀'.repeat(8));
});

test('every scene has its own actions (its own first) and a short hint for phones', () => {
  assert.equal(ACTIONS.tower[0].label, 'Knock it down');
  assert.ok(!ACTIONS.tower.some((a) => a.action === 'throw_dice'), 'no dice button in the tower room');
  assert.deepEqual(ACTIONS.dice.map((a) => a.action), ['throw_dice']);
  for (const s of ['tower', 'dice', 'pile', 'flag', 'cape', 'dough']) {
    assert.ok(ACTIONS[s]?.length, s);
    assert.ok(HINTS[s].short.length <= 34, `${s}: "${HINTS[s].short}" fits a phone`);
  }
});
