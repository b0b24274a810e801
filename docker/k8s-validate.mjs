// k8s-validate.mjs: the Kubernetes manifests, checked offline. `kubectl
// kustomize docker/` renders them as `kubectl apply -k docker/` would, and
// every object is validated against the Kubernetes OpenAPI schema of its
// kind (kubernetes-models, which carries the schemas: no cluster, no
// network). Then the fleet's own expectations: the servers name Redis, and
// Redis is deployed. Prints one line per object and exits 1 on any failure.
//   node docker/k8s-validate.mjs [DIR]      (DIR defaults to docker/)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] || here;
let failed = 0;
const fail = (what) => { failed++; console.log(`FAIL ${what}`); };

const rendered = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
const objects = parseAllDocuments(rendered).map((d) => {
  if (d.errors.length) fail(`YAML: ${d.errors[0].message}`);
  return d.toJS();
}).filter(Boolean);

for (const obj of objects) {
  const name = `${obj.kind}/${obj.metadata?.name}`;
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
  let Model;
  try {
    const mod = await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${obj.kind}`);
    Model = mod[obj.kind] || mod.default;
  } catch {
    fail(`${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
    continue;
  }
  try {
    new Model(obj).validate();
    console.log(`ok   ${name} (${obj.apiVersion})`);
  } catch (e) {
    fail(`${name}: ${e.message.split('\n').slice(0, 6).join(' ')}`);
  }
}

// The fleet: Redis is there, every Tumble server container points at it.
const find = (kind, name) => objects.find((o) => o.kind === kind && o.metadata?.name === name);
const redisSvc = find('Service', 'redis');
if (!find('StatefulSet', 'redis') || !redisSvc) fail('fleet: a redis StatefulSet and Service');
const server = find('StatefulSet', 'tumble');
const env = server?.spec?.template?.spec?.containers?.find((c) => c.name === 'tumble')?.env ?? [];
const url = env.find((e) => e.name === 'TUMBLE_REDIS')?.value;
const m = url && /^redis:\/\/([^:/]+):(\d+)/.exec(url);
if (!m || m[1] !== 'redis' || !redisSvc?.spec?.ports?.some((p) => p.port === Number(m[2]))) fail(`fleet: TUMBLE_REDIS (${url}) names the redis Service and its port`);
else console.log(`ok   fleet: servers use ${url}`);

// TLS: the Ingress ends TLS with a Secret and sends to a port the router Service has.
const ingress = objects.find((o) => o.kind === 'Ingress');
const routerSvc = find('Service', 'tumble-router');
const backend = ingress?.spec?.rules?.[0]?.http?.paths?.[0]?.backend?.service;
if (!ingress?.spec?.tls?.[0]?.secretName) fail('tls: an Ingress with a TLS secret');
else if (!backend || backend.name !== 'tumble-router' || !routerSvc?.spec?.ports?.some((p) => p.name === backend.port?.name || p.port === backend.port?.number)) fail('tls: the Ingress sends to a port of the tumble-router Service');
else console.log(`ok   tls: Ingress ${ingress.metadata.name} ends TLS with secret ${ingress.spec.tls[0].secretName}`);

console.log(`k8s: ${objects.length} objects, ${failed} failed`);
process.exit(failed ? 1 : 0);
