import { Module } from '@nestjs/common';
import type { EventStore } from '@baton/store';
import { CommandsModule } from '../commands/commands.module';
import { History } from '../history/history';
import { STORE } from '../options';
import { BoardController } from './board.controller';
import { TasksController } from './tasks.controller';
import { TranscriptController } from './transcript.controller';

/** REST read models and commands. */
@Module({
  imports: [CommandsModule],
  controllers: [TasksController, BoardController, TranscriptController],
  providers: [{ provide: History, inject: [STORE], useFactory: (s: EventStore) => new History(s) }],
})
export class RestModule {}
