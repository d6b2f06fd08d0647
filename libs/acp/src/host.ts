import {
  client,
  type ClientConnection,
  type NewSessionRequest,
  type PromptResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
} from '@agentclientprotocol/sdk';
import type { Capabilities } from '@baton/protocol';
import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import type { FactBody } from './facts';
import { classify, parseLine, type Direction, type Frame } from './frames';
import { BATON_META_KEY, initialAcpState, reduceFrame, type AcpState } from './reducer';
import { tappedNdJsonStream, type ReadGate } from './tap';

/**
 * Hosts one ACP agent process for one execution: spawns it in its own process group, speaks ACP
 * over its stdio through the SDK, taps every raw line in both directions before the SDK parses
 * it, and feeds those lines to the dialect reducer, so facts come from the wire and not from
 * what the SDK chose to keep. Facts are delivered synchronously in wire order.
 */

/**
 * How the host answers `session/request_permission` by itself. `ask` is not one of these: an
 * execution that asks people passes `onPermissionRequest` instead.
 */
export type PermissionPolicy = 'allow-once' | 'deny' | 'first-option';

/** The Claude raw SDK task messages that give identified background completion. */
export const CLAUDE_RAW_TASK_FILTERS = [
  { type: 'system', subtype: 'task_started' },
  { type: 'system', subtype: 'task_updated' },
  { type: 'system', subtype: 'task_notification' },
];

/**
 * What Baton tells the agent about itself: `initialize`'s `clientCapabilities` and the `_meta`
 * of `session/new`. A profile chooses it (see `clientAdvertisement`); a replay takes the
 * recording's own (`recordedAdvertisement`), so it is played to the client it was recorded for.
 */
export interface ClientAdvertisement {
  clientCapabilities: Record<string, unknown>;
  sessionMeta?: Record<string, unknown>;
  /**
   * The ACP protocol version asked for (default 1). With 2 (the draft v2), `initialize` sends
   * `info` and `capabilities` (this `clientCapabilities`), a prompt is answered with its
   * `messageId` and its turn ends at a `state_update`.
   */
  protocolVersion?: 1 | 2;
  /**
   * Requests to send right after the session is set up, in order, each with the live session id:
   * a replay's recorded client set the session's mode or config options (the model is one) there,
   * and the recorded agent waits for them before it plays on.
   */
  setup?: readonly SetupRequest[];
}

/** A session setup request a client sends before its first prompt. */
export interface SetupRequest {
  method: (typeof SETUP_METHODS)[number];
  params: Record<string, unknown>;
}

const SETUP_METHODS = ['session/set_mode', 'session/set_config_option'] as const;

const setsMode = (r: SetupRequest): boolean =>
  r.method === 'session/set_mode' ||
  (r.method === 'session/set_config_option' && r.params.configId === 'mode');

/** The client profiles a Claude adapter tells apart (each optional, all combinable). */
export interface ClientProfileOptions {
  /** `session/new` `_meta.claudeCode.emitRawSDKMessages`: identified background completion. */
  rawSdkMessages?: boolean;
  /** `clientCapabilities._meta.terminal_output`: terminal info, output and exit on shell tools. */
  terminalOutput?: boolean;
  /** `clientCapabilities.subagents: {}` (subagents RFD): each subagent is a child session. */
  subagents?: boolean;
  /** Ask for the draft ACP v2 (its `state_update` background list names every item). */
  protocolVersion?: 1 | 2;
}

const BASE_CLIENT_CAPABILITIES = {
  fs: { readTextFile: false, writeTextFile: false },
  terminal: false,
};

export const clientAdvertisement = (o: ClientProfileOptions = {}): ClientAdvertisement => ({
  clientCapabilities: {
    ...BASE_CLIENT_CAPABILITIES,
    ...(o.subagents ? { subagents: {} } : {}),
    ...(o.terminalOutput ? { _meta: { terminal_output: true } } : {}),
  },
  ...(o.rawSdkMessages
    ? { sessionMeta: { claudeCode: { emitRawSDKMessages: CLAUDE_RAW_TASK_FILTERS } } }
    : {}),
  ...(o.protocolVersion === 2 ? { protocolVersion: 2 as const } : {}),
});

