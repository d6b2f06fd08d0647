import { MAX_TASK_KEY_CHARS, TaskKey, TenantId, splitTaskKey, taskKey } from './task-key';
import { ClientId } from './common';

describe('task keys', () => {
  it('builds and splits <tenant>/<task id>; a task id may hold "/"', () => {
    expect(taskKey('acme', 't-1')).toBe('acme/t-1');
    expect(splitTaskKey('acme/t-1')).toEqual({ tenant: 'acme', taskId: 't-1' });
    expect(splitTaskKey(taskKey('acme', 'a/b/{c}'))).toEqual({ tenant: 'acme', taskId: 'a/b/{c}' });
  });

  it('refuses tenants with "/" or braces, and ids that are not ids', () => {
    for (const t of ['', 'a/b', 'a{b', 'a}b', 'x'.repeat(201)]) {
      expect(TenantId.safeParse(t).success).toBe(false);
      expect(() => taskKey(t, 't')).toThrow(RangeError);
    }
    expect(() => taskKey('acme', '')).toThrow(RangeError);
    expect(() => taskKey('acme', 'x'.repeat(201))).toThrow(RangeError);
    for (const k of ['', 'no-slash', '/t', 'acme/', `acme/${'x'.repeat(201)}`]) {
      expect(splitTaskKey(k)).toBeNull();
    }
  });

  it('the longest key fits TaskKey', () => {
    const k = taskKey('t'.repeat(200), 'x'.repeat(200));
    expect(k.length).toBe(MAX_TASK_KEY_CHARS);
    expect(TaskKey.safeParse(k).success).toBe(true);
    expect(TaskKey.safeParse(`${k}x`).success).toBe(false);
  });
});

describe('ClientId: the one grammar of task, session and execution ids', () => {
  it.each([
    'plain',
    'with space inside',
    'a/b:c',
    'ünïcode-ok',
    '__proto__',
    '...',
    'x'.repeat(200),
  ])('accepts %j', (id) => {
    expect(ClientId.safeParse(id).success).toBe(true);
  });

  it.each([
    '',
    '.',
    '..',
    ' lead',
    'trail ',
    'tab\there',
    'nul\u0000x',
    'rtl\u202eexe.txt',
    'zero\u200bwidth',
    'brace{b:1}',
    'close}:ts:x',
    'x'.repeat(201),
  ])('refuses %j with a reason', (id) => {
    const r = ClientId.safeParse(id);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message.length).toBeGreaterThan(0);
  });
});
