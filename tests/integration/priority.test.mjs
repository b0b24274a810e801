// priority.test.mjs: the worker threads run at the nice value --worker-nice
// asks for (-10 by default), the network thread at the server's own, and a
// refused request leaves a working server that says why; each worker runs on
// a CPU of its own when there are enough (--pin-workers, sim/sched.h).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer, stopAll, connect, join, metrics, sleep } from './harness.mjs';

after(stopAll);

const IS_ROOT = process.getuid() === 0;
// CAP_SYS_NICE (bit 23 of the effective set): root has it on a machine, not in a
// container that was not given it (podman's and Docker's defaults)
const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1];
const HAS_SYS_NICE = ((BigInt('0x' + capEff) >> 23n) & 1n) === 1n;
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p));

// Thread name -> nice value, from /proc/<pid>/task/*/stat (field 19; the
// name in parentheses may hold spaces, so count from the last ')').
function threadNices(pid) {
  const out = {};
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out[Number(tid) === pid ? 'main' : name + '#' + tid] = Number(fields[16]); // field 19 overall
  }
  return out;
}

function workerNices(nices) {
  return Object.entries(nices).filter(([k]) => k.startsWith('tb-worker-')).map(([, v]) => v);
}

const ownNice = () => Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[16]);

// A room joined now takes at least 40 of its 60 steps in half a second.
async function assertRoomSteps(srv, id) {
  const c = await connect(srv.port);
  await join(c, id, 'tower');
  const steps = async () => (await (await fetch(`${srv.url}/api/rooms`)).json()).find((r) => r.id === id).steps;
  const before = await steps();
  await sleep(500);
  const later = await steps();
  assert.ok(later - before >= 40, `stepped ${later - before} in 0.5 s`);
  c.close();
}

async function exportedNice(srv) {
  const m = await metrics(srv.url);
  return m.tumble_worker_nice;
}

test('by default the workers ask for nice -10; the network thread keeps the server\'s own', async (t) => {
  const srv = await startServer({ args: ['--workers', '2'] });
  const nices = threadNices(srv.proc.pid);
  const workers = workerNices(nices);
  assert.equal(workers.length, 2, JSON.stringify(nices));
  assert.equal(nices.main, ownNice(), 'the network thread is left alone');
  const exported = await exportedNice(srv);
  assert.deepEqual(workers, [exported, exported], 'tumble_worker_nice is what the workers run at');
  if (HAS_SYS_NICE) {
    assert.deepEqual(workers, [-10, -10]);
    assert.doesNotMatch(srv.stderr, /was refused/);
  } else if (workers[0] !== -10) {
    // no CAP_SYS_NICE and no RLIMIT_NICE here: refused, and said so
    assert.match(srv.stderr, /worker threads at nice -?\d+: nice -10 was refused/);
    t.diagnostic('no CAP_SYS_NICE: the refusal path was checked instead');
  }
});

test('--worker-nice 5 lowers only the workers (allowed without privileges)', async () => {
  const srv = await startServer({ args: ['--workers', '2', '--worker-nice', '5'] });
  const nices = threadNices(srv.proc.pid);
  assert.deepEqual(workerNices(nices), [5, 5]);
  assert.equal(nices.main, ownNice());
  assert.equal(await exportedNice(srv), 5);
});

test('--worker-nice 0 leaves the workers at the server\'s own nice value', async () => {
  const srv = await startServer({ args: ['--workers', '2', '--worker-nice', '0'] });
  assert.deepEqual(workerNices(threadNices(srv.proc.pid)), [ownNice(), ownNice()]);
  assert.equal(await exportedNice(srv), ownNice());
});

test('refused (no CAP_SYS_NICE): a warning names the refusal, and the rooms step on', { skip: !(IS_ROOT && SETPRIV) && 'needs root and setpriv to drop CAP_SYS_NICE' }, async () => {
  // root without CAP_SYS_NICE, as in a container that was not given it
  const srv = await startServer({
    args: ['--workers', '2'],
    wrapper: [SETPRIV, '--inh-caps=-sys_nice', '--bounding-set=-sys_nice', '--'],
  });
  assert.match(srv.stderr, /warn +worker threads at nice 0: nice -10 was refused \((Permission denied|Operation not permitted)\)/);
  assert.match(srv.stderr, /CAP_SYS_NICE or RLIMIT_NICE/);
  assert.deepEqual(workerNices(threadNices(srv.proc.pid)), [ownNice(), ownNice()]);
  assert.equal(await exportedNice(srv), ownNice());
  await assertRoomSteps(srv, 'nice-refused');
});

// (pinned only when the CPUs are exactly as many as the workers)
// Thread name -> the CPUs it may run on ("0-1", "1"), from /proc/<pid>/task/*/status.
function threadCpus(pid) {
  const out = {};
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    const name = /^Name:\s*(.*)$/m.exec(status)[1];
    out[Number(tid) === pid ? 'main' : name] = /^Cpus_allowed_list:\s*(.*)$/m.exec(status)[1];
  }
  return out;
}
const ownCpus = threadCpus(process.pid).main;
const cpuCount = (list) => list.split(',').reduce((n, r) => {
  const [a, b] = r.split('-').map(Number);
  return n + (b === undefined ? 1 : b - a + 1);
}, 0);
const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((p) => fs.existsSync(p));

test('each worker runs on a CPU of its own; the network thread keeps them all', { skip: cpuCount(ownCpus) !== 2 && 'needs exactly 2 CPUs' }, async () => {
  const srv = await startServer({ args: ['--workers', '2'] });
  const cpus = threadCpus(srv.proc.pid);
  assert.equal(cpus.main, ownCpus, JSON.stringify(cpus));
  const mine = [cpus['tb-worker-0'], cpus['tb-worker-1']];
  for (const c of mine) assert.equal(cpuCount(c), 1, JSON.stringify(cpus));
  assert.notEqual(mine[0], mine[1], JSON.stringify(cpus));
  assert.equal((await metrics(srv.url)).tumble_workers_pinned, 2);
});

test('more CPUs than workers (a shared machine): none is pinned', { skip: cpuCount(ownCpus) < 2 && 'one CPU here' }, async () => {
  const srv = await startServer({ args: ['--workers', '1'] });
  assert.equal(threadCpus(srv.proc.pid)['tb-worker-0'], ownCpus);
  assert.equal((await metrics(srv.url)).tumble_workers_pinned, 0);
});

test('--pin-workers 0 leaves the workers where the kernel puts them', async () => {
  const srv = await startServer({ args: ['--workers', '2', '--pin-workers', '0'] });
  const cpus = threadCpus(srv.proc.pid);
  assert.deepEqual([cpus['tb-worker-0'], cpus['tb-worker-1']], [ownCpus, ownCpus], JSON.stringify(cpus));
  assert.equal((await metrics(srv.url)).tumble_workers_pinned, 0);
});

test('fewer CPUs than workers: none is pinned, and the rooms step on', { skip: !TASKSET && 'no taskset' }, async () => {
  const one = ownCpus.split(/[,-]/)[0];
  const srv = await startServer({ args: ['--workers', '2'], wrapper: [TASKSET, '-c', one] });
  const cpus = threadCpus(srv.proc.pid);
  assert.deepEqual([cpus['tb-worker-0'], cpus['tb-worker-1']], [one, one], JSON.stringify(cpus));
  assert.equal((await metrics(srv.url)).tumble_workers_pinned, 0);
  await assertRoomSteps(srv, 'one-cpu');
});
