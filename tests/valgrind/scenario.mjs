// scenario.mjs: `make test-valgrind`. Starts tumble-server under valgrind
// memcheck (tumble-server-valgrind.sh) with --state-dir and --record, plays a
// short session in each world kind (join, throws, pokes, grabs, a parameter
// change, a reset, garbage, leave), sends SIGTERM and requires exit code 0:
// valgrind turns any memory error or definite/indirect leak into 99. The
// full report is build/valgrind.log.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
process.env.TUMBLE_SERVER_BIN = path.join(here, 'tumble-server-valgrind.sh');
process.env.TUMBLE_VALGRIND_LOG = path.resolve(here, '../../build/valgrind.log');
const { startServer, connect, sleep, metrics } = await import('../integration/harness.mjs');

const t0 = performance.now();
const state = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-vg-'));
const srv = await startServer({ args: ['--workers', '2', '--state-dir', state, '--record', state, '--log-level', 'info'], timeoutMs: 120000 });
let failure = null;
try {
  const clients = [];
  for (const [room, scene] of [['vg-tower', 'tower'], ['vg-flag', 'flag'], ['vg-dough', 'dough'], ['dice', null]]) {
    const c = await connect(srv.port, { name: 'vg' });
    c.send({ type: 'hello', version: 1, room, kind: null, scene, name: 'vg' });
    await c.type('welcome', 60000);
    await c.snapshot(30000);
    clients.push(c);
  }
  const [tower, flag, dough, dice] = clients;
  tower.send({ type: 'action', action: 'knock', scene: null });
  tower.send({ type: 'throw', origin: [0, 2, 0], velocity: [3, 1, 0], shape: 'ball' });
  tower.send({ type: 'poke', body: 3, point: [0, 0.5, 0], impulse: [0, 1, 0] });
  tower.send({ type: 'grab_start', pointer: 1, point: [0, 0.5, 0], body: 2 });
  tower.send({ type: 'grab_move', pointer: 1, point: [0.5, 1, 0] });
  tower.send({ type: 'param', name: 'friction', value: 0.7 });
  tower.send({ type: 'contacts_view', on: true });
  flag.send({ type: 'param', name: 'wind', value: 12 });
  flag.send({ type: 'grab_start', pointer: 0, point: [1, 2.5, 0], body: null });
  flag.send({ type: 'grab_move', pointer: 0, point: [1.5, 2.5, 0.5] });
  dough.send({ type: 'grab_start', pointer: 0, point: [0, 1.6, 0], body: null });
  dough.send({ type: 'grab_move', pointer: 0, point: [0, 2.4, 0] });
  dough.send({ type: 'poke', body: null, point: [1, 0.8, 0], impulse: [-5, 0, 0] });
  dice.send({ type: 'action', action: 'throw_dice', scene: null });
  tower.sendRaw(Buffer.from([0xc1, 0xdd, 0xff, 0xff, 0xff, 0xff]));
  await sleep(3000);
  dough.send({ type: 'grab_end', pointer: 0 });
  flag.close(); // leaves holding a grab
  await sleep(1000);
  const m = await metrics(srv.url);
  if (!(m.tumble_steps_total > 0)) throw new Error('no steps');
  tower.close();
  await sleep(500);
} catch (e) {
  failure = e;
} finally {
  const exit = await srv.stop('SIGTERM');
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const log = fs.existsSync(process.env.TUMBLE_VALGRIND_LOG) ? fs.readFileSync(process.env.TUMBLE_VALGRIND_LOG, 'utf8') : '';
  const summary = log.split('\n').filter((l) => /ERROR SUMMARY|definitely lost|indirectly lost/.test(l)).join('\n');
  const saved = /saved (\d+) room/.exec(srv.stderr);
  console.log(`valgrind scenario: exit ${exit.code} ${exit.signal ?? ''} after ${secs} s, ${saved ? saved[1] : 'no'} rooms saved\n${summary}`);
  fs.rmSync(state, { recursive: true, force: true });
  if (failure) console.log(`scenario failed: ${failure.stack}\nserver stderr:\n${srv.stderr.slice(-3000)}`);
  if (exit.code !== 0 || failure) {
    console.log(log.split('\n').slice(-80).join('\n'));
    process.exit(1);
  }
}
