// deploy/kubernetes, checked without a cluster: every object validates against the Kubernetes API
// schemas (kubernetes-models, typed models generated from them), and what the manifests promise
// is what the services do — the probes hit the paths and ports the processes serve, every
// variable is a setting Baton knows, Redis runs with docker-compose.yml's own arguments, each
// Deployment has a disruption budget, and only the gateway is reachable from outside.
import { COMMON, GATEWAY, PROJECTOR, PROFILES, WORKER } from '@baton/config';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { COMPOSE_SECRETS, composeRedisArgs } from './compose-file';
import { ROOT } from '@baton/testing';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
};
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string } } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
}

const DIR = join(ROOT, 'deploy', 'kubernetes');
/** Every variable a shipped profile passes on to its agent (its inheritEnv). */
const PROFILE_ENV = Object.values(
  (
    JSON.parse(readFileSync(join(ROOT, 'deploy', 'profiles.json'), 'utf8')) as {
      profiles: Record<string, { inheritEnv?: string[] }>;
    }
  ).profiles,
).flatMap((p) => p.inheritEnv ?? []);
const kustomization = parse(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8')) as {
  namespace: string;
  resources: string[];
};
const objects: Obj[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((d) => d.toJS() as Obj),
);
const of = (kind: string) => objects.filter((o) => o.kind === kind);
const named = (kind: string, name: string) => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};
const podSpec = (o: Obj) =>
  (
    o.spec as {
      template: { spec: { containers: Container[]; terminationGracePeriodSeconds: number } };
    }
  ).template.spec;

/** Each object's validation against the API schemas: null, or why it is not valid. */
function validate(objs: unknown[]): (string | null)[] {
  const out = execFileSync(process.execPath, [join(__dirname, 'kubernetes-validate.mjs')], {
    cwd: ROOT,
    input: JSON.stringify(objs),
  });
  return JSON.parse(out.toString()) as (string | null)[];
}

