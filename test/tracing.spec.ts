import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  spawnGateway,
  spawnProjector,
  spawnWorker,
  startStack,
  stopWorker,
  token,
  waitFor,
  type Stack,
  type WorkerProcess,
} from '@baton/testing';
import { taskKey, type TaskView } from '@baton/protocol';

/**
 * One trace per prompt across processes. A real gateway, projector and worker export to
 * an OTLP/HTTP receiver inside the test; a prompt to a replayed agent must show as one connected
 * trace — the gateway's request and submit, the owner's decision and dispatch, the worker's turn
 * with its milestones — and still so when the owner that decides is not the one that was running
 * when the prompt came in (kill -9, a new projector takes the shard): the context travels in the
 * entries, not in any one process.
 */

jest.setTimeout(180_000);

const TENANT = 'acme';
const PROFILES = JSON.stringify({
  profiles: { codex: { kind: 'replay', recording: 'codex-real-exec', speed: 0 } },
});
const tok = token({ tenant: TENANT, scope: 'read prompt execute' });

interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, string | number | boolean>;
  events: string[];
}

/** What the receiver got: every span of every export, in arrival order. */
const spans: ExportedSpan[] = [];
let receiver: Server;
let otel: Record<string, string>;
let stack: Stack;
let worker: WorkerProcess;

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };
const valueOf = (v: AnyValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue!);
const attrs = (kvs: KeyValue[] = []) =>
  Object.fromEntries(kvs.map((kv) => [kv.key, valueOf(kv.value)]));

/** OTLP/HTTP with JSON bodies (OTEL_EXPORTER_OTLP_PROTOCOL=http/json): ids are hex strings. */
function collect(body: string): void {
  const req = JSON.parse(body) as {
    resourceSpans: {
      resource: { attributes: KeyValue[] };
      scopeSpans: {
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          attributes?: KeyValue[];
          events?: { name: string }[];
        }[];
      }[];
    }[];
  };
  for (const rs of req.resourceSpans) {
    const service = String(attrs(rs.resource.attributes)['service.name']);
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        spans.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          attributes: attrs(s.attributes),
          events: (s.events ?? []).map((e) => e.name),
        });
      }
    }
  }
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') collect(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  otel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
  };
  stack = await startStack({
    gateways: 1,
    projectors: 1,
    shards: 1,
    gatewayEnv: { ...otel, BATON_PROFILES: PROFILES },
    projectorEnv: { ...otel, BATON_INSTANCE_ID: 'p-first' },
  });
  worker = await spawnWorker({
    ...stack.env,
    ...otel,
    BATON_PROFILES: PROFILES,
    LOG_LEVEL: 'debug',
  });
});
afterAll(async () => {
  await stopWorker(worker);
  await stack?.stop();
  await new Promise<void>((r) => receiver?.close(() => r()));
});

async function rest(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.gateways[0]!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const session = async (taskId: string) =>
  ((await stack.store.views.read(taskKey(TENANT, taskId))) as TaskView | null)?.sessions.find(
    (s) => s.sessionId === 's',
  );

async function readyAgent(taskId: string): Promise<void> {
  const started = await rest('POST', `/v1/tasks/${taskId}/sessions/s/executions`, {
    profile: 'codex',
  });
  expect(started.status).toBe(202);
  await waitFor(async () => (await session(taskId))?.activity.state === 'idle', 'agent ready');
}

/** The trace of the prompt submitted under `key`, once its turn has ended on the worker. */
/** What a prompt's trace holds once every process has exported its part. */
const PROMPT_SPANS = [
  'baton.prompt.submit',
  'baton.prompt.decide',
  'baton.prompt.dispatch',
  'baton.agent.turn',
];

/**
 * The trace of the prompt submitted under `key`, once it holds each span of a prompt's path:
 * each process exports on its own schedule, so the worker's turn may arrive before the owner's
 * decision.
 */
async function traceOf(key: string): Promise<ExportedSpan[]> {
  return waitFor(() => {
    const submit = spans.find(
      (s) => s.name === 'baton.prompt.submit' && s.attributes['baton.idempotency_key'] === key,
    );
    if (!submit) return null;
    const trace = spans.filter((s) => s.traceId === submit.traceId);
    return PROMPT_SPANS.every((name) => trace.some((s) => s.name === name)) ? trace : null;
  }, `the trace of ${key}, from its submit to the end of its turn`);
}

const one = (trace: ExportedSpan[], name: string) => {
  const found = trace.filter((s) => s.name === name);
  expect([name, found.length]).toEqual([name, 1]);
  return found[0]!;
};

/** Every span's parent is in the trace, but the root's: one tree, nothing detached. */
function expectConnected(trace: ExportedSpan[]): void {
  const ids = new Set(trace.map((s) => s.spanId));
  const roots = trace.filter((s) => !s.parentSpanId);
  expect(roots.map((r) => r.name)).toHaveLength(1);
  expect(trace.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId))).toEqual([]);
}

