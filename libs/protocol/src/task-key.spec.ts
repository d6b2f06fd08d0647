import { MAX_TASK_KEY_CHARS, TaskKey, TenantId, splitTaskKey, taskKey } from './task-key';

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