const recordOf = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;

/**
 * What the recorded client advertised: its first `initialize`'s `clientCapabilities` and its
 * first session setup's `_meta`. Undefined when the recording has no `initialize` request.
 */
export const recordedAdvertisement = (
  frames: readonly { direction: string; message: unknown }[],
): ClientAdvertisement | undefined => {
  const request = (methods: string[]) =>
    frames.find((f) => {
      const m = recordOf(f.message);
      return f.direction === 'client->agent' && methods.includes(String(m?.method));
    });
  const init = recordOf(recordOf(request(['initialize'])?.message)?.params);
  if (init === undefined) return undefined;
  const setup = recordOf(
    recordOf(request(['session/new', 'session/load', 'session/resume'])?.message)?.params,
  );
  const sessionMeta = recordOf(setup?._meta);
  const v2 = init.protocolVersion === 2;
  const requests = recordedSetup(frames);
  return {
    // v2 names them `capabilities`.
    clientCapabilities: recordOf(v2 ? init.capabilities : init.clientCapabilities) ?? {},
    ...(sessionMeta !== undefined ? { sessionMeta } : {}),
    ...(v2 ? { protocolVersion: 2 as const } : {}),
    ...(requests.length > 0 ? { setup: requests } : {}),
  };
};

/** The recorded client's mode and config option requests before its first prompt. */
const recordedSetup = (frames: readonly { direction: string; message: unknown }[]) => {
  const out: SetupRequest[] = [];
  for (const f of frames) {
    const m = recordOf(f.message);
    if (f.direction !== 'client->agent' || m === undefined) continue;
    if (m.method === 'session/prompt') break;
    const method = SETUP_METHODS.find((s) => s === m.method);
    if (method === undefined) continue;
    const { sessionId: _recorded, ...params } = recordOf(m.params) ?? {};
    out.push({ method, params });
  }
  return out;
};

