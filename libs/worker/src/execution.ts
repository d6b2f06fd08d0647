import type { RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import {
  AgentHost,
  choosePermission,
  clientAdvertisement,
  coalesce,
  flushAll,
  flushDue,
  initialCoalesceState,
  nextFlushAt,
  parseRecording,
  recordedAdvertisement,
  replayAgentCommand,
  type ClientAdvertisement,
  type CoalesceState,
  type FactBody,
  type Frame,
} from '@baton/acp';
import type { AgentProfile } from '@baton/config';
import { startSpan } from '@baton/health';
import { SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import type { ExecutionJob, Fact, InboxMessage, PermissionAnswerDelivery } from '@baton/protocol';
import {
  InvalidEntryError,
  type EventStore,
  type ExecutionRef,
  type RawFrame,
  type StoredInboxMessage,
  type TranscriptWrite,
  type StreamTail,
} from '@baton/store';
import {
  coalesceEvents,
  initialTranscriptState,
  reduceTranscript,
  type TranscriptEvent,
  type TranscriptInput,
  type TranscriptState,
} from '@baton/transcript';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import type { Logger } from '@baton/health';
import type { Periods } from './options';
import { Pump, sendDroppingRefused } from './pump';
import { resolveRecording } from './recordings';
import { prepareWorkspace } from './workspace';

export interface ExecutionSettings {
  workerId: string;
  periods: Periods;
  /** Facts one execution may hold while Redis is unreachable; past it its agent is stopped. */
  factBuffer: number;
  recordingsDir: string;
  workspaceRoot: string;
}

/**
 * The environment of an agent process: PATH and HOME of the worker, the variables the profile
 * inherits (when the worker has them) and the profile's own — never Baton's settings (Redis
 * credentials, the token secret), which the profile schema refuses to name.
 */
export function agentEnv(
  profile: AgentProfile,
  workerEnv: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', ...profile.inheritEnv]) {
    const v = workerEnv[name];
    if (v !== undefined) env[name] = v;
  }
  return { ...env, ...profile.env };
}

export interface ExecutionOutcome {
  generation: number;
  reason: string;
  /** False when the end could not be recorded (Redis gone during a shutdown). */
  recorded: boolean;
}

interface AgentLaunch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Where the process runs. */
  cwd: string;
  /** The working directory of the ACP session. */
  sessionCwd: string;
  /** What to tell the agent about the client: a replay's is its recording's own. */
  advertise: ClientAdvertisement;
}

/**
 * What the recorded client advertised, so a replay is played to the client it was recorded for
 * (a plain recording replayed asking for raw task messages would attest work whose completion
 * never comes). A recording that cannot be read this way falls back to the profile; the replay
 * agent reports what is wrong with it.
 */
const advertisementOf = (file: string): ClientAdvertisement | undefined => {
  try {
    return recordedAdvertisement(parseRecording(untilFirstPrompt(readFileSync(file, 'utf8'))));
  } catch {
    return undefined;
  }
};

/**
 * The lines of a recording up to its client's first `session/prompt`: what the advertisement is
 * read from (the client's setup comes before it). A long recording is not parsed whole before
 * each replay of it: for the bench's turn of 20,000 frames that cost the worker about as much
 * CPU as a thousand of those frames.
 */
const untilFirstPrompt = (source: string): string => {
  for (let start = 0; start < source.length;) {
    const newline = source.indexOf('\n', start);
    const end = newline === -1 ? source.length : newline + 1;
    const line = source.slice(start, end);
    if (line.includes('session/prompt')) {
      const [frame] = parseRecording(line);
      const method = (frame?.message as { method?: unknown } | null)?.method;
      if (frame?.direction === 'client->agent' && method === 'session/prompt') {
        return source.slice(0, end);
      }
    }
    start = end;
  }
  return source;
};

class StoppedBeforeStart extends Error {
  constructor() {
    super('stopped before the agent was started');
  }
}

/**
 * How long transcript events gather before they are written: a token stream becomes a few
 * appends a second, its deltas joined, instead of one per token.
 */
