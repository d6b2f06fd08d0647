import { randomUUID } from 'node:crypto';
import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Put,
  Query,
  UsePipes,
} from '@nestjs/common';
import {
  type CommandResult,
  type PromptResult,
  type QueueListResult,
  type SessionView,
  type TaskHistory,
  type TaskView,
} from '@baton/protocol';
import { LIFECYCLE_SCOPE, type Principal } from '../auth/auth';
import { Commands, type QueueCommand } from '../commands/commands';
import { WireFailure } from '../errors';
import { History, HistoryQuery } from '../history/history';
import { Tenancy, clientTaskId, clientView } from '../tenancy';
import { UpdateHub } from '../updates/update-hub';
import {
  Caller,
  CommandRoute,
  Reply,
  Scoped,
  TaskKey,
  TaskOfTenant,
  type TenantTask,
} from './decorators';
import { PathIds, ZodPipe } from './zod-pipe';
import { Executions } from './executions';
import type { HttpResponse } from './http-errors';
import {
  AutoRunBody,
  ExecutionBody,
  ForceReleaseBody,
  ObservedGenerationBody,
  PermissionAnswerBody,
  PromptBody,
  ResumeBody,
  type ExecutionStarted,
  type ExecutionStatus,
} from './schemas';
import type { z } from 'zod';

const SESSION = ':taskId/sessions/:sessionId';

/**
 * The REST read models and commands of a tenant's tasks, by the tenant's own task ids. A read of a
 * task the tenant never wrote to is a 404 `task <id> not found`, whoever else has that id; a
 * command writes to the tenant's own task of that id.
 */
@Controller('v1/tasks')
@UsePipes(PathIds)
export class TasksController {
  constructor(
    @Inject(Tenancy) private readonly tenancy: Tenancy,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
    @Inject(Commands) private readonly commands: Commands,
    @Inject(Executions) private readonly executions: Executions,
    @Inject(History) private readonly history: History,
  ) {}

  @Get()
  @Scoped('read')
  async list(@Caller() caller: Principal): Promise<{ tasks: string[] }> {
    return { tasks: await this.tenancy.tasks(caller.tenant) };
  }

  @Get(':taskId')
  @Scoped('read')
  async task(@TaskKey() key: string): Promise<TaskView> {
    return clientView(await this.hub.view(key));
  }

  @Get(':taskId/history')
  @Scoped('read')
  taskHistory(
    @TaskKey() key: string,
    @Query(new ZodPipe(HistoryQuery)) q: z.infer<typeof HistoryQuery>,
  ): Promise<TaskHistory> {
    return this.history.query(key, clientTaskId(key), q);
  }

  @Get(`${SESSION}/history`)
  @Scoped('read')
  sessionHistory(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Query(new ZodPipe(HistoryQuery)) q: z.infer<typeof HistoryQuery>,
  ): Promise<TaskHistory> {
    return this.history.query(key, clientTaskId(key), { ...q, sessionId });
  }

  @Post(':taskId/archive')
  @CommandRoute(LIFECYCLE_SCOPE['task.archive'])
  async archive(@Reply() res: HttpResponse, @TaskKey() key: string): Promise<CommandResult> {
    return status(res, await this.commands.taskCommand(key, 'task.archive'));
  }

  @Post(':taskId/unarchive')
  @CommandRoute(LIFECYCLE_SCOPE['task.unarchive'])
  async unarchive(@Reply() res: HttpResponse, @TaskKey() key: string): Promise<CommandResult> {
    return status(res, await this.commands.taskCommand(key, 'task.unarchive'));
  }

  @Delete(':taskId')
  @CommandRoute(LIFECYCLE_SCOPE['task.delete'])
  async deleteTask(@Reply() res: HttpResponse, @TaskKey() key: string): Promise<CommandResult> {
    return status(res, await this.commands.taskCommand(key, 'task.delete'));
  }

  @Get(SESSION)
  @Scoped('read')
  session(@TaskKey() key: string, @Param('sessionId') sessionId: string): Promise<SessionView> {
    return this.sessionView(key, sessionId);
  }

