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
  Req,
  Res,
  UseGuards,
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
import { LIFECYCLE_SCOPE } from '../auth/auth';
import { RequiresScope, RestAuthGuard, type AuthedRequest } from '../auth/rest-auth.guard';
import { Commands, type QueueCommand, type TaskCommand } from '../commands/commands';
import { WireFailure } from '../errors';
import { History, HistoryQuery } from '../history/history';
import { Tenancy, clientView } from '../tenancy';
import { UpdateHub } from '../updates/update-hub';
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
@UseGuards(RestAuthGuard)
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
  @RequiresScope('read')
  async list(@Req() req: AuthedRequest): Promise<{ tasks: string[] }> {
    return { tasks: await this.tenancy.tasks(req.principal.tenant) };
  }

  @Get(':taskId')
  @RequiresScope('read')
  async task(@Req() req: AuthedRequest, @Param('taskId') taskId: string): Promise<TaskView> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    return clientView(await this.hub.view(key));
  }

  @Get(':taskId/history')
  @RequiresScope('read')
  async taskHistory(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Query(new ZodPipe(HistoryQuery)) q: z.infer<typeof HistoryQuery>,
  ): Promise<TaskHistory> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    return this.history.query(key, taskId, q);
  }

  @Get(`${SESSION}/history`)
  @RequiresScope('read')
  async sessionHistory(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Query(new ZodPipe(HistoryQuery)) q: z.infer<typeof HistoryQuery>,
  ): Promise<TaskHistory> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    return this.history.query(key, taskId, { ...q, sessionId });
  }

  @Post(':taskId/archive')
  @RequiresScope(LIFECYCLE_SCOPE['task.archive'])
  @HttpCode(200)
  archive(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
  ): Promise<CommandResult> {
    return this.taskCommand(req, res, taskId, 'task.archive');
  }

  @Post(':taskId/unarchive')
  @RequiresScope(LIFECYCLE_SCOPE['task.unarchive'])
  @HttpCode(200)
  unarchive(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
  ): Promise<CommandResult> {
    return this.taskCommand(req, res, taskId, 'task.unarchive');
  }

  @Delete(':taskId')
  @RequiresScope(LIFECYCLE_SCOPE['task.delete'])
  @HttpCode(200)
  deleteTask(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
  ): Promise<CommandResult> {
    return this.taskCommand(req, res, taskId, 'task.delete');
  }

  @Get(SESSION)
  @RequiresScope('read')
  async session(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
  ): Promise<SessionView> {
    return this.sessionView(req, taskId, sessionId);
  }

  @Post(`${SESSION}/prompts`)
  @RequiresScope('prompt')
  @HttpCode(200)
  async prompt(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(PromptBody)) b: z.infer<typeof PromptBody>,
  ): Promise<PromptResult> {
    const key = await this.tenancy.write(req.principal.tenant, taskId);
    const result = await this.commands.prompt({ sessionId, ...b, taskId: key });
    if (result.status === 'pending') res.status(202);
    return { ...result, taskId };
  }

  @Get(`${SESSION}/queue`)
  @RequiresScope('read')
  async queue(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
  ): Promise<QueueListResult> {
    const session = await this.sessionView(req, taskId, sessionId);
    return { taskId, sessionId, ...session.queue };
  }

  @Delete(`${SESSION}/queue/:promptId`)
  @RequiresScope('prompt')
  @HttpCode(200)
  cancelQueued(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
  ): Promise<CommandResult> {
    return this.command(req, res, taskId, sessionId, { type: 'queue.cancel', promptId });
  }

  @Post(`${SESSION}/queue/:promptId/send-now`)
  @RequiresScope('prompt')
  @HttpCode(200)
  sendNow(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Param('promptId') promptId: string,
    @Body(new ZodPipe(ObservedGenerationBody, {})) b: z.infer<typeof ObservedGenerationBody>,
  ): Promise<CommandResult> {
    return this.command(req, res, taskId, sessionId, { type: 'queue.send_now', promptId, ...b });
  }

  @Put(`${SESSION}/queue/auto-run`)
  @RequiresScope('prompt')
  @HttpCode(200)
  autoRun(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(AutoRunBody)) b: z.infer<typeof AutoRunBody>,
  ): Promise<CommandResult> {
    return this.command(req, res, taskId, sessionId, {
      type: 'queue.set_auto_run',
      enabled: b.enabled,
    });
  }

  @Post(`${SESSION}/cancel`)
  @RequiresScope('prompt')
  @HttpCode(200)
  cancel(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ObservedGenerationBody, {})) b: z.infer<typeof ObservedGenerationBody>,
  ): Promise<CommandResult> {
    return this.command(req, res, taskId, sessionId, { type: 'session.cancel', ...b });
  }

  @Post(`${SESSION}/permissions/:requestId`)
  @RequiresScope('prompt')
  @HttpCode(200)
  async answerPermission(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Param('requestId') requestId: string,
    @Body(new ZodPipe(PermissionAnswerBody)) b: z.infer<typeof PermissionAnswerBody>,
  ): Promise<CommandResult> {
    const subject = req.principal.subject;
    // Never creates the task: a request can only be answered on a task the tenant has.
    return this.lifecycle(req, res, taskId, sessionId, {
      type: 'permission.respond',
      requestId,
      optionId: b.optionId,
      ...(subject !== undefined ? { subject: subject.slice(0, 200) } : {}),
    });
  }

  @Post(`${SESSION}/reset`)
  @RequiresScope(LIFECYCLE_SCOPE['session.reset'])
  @HttpCode(200)
  reset(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
  ): Promise<CommandResult> {
    return this.lifecycle(req, res, taskId, sessionId, { type: 'session.reset' });
  }

  @Delete(SESSION)
  @RequiresScope(LIFECYCLE_SCOPE['session.delete'])
  @HttpCode(200)
  deleteSession(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
  ): Promise<CommandResult> {
    return this.lifecycle(req, res, taskId, sessionId, { type: 'session.delete' });
  }

  @Post(`${SESSION}/force-release`)
  @RequiresScope(LIFECYCLE_SCOPE['session.force_release'])
  @HttpCode(200)
  forceRelease(
    @Req() req: AuthedRequest,
    @Res({ passthrough: true }) res: HttpResponse,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ForceReleaseBody, {})) b: z.infer<typeof ForceReleaseBody>,
  ): Promise<CommandResult> {
    return this.lifecycle(req, res, taskId, sessionId, { type: 'session.force_release', ...b });
  }

  @Post(`${SESSION}/executions`)
  @RequiresScope('execute')
  @HttpCode(202)
  async startExecution(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ExecutionBody)) b: z.infer<typeof ExecutionBody>,
  ): Promise<z.output<typeof ExecutionStarted>> {
    // Unknown profiles are refused before the task is recorded or anything is queued.
    this.executions.check(b);
    // An archived task runs nothing until it is unarchived; a deleted one never again. (The
    // owner stops an execution that starts anyway, racing an archive.)
    const status = (await this.hub.view(this.tenancy.key(req.principal.tenant, taskId))).status;
    if (status !== 'active') {
      throw new WireFailure(
        'conflict',
        status === 'archived'
          ? `task ${taskId} is archived: unarchive it to start an execution`
          : `task ${taskId} was deleted: its id stays taken; use a new task id`,
      );
    }
    const key = await this.tenancy.write(req.principal.tenant, taskId);
    const executionId = b.executionId ?? randomUUID();
    // The job names the task by its key: the worker is tenant-agnostic.
    const { jobId, state, position } = await this.executions.start({
      v: 1,
      sessionId,
      ...b,
      taskId: key,
      executionId,
      tenant: req.principal.tenant,
    });
    return { executionId, jobId, state, position };
  }

  @Post(`${SESSION}/resume`)
  @RequiresScope('execute')
  @HttpCode(202)
  async resume(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Body(new ZodPipe(ResumeBody, {})) b: z.infer<typeof ResumeBody>,
  ): Promise<z.output<typeof ExecutionStarted>> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    const view = await this.hub.view(key);
    const session = view.sessions.find((s) => s.sessionId === sessionId);
    if (!session) throw new WireFailure('not_found', `session ${sessionId} not found`);
    const started = await this.executions.resumeParked(key, req.principal.tenant, session, b);
    if (!started) {
      throw new WireFailure(
        'conflict',
        `session ${sessionId} is not parked: resume applies to a session parked for being idle`,
      );
    }
    return started;
  }

  @Get(`${SESSION}/executions/:executionId`)
  @RequiresScope('read')
  async execution(
    @Req() req: AuthedRequest,
    @Param('taskId') taskId: string,
    @Param('sessionId') sessionId: string,
    @Param('executionId') executionId: string,
  ): Promise<z.output<typeof ExecutionStatus>> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    const { state, position } = await this.executions.status(key, sessionId, executionId);
    return { executionId, state, position };
  }

  private async sessionView(
    req: AuthedRequest,
    taskId: string,
    sessionId: string,
  ): Promise<SessionView> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    const view = await this.hub.view(key);
    const session = view.sessions.find((s) => s.sessionId === sessionId);
    if (!session) throw new WireFailure('not_found', `session ${sessionId} not found`);
    return session;
  }

  /** A session lifecycle command: only on a task the tenant has (else 404, as for a read). */
  private async lifecycle(
    req: AuthedRequest,
    res: HttpResponse,
    taskId: string,
    sessionId: string,
    cmd: QueueCommand,
  ): Promise<CommandResult> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    return status(res, await this.commands.command(key, sessionId, cmd));
  }

  private async taskCommand(
    req: AuthedRequest,
    res: HttpResponse,
    taskId: string,
    cmd: TaskCommand,
  ): Promise<CommandResult> {
    const key = await this.tenancy.existing(req.principal.tenant, taskId);
    return status(res, await this.commands.taskCommand(key, cmd));
  }

  private async command(
    req: AuthedRequest,
    res: HttpResponse,
    taskId: string,
    sessionId: string,
    cmd: QueueCommand,
  ): Promise<CommandResult> {
    const key = await this.tenancy.write(req.principal.tenant, taskId);
    return status(res, await this.commands.command(key, sessionId, cmd));
  }
}

/** 202 while the owner has not answered, 409 when it refused. */
function status(res: HttpResponse, result: CommandResult): CommandResult {
  if (result.status === 'pending') res.status(202);
  if (result.status === 'failed') res.status(409);
  return result;
}
