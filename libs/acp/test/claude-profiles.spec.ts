import {
  activeSubagentCount,
  admissionGate,
  parkable,
  sessionActivity,
  sessionView,
} from '@baton/activity';
import type { BackgroundWork } from '@baton/protocol';
import type { Owner } from '@baton/testing';
import { reduceFrames, type FactBody } from '../src';
import { loadFixture } from './helpers';
import { playRecording, SESSION } from './support/play-recording';

/**
 * The real claude-agent-acp 0.101.0 recordings of every client profile × scenario
 * (claude-real.spec.ts, "every client profile"), through the dialects and then fold/decide under
 * both admission policies: what Baton shows at each step. docs/recordings.md has the same table.
 *
 * Every recording ends with all its background work finished (the model was told of each end):
 * so at its end nothing may be shown as running — shown items must be marked possibly finished.
 */

type Profile = 'raw' | 'plain' | 'terminal' | 'subagents' | 'subagentsRaw' | 'v2';
type Scenario = 'shell' | 'subagent' | 'monitor' | 'all' | 'twoShells';

const fixture = (p: Profile, s: Scenario) =>
  p === 'raw' ? `claude-real-${s}` : p === 'v2' ? `claude-v2-${s}` : `claude-real-${p}-${s}`;

interface Expect {
  /** Ends identified by their own id (background.ended naming the work). */
  identified: number;
  /** What the page still shows at the recording's end (all of it possibly finished). */
  shownAtEnd: string[];
  /** Kinds attested by the negotiated capabilities. */
  attested: string[];
}

const E = (identified: number, shownAtEnd: string[], attested: string[] = []): Expect => ({
  identified,
  shownAtEnd,
  attested,
});
const RAW = ['shell', 'subagent', 'monitor'];
const V2 = ['shell', 'subagent'];

/** profile × scenario → what Baton must show. */
const TABLE: Record<Profile, Partial<Record<Scenario, Expect>>> = {
  raw: {
    shell: E(1, [], RAW),
    subagent: E(1, [], RAW),
    monitor: E(1, [], RAW),
    all: E(3, [], RAW),
    twoShells: E(2, [], RAW),
  },
  plain: {
    // One candidate: retired for display at its task-notification cycle.
    shell: E(0, []),
    subagent: E(0, []),
    // A Monitor makes every cycle possibly one of its events: possibly finished, never retired.
    monitor: E(0, ['monitor']),
    all: E(0, ['monitor', 'shell', 'subagent']),
    // Two shells, one reported at a time: neither can be told apart, both possibly finished.
    twoShells: E(0, ['shell', 'shell']),
  },
  terminal: {
    // The display terminal stays open until the shell really ends: `terminal_exit` names it.
    shell: E(1, []),
    subagent: E(0, []),
    monitor: E(0, ['monitor']),
    all: E(1, ['monitor', 'subagent']),
    twoShells: E(2, []),
  },
  subagents: {
    shell: E(0, [], ['subagent']),
    // Child sessions: registered at subagent_update running, ended at its idle.
    subagent: E(1, [], ['subagent']),
    monitor: E(0, ['monitor'], ['subagent']),
    all: E(1, ['monitor', 'shell'], ['subagent']),
    twoShells: E(0, ['shell', 'shell'], ['subagent']),
  },
  v2: {
    // The background list registers each item by its id and retires it when it leaves the list.
    shell: E(1, [], V2),
    subagent: E(1, [], V2),
    // 0.101.0 never lists a Monitor: nothing is registered, nothing shown.
    monitor: E(0, [], V2),
    all: E(2, [], V2),
    twoShells: E(2, [], V2),
  },
  subagentsRaw: {
    // task_started names the Agent call the parent never shows; the child session is the work.
    subagent: E(1, [], RAW),
    all: E(3, [], RAW),
  },
};

