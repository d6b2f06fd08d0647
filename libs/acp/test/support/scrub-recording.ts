import type { Frame } from '../../src';

/**
 * Turns a live raw-frame log into a fixture that does not change from run to run for reasons
 * that do not matter: the private folder's path, the session id, SDK task and run ids, uuids,
 * scripted message ids and clock readings become stable names (by order of first appearance),
 * and times are rebased on a fixed start with their gaps kept. The long list of slash commands
 * the CLI advertises (and any list in that update's `_meta`) is cut to its first two entries.
 * Nothing else is touched.
 */

const BASE = Date.parse('2026-11-10T10:00:00.000Z');

export interface ScrubOptions {
  home: string;
  sessionId: string;
  /** What the private folder becomes (`/tmp/baton-claude` unless told). */
  homeAs?: string;
  /** A last pass over each scrubbed message, given its rebased time (agent-specific fields). */
  rewrite?: (message: Record<string, unknown>, at: string) => void;
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const scrubRecording = (
  frames: Frame[],
  { home, sessionId, homeAs = '/tmp/baton-claude', rewrite }: ScrubOptions,
): Frame[] => {
  const start = frames.length > 0 ? Date.parse(frames[0]!.at) : BASE;
  const names = new Map<string, string>();
  const counts = new Map<string, number>();
  const nameOf = (kind: string, value: string): string => {
    const known = names.get(value);
    if (known !== undefined) return known;
    const n = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, n);
    const name = `${kind}${n}`;
    names.set(value, name);
    return name;
  };
  // Ids only the SDK knows, found where they are declared, then replaced wherever they appear.
  for (const f of frames) {
    const sdk = (f.message as { params?: { message?: Record<string, unknown> } }).params?.message;
    if (sdk === undefined) continue;
    if (typeof sdk.task_id === 'string') nameOf('task_', sdk.task_id);
    if (typeof sdk.run_id === 'string') nameOf('run_', sdk.run_id);
  }
  const homeSlug = home.replace(/[^a-zA-Z0-9]/g, '-');
  const fixed: [RegExp, string | ((m: string) => string)][] = [
    [new RegExp(escape(home), 'g'), homeAs],
    [new RegExp(escape(homeSlug), 'g'), homeAs.replace(/[^a-zA-Z0-9]/g, '-')],
    [new RegExp(escape(sessionId), 'g'), 'sess-real'],
    [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (m) => nameOf('uuid-', m)],
    [/msg_scripted\d+/g, (m) => nameOf('msg_', m)],
  ];
  const idPattern =
    names.size === 0
      ? undefined
      : new RegExp(
          [...names.keys()]
            .map(escape)
            .sort((a, b) => b.length - a.length)
            .join('|'),
          'g',
        );

  return frames.map((frame) => {
    const rebased = new Date(BASE + (Date.parse(frame.at) - start)).toISOString();
    let text = JSON.stringify(frame.message);
    if (idPattern !== undefined) text = text.replace(idPattern, (m) => names.get(m) ?? m);
    for (const [re, to] of fixed) text = text.replace(re, to as string);
    const message = JSON.parse(text) as Record<string, unknown>;
    const params = message.params as Record<string, unknown> | undefined;
    const update = params?.update as Record<string, unknown> | undefined;
    if (
      update?.sessionUpdate === 'available_commands_update' &&
      Array.isArray(update.availableCommands)
    ) {
      update.availableCommands = update.availableCommands.slice(0, 2);
      // Qwen Code lists its skills here too, each with its whole text.
      const meta = update._meta as Record<string, unknown> | undefined;
      for (const [k, v] of Object.entries(meta ?? {}))
        if (Array.isArray(v)) meta![k] = v.slice(0, 2);
    }
    if (update?.sessionUpdate === 'session_info_update' && typeof update.updatedAt === 'string')
      update.updatedAt = rebased;
    const patch = (params?.message as { patch?: Record<string, unknown> } | undefined)?.patch;
    if (patch !== undefined && typeof patch.end_time === 'number')
      patch.end_time = Date.parse(rebased);
    rewrite?.(message, rebased);
    return { direction: frame.direction, at: rebased, message };
  });
};
