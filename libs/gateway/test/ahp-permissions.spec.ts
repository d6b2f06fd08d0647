// AHP 1.0.0: an agent's permission request is a tool call awaiting confirmation, answered with the
// spec's own chat/toolCallConfirmed — against real gateways, a real projector and a real Redis, by a
// client that knows AHP and nothing of Baton (the reducer it folds is written from the spec).
import { reduce, Client, liveWorker, type FakeWorker, waitFor, ahpStack } from '@baton/testing';

jest.setTimeout(90_000);

const TENANT = 'perm-tenant';
const ahp = ahpStack(TENANT);
const { tok, K } = ahp;
type Json = Record<string, unknown>;

/** The options claude-agent-acp offers for a shell command. */
const OPTIONS = [
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
];

/** The client's state of a chat: its snapshot with every accepted action folded in. */
const folded = (c: Client, chat: string, snapshot: Json): Json => {
  let s = snapshot;
  for (const e of ahp.envelopes(c, chat)) {
    if (e.rejectionReason === undefined) s = reduce(s, e.action as Json);
  }
  return s;
};
const toolCall = (s: Json, id: string): Json | undefined =>
  (((s.activeTurn as Json | undefined)?.responseParts as Json[] | undefined) ?? [])
    .map((p) => p.toolCall as Json)
    .find((t) => t?.toolCallId === id);

/** An AHP client subscribed to the task's session and the chat of session s1, with a running turn. */
async function running(taskId: string, clientId: string) {
  const chat = `ahp-chat:/${taskId}/s1`;
  const w = await liveWorker(ahp.stack.store, K(taskId));
  const c = await Client.connect(ahp.A, tok, '/ahp');
  const r = await ahp.initialize(c, clientId, [`ahp-session:/${taskId}`, chat], {
    name: 'Visual Studio Code',
    version: '1.107.0',
  });
  const snaps = (r.result as Json).snapshots as Json[];
  const snapshot = snaps[1]!.state as Json;
  const chatDispatcher = ahp.dispatcher(c, chat);
  const send = chatDispatcher.send;
  const answer = async (clientSeq: number) =>
    (await chatDispatcher.answer(clientSeq)).params as Json;
  send(1, {
    type: 'chat/turnStarted',
    turnId: 'turn-1',
    startedAt: new Date().toISOString(),
    message: { text: 'clean the build', origin: { kind: 'user' } },
  });
  expect((await answer(1)).rejectionReason).toBeUndefined();
  const promptId = (await waitFor(async () => {
    const e = (await ahp.stack.store.readTask(K(taskId), '0-0')).items.find(
      (i) => i.entry.type === 'prompt.submit' && (i.entry.data as Json).idempotencyKey === 'turn-1',
    );
    return e && ((e.entry.data as Json).promptId as string);
  }, 'the prompt'))!;
  await w.fact('prompt.dispatched', { promptId, admissionGeneration: 1 });
  return { c, w, chat, snapshot, send, answer };
}

/** The agent asks permission (ACP session/request_permission, as the worker reports it under ask). */
const ask = (w: FakeWorker, requestId: string, title: string) =>
  w.fact('permission.requested', {
    requestId,
    toolCallId: `toolu_${requestId}`,
    title,
    toolKind: 'execute',
    options: OPTIONS,
    policy: 'ask',
  });

async function pending(c: Client, chat: string, snapshot: Json, id: string): Promise<Json> {
  await waitFor(
    () => toolCall(folded(c, chat, snapshot), id)?.status === 'pending-confirmation',
    `tool call ${id} awaiting confirmation`,
  );
  return folded(c, chat, snapshot);
}