const TRANSCRIPT_WINDOW_MS = 75;

/**
 * How long raw frames gather before they are written: the store keeps a write as one compressed
 * entry, and at an agent's pace (a few frames a second) a write a frame compresses to three
 * quarters of its text, a second of frames to a quarter. The log is for looking at what just
 * happened: a second late is still that.
 */
const RAW_FRAMES_LINGER_MS = 1_000;

/** How long a stopping worker waits for an execution's last facts to be acknowledged. */
const SHUTDOWN_DRAIN_MS = 10_000;
/** Facts waiting for Redis (appends succeeding) past which the agent's output is not read. */
const FACT_HIGH_WATER = 2_000;

/**
 * One agent execution, from its generation to its end: the lease that proves it alive, the agent
 * process (through AgentHost), its facts (coalesced, batched, retried until the store has them),
 * its raw frames, and its inbox (prompts, cancels, a stop). It ends when the agent exits; a stop
 * makes the agent exit.
 */
export class Execution {
  readonly ref: ExecutionRef;
  private generation = 0;
  private writerInstance = '';
  private seq = 0;
  private coalesceState: CoalesceState = initialCoalesceState();
  private flushTimer: NodeJS.Timeout | undefined;
  private host: AgentHost | undefined;
  private hostSettled!: Promise<AgentHost | undefined>;
  private stopRequested = false;
  private stopAs: 'cancelled' | 'completed' = 'cancelled';
  private shuttingDown = false;
  private endReason = 'unknown';
  private started = false;
  private readonly sent = new Set<string>();
  /** Admission generations dispatched here whose turn has not ended. */
  private readonly openTurns = new Set<number>();
  /** Traced prompts delivered here, by admission generation: a span each until its turn ends. */
  private readonly turnSpans = new Map<number, { span: Span; output: boolean }>();
  /** `ask` permission requests the agent waits on, by request id: how to answer each. */
  private readonly pendingPermissions = new Map<
    string,
    (response: RequestPermissionResponse, by: string) => void
  >();
  private permissionSeq = 0;
  private readonly facts: Pump<Fact>;
  private readonly rawFrames: Pump<RawFrame>;
  /** The transcript reducer's state; made when the generation (its items' scope) is known. */
  private transcript: TranscriptState | undefined;
  private transcriptWindow: TranscriptEvent[] = [];
  private transcriptTimer: NodeJS.Timeout | undefined;
  private readonly transcripts: Pump<TranscriptWrite>;
  private readonly log: Logger;
  private tempDir: string | undefined;

  constructor(
    private readonly job: ExecutionJob,
    private readonly profile: AgentProfile,
    private readonly store: EventStore,
    private readonly settings: ExecutionSettings,
    log: Logger,
  ) {
    this.ref = { taskId: job.taskId, sessionId: job.sessionId, executionId: job.executionId };
    this.log = log.child({ ...this.ref });
    this.facts = new Pump<Fact>({
      // Anything but an invalid entry is Redis, retried by the pump. An invalid fact (a dialect
      // bug) cannot become valid by retrying: it alone is dropped, the rest of its batch sent.
      send: (batch) =>
        sendDroppingRefused(
          batch,
          (facts) => this.store.append(this.ref.taskId, facts),
          (err) => (err instanceof InvalidEntryError ? err.index : undefined),
          (fact, err) =>
            this.log.error(
              { err: (err as InvalidEntryError).reason, type: fact.type },
              'dialect produced an invalid fact',
            ),
        ),
      onRetry: (err, attempt) =>
        this.log.warn({ err, attempt }, 'appending facts failed; retrying'),
      onGiveUp: (err, batch) =>
        this.log.error({ err, facts: batch.length }, 'facts abandoned: the worker is stopping'),
      // Through an outage the agent keeps running and its facts wait here, in order. Past the
      // bound the agent is stopped rather than a fact dropped: what it said so far is kept.
      maxPending: settings.factBuffer,
      // Past this backlog behind appends that succeed, the agent's stdout is not read until half
      // of it is in Redis: a fast agent is held to the store's pace, not buffered in memory.
      highWater: FACT_HIGH_WATER,
      onFull: (pending) => {
        this.log.error(
          { facts: pending, bound: settings.factBuffer },
          'fact buffer full (Redis unreachable for too long): stopping the agent',
        );
        this.requestStop();
      },
    });
    this.rawFrames = new Pump<RawFrame>({
      send: async (batch) => {
        await this.store.rawFrames.append(this.ref.taskId, this.ref.executionId, batch);
      },
      maxAttempts: 10,
      lingerMs: RAW_FRAMES_LINGER_MS,
      onGiveUp: (err, batch) =>
        this.log.warn({ err, frames: batch.length }, 'raw frames dropped after retries'),
    });
    this.transcripts = new Pump<TranscriptWrite>({
      send: (batch) =>
        sendDroppingRefused(
          batch,
          async (events) => {
            await this.store.transcripts.append(this.ref.taskId, events);
          },
          (err) => (err instanceof InvalidEntryError ? err.index : undefined),
          (w, err) =>
            this.log.error(
              { err: (err as InvalidEntryError).reason, type: w.event.type },
              'transcript reducer produced an invalid event',
            ),
        ),
      maxAttempts: 10,
      onGiveUp: (err, batch) =>
        this.log.warn({ err, events: batch.length }, 'transcript events dropped after retries'),
    });
  }

