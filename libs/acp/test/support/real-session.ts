import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { foregroundActivity, liveRegistrations } from '@baton/activity';
import type { StreamEntry } from '@baton/protocol';
import { Owner } from '@baton/testing';
import {
  AgentHost,
  toFact,
  toRecordingLine,
  type AgentHostOptions,
  type FactBody,
  type Frame,
} from '../../src';
import { assertValidFact } from '../helpers';
import type { ScriptedServer } from './scripted-script';
import { scrubRecording, type ScrubOptions } from './scrub-recording';

export const SESSION = 's1';
/** Generous: the machine is shared. A scenario that goes wrong fails fast instead (see `fail`). */
export const PROBE_MS = 60_000;

/** A shell loop that waits for `file` to exist (`release` creates it). */
export const waitForFile = (file: string) => `until [ -f ${file} ]; do sleep 0.1; done`;

/**
 * A native agent binary shipped in an npm package, ready to run, or why not. A package's file
 * modes are the tarball's: one published without the execute bit gets it here (the file is ours,
 * in node_modules), so a test never depends on how it was packed.
 */
export const usableBinary = (
  binary: string,
  from: string,
): { binary: string } | { missing: string } => {
  if (!existsSync(binary)) return { missing: `${from}: ${binary} does not exist` };
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    try {
      chmodSync(binary, statSync(binary).mode | 0o111);
    } catch (e) {
      return {
        missing: `${from}: ${binary} is not executable and cannot be made so: ${String(e)}`,
      };
    }
  }
  return { binary };
};

/**
 * An agent's native binary `bin/<name>` from its platform package (an optional dependency, so
 * `npm ci` installs the one for this machine), or `envVar`'s when set; or why there is none (only
 * a platform the agent ships no binary for).
 */
export const findPlatformBinary = (agent: {
  name: string;
  version: string;
  platformPackage: string;
  envVar: string;
}): { binary: string } | { missing: string } => {
  const { name, version, platformPackage, envVar } = agent;
  const explicit = process.env[envVar];
  if (explicit !== undefined && explicit !== '') return usableBinary(explicit, envVar);
  let pkg: string;
  try {
    pkg = require.resolve(`${platformPackage}/package.json`);
  } catch {
    return {
      missing: `${name} ${version} ships no binary for ${process.platform}-${process.arch} (no ${platformPackage} installed by npm ci); set ${envVar} to run it`,
    };
  }
  const binaryName = process.platform === 'win32' ? `${name}.exe` : name;
  return usableBinary(join(pkg, '..', 'bin', binaryName), platformPackage);
};

/** Whether the agent sent a message (notification or request) of `method`. */
export const agentSent = (s: { frames: Frame[] }, method: string): boolean =>
  s.frames.some(
    (f) => f.direction === 'agent->client' && (f.message as { method?: string }).method === method,
  );