export interface AgentHostOptions {
  command: string;
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Working directory of the ACP session (absolute). */
  sessionCwd: string;
  /** Ask a Claude adapter for raw SDK task messages (ignored by other agents as unknown `_meta`). */
  rawSdkMessages?: boolean;
  /**
   * What to advertise, whole; when absent, `clientAdvertisement({ rawSdkMessages })`. A replay
   * passes its recording's own.
   */
  advertise?: ClientAdvertisement;
  /** ACP session mode set right after `session/new` (`session/set_mode`); setup fails if refused. */
  mode?: string;
  /**
   * Resume this ACP session (`session/load`) instead of starting one, when the agent advertises
   * `loadSession`; otherwise a new session is started (`loaded` says which happened).
   */
  loadSessionId?: string;
  permissionPolicy?: PermissionPolicy;
  /**
   * Answers `session/request_permission` in place of `permissionPolicy`: whoever hosts the agent
   * decides (Baton's worker reports the request as a fact and waits for the owner's answer).
   */
  onPermissionRequest?: (req: RequestPermissionRequest) => Promise<RequestPermissionResponse>;
  onFact: (fact: FactBody) => void;
  /** Every raw line with the frame it parsed to, in wire order: the raw-frame log. */
  onRawFrame?: (frame: Frame, line: string) => void;
  onStderr?: (chunk: string) => void;
  clock?: () => string;
  /** How long the group gets between SIGTERM and SIGKILL on teardown. */
  killGraceMs?: number;
  /** How long the session setup (`initialize` to `session/set_mode`) may take before it is hung. */
  setupTimeoutMs?: number;
  /**
   * Asked after each chunk of the agent's stdout: a promise holds the next read until it settles,
   * so a host that cannot keep up (facts waiting for Redis) makes the agent's writes block instead
   * of holding its output in memory.
   */
  readGate?: ReadGate;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface PromptInput {
  promptId: string;
  admissionGeneration: number;
  text: string;
}

/**
 * The answer a policy gives: the first option of the kind it prefers most, else `cancelled`.
 * Agents list options in any order (Qwen Code puts its "always allow" ones first): `allow-once`
 * must not grant for ever when a one-time grant is offered.
 */
export const choosePermission = (
  policy: PermissionPolicy,
  req: RequestPermissionRequest,
): RequestPermissionResponse => {
  const pick = (kinds: string[]) =>
    kinds.map((k) => req.options.find((o) => o.kind === k)).find((o) => o !== undefined);
  const option =
    policy === 'first-option'
      ? req.options[0]
      : policy === 'allow-once'
        ? pick(['allow_once', 'allow_always'])
        : pick(['reject_once', 'reject_always']);
  return option === undefined
    ? { outcome: { outcome: 'cancelled' } }
    : { outcome: { outcome: 'selected', optionId: option.optionId } };
};

/**
 * Whether an agent's message must reach the SDK. `session/update` notifications need not: the
 * host's facts come from the tap, its notification handler ignores them, and the SDK's client
 * would only validate each one against its zod schema (a union of every update variant, which
 * builds an issue for each variant that does not match) before dropping it — a quarter of a
 * worker's CPU in a stream of tool updates. A variant the SDK does not know was only logged as an
 * error. Requests, responses and other notifications (a cancelled request) still go through.
 */
const forSdk = (message: unknown): boolean =>
  !(recordOf(message)?.method === 'session/update' && !('id' in (message as object)));

/**
 * The time now as ISO-8601, formatted once a millisecond: every frame is stamped with it, and a
 * fast agent writes many frames a millisecond (`toISOString` for each cost a worker more than
 * parsing the frame's JSON).
 */
let stampedMs = NaN;
let stamp = '';
const isoNow = (): string => {
  const ms = Date.now();
  if (ms !== stampedMs) {
    stampedMs = ms;
    stamp = new Date(ms).toISOString();
  }
  return stamp;
};

export class AgentHost {
  private state: AcpState = initialAcpState();
  private readonly dispatched = new Set<string>();
  private closing = false;
  private closeReason: 'completed' | 'cancelled' = 'completed';
  private ended = false;
  private stderrTail = '';
  /** Set when setup failed: the execution ends as failed, whoever stopped the process. */
  private failure?: string;
  private connection!: ClientConnection;
  private sessionIdValue?: string;
  private loadableValue = false;
  private loadedValue = false;
  private capabilitiesValue?: Capabilities;
  readonly exited: Promise<ExitInfo>;

  private constructor(
    private readonly options: AgentHostOptions,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.end(code, signal);
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }
  get sessionId(): string | undefined {
    return this.sessionIdValue;
  }
  get capabilities(): Capabilities | undefined {
    return this.capabilitiesValue;
  }
  /** The agent advertised `loadSession`: its session can be loaded again by a later execution. */
  get loadable(): boolean {
    return this.loadableValue;
  }
  /** This execution loaded an earlier session (`session/load`) rather than starting a new one. */
  get loaded(): boolean {
    return this.loadedValue;
  }

  /**
   * Spawns the agent and runs `initialize`, `session/new` and (if configured) `session/set_mode`;
   * the execution can then take prompts.
   */
  static async start(options: AgentHostOptions): Promise<AgentHost> {
    const child = spawn(options.command, options.args ?? [], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group, so teardown reaches everything it spawned.
      detached: true,
    });
    const host = new AgentHost(options, child);
    await host.begin();
    return host;
  }

  private now(): string {
    return (this.options.clock ?? isoNow)();
  }

  private emit(fact: FactBody): void {
    if (fact.type === 'capabilities.negotiated') this.capabilitiesValue = fact.data;
    if (fact.type === 'prompt.dispatched') this.dispatched.add(fact.data.promptId);
    this.options.onFact(fact);
  }