describe('AHP: permission requests are tool calls awaiting confirmation', () => {
  it('the client sees the request as pending-confirmation (InputNeeded), approves it with chat/toolCallConfirmed; a second answer changes nothing', async () => {
    const { c, w, chat, snapshot, send, answer } = await running('perm-approve', 'vscode-approve');
    await ask(w, 'r1', 'Bash: rm -rf build');
    const s = await pending(c, chat, snapshot, 'r1');
    // The spec's state: the call in pending-confirmation with the agent's options; the chat (and
    // its entry in the session's catalog) needs input.
    expect(toolCall(s, 'r1')).toMatchObject({
      status: 'pending-confirmation',
      toolName: 'execute',
      displayName: 'Bash: rm -rf build',
      confirmationTitle: 'Bash: rm -rf build',
      options: [
        { id: 'allow', label: 'Allow', kind: 'approve' },
        { id: 'always', label: 'Always allow', kind: 'approve' },
        { id: 'reject', label: 'Reject', kind: 'deny' },
      ],
    });
    expect((s.status as number) & 31).toBe(24);
    await waitFor(
      () =>
        ahp
          .envelopes(c, 'ahp-session:/perm-approve')
          .some(
            (e) =>
              (e.action as Json).type === 'session/chatUpdated' &&
              ((e.action as Json).changes as Json).status === 24,
          ),
      'the chat summary InputNeeded',
    );

    // The person approves, as VS Code dispatches it.
    send(2, {
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 'r1',
      approved: true,
      confirmed: 'user-action',
      selectedOptionId: 'allow',
    });
    const echo = await answer(2);
    expect(echo.rejectionReason).toBeUndefined();
    expect(echo).toMatchObject({
      origin: { clientId: 'vscode-approve', clientSeq: 2 },
      action: {
        type: 'chat/toolCallConfirmed',
        toolCallId: 'r1',
        approved: true,
        confirmed: 'user-action',
        selectedOptionId: 'allow',
      },
    });
    // Baton took it as the person's answer: permission.respond, then the owner's decision.
    const entries = (await ahp.stack.store.readTask(K('perm-approve'), '0-0')).items;
    expect(entries.find((e) => e.entry.type === 'permission.respond')?.entry.data).toMatchObject({
      requestId: 'r1',
      optionId: 'allow',
    });
    await waitFor(
      async () =>
        (await ahp.stack.store.readTask(K('perm-approve'), '0-0')).items.some(
          (e) => e.entry.type === 'permission.answered',
        ),
      'the owner to decide',
    );
    const after = folded(c, chat, snapshot);
    expect(toolCall(after, 'r1')).toMatchObject({
      status: 'running',
      confirmed: 'user-action',
      selectedOption: { id: 'allow', kind: 'approve' },
    });
    expect((after.status as number) & 31).toBe(8);

    // A second answer: rejected, saying how it was settled; nothing is written.
    send(3, {
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 'r1',
      approved: false,
      reason: 'denied',
      selectedOptionId: 'reject',
    });
    expect((await answer(3)).rejectionReason).toMatch(
      /^permission_answered: the request was already settled with option allow by a person/,
    );
    const responds = (await ahp.stack.store.readTask(K('perm-approve'), '0-0')).items.filter(
      (e) => e.entry.type === 'permission.respond',
    );
    expect(responds).toHaveLength(1);
    // The agent gets the answer and the turn ends.
    await w.fact('permission.resolved', {
      requestId: 'r1',
      outcome: 'selected',
      optionId: 'allow',
      by: 'person',
    });
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
    await waitFor(
      () => (folded(c, chat, snapshot).turns as Json[]).length === 1,
      'the turn to end',
    );
    const done = folded(c, chat, snapshot);
    expect((done.turns as Json[])[0]).toMatchObject({ id: 'turn-1', state: 'complete' });
    expect((done.status as number) & 31).toBe(1);
    await c.close();
  });

  it('answered elsewhere, denied, cancelled: the tool call leaves pending-confirmation as Baton settled it, and a late AHP answer is rejected', async () => {
    const { c, w, chat, snapshot, send, answer } = await running('perm-elsewhere', 'vscode-else');
    await ask(w, 'r2', 'Bash: git push --force');
    await pending(c, chat, snapshot, 'r2');
    // A person answers on Baton's own protocol, through the other gateway: rejects.
    const ws = await Client.connect(ahp.B, tok, '/ws');
    const reply = await ws.request({
      op: 'permission.respond',
      taskId: 'perm-elsewhere',
      sessionId: 's1',
      requestId: 'r2',
      optionId: 'reject',
    });
    expect(reply).toMatchObject({ type: 'reply', ok: true });
    await waitFor(
      () => toolCall(folded(c, chat, snapshot), 'r2')?.status === 'cancelled',
      'r2 denied',
    );
    const settled = ahp
      .envelopes(c, chat)
      .find((e) => (e.action as Json).type === 'chat/toolCallConfirmed')!;
    expect(settled.origin).toBeUndefined();
    expect(settled.action).toMatchObject({
      toolCallId: 'r2',
      approved: false,
      reason: 'denied',
      selectedOptionId: 'reject',
    });
    expect(toolCall(folded(c, chat, snapshot), 'r2')).toMatchObject({
      reason: 'denied',
      selectedOption: { id: 'reject', kind: 'deny' },
    });
    // The AHP client answers late: rejected with how it ended.
    send(2, {
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 'r2',
      approved: true,
      confirmed: 'user-action',
    });
    expect((await answer(2)).rejectionReason).toMatch(
      /already settled with option reject by a person/,
    );
    // Malformed and mismatched answers are refused before anything is written.
    await w.fact('permission.resolved', {
      requestId: 'r2',
      outcome: 'selected',
      optionId: 'reject',
      by: 'person',
    });
    await ask(w, 'r3', 'Bash: rm -rf /');
    await pending(c, chat, snapshot, 'r3');
    send(3, { type: 'chat/toolCallConfirmed', turnId: 'turn-1', toolCallId: 'r3', approved: true });
    expect((await answer(3)).rejectionReason).toMatch(/^malformed action: .*confirmed/);
    send(4, {
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 'r3',
      approved: true,
      confirmed: 'user-action',
      selectedOptionId: 'reject',
    });
    expect((await answer(4)).rejectionReason).toMatch(/option reject is not an approval/);
    send(5, {
      type: 'chat/toolCallConfirmed',
      turnId: 'turn-1',
      toolCallId: 'nope',
      approved: false,
      reason: 'denied',
    });
    expect((await answer(5)).rejectionReason).toMatch(/no such tool call/);
    expect(
      (await ahp.stack.store.readTask(K('perm-elsewhere'), '0-0')).items.filter(
        (e) => e.entry.type === 'permission.respond',
      ),
    ).toHaveLength(1);
    // The turn is cancelled while r3 waits: Baton cancels the request (ACP), the call is skipped.
    send(6, { type: 'chat/turnCancelled', turnId: 'turn-1', duration: 1 });
    await waitFor(
      () => toolCall(folded(c, chat, snapshot), 'r3')?.status === 'cancelled',
      'r3 cancelled',
    );
    expect(toolCall(folded(c, chat, snapshot), 'r3')).toMatchObject({
      reason: 'skipped',
      reasonMessage: 'the turn was cancelled',
    });
    await w.fact('turn.ended', { admissionGeneration: 1, stopReason: 'cancelled' });
    const ended = await answer(6);
    expect(ended.rejectionReason).toBeUndefined();
    const s = folded(c, chat, snapshot);
    expect(s.activeTurn).toBeUndefined();
    expect((s.status as number) & 31).toBe(1);
    await ws.close();
    await c.close();
  });
});
