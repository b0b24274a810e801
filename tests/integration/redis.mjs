// redis.mjs: a private redis-server for a test, on a free loopback port,
// stopped when the test file ends (even when a test fails).
import { spawn, execFileSync } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const running = new Set();
process.on('exit', () => { for (const r of running) try { r.proc.kill('SIGKILL'); } catch { /* gone */ } });

export function redisAvailable() {
  try { execFileSync('redis-server', ['--version'], { stdio: 'ignore' }); return true; } catch { return false; }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

async function waitListening(port, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.end(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

// Starts redis-server (no persistence) on port, or a free one. Returns
// { port, url, proc, stop(signal), restart() }.
export async function startRedis({ port } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-redis-'));
  for (let attempt = 0; attempt < 5; attempt++) {
    const p = port ?? await freePort();
    const proc = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--loglevel', 'warning'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    proc.stdout.on('data', (d) => { log += d; });
    proc.stderr.on('data', (d) => { log += d; });
    const r = { port: p, url: `redis://127.0.0.1:${p}`, proc, get log() { return log; } };
    r.exited = new Promise((res) => proc.on('exit', () => { running.delete(r); res(); }));
    running.add(r);
    r.stop = async (signal = 'SIGTERM') => { if (running.has(r)) { proc.kill(signal); await r.exited; } };
    r.restart = async () => { await r.stop('SIGKILL'); const again = await startRedis({ port: p }); fs.rmSync(dir, { recursive: true, force: true }); return again; };
    if (await waitListening(p, 10000)) return r;
    await r.stop('SIGKILL');
    if (port) throw new Error(`redis-server did not listen on ${port}: ${log}`);
  }
  throw new Error('redis-server did not start');
}

export async function stopAllRedis() {
  await Promise.all([...running].map((r) => r.stop('SIGKILL')));
}