/** Folds a recording's facts as the owner does: what it shows after each, how prompts fared. */
const play = (facts: FactBody[], policy: 'handoff' | 'coarse') => {
  const shown: BackgroundWork[][] = [];
  let subagentsShown = 0;
  const { o, decisions: admitted } = playRecording(facts, policy, (_f, owner) => {
    const s = owner.session(SESSION);
    shown.push(sessionView(s).backgroundWork);
    subagentsShown = Math.max(subagentsShown, activeSubagentCount(s));
  });
  return { o, shown, subagentsShown, admitted };
};

const CASES = (Object.keys(TABLE) as Profile[]).flatMap((p) =>
  (Object.keys(TABLE[p]) as Scenario[]).map((s) => [p, s] as const),
);

describe('claude-agent-acp 0.101.0, every client profile × scenario (real recordings)', () => {
  it.each(CASES)('%s profile, %s', (profile, scenario) => {
    const want = TABLE[profile][scenario]!;
    const { facts } = reduceFrames(loadFixture(fixture(profile, scenario)));
    const caps = facts.find((f) => f.type === 'capabilities.negotiated');
    expect(caps?.type === 'capabilities.negotiated' && caps.data.attestedKinds).toEqual(
      want.attested,
    );
    const ends = facts.filter((f) => f.type === 'background.ended');
    expect(ends.filter((f) => f.type === 'background.ended' && f.data.workId).length).toBe(
      want.identified,
    );

    for (const policy of ['handoff', 'coarse'] as const) {
      const run = play(facts, policy);
      const last = run.shown.at(-1)!;
      // Finished work is never shown as running: whatever is still listed is marked.
      expect(last.map((w) => w.kind).sort()).toEqual([...want.shownAtEnd].sort());
      for (const w of last) expect(w.possiblyFinished).toBe(true);
      // Subagents are shown in every profile while they run.
      if (scenario === 'subagent' || scenario === 'all') {
        expect(run.subagentsShown).toBe(1);
        expect(run.shown.some((l) => l.some((w) => w.kind === 'subagent'))).toBe(true);
      }
      // Every recorded prompt is admitted when the recording dispatched it — except the raw
      // profile's successors taken by handoff, which coarse queues.
      if (policy === 'handoff' || (profile !== 'raw' && profile !== 'subagentsRaw'))
        expect(run.admitted.every((o) => o === 'admitted')).toBe(true);
      // Without raw task messages nothing is handed off: the session stays busy until turns end.
      if (profile !== 'raw' && profile !== 'subagentsRaw')
        expect(
          run.o.entries.filter((e) => e.type === 'prompt.admitted' && e.data.mode === 'handoff'),
        ).toEqual([]);
      // A session whose turn ended is promptable, whatever work is (possibly) still shown.
      const s = run.o.session(SESSION);
      if (s.turn === null) expect(admissionGate(s, 'human')).toEqual({ open: true, mode: 'turn' });
      // With every listed item possibly finished, nothing is known to run: the headline does
      // not say background, and the idle bound may park the session.
      if (s.turn === null && !s.generating) {
        expect(sessionActivity(s).foregroundActivity).toBeNull();
        const x = s.execution!;
        const agentSession = { executionId: x.id, acpSessionId: 'a', loadable: true, launch: null };
        expect(parkable({ ...s, agentSession })).toBe(x.phase === 'ready' && s.queue.length === 0);
      }
    }
  });

  it('unidentified completions never relax admission: the gate is the same with them left out', () => {
    for (const [profile, scenario] of CASES) {
      const { facts } = reduceFrames(loadFixture(fixture(profile, scenario)));
      const without = facts.filter((f) => !(f.type === 'background.ended' && f.data.candidates));
      for (const policy of ['handoff', 'coarse'] as const) {
        const a = play(facts, policy).o;
        const b = play(without, policy).o;
        const gates = (o: Owner) =>
          o.entries
            .filter((e) => e.type === 'prompt.admitted' || e.type === 'prompt.queued')
            .map((e) => [e.type, 'promptId' in e.data ? e.data.promptId : '']);
        expect(gates(a)).toEqual(gates(b));
        expect(admissionGate(a.session(SESSION), 'human')).toEqual(
          admissionGate(b.session(SESSION), 'human'),
        );
      }
    }
  });
});