describe('deploy/kubernetes', () => {
  it('validates every object against the Kubernetes API schemas', () => {
    expect(objects.length).toBeGreaterThan(10);
    const secret = parse(readFileSync(join(DIR, 'secret.example.yaml'), 'utf8')) as Obj;
    const all = [...objects, secret];
    expect(validate(all)).toEqual(all.map(() => null));
    // A wrong field type is caught: the check can fail.
    const broken = JSON.parse(JSON.stringify(named('Deployment', 'gateway'))) as Obj;
    podSpec(broken).containers[0]!.ports![0]!.containerPort = 'eighty' as unknown as number;
    expect(validate([broken])[0]).toMatch(/containerPort/);
  });

  it('probes each role where its process serves health and readiness', () => {
    const served: Record<string, { port: number; ready: string }> = {
      gateway: { port: 8080, ready: '/readyz' },
      projector: { port: 9464, ready: '/healthz' },
      worker: { port: 9465, ready: '/healthz' },
    };
    for (const [role, want] of Object.entries(served)) {
      const [c] = podSpec(named('Deployment', role)).containers;
      expect(c!.command).toEqual(['node', `dist/apps/${role}/src/main.js`]);
      const portOf = (p: string | number) =>
        typeof p === 'number' ? p : c!.ports!.find((x) => x.name === p)!.containerPort;
      expect([
        role,
        portOf(c!.readinessProbe!.httpGet!.port),
        c!.readinessProbe!.httpGet!.path,
      ]).toEqual([role, want.port, want.ready]);
      expect([
        role,
        portOf(c!.livenessProbe!.httpGet!.port),
        c!.livenessProbe!.httpGet!.path,
      ]).toEqual([role, want.port, '/healthz']);
      // The port the process listens on is the one its setting names.
      const env = Object.fromEntries((c!.env ?? []).map((e) => [e.name, e.value]));
      const portSetting = {
        gateway: 'GATEWAY_PORT',
        projector: 'PROJECTOR_METRICS_PORT',
        worker: 'WORKER_METRICS_PORT',
      }[role]!;
      expect([role, Number(env[portSetting])]).toEqual([role, want.port]);
    }
  });

  it('sets only variables Baton knows, secrets from the secret, and REDIS_URL as each role’s user', () => {
    const known = new Set([
      ...Object.keys({ ...COMMON, ...GATEWAY, ...PROJECTOR, ...WORKER, ...PROFILES }),
      ...Object.keys(COMPOSE_SECRETS),
      // What the shipped profiles pass on to their agents.
      ...PROFILE_ENV,
    ]);
    const secretKeys = Object.keys(
      (parse(readFileSync(join(DIR, 'secret.example.yaml'), 'utf8')) as { stringData: object })
        .stringData,
    );
    for (const role of ['gateway', 'projector', 'worker']) {
      const [c] = podSpec(named('Deployment', role)).containers;
      for (const e of c!.env ?? []) {
        expect([role, e.name, known.has(e.name)]).toEqual([role, e.name, true]);
        const key = e.valueFrom?.secretKeyRef?.key;
        if (key !== undefined) expect(secretKeys).toContain(key);
      }
      const env = Object.fromEntries((c!.env ?? []).map((e) => [e.name, e.value]));
      const password = `BATON_REDIS_${role.toUpperCase()}_PASSWORD`;
      expect(env.REDIS_URL).toBe(`redis://${role}:$(${password})@redis:6379`);
      // Kubernetes expands $(VAR) only from variables defined before it.
      const names = c!.env!.map((e) => e.name);
      expect(names.indexOf(password)).toBeLessThan(names.indexOf('REDIS_URL'));
      expect(env.BATON_PREFIX).toBe('baton');
    }
  });

  it("runs Redis with docker-compose.yml's own arguments: AOF, fsync always, the same ACL users", () => {
    const [redis] = podSpec(named('StatefulSet', 'redis')).containers;
    const args = redis!.args!.filter((a, i, all) => a !== '--dir' && all[i - 1] !== '--dir');
    const asCompose = args.map((a) =>
      a.replace(/\$\((BATON_REDIS_\w+_PASSWORD)\)/g, (_, name: string) => COMPOSE_SECRETS[name]!),
    );
    expect(asCompose).toEqual(composeRedisArgs());
    expect(redis!.image).toBe(
      (
        parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as {
          services: { redis: { image: string } };
        }
      ).services.redis.image,
    );
  });

  it('keeps each role through disruptions, scales the gateway on CPU and the workers on the queue', () => {
    for (const role of ['gateway', 'projector', 'worker']) {
      const labels = (named('Deployment', role).spec as { selector: { matchLabels: object } })
        .selector.matchLabels;
      const pdb = of('PodDisruptionBudget').find(
        (p) =>
          JSON.stringify((p.spec as { selector: { matchLabels: object } }).selector.matchLabels) ===
          JSON.stringify(labels),
      );
      expect([role, pdb !== undefined]).toEqual([role, true]);
    }
    const hpa = (name: string) =>
      named('HorizontalPodAutoscaler', name).spec as {
        scaleTargetRef: { name: string };
        metrics: {
          type: string;
          resource?: { name: string };
          external?: { metric: { name: string } };
        }[];
      };
    expect(hpa('gateway').scaleTargetRef.name).toBe('gateway');
    expect(hpa('gateway').metrics[0]).toMatchObject({
      type: 'Resource',
      resource: { name: 'cpu' },
    });
    expect(hpa('worker').metrics[0]).toMatchObject({
      type: 'External',
      external: { metric: { name: 'baton_worker_executions_waiting' } },
    });
    // The metric the worker autoscaler reads is one a worker really exposes.
    const metrics = readFileSync(join(ROOT, 'libs', 'worker', 'src', 'metrics.ts'), 'utf8');
    expect(metrics).toContain("'baton_worker_executions_waiting'");
    // Graceful shutdown: as long as compose gives each role (stop_grace_period) or more.
    expect(
      podSpec(named('Deployment', 'worker')).terminationGracePeriodSeconds,
    ).toBeGreaterThanOrEqual(30);
    expect(
      podSpec(named('Deployment', 'projector')).terminationGracePeriodSeconds,
    ).toBeGreaterThanOrEqual(10);
  });

  it('lets in from outside only the gateway, and Redis only from Baton’s pods', () => {
    const policies = of('NetworkPolicy').map(
      (p) =>
        p.spec as {
          podSelector: { matchLabels?: Record<string, string> };
          policyTypes: string[];
          ingress?: { from?: unknown[]; ports?: { port: number }[] }[];
        },
    );
    // A default deny for every pod of the namespace.
    expect(
      policies.some(
        (p) =>
          Object.keys(p.podSelector).length === 0 &&
          p.policyTypes.includes('Ingress') &&
          !p.ingress,
      ),
    ).toBe(true);
    const open = policies.filter((p) => p.ingress?.some((r) => r.from === undefined));
    expect(open.map((p) => p.podSelector.matchLabels)).toEqual([
      { 'app.kubernetes.io/name': 'baton-gateway' },
    ]);
    expect(open[0]!.ingress![0]!.ports).toEqual([{ port: 8080, protocol: 'TCP' }]);
    const services = of('Service').filter(
      (s) => (s.spec as { type?: string }).type === 'LoadBalancer',
    );
    expect(services.map((s) => s.metadata.name)).toEqual(['gateway']);
    expect(kustomization.namespace).toBe('baton');
  });
});
