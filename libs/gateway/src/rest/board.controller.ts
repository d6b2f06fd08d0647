import { Controller, Get, Inject } from '@nestjs/common';
import { boardOf, taskKey, type Board, type TaskView } from '@baton/protocol';
import type { Principal } from '../auth/auth';
import { Tenancy, clientView } from '../tenancy';
import { UpdateHub } from '../updates/update-hub';
import { Caller, Scoped } from './decorators';

/** Views read at once while a board is built. */
const BATCH = 32;

/**
 * Every task of the tenant by what needs looking at first (`boardOf`), with counts: where an
 * operator with hundreds of sessions looks first. Built from the same views clients subscribe to.
 */
@Controller('v1/board')
export class BoardController {
  constructor(
    @Inject(Tenancy) private readonly tenancy: Tenancy,
    @Inject(UpdateHub) private readonly hub: UpdateHub,
  ) {}

  @Get()
  @Scoped('read')
  async board(@Caller() { tenant }: Principal): Promise<Board> {
    const ids = await this.tenancy.tasks(tenant);
    const views: TaskView[] = [];
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      views.push(
        ...(await Promise.all(
          batch.map(async (id) => clientView(await this.hub.view(taskKey(tenant, id)))),
        )),
      );
    }
    return boardOf(views);
  }
}