  /**
   * Asks the agent to end; the execution then ends as `cancelled` (`completed` for a park: it was
   * idle and is closed cleanly, its ACP session kept). Does not wait for it.
   */
  requestStop(reason: 'cancelled' | 'completed' = 'cancelled'): void {
    if (this.stopRequested) return;
    this.stopRequested = true;
    this.stopAs = reason;
    void this.hostSettled?.then((host) => host?.close(reason));
  }

  /** The worker is going away: end now, and do not wait forever for Redis to take the end. */
  shutdown(): void {
    this.shuttingDown = true;
    this.requestStop();
  }

  async run(): Promise<ExecutionOutcome> {
    const { store, ref, settings } = this;
    this.generation = await store.executions.nextGeneration(ref.taskId, ref.sessionId);
    // Item ids are scoped by generation: a session's executions never share one.
    this.transcript = initialTranscriptState('claude', undefined, `g${this.generation}.`);
    // Unique per execution start, so the store's (instance, seq) dedupe never spans two runs.
    this.writerInstance = `${settings.workerId}.${randomBytes(6).toString('hex')}`;
    const log = this.log.child({ generation: this.generation });
    // The lease comes first: once execution.started is in the stream, a dead worker must be
    // detectable.
    await store.executions.renewLease(ref, settings.periods.executionLease);
    let renewing = false;
    const renew = setInterval(
      () => {
        if (renewing) return;
        renewing = true;
        store.executions
          .extendLease(ref, settings.periods.executionLease)
          .then(
            (expiresAt) => {
              if (expiresAt !== null || this.stopRequested) return;
              // The owner found the lease lapsed (this process was starved or cut off) and
              // declared the execution lost; its work is retired, so the agent must go too.
              log.warn('execution declared lost by its owner; stopping the agent');
              this.requestStop();
            },
            (err: unknown) => log.warn({ err }, 'execution lease renewal failed'),
          )
          .finally(() => (renewing = false));
      },
      Math.max(1, Math.floor(settings.periods.executionLease / 3)),
    );

    const inbox = store.inbox.tail(ref.taskId, ref.executionId, '0-0');
    let settle!: (h: AgentHost | undefined) => void;
    this.hostSettled = new Promise((r) => (settle = r));
    const inboxDone = this.followInbox(inbox, log);

    try {
      if (this.stopRequested) throw new StoppedBeforeStart();
      const launch = this.launch();
      log.info(
        { profile: this.job.profile, command: launch.command, cwd: launch.sessionCwd },
        'starting agent',
      );
      this.host = await AgentHost.start({
        command: launch.command,
        args: launch.args,
        env: launch.env,
        cwd: launch.cwd,
        sessionCwd: launch.sessionCwd,
        advertise: launch.advertise,
        ...(this.profile.permissionPolicy === 'ask'
          ? {}
          : { permissionPolicy: this.profile.permissionPolicy }),
        onPermissionRequest: (req) => this.onPermissionRequest(req),
        ...(this.profile.mode !== undefined ? { mode: this.profile.mode } : {}),
        ...(this.job.resumeAcpSessionId !== undefined
          ? { loadSessionId: this.job.resumeAcpSessionId }
          : {}),
        setupTimeoutMs: settings.periods.agentSetup,
        killGraceMs: settings.periods.killGrace,
        onFact: (f) => this.onFact(f),
        readGate: () => this.facts.backlog(),
        onRawFrame: (frame, line) => this.onRawFrame(frame, line),
        onStderr: (chunk) => log.debug({ stderr: chunk.slice(0, 2_000) }, 'agent stderr'),
      });
      log.info({ agentPid: this.host.pid }, 'agent ready');
      settle(this.host);
      if (this.stopRequested) void this.host.close(this.stopAs);
      // Its ACP session, so a parked session can be resumed later (session/load).
      if (this.host.sessionId !== undefined)
        this.onFact({
          type: 'agent.session',
          data: {
            acpSessionId: this.host.sessionId,
            loadable: this.host.loadable,
            loaded: this.host.loaded,
          },
        });
      const exit = await this.host.exited;
      log.info({ ...exit, reason: this.endReason }, 'agent exited');
    } catch (err) {
      settle(undefined);
      // A launch that failed before AgentHost could report it is reported here.
      if (this.endReason === 'unknown') {
        this.onFact(
          err instanceof StoppedBeforeStart
            ? { type: 'execution.ended', data: { reason: 'cancelled' } }
            : {
                type: 'execution.ended',
                data: { reason: 'failed', error: String(err).slice(0, 4_000) },
              },
        );
      }
      log.warn({ err: String(err), reason: this.endReason }, 'execution did not start');
    } finally {
      settle(undefined);
    }

    // The agent is gone: nobody waits on its requests any more (its end settles them).
    this.pendingPermissions.clear();
    // Teardown: the end must be in the stream before the lease goes, or a worker dying here
    // would leave an execution nobody declares lost.
    clearTimeout(this.flushTimer);
    this.emit(flushAll(this.coalesceState, Date.now()).facts);
    await inbox.close();
    await inboxDone;
    const deadline = this.shuttingDown ? SHUTDOWN_DRAIN_MS : undefined;
    const recorded = await this.facts.drain(deadline);
    await this.rawFrames.drain(deadline ?? 30_000);
    clearTimeout(this.transcriptTimer);
    this.flushTranscript();
    await this.transcripts.drain(deadline ?? 30_000);
    clearInterval(renew);
    if (recorded) {
      // Best effort: a lease left behind lapses and its execution is declared lost, which is
      // harmless once its end is recorded.
      await store.executions.dropLease(ref).catch((err: unknown) => log.warn({ err }, 'dropLease'));
      await store.inbox
        .remove(ref.taskId, ref.executionId)
        .catch((err: unknown) => log.warn({ err }, 'inbox remove'));
    } else {
      log.error('execution end not recorded; its lease is left to lapse');
    }
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
    return { generation: this.generation, reason: this.endReason, recorded };
  }

