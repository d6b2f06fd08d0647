import fc from 'fast-check';
import { SCHEMA_VERSION, type DecisionFence, type StreamEntry } from '@baton/protocol';
import { decisionFenceRefusal, fenceFloorAfter, type FenceHistory } from '../src';

// A writer that may append facts or commands (a worker's or a gateway's Redis credential) can
// append an entry shaped like a decision. The owner's fold counts a decision only under a lease
// the shard really had, never older than the last decision's.

const TASK = 'acme/t';
const queued = (fence?: DecisionFence): StreamEntry => ({
  v: SCHEMA_VERSION,
  taskId: TASK,
  sessionId: 's',
  writer: { role: 'projector', instance: 'p', seq: 1 },
  type: 'prompt.queued',
  data: { promptId: 'p1', position: 1, reason: 'busy' },
  ...(fence ? { fence } : {}),
});
const deleted = (fence?: DecisionFence): StreamEntry => ({
  v: SCHEMA_VERSION,
  taskId: TASK,
  writer: { role: 'projector', instance: 'p', seq: 2 },
  type: 'task.deleted',
  data: {},
  ...(fence ? { fence } : {}),
});
const fact: StreamEntry = {
  v: SCHEMA_VERSION,
  taskId: TASK,
  sessionId: 's',
  executionId: 'x',
  generation: 1,
  writer: { role: 'worker', instance: 'w', seq: 1 },
  type: 'foreground.output',
  data: { channel: 'message' },
};

const FROM = 1_000_000;
const history: FenceHistory = {
  owners: new Map([
    [1, 'proj-a'],
    [2, 'proj-b'],
    [3, 'proj-a'],
  ]),
  from: FROM,
};
const at = (ms: number) => `${ms}-0`;

describe('decisionFenceRefusal', () => {
  it('counts a decision under a lease the shard had, at or above the floor', () => {
    expect(
      decisionFenceRefusal(queued({ epoch: 2, owner: 'proj-b' }), at(FROM + 5), 2, history),
    ).toBeUndefined();
    expect(
      decisionFenceRefusal(deleted({ epoch: 3, owner: 'proj-a' }), at(FROM + 5), 1, history),
    ).toBeUndefined();
  });

  it('refuses a decision without a fence appended since fences were kept', () => {
    expect(decisionFenceRefusal(queued(), at(FROM), 0, history)).toMatch(
      /carries no owner's fence/,
    );
    expect(decisionFenceRefusal(deleted(), at(FROM + 1), 0, history)).toMatch(/no owner's fence/);
  });

  it('counts a decision without a fence written before fences were kept', () => {
    expect(decisionFenceRefusal(queued(), at(FROM - 1), 0, history)).toBeUndefined();
    expect(decisionFenceRefusal(queued(), at(FROM + 1), 0, { owners: new Map() })).toBeUndefined();
  });

  it('refuses a lease the shard never had: an epoch not handed out, or not to that owner', () => {
    expect(
      decisionFenceRefusal(queued({ epoch: 9, owner: 'proj-a' }), at(FROM + 1), 0, history),
    ).toMatch(/epoch 9, which the shard never had/);
    expect(
      decisionFenceRefusal(deleted({ epoch: 2, owner: 'worker-1' }), at(FROM + 1), 0, history),
    ).toMatch(/2:worker-1, but epoch 2 was proj-b's/);
  });

  it('refuses an older lease than the last decision counted', () => {
    expect(
      decisionFenceRefusal(deleted({ epoch: 1, owner: 'proj-a' }), at(FROM + 1), 3, history),
    ).toMatch(/epoch 1, older than epoch 3/);
  });

  it('never refuses facts or commands, fenced or not', () => {
    expect(decisionFenceRefusal(fact, at(FROM + 1), 99, history)).toBeUndefined();
  });

  it('raises the floor to the epoch of each fenced decision counted, never lowers it', () => {
    expect(fenceFloorAfter(queued({ epoch: 2, owner: 'proj-b' }), 1)).toBe(2);
    expect(fenceFloorAfter(queued({ epoch: 1, owner: 'proj-a' }), 3)).toBe(3);
    expect(fenceFloorAfter(queued(), 3)).toBe(3);
    expect(fenceFloorAfter(fact, 3)).toBe(3);
  });
});

describe('decisionFenceRefusal over generated histories', () => {
  // A shard's leases one after another (epochs that only grow, owners any), each writing some
  // decisions; forgeries slipped in anywhere: no fence, an epoch never handed out, a wrong owner,
  // or a replay of an earlier lease's fence.
  const forgery = fc.oneof(
    fc.constant({ kind: 'none' as const }),
    fc.constant({ kind: 'unknown' as const }),
    fc.constant({ kind: 'owner' as const }),
    fc.constant({ kind: 'older' as const }),
  );
  const arb = fc.record({
    leases: fc.array(
      fc.record({
        gap: fc.integer({ min: 1, max: 3 }),
        owner: fc.constantFrom('p1', 'p2', 'p3'),
        decisions: fc.integer({ min: 0, max: 4 }),
      }),
      { minLength: 1, maxLength: 8 },
    ),
    forgeries: fc.array(fc.tuple(fc.nat(), forgery), { maxLength: 6 }),
  });

  it('counts every real decision and refuses every forgery', () => {
    fc.assert(
      fc.property(arb, ({ leases, forgeries }) => {
        const owners = new Map<number, string>();
        const real: DecisionFence[] = [];
        let epoch = 0;
        for (const l of leases) {
          epoch += l.gap;
          owners.set(epoch, l.owner);
          for (let i = 0; i < l.decisions; i++) real.push({ epoch, owner: l.owner });
        }
        const hist: FenceHistory = { owners, from: FROM };
        type Item = { fence: DecisionFence | undefined; forged: boolean };
        const items: Item[] = real.map((fence) => ({ fence, forged: false }));
        for (const [pos, f] of forgeries) {
          const where = pos % (items.length + 1);
          // What the fold has counted before this point: the floor a forgery must not go under.
          const before = items.slice(0, where).filter((i) => !i.forged && i.fence);
          const floor = before.length > 0 ? before[before.length - 1]!.fence!.epoch : 0;
          let fence: DecisionFence | undefined;
          if (f.kind === 'none') fence = undefined;
          else if (f.kind === 'unknown') fence = { epoch: epoch + 1, owner: 'p1' };
          else if (f.kind === 'owner') fence = { epoch: [...owners.keys()][0]!, owner: 'worker' };
          else {
            const older = [...owners.keys()].filter((e) => e < floor);
            if (older.length === 0) continue;
            fence = { epoch: older[0]!, owner: owners.get(older[0]!)! };
          }
          items.splice(where, 0, { fence, forged: true });
        }
        let floor = 0;
        items.forEach((item, i) => {
          const entry = queued(item.fence);
          const refusal = decisionFenceRefusal(entry, at(FROM + i), floor, hist);
          expect(refusal === undefined).toBe(!item.forged);
          if (refusal === undefined) floor = fenceFloorAfter(entry, floor);
        });
      }),
      { seed: 31, numRuns: 300 },
    );
  });
});
