import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/**
 * Agent profiles: the only agents an execution can start. The operator declares them (a JSON
 * file named by BATON_PROFILES_FILE, or the same JSON in BATON_PROFILES); workers read them to
 * start agents and gateways read them to refuse unknown names before anything is queued. A
 * client names a profile (plus, for a replay profile, a recording and a speed, and for any
 * profile a subfolder of its tenant's workspace) and nothing else.
 *
 * File format: `{ "profiles": { "<name>": <profile>, … } }`, every key checked (unknown keys
 * are errors). When neither setting is given, the built-in set applies: `replay`, and `claude`
 * when @agentclientprotocol/claude-agent-acp is installed. A configured set replaces the
 * built-in one (declare `"replay": { "kind": "replay" }` to keep it).
 */

export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Variables an agent never gets from a profile: Baton's own settings (Redis credentials, the
 * token secret, …). PATH and HOME are always passed from the worker's environment.
 */
export const RESERVED_ENV = /^(BATON_|REDIS_|WORKER_|GATEWAY_|PROJECTOR_|LOG_LEVEL$)/;

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name')
  .refine(
    (n) => !RESERVED_ENV.test(n),
    'Baton settings (BATON_*, REDIS_*, WORKER_*, GATEWAY_*, PROJECTOR_*, LOG_LEVEL) are never given to agents',
  );

/**
 * How permission requests of the agent are answered: `ask` (the default) shows each request to
 * the session's people and waits for an answer (denied after PROJECTOR_PERMISSION_TIMEOUT_MS);
 * `allow-once`, `deny` and `first-option` answer at once (each request and its answer are still
 * recorded as facts). Nothing is approved unless the operator chose it.
 */
export const PermissionPolicy = z.enum(['ask', 'allow-once', 'deny', 'first-option']);
export type PermissionPolicy = z.infer<typeof PermissionPolicy>;

/** What Baton's ACP host may vary in what it asks of, or advertises to, the agent. */
export const ProfileCapabilities = z
  .strictObject({
    /** Ask claude-agent-acp for raw SDK task messages (identified background completion). */
    rawSdkMessages: z.boolean().default(false),
    /** Advertise `clientCapabilities._meta.terminal_output` (a shell's end by `terminal_exit`). */
    terminalOutput: z.boolean().default(false),
    /** Advertise `clientCapabilities.subagents: {}` (each subagent a child session). */
    subagents: z.boolean().default(false),
    /**
     * The ACP protocol version to ask for: 2 is the draft v2 (its `state_update` background
     * list names every item; no session mode can be set over it yet).
     */
    protocolVersion: z.union([z.literal(1), z.literal(2)]).default(1),
  })
  .default({ rawSdkMessages: false, terminalOutput: false, subagents: false, protocolVersion: 1 });

const common = {
  /** Shown to operators; not used by Baton. */
  description: z.string().max(500).optional(),
  /** Set in the agent's environment, exactly as written. */
  env: z.record(envName, z.string().max(10_000)).default({}),
  /**
   * Names of variables copied from the worker's environment when set there (e.g. an API key
   * the operator keeps out of the file). Baton's own settings cannot be named.
   */
  inheritEnv: z.array(envName).max(100).default([]),
  /** ACP session mode set after session/new (session/set_mode), e.g. `default`. */
  mode: z.string().min(1).max(200).optional(),
  permissionPolicy: PermissionPolicy.default('ask'),
  capabilities: ProfileCapabilities,
};

export const CommandProfile = z.strictObject({
  kind: z.literal('command'),
  /** The ACP agent to run over stdio (absolute path, or a name found on PATH). */
  command: z.string().min(1).max(2_000),
  args: z.array(z.string().max(10_000)).max(200).default([]),
  ...common,
});

export const ReplayProfile = z.strictObject({
  kind: z.literal('replay'),
  /** Played when the client names none (a name inside WORKER_RECORDINGS_DIR). */
  recording: z.string().min(1).max(2_000).optional(),
  /** Default playback speed (a client may choose another). */
  speed: z.number().min(0).max(1_000).default(1),
  ...common,
});

export const AgentProfile = z.discriminatedUnion('kind', [CommandProfile, ReplayProfile]);
export type AgentProfile = z.infer<typeof AgentProfile>;
export type AgentProfileInput = z.input<typeof AgentProfile>;

export const ProfilesFile = z.strictObject({
  profiles: z
    .record(
      z.string().regex(PROFILE_NAME, 'profile names: letters, digits, _ . - (at most 64)'),
      AgentProfile,
    )
    .refine((p) => Object.keys(p).length > 0, 'declare at least one profile'),
});

