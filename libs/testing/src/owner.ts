// Test driver: plays the projector's role in memory — fold every entry, and after each one let
// the owner decide and fold its decisions, exactly as apps/projector does against Redis.
import {
  SCHEMA_VERSION,
  groupOf,
  type Capabilities,
  type EntryOf,
  type EntryType,
  type StreamEntry,
  type Update,
} from '@baton/protocol';
import {
  decide,
  fold,
  type AdmissionLimits,
  initialTaskState,
  type DecisionDraft,
  type PermissionAnswer,
  type TaskState,
  type Timer,
} from '@baton/activity';

type Data<T extends EntryType> = EntryOf<T>['data'];
type FactType = Extract<StreamEntry, { executionId: string }>['type'];
type CommandType =
  EntryOf<EntryType> extends infer E
    ? E extends { data: { commandId: string } }
      ? E extends { executionId: string } | { sessionId?: never }
        ? never
        : E extends { type: infer T }
          ? T
          : never
      : never
    : never;
type Work = Data<'background.started'>['work'];

export const CLAUDE_CAPS: Capabilities = {
  agent: { name: 'claude-agent-acp', version: '0.101.0' },
  dialect: 'claude',
  promptQueueing: true,
  handoff: true,
  attestedKinds: ['subagent', 'shell', 'monitor'],
  unambiguousCompletionKinds: [],
};
export const GENERIC_CAPS: Capabilities = {
  agent: { name: 'some-agent' },
  dialect: 'generic',
  promptQueueing: false,
  handoff: false,
  attestedKinds: [],
  unambiguousCompletionKinds: [],
};

/** What an agent typically offers in a permission request. */
export const PERMISSION_OPTIONS = [
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
];

export class Owner {
  state: TaskState;
  readonly entries: StreamEntry[] = [];
  readonly updates: Update[] = [];
  private seq = 0;
  private commands = 0;
  /** When false, commands wait for an explicit decideNow(). */
  autoDecide = true;
  /** The bounds decide applies (libs/activity's defaults unless set). */
  limits: AdmissionLimits | undefined;

  constructor(readonly taskId = 't1') {
    this.state = initialTaskState(taskId);
  }

  append(entry: StreamEntry): void {
    this.entries.push(entry);
    const f = fold(this.state, entry);
    this.state = f.state;
    // Stamped as the projector publishes them: the entry's position (its index here) and the end
    // of its group.
    this.updates.push(...groupOf(`${this.entries.length}-0`, f.updates));
  }

  decideNow(timer?: Timer): DecisionDraft[] {
    const drafts = decide(this.state, timer, this.limits);
    for (const d of drafts) {
      this.append({
        v: SCHEMA_VERSION,
        taskId: this.taskId,
        writer: { role: 'projector', instance: 'p1', seq: ++this.seq },
        ...d,
      } as StreamEntry);
    }
    return drafts;
  }

  /** One of the owner's clocks runs out for a session, and the owner decides on it. */
  fire<T extends Timer['type']>(
    type: T,
    sessionId: string,
    rest: Omit<Extract<Timer, { type: T }>, 'type' | 'sessionId'>,
  ): DecisionDraft[] {
    return this.decideNow({ type, sessionId, ...rest } as unknown as Timer);
  }

  fact<T extends FactType>(
    sessionId: string,
    executionId: string,
    generation: number,
    type: T,
    data: Data<T>,
  ): void {
    this.append({
      v: SCHEMA_VERSION,
      taskId: this.taskId,
      sessionId,
      executionId,
      generation,
      writer: { role: 'worker', instance: 'w1', seq: ++this.seq },
      type,
      data,
    } as StreamEntry);
    if (this.autoDecide) this.decideNow();
  }

  command<T extends CommandType>(
    sessionId: string,
    type: T,
    data: Omit<Data<T>, 'commandId'> & { commandId?: string },
  ): string {
    const commandId = data.commandId ?? `c${++this.commands}`;
    this.append({
      v: SCHEMA_VERSION,
      taskId: this.taskId,
      sessionId,
      writer: { role: 'gateway', instance: 'g1', seq: ++this.seq },
      type,
      data: { ...data, commandId },
    } as StreamEntry);
    if (this.autoDecide) this.decideNow();
    return commandId;
  }

  /** A task-wide command (archive, unarchive, delete). */
  taskCommand(type: 'task.archive' | 'task.unarchive' | 'task.delete'): string {
    const commandId = `c${++this.commands}`;
    this.append({
      v: SCHEMA_VERSION,
      taskId: this.taskId,
      writer: { role: 'gateway', instance: 'g1', seq: ++this.seq },
      type,
      data: { commandId },
    } as StreamEntry);
    if (this.autoDecide) this.decideNow();
    return commandId;
  }

