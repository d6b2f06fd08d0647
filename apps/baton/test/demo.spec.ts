// The demo's script (what it sends, when) and the recording it plays: overlapping background
// work, a prompt that queues behind a running turn, a turn long enough to cancel.
import { parseRecording } from '@baton/acp';
import type { SessionView } from '@baton/protocol';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CANCEL_AFTER_MS, DEMO_RECORDING, DemoScript } from '../src/demo';

const view = (o: {
  generation?: number | null;
  foreground?: 'generating' | 'background' | null;
  work?: number;
  queued?: number;
}): SessionView =>
  ({
    sessionId: 'main',
    activity: {
      state: o.generation ? 'running' : 'waiting_for_input',
      foregroundActivity: o.foreground ?? (o.generation ? 'generating' : null),
      activeSubagentCount: 0,
      supportsSteering: false,
      runningGeneration: o.generation ?? null,
      admission: 'handoff',
      attention: null,
    },
    queue: {
      autoRun: true,
      capacity: 0,
      entries: Array.from({ length: o.queued ?? 0 }, () => ({})),
      blockedBy: null,
    },
    backgroundWork: Array.from({ length: o.work ?? 0 }, (_, i) => ({ id: `w${i}` })),
  }) as unknown as SessionView;

describe('the demo script', () => {
  it('queues prompt 2 behind turn 1, sends prompt 3 once all is done, then cancels turn 3', () => {
    const s = new DemoScript(2);
    expect(s.start()).toEqual([{ kind: 'prompt', n: 1 }]);
    // Waiting for the agent: nothing yet.
    expect(s.next(view({ queued: 1 }))).toEqual([]);
    // Turn 1 runs: prompt 2 now, so it queues behind it.
    expect(s.next(view({ generation: 1 }))).toEqual([{ kind: 'prompt', n: 2 }]);
    expect(s.next(view({ generation: 1, queued: 1, work: 2 }))).toEqual([]);
    // Turn 2 runs while the shells do; then only background work: prompt 3 waits for all of it.
    expect(s.next(view({ generation: 2, work: 2 }))).toEqual([]);
    expect(s.next(view({ foreground: 'background', work: 1 }))).toEqual([]);
    expect(s.next(view({}))).toEqual([{ kind: 'prompt', n: 3 }]);
    expect(s.next(view({}))).toEqual([]);
    // Turn 3 runs: cancel it (once) a while later, at the replay's speed.
    expect(s.next(view({ generation: 3 }))).toEqual([
      { kind: 'cancel', generation: 3, afterMs: CANCEL_AFTER_MS / 2 },
    ]);
    expect(s.next(view({ generation: 3 }))).toEqual([]);
    expect(s.next(view({}))).toEqual([]);
  });
});

describe('the demo recording', () => {
  const frames = parseRecording(
    readFileSync(join(__dirname, '../../../libs/acp/fixtures', DEMO_RECORDING), 'utf8'),
  );
  const at = (f: { at: string }) => Date.parse(f.at);
  const sdk = (subtype: string) =>
    new Map(
      frames.flatMap((f) => {
        const m = f.message as { method?: string; params?: { message?: Record<string, unknown> } };
        const x = m.params?.message;
        return m.method === '_claude/sdkMessage' && x?.subtype === subtype
          ? [[x.task_id as string, { at: at(f), type: x.task_type }] as const]
          : [];
      }),
    );

  it('runs two shells at once, and a shell beside a subagent', () => {
    const started = sdk('task_started');
    const ended = sdk('task_notification');
    expect([...started.keys()].sort()).toEqual([...ended.keys()].sort());
    const overlap = (a: string, b: string) =>
      started.get(a)!.at < ended.get(b)!.at && started.get(b)!.at < ended.get(a)!.at;
    expect(started.get('task_busy_tests')?.type).toBe('local_bash');
    expect(started.get('task_busy_lint')?.type).toBe('local_bash');
    expect(started.get('task_busy_review')?.type).toBe('local_agent');
    expect(overlap('task_busy_tests', 'task_busy_lint')).toBe(true);
    expect(overlap('task_busy_tests', 'task_busy_review')).toBe(true);
  });

  it('ends all its background work before the last prompt, whose turn outlasts the cancel', () => {
    const prompts = frames.filter(
      (f) => (f.message as { method?: string }).method === 'session/prompt',
    );
    expect(prompts).toHaveLength(3);
    const last = frames.indexOf(prompts[2]!);
    const ends = frames.flatMap((f, i) =>
      (f.message as { params?: { message?: { subtype?: string } } }).params?.message?.subtype ===
      'task_notification'
        ? [i]
        : [],
    );
    expect(Math.max(...ends)).toBeLessThan(last);
    // A cancel skips what is left of the turn: it must still be generating when it comes.
    expect(at(frames.at(-1)!) - at(prompts[2]!)).toBeGreaterThan(CANCEL_AFTER_MS * 3);
  });
});
