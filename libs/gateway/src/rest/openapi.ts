import {
  CommandResult,
  PromptResult,
  QueueListResult,
  SessionView,
  Board,
  TaskHistory,
  TaskView,
  TranscriptGap,
} from '@baton/protocol';
import { TranscriptEvent } from '@baton/transcript';
import { z } from 'zod';
import {
  AutoRunBody,
  ErrorBody,
  ExecutionBody,
  ExecutionStarted,
  ExecutionStatus,
  ForceReleaseBody,
  ObservedGenerationBody,
  PermissionAnswerBody,
  PromptBody,
  ResumeBody,
  TaskList,
} from './schemas';

type Io = 'input' | 'output';

const TranscriptEntry = z.object({
  id: z.string().describe('the stream id: a cursor just past this event'),
  executionId: z.string(),
  event: TranscriptEvent,
});
const TranscriptPage = z.object({
  events: z.array(TranscriptEntry),
  cursor: z.string().describe('pass as `after` for the next page; it moves even when no event'),
  gap: TranscriptGap.optional().describe(
    "the transcript's retention removed the events in (after, through]: lost to this reader",
  ),
});
const TranscriptTurn = z.object({
  promptId: z.string(),
  events: z.array(TranscriptEntry),
  items: z
    .array(z.record(z.string(), z.unknown()))
    .describe('the events folded into whole items (foldTranscript of @baton/transcript)'),
});

function schema(s: z.ZodType, io: Io): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ content: { 'application/json': { schema: ref(name) } } });
const errors = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((s) => [String(s), { description: ERROR_TEXT[s] ?? 'error', ...json('Error') }]),
  );

const ERROR_TEXT: Record<number, string> = {
  400: 'invalid request: `error.path` names the field, `error.message` the rule',
  401: 'missing, bad or expired bearer token',
  403: 'the token lacks the scope of the route',
  404: 'no such task (or a task of another tenant) or session',
  409: 'the owner of the task refused the command (`status: failed`, with its reason)',
  413: 'request body too large',
  503: 'the store is unavailable',
};

const taskId = { name: 'taskId', in: 'path', required: true, schema: { type: 'string' } };
const sessionId = { name: 'sessionId', in: 'path', required: true, schema: { type: 'string' } };
const promptId = { name: 'promptId', in: 'path', required: true, schema: { type: 'string' } };
const requestId = { name: 'requestId', in: 'path', required: true, schema: { type: 'string' } };
const executionId = {
  name: 'executionId',
  in: 'path',
  required: true,
  schema: { type: 'string' },
};
const session = [taskId, sessionId];
const range = [
  {
    name: 'since',
    in: 'query',
    required: false,
    description:
      'start of the range: ms since the epoch or ISO 8601 (default: one day before until)',
    schema: { type: 'string' },
  },
  {
    name: 'until',
    in: 'query',
    required: false,
    description: 'end of the range, inclusive (default: now); a range is at most 31 days',
    schema: { type: 'string' },
  },
];
/** What a read of a task's resource answers: the resource (`name`), or why not. */
const readResponses = (description: string, name: string) => ({
  '200': { description, ...json(name) },
  ...errors(400, 401, 403, 404, 503),
});

const historyResponses = readResponses(
  'what happened in the range, per session, from the task stream by the same fold as the ' +
    'live view (`truncated`: a bound was reached; `trimmed`: the stream was trimmed behind ' +
    'the range, what happened before its snapshot is gone). Each session’s `transcript`, ' +
    'when present, is the cursor range of its transcript events in the range',
  'TaskHistory',
);
const secured = { security: [{ bearer: [] }] };

function body(name: string, required = true) {
  return { requestBody: { required, ...json(name) } };
}

const commandResponses = {
  '200': {
    description: 'the owner carried the command out (`status: done`)',
    ...json('CommandResult'),
  },
  '202': {
    description: 'no answer from the owner within the admission wait (`status: pending`)',
    ...json('CommandResult'),
  },
  ...errors(400, 401, 403, 404, 409, 503),
};