/** The profiles in force, by name. */
export type Profiles = Readonly<Record<string, AgentProfile>>;

/** Where claude-agent-acp's entry point is, or undefined when it is not installed. */
export function claudeAdapterPath(): string | undefined {
  try {
    const pkg = require.resolve('@agentclientprotocol/claude-agent-acp/package.json');
    const bin = (JSON.parse(readFileSync(pkg, 'utf8')) as { bin?: Record<string, string> }).bin;
    const entry = join(dirname(pkg), bin?.['claude-agent-acp'] ?? 'dist/index.js');
    return existsSync(entry) ? entry : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The built-in set: `replay` (Baton's replay agent over the recordings folder) and, when the
 * adapter is installed, `claude` (claude-agent-acp with raw task messages, permissions asked).
 */
export function builtinProfiles(claudePath: string | null = claudeAdapterPath() ?? null): Profiles {
  const out: Record<string, AgentProfile> = {
    replay: AgentProfile.parse({
      kind: 'replay',
      description: 'Baton’s replay agent playing a recording of the recordings folder',
      // A recording is replayed advertising what its own client advertised; this applies only
      // to one without an initialize request.
      capabilities: { rawSdkMessages: true },
    }),
  };
  if (claudePath !== null) {
    out.claude = AgentProfile.parse({
      kind: 'command',
      description: 'Claude Code through @agentclientprotocol/claude-agent-acp',
      command: process.execPath,
      args: [claudePath],
      capabilities: { rawSdkMessages: true },
    });
  }
  return out;
}

export class ProfilesError extends Error {
  override readonly name = 'ProfilesError';
}

/** Each issue as `path: message`; a bad record key names its own rule, not just "invalid key". */
const issues = (err: z.ZodError): string =>
  err.issues
    .slice(0, 5)
    .map((i) => {
      const inner = i.code === 'invalid_key' ? i.issues[0]?.message : undefined;
      return `${i.path.join('.') || '(root)'}: ${inner ?? i.message}`;
    })
    .join('; ');

/** Parses the JSON of a profiles file or of BATON_PROFILES; throws ProfilesError naming the field. */
export function parseProfiles(json: string, source: string): Profiles {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new ProfilesError(`${source}: not JSON: ${(err as Error).message}`);
  }
  const r = ProfilesFile.safeParse(value);
  if (!r.success) throw new ProfilesError(`${source}: ${issues(r.error)}`);
  return r.data.profiles;
}

/**
 * The profiles in force: BATON_PROFILES_FILE, or BATON_PROFILES, or the built-in set. Throws
 * ProfilesError, one line naming the setting and the first bad fields, when they are wrong.
 */
export function loadProfiles(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Profiles {
  const file = env.BATON_PROFILES_FILE || undefined;
  const inline = env.BATON_PROFILES || undefined;
  if (file !== undefined && inline !== undefined) {
    throw new ProfilesError('BATON_PROFILES and BATON_PROFILES_FILE are both set: set one');
  }
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ProfilesError(
        `BATON_PROFILES_FILE=${JSON.stringify(file)}: cannot read it: ${(err as Error).message}`,
      );
    }
    return parseProfiles(text, `BATON_PROFILES_FILE=${JSON.stringify(file)}`);
  }
  if (inline !== undefined) return parseProfiles(inline, 'BATON_PROFILES');
  return builtinProfiles();
}

/** `unknown profile "x"; known: a, b` — the answer to a name that is not configured. */
export const unknownProfile = (name: string, profiles: Profiles): string =>
  `unknown profile ${JSON.stringify(name)}; known: ${Object.keys(profiles).sort().join(', ')}`;

/**
 * Checks what a client asked of a profile: the profile exists, and a recording or a speed is
 * given only to a replay profile (which then has a recording, from the client or its own).
 * Returns the problem, or null.
 */
export function checkProfileRequest(
  profiles: Profiles,
  req: { profile: string; recording?: string | undefined; speed?: number | undefined },
): string | null {
  const p = Object.hasOwn(profiles, req.profile) ? profiles[req.profile] : undefined;
  if (p === undefined) return unknownProfile(req.profile, profiles);
  if (p.kind !== 'replay') {
    if (req.recording !== undefined || req.speed !== undefined) {
      return `profile ${JSON.stringify(req.profile)} runs a command: recording and speed apply to replay profiles only`;
    }
    return null;
  }
  if (req.recording === undefined && p.recording === undefined) {
    return `profile ${JSON.stringify(req.profile)} needs a recording`;
  }
  return null;
}