it('follows one prompt from the request to the agent turn in one trace', async () => {
  await readyAgent('t-trace');
  const p = await rest('POST', '/v1/tasks/t-trace/sessions/s/prompts', {
    text: 'Run the tests',
    idempotencyKey: 'k-1',
  });
  expect(p.status).toBe(200);
  const trace = await traceOf('k-1');

  const submit = one(trace, 'baton.prompt.submit');
  const decide = one(trace, 'baton.prompt.decide');
  const dispatch = one(trace, 'baton.prompt.dispatch');
  const turn = one(trace, 'baton.agent.turn');
  // The HTTP request (instrumented) is the root; the submit is its child.
  const root = trace.find((s) => !s.parentSpanId)!;
  expect(root).toMatchObject({ service: 'baton-gateway' });
  expect(submit).toMatchObject({ service: 'baton-gateway', parentSpanId: root.spanId });
  expect(submit.attributes).toMatchObject({
    'baton.decision': 'admitted',
    'baton.prompt': p.body.promptId,
  });
  expect(decide).toMatchObject({ service: 'baton-projector', parentSpanId: submit.spanId });
  expect(decide.attributes).toMatchObject({
    'baton.decision': 'prompt.admitted',
    'baton.prompt': p.body.promptId,
    'baton.owner': 'p-first',
  });
  expect(dispatch).toMatchObject({ service: 'baton-projector', parentSpanId: submit.spanId });
  expect(turn).toMatchObject({ service: 'baton-worker', parentSpanId: dispatch.spanId });
  expect(turn.events).toEqual(expect.arrayContaining(['sent to the agent', 'first output']));
  expect(turn.attributes['baton.stop_reason']).toBe('end_turn');
  // The append is a Redis command made under the submit (ioredis instrumentation).
  expect(
    trace.some(
      (s) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis',
    ),
  ).toBe(true);
  expectConnected(trace);
  // What the worker logged during the turn names its trace.
  expect(worker.output()).toContain(`"trace_id":"${submit.traceId}"`);
});

it('keeps one trace when another owner decides the prompt (kill -9, failover)', async () => {
  await readyAgent('t-failover');
  await stack.projectors[0]!.stop('SIGKILL');
  // Nobody owns the shard: the gateway appends and answers `pending` after its wait.
  const p = await rest('POST', '/v1/tasks/t-failover/sessions/s/prompts', {
    text: 'Run the tests',
    idempotencyKey: 'k-2',
  });
  expect(p.body).toMatchObject({ status: 'pending' });
  stack.projectors.push(
    await spawnProjector({ ...stack.env, ...otel, BATON_INSTANCE_ID: 'p-second' }),
  );

  const trace = await traceOf('k-2');
  const submit = one(trace, 'baton.prompt.submit');
  expect(submit.attributes['baton.decision']).toBe('pending');
  const decide = one(trace, 'baton.prompt.decide');
  expect(decide).toMatchObject({ parentSpanId: submit.spanId });
  expect(decide.attributes).toMatchObject({
    'baton.owner': 'p-second',
    'baton.decision': 'prompt.admitted',
  });
  const dispatch = one(trace, 'baton.prompt.dispatch');
  expect(one(trace, 'baton.agent.turn')).toMatchObject({ parentSpanId: dispatch.spanId });
  expectConnected(trace);
});

it('exports nothing and carries no trace context when tracing is not configured', async () => {
  // The stack's own Redis client (the test's) writes no traceparent; a gateway without OTEL_*
  // writes none either: the entry of a prompt through it has no trace context.
  const plain = await spawnGateway({ ...stack.env });
  try {
    const before = spans.length;
    const res = await fetch(`${plain.url}/v1/tasks/t-plain/sessions/s/prompts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello', idempotencyKey: 'k-3' }),
    });
    expect(res.status).toBeLessThan(300);
    const entries = await stack.store.redis.xrange(
      stack.store.keys.taskStream(taskKey(TENANT, 't-plain')),
      '-',
      '+',
    );
    const submits = entries.filter(([, f]) => f.join(' ').includes('prompt.submit'));
    expect(submits).toHaveLength(1);
    expect(submits[0]![1].join(' ')).not.toContain('traceparent');
    expect(
      spans.slice(before).filter((s) => s.attributes['baton.idempotency_key'] === 'k-3'),
    ).toEqual([]);
  } finally {
    await plain.stop();
  }
});
