export * from './facts';
export * from './frames';
export * from './reducer';
export type { AgentIdentity, DialectName, SessionSetup } from './dialects/types';
export { claudeDialect, rawTaskEventsEnabled } from './dialects/claude';
export type { ClaudeState, ClaudeWorkKind } from './dialects/claude';
export { codexDialect } from './dialects/codex';
export { genericDialect } from './dialects/generic';
export * from './recording';
