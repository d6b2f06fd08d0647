import { choosePermission } from '../src';

/** What each permission policy answers, whatever order the agent lists its options in. */

const option = (optionId: string, kind: string) => ({ optionId, name: optionId, kind });
const request = (options: ReturnType<typeof option>[]) =>
  ({ sessionId: 's', toolCall: { toolCallId: 't' }, options }) as Parameters<
    typeof choosePermission
  >[1];
const chosen = (r: ReturnType<typeof choosePermission>) =>
  r.outcome.outcome === 'selected' ? r.outcome.optionId : 'cancelled';

// As Qwen Code 0.24.4 lists them for a shell command.
const QWEN = [
  option('proceed_always_project', 'allow_always'),
  option('proceed_always_user', 'allow_always'),
  option('proceed_once', 'allow_once'),
  option('cancel', 'reject_once'),
];

it('allow-once grants once when a one-time grant is offered, even listed after "always"', () => {
  expect(chosen(choosePermission('allow-once', request(QWEN)))).toBe('proceed_once');
});

it('allow-once falls back to an "always" grant, then to cancelled', () => {
  expect(chosen(choosePermission('allow-once', request([option('a', 'allow_always')])))).toBe('a');
  expect(chosen(choosePermission('allow-once', request([option('r', 'reject_once')])))).toBe(
    'cancelled',
  );
});

it('deny rejects once before for ever; first-option takes the first', () => {
  expect(
    chosen(
      choosePermission(
        'deny',
        request([option('ra', 'reject_always'), option('ro', 'reject_once')]),
      ),
    ),
  ).toBe('ro');
  expect(chosen(choosePermission('first-option', request(QWEN)))).toBe('proceed_always_project');
});