  private describeAgent(): string {
    const p = this.profile;
    const what =
      p.kind === 'command' ? [p.command, ...p.args].join(' ') : `replay ${this.recording()}`;
    return `profile ${this.job.profile}: ${what}`.slice(0, 2_000);
  }

  private recording(): string {
    return (
      this.job.recording ?? (this.profile.kind === 'replay' ? this.profile.recording : '') ?? ''
    );
  }

  /** Chooses the workspace (the worker's, never the client's path) and the process to start. */
  private launch(): AgentLaunch {
    const p = this.profile;
    const env = agentEnv(p);
    const advertise = clientAdvertisement(p.capabilities);
    if (p.kind === 'command') {
      const ws = prepareWorkspace(this.settings.workspaceRoot, this.job.tenant, this.job.workspace);
      if (ws.temporary) this.tempDir = ws.dir;
      return { command: p.command, args: p.args, env, cwd: ws.dir, sessionCwd: ws.dir, advertise };
    }
    // Checked before any folder is made, so a refused recording leaves nothing behind.
    const file = resolveRecording(this.recording(), this.settings.recordingsDir);
    const ws = prepareWorkspace(this.settings.workspaceRoot, this.job.tenant, this.job.workspace);
    if (ws.temporary) this.tempDir = ws.dir;
    const speed = this.job.speed ?? p.speed;
    const { command, args } = replayAgentCommand(file, { pace: speed === 0 ? 0 : 1 / speed });
    return {
      command,
      args,
      env,
      cwd: ws.dir,
      sessionCwd: ws.dir,
      advertise: advertisementOf(file) ?? advertise,
    };
  }