/** The scripted model server a session talks to. */
export interface ModelServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A real adapter under AgentHost, fully offline, its facts folded by the owner's loop (with
 * `decide` after each one) and admitted prompts handed back to it as a worker would. A shadow
 * owner folds the same facts under the other admission policy until `detachShadow`, to compare
 * decisions. The agent-specific parts (the model server, the recording's name and scrubbing) are
 * the subclass's.
 */
export abstract class RealSession<S extends ModelServer> {
  readonly facts: FactBody[] = [];
  readonly frames: Frame[] = [];
  readonly owner = new Owner();
  shadow: Owner | undefined = new Owner();
  protected host!: AgentHost;
  private readonly sent = new Set<string>();
  private readonly turns: Promise<unknown>[] = [];
  private seq = 0;
  private stderr = '';
  /** Why the scenario can no longer pass, noticed outside a probe; the next probe throws it. */
  private failure: string | undefined;

  protected constructor(
    readonly name: string,
    readonly home: string,
    readonly work: string,
    readonly server: S,
  ) {}

  /** A private home with an empty work folder inside, for `prefix` (an agent's name). */
  protected static makeHome(prefix: string): { home: string; work: string } {
    const home = mkdtempSync(join(tmpdir(), `baton-${prefix}-`));
    const work = join(home, 'work');
    mkdirSync(work);
    return { home, work };
  }

  /** Starts the adapter; if it does not start, the server and the private folder go too. */
  protected async open(
    policy: 'handoff' | 'coarse',
    options: Omit<AgentHostOptions, 'sessionCwd' | 'onFact' | 'onRawFrame' | 'onStderr'>,
  ): Promise<void> {
    this.owner.command(SESSION, 'session.configure', { admission: policy });
    this.shadow?.command(SESSION, 'session.configure', {
      admission: policy === 'handoff' ? 'coarse' : 'handoff',
    });
    try {
      this.host = await AgentHost.start({
        permissionPolicy: 'allow-once',
        setupTimeoutMs: PROBE_MS,
        ...options,
        sessionCwd: this.work,
        onFact: (f) => this.onFact(f),
        onRawFrame: (f) => this.frames.push(f),
        onStderr: (c) => (this.stderr = (this.stderr + c).slice(-8_000)),
      });
    } catch (e) {
      await this.server.close();
      rmSync(this.home, { recursive: true, force: true });
      throw new Error(`${this.name}: the adapter did not start: ${String(e)}\n${this.describe()}`);
    }
  }

  /** What the subclass keeps after each folded fact. */
  protected abstract observe(fact: FactBody): void;
  /** The model server's requests, one short string each, for failure reports. */
  protected abstract requestSummaries(): string[];
  /** Where to write this run's recording and how to scrub it, when recording was asked for. */
  protected abstract recording(): { file: string; scrub: ScrubOptions } | undefined;

  private onFact(f: FactBody): void {
    assertValidFact(f);
    this.facts.push(f);
    const entry = toFact(
      {
        v: 1,
        taskId: this.owner.taskId,
        sessionId: SESSION,
        executionId: 'e1',
        generation: 1,
        writer: { role: 'worker', instance: 'w-real', seq: ++this.seq },
      },
      f,
    ) as StreamEntry;
    for (const o of [this.owner, this.shadow]) {
      o?.append(entry);
      o?.decideNow();
    }
    this.observe(f);
    // A worker reads admissions asynchronously; never re-enter the host from its own callback.
    setImmediate(() => this.dispatchAdmitted());
  }

  session(owner: Owner = this.owner) {
    return owner.session(SESSION);
  }

  /** The worker's half: every admission the owner decided goes to the agent as session/prompt. */
  private dispatchAdmitted(): void {
    for (const e of this.owner.entries) {
      if (e.type !== 'prompt.admitted' || this.sent.has(e.data.promptId)) continue;
      this.sent.add(e.data.promptId);
      // As the projector delivers: from the claim, which carries the text until dispatch (the
      // prompt record drops it at admission).
      const s = this.session();
      const claim = [s.turn, s.steer].find(
        (c) => c?.promptId === e.data.promptId && c.generation === e.data.admissionGeneration,
      );
      if (!claim?.text) {
        this.fail(
          `prompt ${e.data.promptId} was admitted (generation ${e.data.admissionGeneration}) but no claim carries its text: ${JSON.stringify({ turn: s.turn, steer: s.steer })}`,
        );
        continue;
      }
      this.turns.push(
        this.host
          .prompt({
            promptId: e.data.promptId,
            admissionGeneration: e.data.admissionGeneration,
            text: claim.text,
          })
          .catch((err: unknown) => err),
      );
    }
  }

  /** A human prompt through the owner (and the shadow, while attached); returns its id. */
  submit(key: string): string {
    const id = this.owner.submit(SESSION, key);
    this.shadow?.submit(SESSION, key);
    this.dispatchAdmitted();
    return id;
  }

  detachShadow(): Owner {
    const s = this.shadow!;
    this.shadow = undefined;
    return s;
  }

  /** The client's `session/cancel` for the running turn. */
  cancel(): Promise<void> {
    return this.host.cancel();
  }

  release(file: string): void {
    writeFileSync(join(this.work, file), '');
  }

  /** Records the first reason the scenario cannot pass; every probe throws it from then on. */
  fail(reason: string): void {
    this.failure ??= reason;
  }

  async until(what: string, cond: () => boolean): Promise<void> {
    const deadline = Date.now() + PROBE_MS;
    for (;;) {
      if (this.failure !== undefined)
        throw new Error(
          `${this.name}: while waiting for ${what}: ${this.failure}\n${this.describe()}`,
        );
      if (cond()) return;
      if (Date.now() > deadline)
        throw new Error(`${this.name}: timed out waiting for ${what}\n${this.describe()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  has(pred: (f: FactBody) => boolean): boolean {
    return this.facts.some(pred);
  }

  /** The tool calls and updates the agent sent, in order: what a fact about a tool came from. */
  private toolUpdates(): string[] {
    return this.frames.flatMap((f) => {
      const m = f.message as {
        method?: string;
        params?: { update?: { sessionUpdate?: string; toolCallId?: string; status?: string } };
      };
      const u = m.params?.update;
      if (m.method !== 'session/update' || !u?.sessionUpdate?.startsWith('tool_call')) return [];
      return [`${f.at} ${u.sessionUpdate} ${u.toolCallId} ${u.status ?? ''}`];
    });
  }

  describe(): string {
    return [
      `facts: ${this.facts.map((f) => `${f.type} ${JSON.stringify(f.data).slice(0, 160)}`).join('\n  ')}`,
      `model requests: ${JSON.stringify(this.requestSummaries())}`,
      `agent's tool updates: ${this.toolUpdates().join('\n  ')}`,
      `stderr tail: ${this.stderr.slice(-2_000)}`,
    ].join('\n');
  }

  /** Waits for every dispatched prompt's answer, closes the agent, keeps the recording if asked. */
  async finish(): Promise<void> {
    const answers = await Promise.all(this.turns);
    answers.forEach((a) => {
      if (a instanceof Error) throw a;
    });
    await this.host.close();
    const rec = this.recording();
    if (rec) {
      const frames = scrubRecording(this.frames, rec.scrub);
      writeFileSync(rec.file, frames.map(toRecordingLine).join('\n') + '\n');
    }
  }

  async dispose(): Promise<void> {
    await this.host?.close();
    await this.server.close();
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** `describe` where the agent's binary is installed; otherwise skipped, saying why. */
export const describeWhereInstalled = (
  install: { binary: string } | { missing: string },
  spec: string,
): jest.Describe => {
  if (!('missing' in install)) return describe;
  console.warn(`${spec}: skipped, ${install.missing}`);
  return describe.skip;
};

/** Asks the model server to fail `late.session` at once on a request its script does not match. */
export const failSessionOnUnmatched = (late: { session?: { fail(reason: string): void } }) => ({
  onUnmatched: (r: unknown) =>
    late.session?.fail(`the model server has no scripted turn for ${JSON.stringify(r)}`),
  dumpTo: process.env.BATON_SCRIPTED_MODEL_DUMP,
});

/** Expects the handshake to have named `agent` and chosen `dialect`, with no handoff. */
export const expectNegotiated = (
  s: { facts: FactBody[] },
  agent: { name: string; version: string },
  dialect: string,
): void => {
  expect(s.facts.find((f) => f.type === 'capabilities.negotiated')).toMatchObject({
    data: { agent, dialect, handoff: false, attestedKinds: [] },
  });
};

export const toolStarted = (f: FactBody) => f.type === 'tool.started';
export const toolDone = (f: FactBody) => f.type === 'tool.updated' && f.data.status === 'completed';
export const turnEnded = (gen: number) => (f: FactBody) =>
  f.type === 'turn.ended' && f.data.admissionGeneration === gen;

/**
 * The `exec` scenario's middle: the scripted command waits for `release-exec`; while it runs the
 * turn is generating, then its tool completes.
 */
export const runHeldCommand = async <S extends ModelServer>(s: RealSession<S>): Promise<void> => {
  await s.until('the command to start', () => s.has(toolStarted));
  expect(foregroundActivity(s.session())).toBe('generating');
  s.release('release-exec');
  await s.until('the command to complete', () => s.has(toolDone));
};

/** The `cancel` scenario's middle: once the scripted command runs, the client cancels the turn. */
export const cancelRunningCommand = async <S extends ModelServer>(
  s: RealSession<S>,
): Promise<void> => {
  await s.until('the command to run', () => existsSync(join(s.work, 'started')));
  await s.cancel();
};

/** After `finish`: every model request was scripted, and the session is idle with nothing left. */
export const expectSettled = (s: RealSession<ModelServer & { unmatched(): unknown[] }>): void => {
  expect(s.server.unmatched()).toEqual([]);
  expect(foregroundActivity(s.session())).toBeNull();
  expect(liveRegistrations(s.session())).toEqual([]);
};

/** A real session whose model is one of the scripted OpenAI servers (Responses, Chat Completions). */
export abstract class OpenAiRealSession extends RealSession<ScriptedServer> {
  protected observe(_fact: FactBody): void {}

  protected requestSummaries(): string[] {
    return this.server.requests.map((r) => `${r.path}:${r.answer}`);
  }
}
