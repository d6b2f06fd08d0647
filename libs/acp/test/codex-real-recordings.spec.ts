import {
  activeSubagentCount,
  admissionGate,
  foregroundActivity,
  sessionActivity,
  sessionView,
} from '@baton/activity';
import { reduceFrames, type FactBody, type Frame } from '../src';
import { loadFixture } from './helpers';
import { playRecording, SESSION } from './support/play-recording';

/**
 * The real codex-acp 0.16.0 recordings (codex-real.spec.ts) through the codex dialect and then
 * fold/decide under both admission policies: what Baton shows at each step. docs/recordings.md
 * (## Codex) has the same table.
 */

const PROFILES = ['plain', 'terminal'] as const;
const SCENARIOS = ['plain', 'exec', 'longExec', 'subagent'] as const;
type Profile = (typeof PROFILES)[number];
type Scenario = (typeof SCENARIOS)[number];

const fixture = (p: Profile, s: Scenario) =>
  p === 'plain' ? `codex-real-${s}` : `codex-real-${p}-${s}`;

interface Step {
  fact: FactBody['type'];
  state: string;
  foreground: ReturnType<typeof foregroundActivity>;
  shown: number;
  subagents: number;
}

const play = (facts: FactBody[], policy: 'handoff' | 'coarse') => {
  const steps: Step[] = [];
  const { o, decisions } = playRecording(facts, policy, (f, owner) => {
    const s = owner.session(SESSION);
    steps.push({
      fact: f.type,
      state: sessionActivity(s).state,
      foreground: foregroundActivity(s),
      shown: sessionView(s).backgroundWork.length,
      subagents: activeSubagentCount(s),
    });
  });
  return { o, steps, decisions };
};

const updates = (frames: Frame[]) =>
  frames.flatMap((f) => {
    const u = (f.message as { params?: { update?: Record<string, unknown> } }).params?.update;
    return f.direction === 'agent->client' && u !== undefined ? [u] : [];
  });

const CASES = PROFILES.flatMap((p) => SCENARIOS.map((s) => [p, s] as const));

describe('codex-acp 0.16.0 (real recordings) through the codex dialect and fold/decide', () => {
  it.each(CASES)('%s client, %s', (profile, scenario) => {
    const frames = loadFixture(fixture(profile, scenario));
    const { facts } = reduceFrames(frames);
    expect(facts[0]).toMatchObject({
      type: 'capabilities.negotiated',
      data: {
        agent: { name: 'codex-acp', version: '0.16.0' },
        dialect: 'codex',
        handoff: false,
        promptQueueing: false,
        attestedKinds: [],
      },
    });
    // Exec commands are the turn's own tools; only a command left running past its turn is
    // background work (longExec).
    const long = scenario === 'longExec';
    if (!long) expect(facts.filter((f) => f.type.startsWith('background.'))).toEqual([]);
    const prompts = long ? 2 : 1;

    for (const policy of ['handoff', 'coarse'] as const) {
      const { o, steps, decisions } = play(facts, policy);
      expect(decisions).toEqual(Array(prompts).fill('admitted'));
      expect(o.entries.filter((e) => e.type === 'prompt.admitted')).toEqual(
        Array(prompts).fill(
          expect.objectContaining({ data: expect.objectContaining({ mode: 'turn' }) }),
        ),
      );
      // Busy (generating) from dispatch to the turn's end, nothing in the background meanwhile.
      const from = steps.findIndex((s) => s.fact === 'prompt.dispatched');
      const to = steps.findIndex((s) => s.fact === 'turn.ended');
      expect(from).toBeGreaterThan(0);
      expect(to).toBeGreaterThan(from);
      for (const s of steps.slice(from, to).filter((x) => !x.fact.startsWith('background.')))
        expect(s).toMatchObject({ state: 'running', foreground: 'generating', shown: 0 });
      expect(steps.every((s) => s.subagents === 0)).toBe(true);
      // A command left running past its turn is listed, possibly finished: Codex never says
      // when it ends, so nothing is known to run and the headline does not claim background
      // work; the session waits for input either way.
      expect(steps.at(-1)).toMatchObject({ state: 'waiting_for_input', foreground: null });
      const shown = sessionView(o.session(SESSION)).backgroundWork;
      if (long) {
        // The command left running: shown from the turn's end on, never as surely running.
        expect(shown).toEqual([
          expect.objectContaining({ kind: 'shell', id: 'call_scripted1', possiblyFinished: true }),
        ]);
        expect(steps.slice(to).every((s) => s.shown === 1)).toBe(true);
      } else {
        expect(steps.every((s) => s.shown === 0)).toBe(true);
      }
      const s = o.session(SESSION);
      expect(s.turn).toBeNull();
      expect(admissionGate(s, 'human')).toEqual({ open: true, mode: 'turn' });
    }
  });

  it('exec: one foreground tool card, started in progress and completed before the turn ends', () => {
    for (const profile of PROFILES) {
      const facts = reduceFrames(loadFixture(fixture(profile, 'exec'))).facts;
      const tools = facts.filter((f) => f.type === 'tool.started' || f.type === 'tool.updated');
      expect(tools).toEqual([
        {
          type: 'tool.started',
          data: expect.objectContaining({
            ownership: 'foreground',
            status: 'in_progress',
            toolKind: 'execute',
          }),
        },
        { type: 'tool.updated', data: expect.objectContaining({ status: 'completed' }) },
      ]);
      expect(facts.findIndex((f) => f.type === 'tool.updated')).toBeLessThan(
        facts.findIndex((f) => f.type === 'turn.ended'),
      );
    }
  });

  it('terminal_output client: terminal_info on the card, output and terminal_exit on its updates (the exit with the completion)', () => {
    const u = updates(loadFixture(fixture('terminal', 'exec')));
    const card = u.find((x) => x.sessionUpdate === 'tool_call');
    expect(card?._meta).toMatchObject({ terminal_info: { terminal_id: card?.toolCallId } });
    expect(u.some((x) => (x._meta as { terminal_output?: unknown })?.terminal_output)).toBe(true);
    const exit = u.find((x) => (x._meta as { terminal_exit?: unknown })?.terminal_exit);
    expect(exit).toMatchObject({ status: 'completed', _meta: { terminal_exit: { exit_code: 0 } } });
    // Without the capability the card carries none of it.
    const plain = updates(loadFixture(fixture('plain', 'exec')));
    expect(plain.some((x) => x._meta !== undefined)).toBe(false);
  });

  it('subagent: 0.16.0 renders neither spawn_agent/wait_agent nor the child’s own tools — only the parent’s turn is seen', () => {
    for (const profile of PROFILES) {
      const u = updates(loadFixture(fixture(profile, 'subagent')));
      expect(
        u.filter((x) => x.sessionUpdate === 'tool_call' || x.sessionUpdate === 'tool_call_update'),
      ).toEqual([]);
      expect([...new Set(u.map((x) => x.sessionUpdate))].sort()).toEqual([
        'agent_message_chunk',
        'available_commands_update',
        'config_option_update',
        'usage_update',
      ]);
    }
  });
});
