/**
 * OpenTelemetry for every role: off unless an OTLP endpoint is configured, through the standard
 * variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, and the other
 * `OTEL_*` the SDK reads: protocol, headers, sampler, resource attributes). A prompt's trace
 * crosses processes inside Baton's own records, not through a live call: its submit entry and
 * its delivery carry a W3C `traceparent`, so whichever owner decides it and whichever worker runs
 * it — after any failover — continue the trace the gateway began.
 */
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
// Types only: the packages themselves are required when tracing starts.
import type * as Http from '@opentelemetry/instrumentation-http';
import type * as IORedis from '@opentelemetry/instrumentation-ioredis';
import type * as SdkNode from '@opentelemetry/sdk-node';

/** Health checks and scrapes would be most of the traces and say nothing about a prompt. */
const UNTRACED_PATHS = new Set(['/metrics', '/healthz', '/readyz']);

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the SDK with the HTTP and ioredis instrumentations when tracing is configured; returns
 * what flushes and stops it (call before the process exits). Instrumentations patch modules as
 * they are loaded, so this runs before anything requires ioredis: each app's main imports its
 * `tracing` module first. The SDK is loaded only when used, so a process without tracing pays
 * nothing for it.
 */
export function startTracing(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): () => Promise<void> {
  if (!tracingConfigured(env)) return () => Promise.resolve();
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof Http;
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof IORedis;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? service,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]!),
      }),
      // Only Redis commands made for a traced request: the owners' and tails' polling loops
      // would otherwise fill the backend with traces of their own.
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return () => sdk.shutdown();
}

const tracer = () => trace.getTracer('baton');

/** The W3C traceparent of `span`, or undefined when tracing is off (nothing to carry). */
export function traceparentOf(span: Span): string | undefined {
  if (!span.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier.traceparent;
}

/** The context a carried traceparent names, under which a span continues its trace. */
export function contextOf(traceparent: string | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/**
 * Starts a span as a child of the active context, or of a carried traceparent when given;
 * `startTime` (epoch ms) when it began before the call.
 */
export function startSpan(
  name: string,
  attributes: Attributes,
  traceparent?: string,
  startTime?: number,
): Span {
  const parent = traceparent === undefined ? context.active() : contextOf(traceparent);
  return tracer().startSpan(
    name,
    { attributes, ...(startTime === undefined ? {} : { startTime }) },
    parent,
  );
}

/**
 * Runs `fn` inside a new span (so the Redis commands it makes are its children) and ends it with
 * `fn`'s outcome: an error marks the span failed and is thrown on.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** For a pino `mixin`: the active span's ids on every log line written under it. */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && isSpanContextValid(ctx) ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
}
