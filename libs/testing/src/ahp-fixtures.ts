// libs/ahp's reducer fixtures, read by the AHP reducer's tests and by the client's, which must
// agree with it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackgroundWorkAction } from '@baton/ahp';
import { ROOT } from './processes';

/** One fixture in AHP's own `{description, initial, actions, expected}` form, with its file. */
export interface BackgroundWorkFixture<Chat> {
  file: string;
  description: string;
  initial: Chat;
  actions: BackgroundWorkAction[];
  expected: Chat;
}

/** libs/ahp/fixtures/background-work/*.json, as the chat type the caller folds them with. */
export function backgroundWorkFixtures<Chat>(): BackgroundWorkFixture<Chat>[] {
  const dir = join(ROOT, 'libs', 'ahp', 'fixtures', 'background-work');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map(
      (f) =>
        ({
          file: f,
          ...JSON.parse(readFileSync(join(dir, f), 'utf8')),
        }) as BackgroundWorkFixture<Chat>,
    );
}