  @Post(`${SESSION}/prompts`)
  @CommandRoute('prompt')
  async prompt(
    @Reply() res: HttpResponse,
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(PromptBody)) b: z.infer<typeof PromptBody>,
  ): Promise<PromptResult> {
    const key = await this.tenancy.write(task.tenant, task.taskId);
    const result = await this.commands.prompt({ sessionId, ...b, taskId: key });
    if (result.status === 'pending') res.status(202);
    return { ...result, taskId: task.taskId };
  }

  @Get(`${SESSION}/queue`)
  @Scoped('read')
  async queue(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
  ): Promise<QueueListResult> {
    const session = await this.sessionView(key, sessionId);
    return { taskId: clientTaskId(key), sessionId, ...session.queue };
  }

  @Delete(`${SESSION}/queue/:promptId`)
  @CommandRoute('prompt')
  cancelQueued(
    @Reply() res: HttpResponse,
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
  ): Promise<CommandResult> {
    return this.write(res, task, sessionId, { type: 'queue.cancel', promptId });
  }

  @Post(`${SESSION}/queue/:promptId/send-now`)
  @CommandRoute('prompt')
  sendNow(
    @Reply() res: HttpResponse,
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
    @Body(new ZodPipe(ObservedGenerationBody, {})) b: z.infer<typeof ObservedGenerationBody>,
  ): Promise<CommandResult> {
    return this.write(res, task, sessionId, { type: 'queue.send_now', promptId, ...b });
  }

  @Put(`${SESSION}/queue/auto-run`)
  @CommandRoute('prompt')
  autoRun(
    @Reply() res: HttpResponse,
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(AutoRunBody)) b: z.infer<typeof AutoRunBody>,
  ): Promise<CommandResult> {
    return this.write(res, task, sessionId, { type: 'queue.set_auto_run', enabled: b.enabled });
  }

  @Post(`${SESSION}/cancel`)
  @CommandRoute('prompt')
  cancel(
    @Reply() res: HttpResponse,
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ObservedGenerationBody, {})) b: z.infer<typeof ObservedGenerationBody>,
  ): Promise<CommandResult> {
    return this.write(res, task, sessionId, { type: 'session.cancel', ...b });
  }

  /** Never creates the task: a request can only be answered on a task the tenant has. */
  @Post(`${SESSION}/permissions/:requestId`)
  @CommandRoute('prompt')
  async answerPermission(
    @Reply() res: HttpResponse,
    @Caller() caller: Principal,
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Param('requestId') requestId: string,
    @Body(new ZodPipe(PermissionAnswerBody)) b: z.infer<typeof PermissionAnswerBody>,
  ): Promise<CommandResult> {
    const subject = caller.subject;
    const answer = await this.commands.command(key, sessionId, {
      type: 'permission.respond',
      requestId,
      optionId: b.optionId,
      ...(subject !== undefined ? { subject: subject.slice(0, 200) } : {}),
    });
    return status(res, answer);
  }

  // Session lifecycle commands: only on a task the tenant has (else 404, as for a read).

  @Post(`${SESSION}/reset`)
  @CommandRoute(LIFECYCLE_SCOPE['session.reset'])
  async reset(
    @Reply() res: HttpResponse,
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
  ): Promise<CommandResult> {
    return status(res, await this.commands.command(key, sessionId, { type: 'session.reset' }));
  }

  @Delete(SESSION)
  @CommandRoute(LIFECYCLE_SCOPE['session.delete'])
  async deleteSession(
    @Reply() res: HttpResponse,
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
  ): Promise<CommandResult> {
    return status(res, await this.commands.command(key, sessionId, { type: 'session.delete' }));
  }

  @Post(`${SESSION}/force-release`)
  @CommandRoute(LIFECYCLE_SCOPE['session.force_release'])
  async forceRelease(
    @Reply() res: HttpResponse,
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ForceReleaseBody, {})) b: z.infer<typeof ForceReleaseBody>,
  ): Promise<CommandResult> {
    const cmd = { type: 'session.force_release', ...b } as const;
    return status(res, await this.commands.command(key, sessionId, cmd));
  }

  @Post(`${SESSION}/executions`)
  @Scoped('execute')
  @HttpCode(202)
  async startExecution(
    @TaskOfTenant() task: TenantTask,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ExecutionBody)) b: z.infer<typeof ExecutionBody>,
  ): Promise<z.output<typeof ExecutionStarted>> {
    const { tenant, taskId } = task;
    // Unknown profiles are refused before the task is recorded or anything is queued.
    this.executions.check(b);
    // An archived task runs nothing until it is unarchived; a deleted one never again. (The
    // owner stops an execution that starts anyway, racing an archive.)
    const status = (await this.hub.view(this.tenancy.key(tenant, taskId))).status;
    if (status !== 'active') {
      throw new WireFailure(
        'conflict',
        status === 'archived'
          ? `task ${taskId} is archived: unarchive it to start an execution`
          : `task ${taskId} was deleted: its id stays taken; use a new task id`,
      );
    }
    const key = await this.tenancy.write(tenant, taskId);
    const executionId = b.executionId ?? randomUUID();
    // The job names the task by its key: the worker is tenant-agnostic.
    const { jobId, state, position } = await this.executions.start({
      v: 1,
      sessionId,
      ...b,
      taskId: key,
      executionId,
      tenant,
    });
    return { executionId, jobId, state, position };
  }

  @Post(`${SESSION}/resume`)
  @Scoped('execute')
  @HttpCode(202)
  async resume(
    @Caller() caller: Principal,
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ResumeBody, {})) b: z.infer<typeof ResumeBody>,
  ): Promise<z.output<typeof ExecutionStarted>> {
    const session = await this.sessionView(key, sessionId);
    const started = await this.executions.resumeParked(key, caller.tenant, session, b);
    if (!started) {
      throw new WireFailure(
        'conflict',
        `session ${sessionId} is not parked: resume applies to a session parked for being idle`,
      );
    }
    return started;
  }

  @Get(`${SESSION}/executions/:executionId`)
  @Scoped('read')
  async execution(
    @TaskKey() key: string,
    @Param('sessionId') sessionId: string,
    @Param('executionId') executionId: string,
  ): Promise<z.output<typeof ExecutionStatus>> {
    const { state, position } = await this.executions.status(key, sessionId, executionId);
    return { executionId, state, position };
  }

  private async sessionView(key: string, sessionId: string): Promise<SessionView> {
    const view = await this.hub.view(key);
    const session = view.sessions.find((s) => s.sessionId === sessionId);
    if (!session) throw new WireFailure('not_found', `session ${sessionId} not found`);
    return session;
  }

  /** A queue or session command that may be the task's first write (it records the task). */
  private async write(
    res: HttpResponse,
    task: TenantTask,
    sessionId: string,
    cmd: QueueCommand,
  ): Promise<CommandResult> {
    const key = await this.tenancy.write(task.tenant, task.taskId);
    return status(res, await this.commands.command(key, sessionId, cmd));
  }
}

/** 202 while the owner has not answered, 409 when it refused. */
function status(res: HttpResponse, result: CommandResult): CommandResult {
  if (result.status === 'pending') res.status(202);
  if (result.status === 'failed') res.status(409);
  return result;
}
