// shutdown.test.mjs: SIGTERM and SIGINT end a serving tumble-server within
// 2 s with exit code 0, and connected clients see close code 1001.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stopAll, connect, join } from './harness.mjs';

after(stopAll);

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`${signal} closes clients with 1001 and exits 0 within 2 s`, async () => {
    const srv = await startServer();
    const clients = [];
    for (const room of ['tower', 'dice', 'flag']) {
      const c = await connect(srv.port);
      await join(c, room);
      await c.snapshot();
      clients.push(c);
    }
    const idle = await connect(srv.port); // connected, never joined
    const t0 = performance.now();
    srv.proc.kill(signal);
    const exit = await srv.exited;
    const ms = performance.now() - t0;
    assert.equal(exit.code, 0, `exit ${exit.code} ${exit.signal}\n${srv.stderr}`);
    assert.ok(ms < 2000, `took ${ms.toFixed(0)} ms`);
    for (const c of [...clients, idle]) assert.equal((await c.whenClosed).code, 1001);
  });
}
