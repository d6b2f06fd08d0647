import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { taskKey } from '@baton/protocol';
import {
  spawnWorker,
  startStack,
  stopWorker,
  tokenFor,
  waitFor,
  type Stack,
  type WorkerProcess,
} from '@baton/testing';
import { parse as parseYaml } from 'yaml';

/**
 * The alert rules (deploy/prometheus/alerts.yml) and the dashboard
 * (deploy/grafana/baton.json) read metrics the services really expose. A real gateway, projector
 * and worker are scraped; every expression must parse as PromQL and name only metrics one of them
 * serves. The metrics the rules were written for move as they claim: sessions by state and
 * attention, queued prompts, dead letters, Redis unreachable and back.
 */

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..');
const TENANT = 'acme';

let stack: Stack;
let worker: WorkerProcess;
/** Each role's /metrics. */
let scrapes: { role: string; url: string }[];

/** The port a process logged at start in its JSON line `msg`. */
function loggedPort(output: string, msg: string): number {
  const line = output.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
  if (!line) throw new Error(`no "${msg}" line yet`);
  return (JSON.parse(line) as { metricsPort: number }).metricsPort;
}

beforeAll(async () => {
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    shards: 2,
    // Its start line says which port serves /metrics.
    projectorEnv: { LOG_LEVEL: 'info' },
  });
  worker = await spawnWorker(stack.env);
  const projector = stack.projectors[0]!;
  await waitFor(() => projector.output().includes('"msg":"projector started"'), 'projector port');
  scrapes = [
    { role: 'gateway', url: `${stack.gateways[0]!.url}/metrics` },
    {
      role: 'projector',
      url: `http://127.0.0.1:${loggedPort(projector.output(), 'projector started')}/metrics`,
    },
    {
      role: 'worker',
      url: `http://127.0.0.1:${loggedPort(worker.output(), 'worker ready')}/metrics`,
    },
  ];
});
afterAll(async () => {
  await stopWorker(worker);
  await stack?.stop();
});

/** One role's /metrics; a scrape that hangs fails rather than stalling the test. */
const scrape = async (role: string) =>
  (
    await fetch(scrapes.find((s) => s.role === role)!.url, { signal: AbortSignal.timeout(5_000) })
  ).text();

/** The value of the first sample line matching `series` (a regex source), or null. */
function sample(text: string, series: string): number | null {
  const m = new RegExp(`^${series} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/** Every series name a scrape can hold: histograms' and summaries' own suffixes included. */
async function exposedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const { role } of scrapes) {
    for (const m of (await scrape(role)).matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const [, name, type] = m as unknown as [string, string, string];
      names.add(name);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
      if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
    }
  }
  return names;
}

/** The metric names a PromQL expression selects; throws where it does not parse. */
function metricsOf(expr: string): string[] {
  const tree = parser.parse(expr);
  const names: string[] = [];
  const c = tree.cursor();
  do {
    if (c.type.isError) throw new Error(`not PromQL at ${c.from}: ${expr}`);
    if (c.name === 'Identifier' && c.node.parent?.name === 'VectorSelector') {
      names.push(expr.slice(c.from, c.to));
    }
  } while (c.next());
  return names;
}

it('rejects what is not PromQL or names no metric (the check can fail)', () => {
  expect(() => metricsOf('sum(rate(baton_x[5m])')).toThrow(/not PromQL/);
  expect(metricsOf('max(baton_a{x="y"}) > 0 or vector(0)')).toEqual(['baton_a']);
});

it('every alert rule parses and reads only metrics the services expose', async () => {
  const exposed = await exposedNames();
  const doc = parseYaml(readFileSync(join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
    groups: { name: string; rules: { alert: string; expr: string; for?: string }[] }[];
  };
  const rules = doc.groups.flatMap((g) => g.rules);
  expect(rules.map((r) => r.alert)).toEqual(
    expect.arrayContaining([
      'BatonRedisUnreachable',
      'BatonSessionsStalled',
      'BatonExecutionsWaiting',
      'BatonLeaseChurn',
      'BatonDeadLetters',
    ]),
  );
  for (const r of rules) {
    const names = metricsOf(r.expr);
    expect([r.alert, names.length > 0]).toEqual([r.alert, true]);
    expect([r.alert, names.filter((n) => !exposed.has(n))]).toEqual([r.alert, []]);
    if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
  }
});

it('every dashboard panel has a query, and each reads only metrics the services expose', async () => {
  const exposed = await exposedNames();
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/baton.json'), 'utf8')) as {
    panels: { type: string; title: string; targets?: { expr: string }[] }[];
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  expect(panels.length).toBeGreaterThan(20);
  for (const p of panels) {
    expect([p.title, p.targets?.length ?? 0]).not.toEqual([p.title, 0]);
    for (const t of p.targets!) {
      const names = metricsOf(t.expr);
      expect([p.title, names.filter((n) => !exposed.has(n))]).toEqual([p.title, []]);
    }
  }
});

it('counts sessions by state and attention, queued prompts and dead letters as they happen', async () => {
  const prompt = (key: string) =>
    fetch(`${stack.gateways[0]!.url}/v1/tasks/obs/sessions/s1/prompts`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokenFor(TENANT)}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ text: key, idempotencyKey: key }),
    });
  // No execution: the prompt waits in the queue, and the session needs an operator to start one.
  expect((await prompt('p1')).status).toBeLessThan(300);
  await waitFor(
    async () =>
      sample(
        await scrape('projector'),
        'baton_projector_sessions\\{state="created",attention="needs_operator"\\}',
      ) === 1,
    'one session needing an operator',
  );
  const queued = (text: string) =>
    [...text.matchAll(/^baton_projector_shard_prompts_queued\{[^}]*\} (\S+)$/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
  expect(queued(await scrape('projector'))).toBe(1);

  // Something written to the task stream that is no entry: dead-lettered when the owner reads
  // past it (the next prompt), and counted.
  const key = taskKey(TENANT, 'obs');
  await stack.store.redis.xadd(stack.store.keys.taskStream(key), '*', 'junk', 'not an entry');
  expect((await prompt('p2')).status).toBeLessThan(300);
  const shard = stack.store.shardOf(key);
  await waitFor(
    async () =>
      sample(
        await scrape('projector'),
        `baton_projector_dead_letters_total\\{shard="${shard}"\\}`,
      ) === 1,
    'the dead letter counted',
  );
  expect(queued(await scrape('projector'))).toBe(2);
});

it('shows Redis unreachable in every role while it is down, and reachable again after', async () => {
  const unreachable = async (role: string) =>
    sample(await scrape(role), `baton_${role}_redis_unreachable_nodes(?:\\{[^}]*\\})?`);
  for (const { role } of scrapes) expect([role, await unreachable(role)]).toEqual([role, 0]);
  await stack.redis.kill();
  try {
    for (const { role } of scrapes) {
      await waitFor(async () => (await unreachable(role)) === 1, `${role} sees Redis down`);
    }
  } finally {
    await stack.redis.restart();
  }
  for (const { role } of scrapes) {
    await waitFor(async () => (await unreachable(role)) === 0, `${role} sees Redis back`);
  }
});