  /** Reduces one raw line; false when the SDK need not see it (see `forSdk`). */
  private onLine(direction: Direction, line: string): boolean {
    const frame = parseLine(direction, line, this.now());
    this.options.onRawFrame?.(frame, line);
    if (direction === 'agent->client' && classify(frame.message) === 'invalid') {
      this.protocolViolation(line);
      return true;
    }
    const r = reduceFrame(this.state, frame);
    this.state = r.state;
    for (const f of r.facts) this.emit(f);
    if (r.state.refused !== undefined) this.refuse(r.state.refused);
    return direction === 'client->agent' || forSdk(frame.message);
  }

  /** An agent in a protocol version Baton does not speak: the execution fails, saying so. */
  private refuse(reason: string): void {
    if (this.failure !== undefined || this.ended) return;
    this.failure = reason;
    void this.close();
  }

  /**
   * stdout is the ACP channel: a line that is not JSON-RPC means the process is not speaking ACP
   * (a wrong command, or logs on the wrong stream). The SDK would answer a parse error and wait
   * forever; the execution ends instead, naming what the agent wrote.
   */
  private protocolViolation(line: string): void {
    if (this.failure !== undefined || this.ended) return;
    this.failure = `agent wrote a line that is not JSON-RPC to stdout: ${JSON.stringify(line.slice(0, 200))}`;
    void this.close();
  }