/** The OpenAPI 3.1 document of the REST API, built from the zod schemas of libs/protocol. */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Baton gateway',
      version: '0.1.0',
      description:
        'Read models and commands of a tenant’s tasks. Authentication: an HS256 JWT with claims ' +
        '`tenant` and `scope` (space-separated subset of `read prompt execute delete admin`: ' +
        '`read` views, `prompt` prompts, queue/session commands, session reset and task ' +
        'archive/unarchive, `execute` starts executions of operator-configured agent profiles, ' +
        '`delete` deletes sessions and tasks, `admin` all of them and force-release) as a Bearer token ' +
        '(or `?token=`). Task ids are the tenant’s own: two tenants’ tasks of one id are two ' +
        'tasks, and a read of a task the tenant never wrote to is a 404, whoever else has that ' +
        'id; reads never create a task, and neither do the lifecycle commands (reset, delete, ' +
        'force-release, archive, unarchive: 404 for a task the tenant does not have). A deleted ' +
        'task is a tombstone: its view stays readable with `status: deleted`, it takes no prompts ' +
        'and no executions, and its id stays taken (a new task needs a new id). WebSockets on the same port: `/ws` ' +
        '(Baton’s protocol, docs/protocol.md) and `/ahp` (the AHP chat channel, docs/ahp-channel.md).',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        TaskView: schema(TaskView, 'output'),
        TaskHistory: schema(TaskHistory, 'output'),
        Board: schema(Board, 'output'),
        SessionView: schema(SessionView, 'output'),
        QueueListResult: schema(QueueListResult, 'output'),
        PromptResult: schema(PromptResult, 'output'),
        CommandResult: schema(CommandResult, 'output'),
        TaskList: schema(TaskList, 'output'),
        ExecutionStarted: schema(ExecutionStarted, 'output'),
        ExecutionStatus: schema(ExecutionStatus, 'output'),
        PromptBody: schema(PromptBody, 'input'),
        ObservedGenerationBody: schema(ObservedGenerationBody, 'input'),
        AutoRunBody: schema(AutoRunBody, 'input'),
        ForceReleaseBody: schema(ForceReleaseBody, 'input'),
        PermissionAnswerBody: schema(PermissionAnswerBody, 'input'),
        ResumeBody: schema(ResumeBody, 'input'),
        ExecutionBody: schema(ExecutionBody, 'input'),
        TranscriptPage: schema(TranscriptPage, 'output'),
        TranscriptTurn: schema(TranscriptTurn, 'output'),
        Error: schema(ErrorBody, 'output'),
      },
    },
    paths: {
      '/v1/tasks': {
        get: {
          summary: 'The tenant’s tasks',
          ...secured,
          responses: {
            '200': { description: 'task ids', ...json('TaskList') },
            ...errors(401, 403),
          },
        },
      },
      '/v1/tasks/{taskId}': {
        get: {
          summary: 'A task’s view (seq 0 and no sessions before its owner wrote one)',
          ...secured,
          parameters: [taskId],
          responses: {
            '200': { description: 'the view', ...json('TaskView') },
            ...errors(401, 403, 404),
          },
        },
        delete: {
          summary:
            'Delete the task — delete scope. It becomes a tombstone: every session deleted, ' +
            'queued prompts decided `removed`/`task_deleted`, executions stopped, later prompts ' +
            'rejected `task_deleted`; its view stays readable with `status: deleted` and its id ' +
            'is never reused (a new task needs a new id). Deleting it again is done',
          ...secured,
          parameters: [taskId],
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/archive': {
        post: {
          summary:
            'Archive the task — prompt scope. Its prompts are refused (task_archived), its queues ' +
            'discarded (each prompt told why), its executions stopped; the view stays readable ' +
            'with `status: archived`',
          ...secured,
          parameters: [taskId],
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/unarchive': {
        post: {
          summary: 'Unarchive the task — prompt scope: it takes prompts and executions again',
          ...secured,
          parameters: [taskId],
          responses: commandResponses,
        },
      },
      '/v1/board': {
        get: {
          summary:
            'Every task of the tenant grouped by what needs looking at first — needs a person, ' +
            'failed, generating, background, idle — with counts',
          ...secured,
          responses: {
            '200': { description: 'the board', ...json('Board') },
            ...errors(401, 403, 503),
          },
        },
      },
      '/v1/tasks/{taskId}/history': {
        get: {
          summary:
            'The task’s history over a time range: activity intervals, turns, background ' +
            'items, prompts (queue wait, dispatch) and executions of every session',
          ...secured,
          parameters: [taskId, ...range],
          responses: historyResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/history': {
        get: {
          summary: 'One session’s history over a time range',
          ...secured,
          parameters: [...session, ...range],
          responses: historyResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}': {
        get: {
          summary: 'A session’s view: activity, queue, backgroundWork',
          ...secured,
          parameters: session,
          responses: {
            '200': { description: 'the session', ...json('SessionView') },
            ...errors(401, 403, 404),
          },
        },
        delete: {
          summary:
            'Delete the session — delete scope. Its queue is discarded (each prompt decided ' +
            '`removed`/`session_deleted`), its execution stopped; deleting it again is done',
          ...secured,
          parameters: session,
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/transcript': {
        get: {
          summary:
            'The session’s transcript — what its agent said and did (prompts, text, tool calls, ' +
            'permissions and how they were settled, usage) as events, oldest first, after a ' +
            'cursor. Fold them with foldTranscript (@baton/transcript); live events follow on ' +
            '/ws (`transcript.subscribe`). An empty page means nothing more for now; a session ' +
            'with no transcript is an empty page',
          ...secured,
          parameters: [
            ...session,
            {
              name: 'after',
              in: 'query',
              required: false,
              description:
                'the `cursor` of the previous page (default: from the start); a malformed cursor, or one past ' +
                'anything the transcript handed out, is a 400',
              schema: { type: 'string', pattern: '^\\d{1,20}-\\d{1,20}$' },
            },
            {
              name: 'limit',
              in: 'query',
              required: false,
              description: 'events per page at most',
              schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
            },
          ],
          responses: readResponses('a page of events and the next cursor', 'TranscriptPage'),
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/transcript/turns/{promptId}': {
        get: {
          summary:
            'One turn of the transcript whole (by the Baton prompt id that started it): its ' +
            'events and the items they fold to; 404 when the turn has no events',
          ...secured,
          parameters: [...session, promptId],
          responses: readResponses('the turn', 'TranscriptTurn'),
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/reset': {
        post: {
          summary:
            'Reset the session — prompt scope: its activity is cleared and its execution ' +
            'stopped; the queue stays and waits for the next execution',
          ...secured,
          parameters: session,
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/force-release': {
        post: {
          summary:
            'Force-release the session — admin scope: the running turn ends now (its prompt ' +
            '`cancelled`/`force_released`; a claim not yet delivered goes back to the queue), ' +
            'its activity is cleared and its execution stopped',
          ...secured,
          parameters: session,
          ...body('ForceReleaseBody', false),
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/prompts': {
        post: {
          summary:
            'Submit a prompt; the reply is its decision, the same for every retry of its key',
          ...secured,
          parameters: session,
          ...body('PromptBody'),
          responses: {
            '200': {
              description: 'decided: admitted, queued (with position) or rejected',
              ...json('PromptResult'),
            },
            '202': {
              description: 'pending: no decision within the admission wait',
              ...json('PromptResult'),
            },
            ...errors(400, 401, 403, 404, 413, 503),
          },
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/queue': {
        get: {
          summary: 'The session’s prompt queue',
          ...secured,
          parameters: session,
          responses: {
            '200': { description: 'the queue', ...json('QueueListResult') },
            ...errors(401, 403, 404),
          },
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/queue/{promptId}': {
        delete: {
          summary: 'Cancel a queued prompt',
          ...secured,
          parameters: [...session, promptId],
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/queue/{promptId}/send-now': {
        post: {
          summary: 'Run a queued prompt now (cancelling the running turn it observed)',
          ...secured,
          parameters: [...session, promptId],
          ...body('ObservedGenerationBody', false),
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/queue/auto-run': {
        put: {
          summary: 'Turn the queue’s auto-run on or off',
          ...secured,
          parameters: session,
          ...body('AutoRunBody'),
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/cancel': {
        post: {
          summary: 'Cancel the session’s running turn',
          ...secured,
          parameters: session,
          ...body('ObservedGenerationBody', false),
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/permissions/{requestId}': {
        post: {
          summary:
            'Answer a permission request the agent waits on (the session’s `permissions`) — ' +
            'prompt scope: `optionId` is one of the options it offered. `done` once the owner ' +
            'took the answer (the worker then hands it to the agent); a request already answered ' +
            '(by a person, its timeout, a cancel) is a 409 `failed` with reason ' +
            '`permission_answered` and changes nothing; `unknown_permission`, `unknown_option` ' +
            'likewise',
          ...secured,
          parameters: [...session, requestId],
          ...body('PermissionAnswerBody'),
          responses: commandResponses,
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/resume': {
        post: {
          summary:
            'Resume a parked session — execute scope: starts an execution of the parked ' +
            'execution’s profile (a replay may be given `recording` and `speed` anew) that loads ' +
            'its ACP session (`session/load`) when the agent can, else starts a fresh one (the ' +
            '`agent.session` fact says which). A prompt to a parked session does the same by ' +
            'itself. Resuming twice is the same execution',
          ...secured,
          parameters: session,
          ...body('ResumeBody', false),
          responses: {
            '202': { description: 'queued for a worker', ...json('ExecutionStarted') },
            ...errors(400, 401, 403, 404, 503),
            '409': { description: 'the session is not parked', ...json('Error') },
          },
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/executions': {
        post: {
          summary:
            'Start an execution of an agent profile the operator configured — execute scope. ' +
            'The body names the profile (plus recording and speed for replay profiles, and a ' +
            'workspace subfolder); any other key, or an unknown profile, is a 400 and nothing is ' +
            'queued. An archived or deleted task is a 409 (`conflict`) and nothing is queued',
          ...secured,
          parameters: session,
          ...body('ExecutionBody'),
          responses: {
            '202': {
              description:
                'queued for a worker, with where it is now (`waiting` with its `position`, or ' +
                '`active`); a retry of its `executionId` is the same execution',
              ...json('ExecutionStarted'),
            },
            ...errors(400, 401, 403, 404, 503),
            '409': {
              description: 'the task is archived or deleted (`error.code: conflict`)',
              ...json('Error'),
            },
          },
        },
      },
      '/v1/tasks/{taskId}/sessions/{sessionId}/executions/{executionId}': {
        get: {
          summary:
            'Where an execution is: waiting for a worker (with its 1-based position among the ' +
            'waiting executions), active, completed, failed, or unknown. One that no worker ' +
            'took within EXECUTION_START_TIMEOUT_MS is never started: the session shows ' +
            '`no_worker`, and the execution ends `failed` when a worker picks it up',
          ...secured,
          parameters: [...session, executionId],
          responses: readResponses('its state', 'ExecutionStatus'),
        },
      },
      '/healthz': {
        get: { summary: 'The process is up', responses: { '200': { description: 'ok' } } },
      },
      '/readyz': {
        get: {
          summary: 'Redis answers and every shard has an owner',
          responses: {
            '200': { description: 'ready' },
            '503': { description: 'not ready, with why' },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: { '200': { description: 'text exposition' } },
        },
      },
      '/openapi.json': {
        get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } },
      },
    },
  };
}