  /**
   * The agent asks permission (`session/request_permission`). The request is a fact either way;
   * under `ask` the agent waits for the owner's answer (a person's, the timeout's, a cancel's),
   * which comes through the inbox; any other policy answers at once and says so.
   */
  private onPermissionRequest(req: RequestPermissionRequest): Promise<RequestPermissionResponse> {
    const policy = this.profile.permissionPolicy;
    // Unique within the session: generations only grow.
    const requestId = `perm-g${this.generation}-${++this.permissionSeq}`;
    const tool = req.toolCall;
    const text = (v: unknown, max: number) =>
      typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;
    const toolCallId = text(tool?.toolCallId, 200);
    const title = text(tool?.title, 2_000);
    const toolKind = text(tool?.kind, 100);
    const options = (req.options ?? []).slice(0, 20).flatMap((o) => {
      const optionId = text(o.optionId, 200);
      return optionId === undefined
        ? []
        : [
            {
              optionId,
              name: String(o.name ?? '').slice(0, 500),
              kind: text(o.kind, 50) ?? 'other',
            },
          ];
    });
    this.onFact({
      type: 'permission.requested',
      data: {
        requestId,
        ...(toolCallId !== undefined ? { toolCallId } : {}),
        ...(title !== undefined ? { title } : {}),
        ...(toolKind !== undefined ? { toolKind } : {}),
        options,
        policy,
      },
    });
    if (policy !== 'ask') {
      const response = choosePermission(policy, req);
      if (toolCallId !== undefined) this.toTranscript({ kind: 'answer', toolCallId, by: 'policy' });
      const o = response.outcome;
      this.onFact({
        type: 'permission.resolved',
        data: {
          requestId,
          ...(o.outcome === 'selected'
            ? { outcome: 'selected', optionId: o.optionId }
            : { outcome: 'cancelled' }),
          by: 'policy',
        },
      });
      return Promise.resolve(response);
    }
    this.log.info({ requestId, title }, 'permission requested: waiting for a person');
    return new Promise((resolve) =>
      this.pendingPermissions.set(requestId, (response, by) => {
        if (toolCallId !== undefined) this.toTranscript({ kind: 'answer', toolCallId, by });
        resolve(response);
      }),
    );
  }

  /** The owner's answer to an `ask` request: to the agent, then reported resolved. */
  private onPermissionAnswer(a: PermissionAnswerDelivery['data'], log: Logger): void {
    const answer = this.pendingPermissions.get(a.requestId);
    // Delivered at least once: a request already answered (or of an agent gone) is left alone.
    if (!answer) {
      log.debug({ requestId: a.requestId }, 'answer to no pending permission request');
      return;
    }
    this.pendingPermissions.delete(a.requestId);
    answer(
      a.outcome === 'selected' && a.optionId !== undefined
        ? { outcome: { outcome: 'selected', optionId: a.optionId } }
        : { outcome: { outcome: 'cancelled' } },
      a.subject !== undefined ? `${a.by}:${a.subject}` : a.by,
    );
    log.info({ requestId: a.requestId, outcome: a.outcome, by: a.by }, 'permission answered');
    this.onFact({
      type: 'permission.resolved',
      data: {
        requestId: a.requestId,
        outcome: a.outcome === 'selected' && a.optionId !== undefined ? 'selected' : 'cancelled',
        ...(a.outcome === 'selected' && a.optionId !== undefined ? { optionId: a.optionId } : {}),
        by: a.by,
        ...(a.subject !== undefined ? { subject: a.subject } : {}),
      },
    });
  }