  private end(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.ended) return;
    this.ended = true;
    this.connection?.close();
    const error = this.stderrTail.trim();
    if (this.failure !== undefined) {
      this.options.onFact({
        type: 'execution.ended',
        data: { reason: 'failed', exitCode: code, error: this.failure.slice(0, 4_000) },
      });
      return;
    }
    this.options.onFact({
      type: 'execution.ended',
      data: {
        reason: this.closing ? this.closeReason : 'crashed',
        exitCode: code,
        ...(!this.closing && error !== '' ? { error: error.slice(-4_000) } : {}),
        ...(!this.closing && error === '' && signal !== null
          ? { error: `killed by ${signal}` }
          : {}),
      },
    });
  }

  private async begin(): Promise<void> {
    const { child, options } = this;
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    try {
      await spawned;
    } catch (e) {
      this.ended = true;
      options.onFact({ type: 'execution.ended', data: { reason: 'failed', error: String(e) } });
      throw e;
    }
    this.options.onFact({
      type: 'execution.started',
      data: {
        startedAt: this.now(),
        agentCommand: [options.command, ...(options.args ?? [])].join(' ').slice(0, 2_000),
      },
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4_000);
      options.onStderr?.(chunk);
    });
    const policy = options.permissionPolicy ?? 'deny';
    const ask = options.onPermissionRequest;
    const app = client({ name: 'baton' })
      .onRequest('session/request_permission', ({ params }) =>
        ask ? ask(params) : choosePermission(policy, params),
      )
      // Facts come from the tap; the SDK's typed handlers would drop variants it does not know.
      .onNotification('*', () => undefined);
    this.connection = app.connect(
      tappedNdJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
        (direction, line) => this.onLine(direction, line),
        'client->agent',
        options.readGate,
      ),
    );
    const exitedEarly = this.exited.then((e) => {
      throw new Error(`agent exited during setup (code ${e.code}, signal ${e.signal})`);
    });
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('agent did not finish the session setup in time')),
        options.setupTimeoutMs ?? 30_000,
      );
    });
    try {
      await Promise.race([this.setup(), exitedEarly, hung]);
    } catch (e) {
      // A protocol violation already named the cause; the early exit it led to is its effect.
      this.failure ??= String(e);
      await this.close();
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  private async setup(): Promise<void> {
    const agent = this.connection.agent;
    const advertise =
      this.options.advertise ??
      clientAdvertisement({ rawSdkMessages: this.options.rawSdkMessages === true });
    let init: unknown;
    if (advertise.protocolVersion === 2) {
      // The draft v2 handshake, sent as it is on the wire (the SDK's client is v1's).
      init = await agent.request('initialize', {
        protocolVersion: 2,
        info: { name: 'baton', version: '0.1.0' },
        capabilities: advertise.clientCapabilities,
      } as never);
    } else {
      init = await agent.request('initialize', {
        protocolVersion: 1,
        clientCapabilities: advertise.clientCapabilities,
        clientInfo: { name: 'baton', version: '0.1.0' },
      });
    }
    // v1 answers `agentCapabilities`, the v2 draft `capabilities`.
    const caps = init as {
      agentCapabilities?: { loadSession?: boolean };
      capabilities?: { loadSession?: boolean };
    };
    this.loadableValue =
      (caps.agentCapabilities?.loadSession ?? caps.capabilities?.loadSession) === true;
    const params: NewSessionRequest = {
      cwd: this.options.sessionCwd,
      mcpServers: [],
      ...(advertise.sessionMeta !== undefined ? { _meta: advertise.sessionMeta } : {}),
    };
    const load = this.options.loadSessionId;
    if (load !== undefined && this.loadableValue) {
      await agent.request('session/load', { ...params, sessionId: load });
      this.sessionIdValue = load;
      this.loadedValue = true;
    } else {
      const session = await agent.request('session/new', params);
      this.sessionIdValue = session.sessionId;
    }
    const setup = advertise.setup ?? [];
    for (const r of setup) {
      await agent.request(r.method, { ...r.params, sessionId: this.sessionIdValue } as never);
    }
    // A recording that set its own mode plays as it was recorded, whatever the profile says.
    const mode = setup.some(setsMode) ? undefined : this.options.mode;
    if (mode !== undefined && advertise.protocolVersion === 2) {
      // v2 has no session/set_mode: the mode is the `mode` config option.
      await agent.request('session/set_config_option', {
        sessionId: this.sessionIdValue,
        configId: 'mode',
        type: 'id',
        value: mode,
      } as never);
    } else if (mode !== undefined) {
      await agent.request('session/set_mode', {
        sessionId: this.sessionIdValue,
        modeId: mode,
      });
    }
  }

  /**
   * Sends one admitted prompt. The prompt's identity rides in `_meta.baton`, so the dispatch and
   * the turn's end are read off the wire like every other fact. If the request never reached the
   * wire, the host reports the dispatch as failed.
   */
  async prompt(input: PromptInput): Promise<PromptResponse> {
    const sessionId = this.sessionIdValue;
    try {
      if (sessionId === undefined || this.ended) throw new Error('no live ACP session');
      return await this.connection.agent.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: input.text }],
        _meta: {
          [BATON_META_KEY]: {
            promptId: input.promptId,
            admissionGeneration: input.admissionGeneration,
          },
        },
      });
    } catch (e) {
      if (!this.dispatched.has(input.promptId)) {
        this.options.onFact({
          type: 'prompt.dispatch_failed',
          data: {
            promptId: input.promptId,
            admissionGeneration: input.admissionGeneration,
            error: String(e).slice(0, 4_000),
          },
        });
      }
      throw e;
    }
  }

  async cancel(): Promise<void> {
    if (this.sessionIdValue === undefined || this.ended) return;
    await this.connection.agent.notify('session/cancel', { sessionId: this.sessionIdValue });
  }

  /**
   * Ends the execution: the whole process group gets SIGTERM, then SIGKILL after the grace. The
   * execution ends as `reason` (`cancelled` when it was stopped before its work was done).
   */
  async close(reason: 'completed' | 'cancelled' = 'completed'): Promise<ExitInfo> {
    if (!this.closing) this.closeReason = reason;
    this.closing = true;
    const group = -this.pid;
    const signalGroup = (sig: NodeJS.Signals) => {
      try {
        process.kill(group, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    signalGroup('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((r) => {
      timer = setTimeout(r, this.options.killGraceMs ?? 2_000);
    });
    await Promise.race([this.exited, grace]);
    clearTimeout(timer);
    // The leader may be gone while its children linger (or ignore SIGTERM): finish the group.
    signalGroup('SIGKILL');
    return this.exited;
  }
}
