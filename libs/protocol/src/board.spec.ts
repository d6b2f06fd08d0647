import { boardGroupOf, boardOf, type TaskView } from './index';

const view = (
  taskId: string,
  over: Partial<TaskView['activity']> = {},
  attention: string | null = null,
  status: TaskView['status'] = 'active',
) =>
  ({
    taskId,
    status,
    seq: 1,
    activity: { foregroundActivity: null, activeSubagentCount: 0, ...over },
    sessions: [
      {
        sessionId: 's',
        activity: { attention: attention ? { kind: attention } : null },
        queue: {},
        backgroundWork: [],
      },
    ],
  }) as unknown as TaskView;

describe('the board', () => {
  it('puts each task in the first group that holds for any of its sessions', () => {
    expect(boardGroupOf(view('a', {}, 'needs_person'))).toBe('needs_person');
    expect(boardGroupOf(view('a', { foregroundActivity: 'generating' }, 'failed'))).toBe('failed');
    expect(boardGroupOf(view('a', {}, 'needs_operator'))).toBe('failed');
    expect(boardGroupOf(view('a', { foregroundActivity: 'generating' }))).toBe('generating');
    expect(boardGroupOf(view('a', { foregroundActivity: 'background' }))).toBe('background');
    expect(boardGroupOf(view('a', {}, 'waiting'))).toBe('idle');
  });

  it('work that is only possibly finished is not "background"', () => {
    const withWork = (possiblyFinished: boolean) => {
      const v = view('a');
      const work = { kind: 'shell', id: 'w', label: 'w', command: 'make', startedAt: 'x' };
      (v.sessions[0] as { backgroundWork: unknown[] }).backgroundWork = [
        possiblyFinished ? { ...work, possiblyFinished: true } : work,
      ];
      return v;
    };
    expect(boardGroupOf(withWork(false))).toBe('background');
    expect(boardGroupOf(withWork(true))).toBe('idle');
  });

  it('counts every task, groups in order, deleted tasks left out', () => {
    const b = boardOf([
      view('e', { foregroundActivity: 'generating' }),
      view('b', {}, 'failed'),
      view('c'),
      view('gone', {}, null, 'deleted'),
      view('a', { foregroundActivity: 'generating' }),
    ]);
    expect(b).toEqual({
      tasks: 4,
      groups: [
        { group: 'needs_person', count: 0, taskIds: [] },
        { group: 'failed', count: 1, taskIds: ['b'] },
        { group: 'generating', count: 2, taskIds: ['a', 'e'] },
        { group: 'background', count: 0, taskIds: [] },
        { group: 'idle', count: 1, taskIds: ['c'] },
      ],
    });
  });
});