  session(id = 's1') {
    return this.state.sessions[id]!;
  }

  /** Convenience: an execution of a session, with its facts. */
  execution(sessionId: string, executionId: string, generation: number) {
    const f = <T extends FactType>(type: T, data: Data<T>) =>
      this.fact(sessionId, executionId, generation, type, data);
    const background = (attested: boolean, toolCallId: string | undefined, work: Work) =>
      f('background.started', {
        attested,
        ...(toolCallId ? { toolCallId } : {}),
        work,
      });
    return {
      start: (caps: Capabilities = GENERIC_CAPS) => {
        f('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
        f('capabilities.negotiated', caps);
      },
      fact: f,
      dispatch: (promptId: string, admissionGeneration: number) =>
        f('prompt.dispatched', { promptId, admissionGeneration }),
      /** The worker hands a claimed prompt to the agent, or reports that it could not. */
      deliver: (claim: { promptId: string; generation: number }, delivered: boolean) =>
        delivered
          ? f('prompt.dispatched', {
              promptId: claim.promptId,
              admissionGeneration: claim.generation,
            })
          : f('prompt.dispatch_failed', {
              promptId: claim.promptId,
              admissionGeneration: claim.generation,
              error: 'x',
            }),
      /** The worker reports that it handed the owner's answer to a permission request over. */
      resolved: (requestId: string, answer: PermissionAnswer) =>
        f('permission.resolved', {
          requestId,
          outcome: answer.outcome,
          ...(answer.optionId !== null ? { optionId: answer.optionId } : {}),
          by: answer.by,
        }),
      output: () => f('foreground.output', { channel: 'message' }),
      idle: (origin: string, admissionGeneration?: number) =>
        f(
          'foreground.idle',
          admissionGeneration === undefined ? { origin } : { origin, admissionGeneration },
        ),
      endTurn: (admissionGeneration: number, stopReason = 'end_turn') =>
        f('turn.ended', { admissionGeneration, stopReason }),
      end: (reason: Data<'execution.ended'>['reason'] = 'completed') =>
        f('execution.ended', { reason }),
      subagent: (id: string, attested = true, toolCallId?: string) =>
        background(attested, toolCallId, {
          kind: 'subagent',
          id,
          label: `agent ${id}`,
          chat: `ahp-chat:/${id}`,
          startedAt: '2026-11-30T00:00:01Z',
        }),
      shell: (id: string, attested = true, toolCallId?: string) =>
        background(attested, toolCallId, {
          kind: 'shell',
          id,
          label: `shell ${id}`,
          command: 'sleep 100',
          startedAt: '2026-11-30T00:00:01Z',
        }),
      finished: (workId: string) => f('background.ended', { workId, status: 'completed' }),
    };
  }

  submit(
    sessionId: string,
    key: string,
    origin: Data<'prompt.submit'>['origin'] = 'human',
    promptId = `p-${key}`,
  ): string {
    this.command(sessionId, 'prompt.submit', {
      promptId,
      idempotencyKey: key,
      text: `prompt ${key}`,
      origin,
    });
    return promptId;
  }

  decisionsFor(promptId: string) {
    return this.updates
      .filter((u) => u.type === 'prompt.decided' && u.data.promptId === promptId)
      .map((u) => (u.type === 'prompt.decided' ? u.data.decision : null));
  }
}

type SessionSettings = Omit<Data<'session.configure'>, 'commandId'>;

/**
 * A new owner whose session s1 (configured with `settings`, if any) runs execution e1
 * (generation 1), started with `caps`.
 */
export function startedSession(
  caps: Capabilities = GENERIC_CAPS,
  settings?: SessionSettings,
): { o: Owner; x: ReturnType<Owner['execution']> } {
  const o = new Owner();
  if (settings) o.command('s1', 'session.configure', settings);
  const x = o.execution('s1', 'e1', 1);
  x.start(caps);
  return { o, x };
}

/** As startedSession, and the agent runs prompt `key`: claimed and dispatched as generation 1. */
export function runningSession(
  caps: Capabilities = GENERIC_CAPS,
  key = 'k1',
  settings?: SessionSettings,
): { o: Owner; x: ReturnType<Owner['execution']>; p: string } {
  const { o, x } = startedSession(caps, settings);
  const p = o.submit('s1', key);
  x.dispatch(p, 1);
  return { o, x, p };
}
