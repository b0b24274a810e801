// router.mjs: the project's own nginx room router (docker/nginx, rendered by
// render.sh) in front of servers on loopback, for tests of a fleet. Started on a
// free port (plus a TLS port with a self-signed pair, when asked); stop() ends it,
// and so does the test process's exit.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const NGINX = process.env.NGINX || (fs.existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx');
export const nginxAvailable = () => spawnSync(NGINX, ['-v']).status === 0;

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/**
 * upstreams: ports of the servers. Returns { port, tlsPort, tmp, url, stop() }
 * once /router/healthz answers; with tls, tmp/tls.crt is the router's certificate.
 */
export async function startRouter({ upstreams, tls = false, connsPerAddress = 1000 }) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tumble-router-'));
  const port = await freePort();
  const tlsPort = tls ? await freePort() : 0;
  const dir = path.join(tmp, 'nginx');
  const env = { ...process.env, TUMBLE_UPSTREAMS: upstreams.map((p) => `127.0.0.1:${p}`).join(' '),
    TUMBLE_ROUTER_LISTEN: `127.0.0.1:${port}`, TUMBLE_ROUTER_CONNS_PER_ADDRESS: String(connsPerAddress), TUMBLE_ROUTER_LOG: 'error' };
  if (tls) Object.assign(env, { TUMBLE_ROUTER_TLS_CERT: path.join(tmp, 'tls.crt'), TUMBLE_ROUTER_TLS_KEY: path.join(tmp, 'tls.key'),
    TUMBLE_ROUTER_TLS_SELF_SIGNED: '1', TUMBLE_ROUTER_TLS_LISTEN: `127.0.0.1:${tlsPort}` });
  const r = spawnSync('sh', [path.join(ROOT, 'docker/nginx/render.sh'), dir], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`render.sh failed: ${r.stderr}`);
  const proc = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', 'stderr'], { stdio: 'ignore' });
  const kill = () => { try { proc.kill('SIGKILL'); } catch { /* gone */ } };
  process.on('exit', kill);
  const exited = new Promise((res) => proc.once('exit', res).once('error', res));
  for (let i = 0; i < 150; i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/router/healthz`)).ok) break; } catch { /* not yet */ }
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    port, tlsPort, tmp, url: `http://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      process.off('exit', kill);
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
