import type { Capabilities } from '@baton/protocol';

/** Distinct capabilities kept; past it the table starts over (what it holds stays valid). */
const MOST = 256;
/**
 * A payload longer than this (characters of its JSON) is kept by its session alone: the table
 * may outlive the sessions of what it holds, and must stay small (typical payloads are ~1 KB).
 */
const MOST_CHARS = 16 * 1024;

const table = new Map<string, Capabilities>();

function freeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) freeze(x);
  }
  return v;
}

/**
 * One frozen copy of each distinct `capabilities.negotiated` payload, shared by every session
 * that negotiated it. Executions of one agent and dialect negotiate the same capabilities (its
 * `initialize` answer and what Baton asked), yet each session's fold parsed its own copy: ~30
 * small objects, ~1 KB of heap per session, a third of what a projector held per session. The
 * value is equal to the one given, so a fold is the same with the table or without it; frozen,
 * since sessions share it (the fold never writes into a payload).
 */
export function sharedCapabilities(caps: Capabilities): Capabilities {
  const key = JSON.stringify(caps);
  if (key.length > MOST_CHARS) return caps;
  const known = table.get(key);
  if (known !== undefined) return known;
  if (table.size >= MOST) table.clear();
  table.set(key, freeze(caps));
  return caps;
}
