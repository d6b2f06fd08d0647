// The conversation panel in a real browser (Debian's chromium through playwright-core) against
// Baton's one-process run on a real redis-server: a replayed Claude turn with a shell and a
// permission a person answers on the page, an edit's diff, the timeline's link to a turn,
// agent output that tries to run script or load remote content, and a replayed Codex turn. Screenshots go to
// apps/web/screenshots/.
import { taskKey } from '@baton/protocol';
import { startRedis, type RedisServer } from '@baton/redis-server';
import { EventStore } from '@baton/store';
import type { TranscriptEvent } from '@baton/transcript';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { OneProcessRun, cli, getJson, waitFor } from '@baton/testing';

jest.setTimeout(240_000);

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(__dirname, '..', 'screenshots');
const WAIT = 90_000;

describe('the conversation panel in a browser', () => {
  let redis: RedisServer;
  let store: EventStore;
  let run: OneProcessRun;
  let env: Record<string, string>;
  let base: string;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const dialogs: string[] = [];
  const requests: string[] = [];

  const token = () => run.token();
  const conversation = () => page.locator('#conversation');
  const shot = (name: string) => conversation().screenshot({ path: join(SHOTS, `${name}.png`) });
  const append = (sessionId: string, events: TranscriptEvent[]) =>
    store.transcripts.append(
      taskKey('local', 't1'),
      events.map((event) => ({ sessionId, executionId: 'injected', event })),
    );

  /**
   * Replays `recording` as session s1 of `taskId` until its agent is ready, prompts `text` with
   * the CLI, and opens the session's page: its conversation list, once it shows the prompt.
   */
  const replayAndPrompt = async (taskId: string, recording: string, text: string) => {
    const r = await cli(['exec', taskId, 's1', '--recording', recording, '--speed', '0'], env);
    expect(r.code).toBe(0);
    await waitFor(
      async () =>
        (
          await getJson<{ activity: { state: string } }>(
            `${base}/v1/tasks/${taskId}/sessions/s1`,
            token(),
          )
        ).activity.state === 'idle',
      'agent ready',
      WAIT,
    );
    expect((await cli(['prompt', taskId, 's1', text], env)).code).toBe(0);
    await page.goto(`${base}/?token=${token()}#${taskId}/s1`);
    const list = page.locator('#conversation-list');
    await list.locator('.conv-prompt').filter({ hasText: text }).waitFor();
    return list;
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    run = await OneProcessRun.create(redis.url, 'conv', 4);
    ({ env, url: base } = run);
    store = EventStore.connect({ url: redis.url }, { shards: 4, prefix: run.prefix });
    [, browser] = await Promise.all([
      run.start(),
      chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-background-networking', '--no-first-run'],
      }),
    ]);
    page = await browser.newPage({
      viewport: { width: 1100, height: 900 },
      locale: 'en-GB',
      timezoneId: 'UTC',
    });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => requests.push(r.url()));
  });

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
    await store?.close();
    await redis?.stop();
  });

  afterEach(() => {
    expect(pageErrors).toEqual([]);
  });

  it('shows a replayed turn: the prompt, the shell, the permission answered on the page, usage', async () => {
    const list = await replayAndPrompt(
      't1',
      'claude-shell-background-plain.jsonl',
      'Wait in the background',
    );
    // The permission, asked on the page: its card says what is asked, then how it was settled.
    const asks = page.locator('#permissions');
    await asks.waitFor({ timeout: WAIT });
    const card = list.locator('.conv-permission');
    await card.filter({ hasText: 'Waiting for an answer' }).waitFor();
    expect(await card.locator('.perm-title').textContent()).toBe('sleep 100');
    expect(await card.locator('.perm-options li').allTextContents()).toEqual([
      'Allow (allow once)',
      'Reject (reject once)',
    ]);
    await asks.getByRole('button', { name: 'Allow' }).click();
    await card
      .filter({ hasText: /Answered “Allow” \(allow once\) by / })
      .waitFor({ timeout: WAIT });
    // The agent's text, the shell's card (collapsed until opened), the end of the turn.
    await list
      .locator('.conv-agent')
      .filter({ hasText: 'The background command finished.' })
      .waitFor({ timeout: WAIT });
    const tool = list.locator('.conv-tool').filter({ hasText: 'sleep 100' });
    expect(await tool.locator('details').getAttribute('open')).toBeNull();
    await tool.locator('summary').click();
    expect(await tool.locator('.tool-text pre').textContent()).toContain(
      'Command running in background with ID: bash_1.',
    );
    expect(await page.locator('#conversation-usage .usage-text').textContent()).toBe(
      'Context: 52,632 of 200,000 tokens (26%) · cost 3.17 USD',
    );
    // /ws does not offer the transcript yet on this run, or does: either way it is live.
    expect(await page.locator('#conversation-status').textContent()).toMatch(/^Live/);
    await shot('19-conversation');
  });

  it('draws an edit as a diff and shows what was cut; a timeline bar leads to its turn', async () => {
    await append('s1', [
      {
        type: 'prompt',
        turn: 'edit-1',
        phase: 'turn',
        item: 'pe',
        promptId: 'edit-1',
        content: [{ type: 'text', text: { text: 'Rename the helper' } }],
      },
      {
        type: 'tool',
        turn: 'edit-1',
        phase: 'turn',
        item: 'te',
        toolCallId: 'te',
        title: 'Edit src/util.ts',
        kind: 'edit',
        status: 'completed',
        diff: {
          path: 'src/util.ts',
          oldText: { text: 'export function helper(a) {\n  return a + 1;\n}\n' },
          newText: { text: 'export function addOne(a) {\n  return a + 1;\n}\n' },
        },
      },
      {
        type: 'tool',
        turn: 'edit-1',
        phase: 'turn',
        item: 'tt',
        toolCallId: 'tt',
        title: 'npm test',
        kind: 'execute',
        status: 'failed',
        input: { command: { text: 'npm test' } },
        output: { mode: 'append', text: 'FAIL src/util.spec.ts\n', more: 52_000 },
        exit: { code: 1 },
      },
      {
        type: 'text',
        turn: 'edit-1',
        phase: 'turn',
        item: 'me',
        role: 'agent',
        delta: 'Renamed **helper** to `addOne`; one test still fails.',
      },
    ]);
    const list = page.locator('#conversation-list');
    const edit = list.locator('.conv-tool').filter({ hasText: 'Edit src/util.ts' });
    await edit.waitFor({ timeout: WAIT });
    await edit.locator('summary').click();
    expect(await edit.locator('.diff-del').allTextContents()).toEqual([
      '−removed: export function helper(a) {',
    ]);
    expect(await edit.locator('.diff-ins').allTextContents()).toEqual([
      '+added: export function addOne(a) {',
    ]);
    const test = list.locator('.conv-tool').filter({ hasText: 'npm test' });
    await test.locator('summary').click();
    expect(await test.locator('summary').textContent()).toContain('exit 1');
    expect(await test.locator('pre.output').textContent()).toBe(
      'FAIL src/util.spec.ts\n\n… truncated, 52,000 bytes more',
    );
    expect(await list.locator('.conv-agent strong').last().textContent()).toBe('helper');
    await edit.scrollIntoViewIfNeeded();
    await shot('20-conversation-diff');

    // The replayed turn's prompt bar on the timeline leads back to that turn's prompt.
    const promptBar = page.getByRole('list', { name: 'Prompts', exact: true }).locator('.bar');
    await promptBar.first().waitFor({ timeout: WAIT });
    const turn = await promptBar.first().getAttribute('data-turn');
    expect(turn).toBeTruthy();
    await promptBar.first().click();
    const start = list.locator(`[data-turn-start="${turn}"]`);
    await start.and(page.locator('.flash')).waitFor();
    expect(await start.textContent()).toContain('Wait in the background');
  });

  it('renders hostile agent output inert: no script runs, nothing remote loads', async () => {
    const hostile = [
      'Look: <img src=x onerror="alert(1)"> and <script>alert(2)</script>',
      '<div onclick="alert(3)" style="color:red">raw html</div>',
      '[click me](javascript:alert(4)) <javascript:alert(5)> [data](data:text/html,<script>alert(6)</script>)',
      '![remote](http://remote.example/pixel.png) and a [fine link](https://example.org/docs)',
      '<iframe src="http://remote.example/frame"></iframe>',
    ].join('\n\n');
    await append('s1', [
      {
        type: 'prompt',
        turn: 'evil-1',
        phase: 'turn',
        item: 'pv',
        promptId: 'evil-1',
        content: [{ type: 'text', text: { text: '<b onmouseover=alert(7)>prompt</b>' } }],
      },
      { type: 'text', turn: 'evil-1', phase: 'turn', item: 'mv', role: 'agent', delta: hostile },
      {
        type: 'text',
        turn: 'evil-1',
        phase: 'turn',
        item: 'tv',
        role: 'thought',
        delta: '<img src=x onerror=alert(8)>',
      },
      {
        type: 'tool',
        turn: 'evil-1',
        phase: 'turn',
        item: 'xv',
        toolCallId: 'xv',
        title: '<img src=x onerror=alert(9)>',
        kind: 'execute',
        status: 'completed',
        input: { command: { text: 'echo "<script>alert(10)</script>"' } },
        output: { mode: 'append', text: '<img src=http://remote.example/o.png onerror=alert(11)>' },
      },
      {
        type: 'permission',
        turn: 'evil-1',
        phase: 'turn',
        item: 'qv',
        title: '<svg onload=alert(12)>',
        options: [{ optionId: 'a', name: '<img src=x onerror=alert(13)>', kind: 'allow_once' }],
      },
    ]);
    const list = page.locator('#conversation-list');
    const msg = list.locator('.conv-agent').filter({ hasText: 'raw html' });
    await msg.waitFor({ timeout: WAIT });
    for (const d of await list.locator('details').all())
      await d.evaluate((e) => e.setAttribute('open', ''));
    await list.locator('.conv-permission').filter({ hasText: '<svg onload=alert(12)>' }).waitFor();
    // Shown as text, never as elements.
    expect(await msg.textContent()).toContain('<img src=x onerror="alert(1)">');
    expect(await msg.textContent()).toContain('<script>alert(2)</script>');
    const inert = (await page.evaluate(`(() => {
      const root = document.getElementById('conversation');
      const all = [...root.querySelectorAll('*')];
      return {
        onAttrs: all.flatMap((e) => [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => e.tagName + ' ' + a.name)),
        tags: all.filter((e) => ['IMG', 'SCRIPT', 'IFRAME', 'SVG', 'svg', 'OBJECT', 'EMBED', 'STYLE'].includes(e.tagName)).map((e) => e.tagName),
        styled: all.filter((e) => e.hasAttribute('style') && e.closest('.markdown')).length,
        hrefs: [...root.querySelectorAll('a')].map((a) => a.getAttribute('href')),
        rels: [...root.querySelectorAll('a')].map((a) => a.getAttribute('rel')),
      };
    })()`)) as {
      onAttrs: string[];
      tags: string[];
      styled: number;
      hrefs: string[];
      rels: string[];
    };
    expect({ onAttrs: inert.onAttrs, tags: inert.tags, styled: inert.styled }).toEqual({
      onAttrs: [],
      tags: [],
      styled: 0,
    });
    // Links only to the web (an image is a link to it, never loaded), each without a referrer.
    const { hrefs, rels } = inert;
    expect(hrefs).toContain('https://example.org/docs');
    expect(hrefs.filter((h) => !/^https?:\/\//.test(h))).toEqual([]);
    expect(new Set(rels)).toEqual(new Set(['noopener noreferrer nofollow']));
    expect(await msg.textContent()).toContain('[click me](javascript:alert(4))');
    // Give anything that would load or run a moment, then check nothing did.
    await page.waitForTimeout(500);
    expect(dialogs).toEqual([]);
    expect(
      requests.filter((u) => !u.startsWith(base) && !u.startsWith(base.replace('http', 'ws'))),
    ).toEqual([]);
    await msg.scrollIntoViewIfNeeded();
    await shot('21-conversation-hostile');
  });

  it('shows a replayed Codex turn: the prompt, the command with its output and exit, the answer', async () => {
    // The recording's own prompt, as its client sent it.
    const list = await replayAndPrompt(
      'codex',
      'codex-real-terminal-exec.jsonl',
      'prompt RUN-EXEC',
    );
    await list
      .locator('.conv-agent')
      .filter({ hasText: 'It printed hello.' })
      .waitFor({ timeout: WAIT });
    const tool = list.locator('.conv-tool').filter({ hasText: 'echo hello' });
    await tool.locator('summary').click();
    expect(await tool.textContent()).toContain(
      'until [ -f release-exec ]; do sleep 0.1; done; echo hello',
    );
    expect(await tool.locator('pre.output').textContent()).toBe('hello\n');
    expect(await tool.textContent()).toContain('exit 0');
    expect(await page.locator('#conversation-usage .usage-text').textContent()).toBe(
      'Context: 110 of 258,400 tokens (0%)',
    );
    await shot('22-conversation-codex');
  });
});