  private onFact(body: FactBody): void {
    let fact = body;
    if (fact.type === 'execution.started') {
      this.started = true;
      const j = this.job;
      fact = {
        ...fact,
        data: {
          ...fact.data,
          workerId: this.settings.workerId,
          // What the job asked for: a parked session is resumed the same way.
          profile: j.profile,
          ...(j.recording !== undefined ? { recording: j.recording } : {}),
          ...(j.speed !== undefined ? { speed: j.speed } : {}),
          ...(j.workspace !== undefined ? { workspace: j.workspace } : {}),
        },
      };
    } else if (fact.type === 'execution.ended' && !this.started) {
      // An execution that ends before its agent ran (bad recording, spawn failure, an early
      // stop) still starts in the stream: an end alone would not reach the session.
      this.onFact({
        type: 'execution.started',
        data: { startedAt: new Date().toISOString(), agentCommand: this.describeAgent() },
      });
    }
    if (fact.type === 'execution.ended') this.endReason = fact.data.reason;
    if (fact.type === 'prompt.dispatched') this.openTurns.add(fact.data.admissionGeneration);
    if (fact.type === 'turn.ended') this.openTurns.delete(fact.data.admissionGeneration);
    if (this.turnSpans.size > 0) this.traceTurn(fact);
    const r = coalesce(this.coalesceState, fact, Date.now(), this.settings.periods.outputCoalesce);
    this.coalesceState = r.state;
    this.emit(r.facts);
    this.scheduleFlush();
  }

  /** Marks a traced turn's milestones: sent to the agent, its first output, its end. */
  private traceTurn(fact: FactBody): void {
    switch (fact.type) {
      case 'prompt.dispatched':
        this.turnSpans.get(fact.data.admissionGeneration)?.span.addEvent('sent to the agent');
        return;
      case 'foreground.output':
      case 'tool.started':
        // The agent runs one foreground turn at a time: the output is the open turn's.
        for (const t of this.turnSpans.values()) {
          if (t.output) continue;
          t.output = true;
          t.span.addEvent('first output');
        }
        return;
      case 'turn.ended': {
        const t = this.turnSpans.get(fact.data.admissionGeneration);
        if (!t) return;
        t.span.setAttribute('baton.stop_reason', fact.data.stopReason);
        t.span.end();
        this.turnSpans.delete(fact.data.admissionGeneration);
        return;
      }
      case 'execution.ended':
        for (const t of this.turnSpans.values()) {
          t.span.setStatus({
            code: SpanStatusCode.ERROR,
            message: `execution ended: ${fact.data.reason}`,
          });
          t.span.end();
        }
        this.turnSpans.clear();
        return;
    }
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== undefined) return;
    const at = nextFlushAt(this.coalesceState, this.settings.periods.outputCoalesce);
    if (at === undefined) return;
    this.flushTimer = setTimeout(
      () => {
        this.flushTimer = undefined;
        const r = flushDue(this.coalesceState, Date.now(), this.settings.periods.outputCoalesce);
        this.coalesceState = r.state;
        this.emit(r.facts);
        this.scheduleFlush();
      },
      Math.max(0, at - Date.now()),
    );
  }

  /**
   * Envelopes facts and queues them for the store, which validates each one on its way into Redis
   * (once: the pump drops one the store refuses). A seq left unused by a dropped fact is a gap the
   * store's dedupe ignores (it compares with the highest seq seen).
   */
  private emit(bodies: FactBody[]): void {
    for (const body of bodies) {
      this.facts.push({
        v: 1,
        taskId: this.ref.taskId,
        sessionId: this.ref.sessionId,
        executionId: this.ref.executionId,
        generation: this.generation,
        writer: { role: 'worker', instance: this.writerInstance, seq: ++this.seq },
        ...body,
      } as Fact);
    }
  }

  private onRawFrame(frame: Frame, line: string): void {
    this.rawFrames.push({ direction: frame.direction === 'agent->client' ? 'in' : 'out', line });
    this.toTranscript({ kind: 'frame', ...frame });
  }

  /** Feeds the transcript reducer; its events wait for the window's end to be written. */
  private toTranscript(input: TranscriptInput): void {
    if (this.transcript === undefined) return;
    const r = reduceTranscript(this.transcript, input);
    this.transcript = r.state;
    if (r.out.length === 0) return;
    for (const e of r.out) this.transcriptWindow.push(e);
    this.transcriptTimer ??= setTimeout(() => {
      this.transcriptTimer = undefined;
      this.flushTranscript();
    }, TRANSCRIPT_WINDOW_MS);
  }

  private flushTranscript(): void {
    if (this.transcriptWindow.length === 0) return;
    const { sessionId, executionId } = this.ref;
    const events = coalesceEvents(this.transcriptWindow);
    this.transcriptWindow = [];
    this.transcripts.push(...events.map((event) => ({ sessionId, executionId, event })));
  }

  private async followInbox(tail: StreamTail<StoredInboxMessage>, log: Logger): Promise<void> {
    for await (const batch of tail) {
      for (const { message } of batch) await this.onInbox(message, log);
    }
  }

  private async onInbox(message: InboxMessage, log: Logger): Promise<void> {
    if (message.sessionId !== this.ref.sessionId) {
      log.warn(
        { type: message.type, sessionId: message.sessionId },
        'inbox message of another session',
      );
      return;
    }
    switch (message.type) {
      case 'execution.stop':
        log.info({ reason: message.data.reason }, 'stop requested');
        this.requestStop(message.data.reason === 'parked' ? 'completed' : 'cancelled');
        return;
      case 'permission.answer':
        this.onPermissionAnswer(message.data, log);
        return;
      case 'turn.cancel': {
        // session/cancel stops whatever runs: a cancel re-delivered for a turn that is over must
        // not reach a later one.
        if (!this.openTurns.has(message.data.admissionGeneration)) {
          log.info(
            { admissionGeneration: message.data.admissionGeneration },
            'cancel of no open turn',
          );
          return;
        }
        const host = await this.hostSettled;
        await host?.cancel().catch((err: unknown) => log.warn({ err }, 'session/cancel failed'));
        return;
      }
      case 'prompt.deliver': {
        const { promptId, admissionGeneration, text } = message.data;
        // Deliveries are at least once (an owner failover may deliver again): send each once.
        const key = JSON.stringify([promptId, admissionGeneration]);
        if (this.sent.has(key)) return;
        this.sent.add(key);
        if (message.data.traceparent) {
          const span = startSpan(
            'baton.agent.turn',
            {
              'baton.task': this.ref.taskId,
              'baton.session': message.sessionId,
              'baton.execution': this.ref.executionId,
              'baton.prompt': promptId,
              'baton.worker': this.settings.workerId,
            },
            message.data.traceparent,
          );
          this.turnSpans.set(admissionGeneration, { span, output: false });
        }
        const host = await this.hostSettled;
        // No host: the execution failed to start and has ended; its end retires the claim.
        if (!host) return;
        // The turn's id for the transcript, should the frame not carry it.
        this.toTranscript({ kind: 'prompt', promptId });
        // The turn lasts long; dispatch and turn end are read off the wire as facts.
        // Under the turn's span: what the turn logs names its trace.
        const turn = this.turnSpans.get(admissionGeneration)?.span;
        const send = () =>
          void host.prompt({ promptId, admissionGeneration, text }).then(
            (r) => log.debug({ promptId, stopReason: r.stopReason }, 'turn ended'),
            (err: unknown) => log.info({ promptId, err: String(err) }, 'prompt failed'),
          );
        if (turn) context.with(trace.setSpan(context.active(), turn), send);
        else send();
        return;
      }
    }
  }
}
