// The live page in a real browser (Debian's chromium through playwright-core) against real
// everything: redis-server, Baton's one-process run (gateway, projector, worker) started as a
// user starts it, replay executions started with the CLI. One browser and one page for the whole
// story, as a person would watch it. Screenshots of each state go to apps/web/screenshots/.
import { startRedis, type RedisServer } from '@baton/redis-server';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { OneProcessRun, SHORT_LEASES, cli, getJson, waitFor, type Proc } from '@baton/testing';
import { startDemo } from '../../baton/src/demo';

jest.setTimeout(240_000);

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(__dirname, '..', 'screenshots');
/** Replay speed: each turn generates for ~8 s, then its shell runs ~12 s in the background. */
const SPEED = '0.5';
const WAIT = 90_000;

interface SessionView {
  activity: { state: string; foregroundActivity: string | null };
}

describe('the live activity page in a browser', () => {
  let redis: RedisServer;
  let run: OneProcessRun;
  let env: Record<string, string>;
  let base: string;
  let baton: Proc;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  const token = () => run.token();
  const session = (taskId: string, sessionId: string) =>
    getJson<SessionView>(`${base}/v1/tasks/${taskId}/sessions/${sessionId}`, token());
  const exec = async (taskId: string, sessionId: string) => {
    const r = await cli(
      ['exec', taskId, sessionId, '--recording', 'demo-claude.jsonl', '--speed', SPEED],
      env,
    );
    if (r.code !== 0) throw new Error(`exec: ${r.stderr}`);
  };
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });
  const row = (taskId: string, sessionId: string) =>
    page.locator(`[data-session="${taskId}/${sessionId}"]`);
  /** The session's indicator, found by its accessible name. */
  const indicator = (r: Locator, label: string) => r.getByRole('img', { name: label, exact: true });
  const banner = () => page.locator('#banner');

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    run = await OneProcessRun.create(redis.url, 'web', 4, SHORT_LEASES);
    ({ env, url: base } = run);
    [baton, browser] = await Promise.all([
      run.start(),
      chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-default-apps',
          '--disable-sync',
          '--disable-extensions',
          '--disable-domain-reliability',
          '--disable-client-side-phishing-detection',
          '--metrics-recording-only',
          '--no-first-run',
          '--no-default-browser-check',
          '--no-pings',
          '--safebrowsing-disable-auto-update',
        ],
      }),
    ]);
    page = await browser.newPage({
      viewport: { width: 1100, height: 720 },
      locale: 'en-GB',
      timezoneId: 'UTC',
    });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
  });

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
    await redis?.stop();
  });

  /** A test whose failure report says what the page, the gateway and Baton showed then. */
  const story = (name: string, fn: () => Promise<void>) =>
    it(name, async () => {
      try {
        await fn();
      } catch (err) {
        const served = await getJson(`${base}/v1/tasks/t1`, token()).catch((e: unknown) => e);
        const shown = await page
          .locator('main')
          .innerText()
          .catch((e: unknown) => e);
        const bannerText = await banner()
          .textContent()
          .catch(() => null);
        throw new Error(
          `${String(err)}\n--- banner: ${bannerText}\n--- page:\n${String(shown)}\n--- GET /v1/tasks/t1: ${JSON.stringify(served)}\n--- baton:\n${baton.tail(30)}`,
        );
      }
    });

  afterEach(() => {
    // An uncaught error in the page is a bug even when the test's assertions held.
    expect(pageErrors).toEqual([]);
  });

  it('is served at / with its assets, no token needed for the page itself', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    const js = /src="\/assets\/(app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    expect(js).toBeDefined();
    const asset = await fetch(`${base}/assets/${js}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${base}/assets/nope.js`)).status).toBe(404);
  });

  story('says clearly when the gateway refuses the token of a link', async () => {
    await page.goto(`${base}/?token=not-a-token`);
    const error = page.locator('#sign-in-error');
    await error.filter({ hasText: 'refused' }).waitFor();
    expect(await error.textContent()).toMatch(/^The gateway refused this token: .+\.$/);
    expect(await page.getByLabel('Access token').isVisible()).toBe(true);
    expect(page.url()).toBe(`${base}/`); // the token does not stay in the address bar
    await shot('1-sign-in-refused');
  });

  story('follows a replay through generating, a queued prompt, background and idle', async () => {
    await exec('t1', 's1');
    await waitFor(async () => (await session('t1', 's1')).activity.state === 'idle', 'agent ready');

    await page.goto(`${base}/?token=${token()}`);
    expect(page.url()).not.toContain('token=');
    const s1 = row('t1', 's1');
    await indicator(s1, 'Idle, done').waitFor();
    expect(await indicator(s1, 'Idle, done').getAttribute('title')).toMatch(/^Idle: /);
    await banner().waitFor({ state: 'hidden' });
    // Keyboard only: choose the session, type, send.
    await page.getByRole('button', { name: 'Session s1' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('#session-title').filter({ hasText: 'Session s1 · task t1' }).waitFor();
    const submit = page.locator('#composer-submit');
    expect(await submit.textContent()).toBe('Send');
    await shot('2-idle-ready');

    await page.getByLabel('Prompt', { exact: true }).fill('first: read the code');
    await page.keyboard.press('Control+Enter');
    await indicator(s1, 'Generating').waitFor({ timeout: WAIT });
    // The task's aggregate follows its most active session.
    await indicator(page.locator('[data-task="t1"] .task-header'), 'Generating').waitFor();
    await page.locator('#composer-result').filter({ hasText: 'The prompt runs now.' }).waitFor();
    await shot('3-generating');

    // Busy: the composer says it will queue, and the prompt shows in the queue, labelled queued.
    await submit.filter({ hasText: /^Queue$/ }).waitFor();
    expect(await page.locator('#composer-badge').textContent()).toBe('Will be queued · position 1');
    await page.getByLabel('Prompt', { exact: true }).fill('second: and add tests');
    await submit.click();
    const queued = page.locator('#queue-list li', { hasText: 'second: and add tests' });
    await queued.waitFor();
    expect(await queued.locator('.queued-badge').textContent()).toBe('Queued · 1');
    expect(await queued.getByRole('button', { name: /^Cancel: second/ }).isEnabled()).toBe(true);
    expect(await queued.getByRole('button', { name: /^Send now: second/ }).isEnabled()).toBe(true);
    await s1.locator('.session-queued').filter({ hasText: '1 queued' }).waitFor();
    await shot('4-queued');

    // The first turn ends: the queued prompt leaves the queue and runs.
    await queued.waitFor({ state: 'detached', timeout: WAIT });
    await page.locator('#composer-result').filter({ hasText: 'The prompt runs now.' }).waitFor();
    expect(await indicator(s1, 'Generating').count()).toBe(1);

    // Its turn over, its shell still runs: background, never "done".
    await indicator(s1, 'Working in the background').waitFor({ timeout: WAIT });
    const work = page.locator('#work-list li', { hasText: 'npm test -- step-2' });
    await work.waitFor();
    expect(await work.locator('.work-kind').textContent()).toBe('Shell');
    expect(await page.locator('#session-status [role=img]').getAttribute('aria-label')).toBe(
      'Working in the background',
    );
    await shot('5-background');

    await indicator(s1, 'Idle, done').waitFor({ timeout: WAIT });
    await page.locator('#work-empty').waitFor();
    expect(await page.locator('#work-list li').count()).toBe(0);
    expect(await page.locator('#queue-list li').count()).toBe(0);
    await shot('6-idle-done');

    // The timeline tells the story just lived: generating, background, idle in the foreground;
    // the shells as bars; the second prompt's wait in the queue drawn out; the execution.
    const lane = (name: string) => page.getByRole('list', { name, exact: true });
    await lane('Foreground').locator('.bar.lane-idle[data-open]').waitFor({ timeout: WAIT });
    const foreground = await lane('Foreground')
      .locator('.bar')
      .evaluateAll((bars) => bars.map((b) => b.getAttribute('aria-label') ?? ''));
    expect(foreground.some((l) => l.startsWith('generating, '))).toBe(true);
    expect(foreground.some((l) => l.startsWith('background, '))).toBe(true);
    const shells = lane('Background work').locator('.bar[aria-label^="shell"]');
    expect(await shells.count()).toBeGreaterThanOrEqual(1);
    expect(await shells.first().getAttribute('aria-label')).toMatch(
      /^shell “.+”, \d\d:\d\d:\d\d–\d\d:\d\d:\d\d \([\d.]+ s\), ended$/,
    );
    const waited = lane('Prompts').locator('.bar.lane-queued');
    expect(await waited.count()).toBe(1);
    expect(await waited.getAttribute('aria-label')).toMatch(/queued [\d.]+ s, admitted /);
    expect(await lane('Executions').locator('.bar.lane-execution[data-open]').count()).toBe(1);
    // Keyboard: a bar takes focus and its exact times are read out below the lanes.
    await waited.focus();
    expect(await page.locator('#timeline-detail').textContent()).toBe(
      await waited.getAttribute('aria-label'),
    );
    // The board: every task of the tenant by state, with counts (refreshed every few seconds).
    await page.locator('[data-group="idle"] .board-count').filter({ hasText: '(1)' }).waitFor();
    expect(await page.locator('[data-group="generating"] .board-count').textContent()).toBe('(0)');
    await page.locator('#timeline-title').scrollIntoViewIfNeeded();
    await shot('16-timeline');
  });

  story(
    "draws the demo's busy history: overlapping background work, a prompt's wait, a cancel, any range",
    async () => {
      // The one-process run's demo, on one task, as `npm start -- --demo` plays it.
      const said: string[] = [];
      const demo = await startDemo({
        gatewayUrl: base,
        token: token(),
        say: (l) => said.push(l),
        tasks: ['demo-1'],
      });
      try {
        const main = row('demo-1', 'main');
        await main.waitFor({ timeout: WAIT });
        await main.getByRole('button', { name: 'Session main' }).click();
        await page
          .locator('#session-title')
          .filter({ hasText: 'Session main · task demo-1' })
          .waitFor();
        // Two shells at once, then a shell and a subagent at once, live in the work list.
        await page.locator('#work-list li').nth(1).waitFor({ timeout: WAIT });
        await waitFor(
          async () => said.some((l) => l.endsWith('cancel done')),
          'the demo cancelled turn 3',
          WAIT,
        );
        await indicator(main, 'Idle, done').waitFor({ timeout: WAIT });
        expect(said.some((l) => /prompt 2 queued at 1 \(busy\)$/.test(l))).toBe(true);

        const lane = (name: string) => page.getByRole('list', { name, exact: true });
        // The cancel: the foreground bar of turn 3 says so.
        const stopped = lane('Foreground').locator('.bar.lane-stopped');
        await stopped.waitFor({ timeout: WAIT });
        expect(await stopped.getAttribute('aria-label')).toMatch(
          /^generating, \d\d:\d\d:\d\d–\d\d:\d\d:\d\d \([\d.]+ s\), turn cancelled$/,
        );
        // What t1's bar said below the lanes went with t1; this bar's own words come on focus.
        const detail = page.locator('#timeline-detail');
        expect(await detail.textContent()).toBe('Hover over or focus a bar for its exact times.');
        await stopped.focus();
        expect(await detail.textContent()).toBe(await stopped.getAttribute('aria-label'));
        // Overlapping background work: each bar on a row of its own while another runs.
        const work = lane('Background work');
        const bar = (label: string) => work.locator(`.bar[aria-label^="${label}"]`);
        const rowOf = async (label: string) => Number(await bar(label).getAttribute('data-row'));
        await bar('subagent “Review the diff”').waitFor();
        expect(Number(await work.getAttribute('data-rows'))).toBeGreaterThanOrEqual(2);
        expect(await rowOf('shell “Lint the change”')).not.toBe(
          await rowOf('shell “Run the tests”'),
        );
        expect(await rowOf('subagent “Review the diff”')).not.toBe(
          await rowOf('shell “Run the tests”'),
        );
        for (const l of [
          'shell “Run the tests”',
          'shell “Lint the change”',
          'subagent “Review the diff”',
        ])
          expect(await bar(l).getAttribute('aria-label')).toMatch(/, ended$/);
        // The second prompt waited in the queue behind turn 1, drawn out; the third ran at once.
        const prompts = lane('Prompts');
        const second = prompts.locator('.bar[aria-label*="-2 submitted"]');
        expect(await second.getAttribute('class')).toContain('lane-queued');
        expect(await second.getAttribute('aria-label')).toMatch(
          /^prompt demo-1-\w+-2 submitted \d\d:\d\d:\d\d, queued [\d.]+ s, admitted \d\d:\d\d:\d\d/,
        );
        expect(
          await prompts.locator('.bar[aria-label*="-3 submitted"]').getAttribute('aria-label'),
        ).toMatch(/, admitted, dispatched /);
        // The board has caught up (it is asked again every few seconds): both tasks idle.
        await page
          .locator('[data-group="idle"] .board-count')
          .filter({ hasText: '(2)' })
          .waitFor({ timeout: WAIT });
        await page.locator('#timeline-title').scrollIntoViewIfNeeded();
        await shot('17-busy-demo');

        // The range picker: radio buttons, by keyboard; each choice asks for its since and until.
        const range = page.getByRole('group', { name: 'Range' });
        const radio = (name: string) => range.getByRole('radio', { name, exact: true });
        expect(await radio('1 h').isChecked()).toBe(true);
        const asked = async (key: string) => {
          const req = page.waitForRequest((r) => r.url().includes('/sessions/main/history?'));
          await page.keyboard.press(key);
          const q = new URL((await req).url()).searchParams;
          return Number(q.get('until')) - Number(q.get('since'));
        };
        await radio('1 h').focus();
        expect(await asked('ArrowRight')).toBe(6 * 3_600_000);
        expect(await radio('6 h').isChecked()).toBe(true);
        await page
          .locator('#timeline-range')
          .filter({ hasText: /^last 6 h: / })
          .waitFor();
        expect(await asked('ArrowRight')).toBe(24 * 3_600_000);
        expect(await asked('ArrowRight')).toBe(30 * 24 * 3_600_000);
        expect(await radio('Since the session began').isChecked()).toBe(true);
        await page
          .locator('#timeline-range')
          .filter({ hasText: /^since the session began: \d\d:\d\d:\d\d–now \(UTC\)/ })
          .waitFor();
        await stopped.waitFor();
        await page.locator('#timeline-title').scrollIntoViewIfNeeded();
        await shot('18-range-session');
        // Round the group: 15 min, then back to 1 h, which the other stories expect.
        expect(await asked('ArrowRight')).toBe(15 * 60_000);
        await page
          .locator('#timeline-range')
          .filter({ hasText: /^last 15 min: / })
          .waitFor();
        expect(await asked('ArrowRight')).toBe(3_600_000);
        expect(await radio('1 h').isChecked()).toBe(true);
      } finally {
        await demo.stop();
      }
    },
  );

  story('recovers a dropped connection by itself, without a reload', async () => {
    // Runs in the page (plain JavaScript: this file is type-checked without the DOM library).
    await page.evaluate(`(() => {
      window.noReload = true;
      window.bannerLog = [];
      const el = document.getElementById('banner');
      new MutationObserver(() => {
        if (!el.hidden) window.bannerLog.push(el.textContent);
      }).observe(el, { childList: true, characterData: true, subtree: true, attributes: true });
    })()`);
    // The whole one-process run stops (gateway included) and starts again on the same port.
    const stopped = await baton.stop('SIGINT');
    expect(stopped.code).toBe(0);
    await banner().filter({ hasText: 'reconnecting' }).waitFor();
    await shot('7-reconnecting');

    baton = await run.start();
    await banner().waitFor({ state: 'hidden', timeout: WAIT });
    const log = (await page.evaluate('window.bannerLog')) as string[];
    expect(log.some((t) => /reconnecting/.test(t))).toBe(true);
    expect(log.some((t) => /resyncing/.test(t))).toBe(true);

    // New updates keep coming on the resumed subscription: a new session appears.
    await exec('t1', 's2');
    await indicator(row('t1', 's2'), 'Idle, done').waitFor({ timeout: WAIT });
    await row('t1', 's2').locator('.session-state').filter({ hasText: 'agent ready' }).waitFor();
    expect(await page.evaluate('window.noReload')).toBe(true); // the same page all along
    await shot('8-resumed');
  });

  story("shows another tenant's token none of these tasks", async () => {
    const minted = await cli(['token', '--tenant', 'other', '--scopes', 'read,prompt'], env);
    expect(minted.code).toBe(0);
    const other = minted.stdout.trim();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Access token').fill(other);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#who').filter({ hasText: 'Tenant other' }).waitFor();
    await banner().waitFor({ state: 'hidden', timeout: WAIT });
    await page.locator('#tasks-empty').waitFor();
    expect(await page.locator('[data-task]').count()).toBe(0);
    expect(await page.locator('[data-session]').count()).toBe(0);
    expect(await page.locator('body').innerText()).not.toMatch(/\bt1\b/);
    // The REST list the page relies on says the same.
    expect(await getJson(`${base}/v1/tasks`, other)).toEqual({ tasks: [] });
    await shot('9-other-tenant');
  });

  story(
    'shows attention and a blocked queue, and runs the lifecycle actions the token allows',
    async () => {
      const signInWith = async (tok: string) => {
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByLabel('Access token').fill(tok);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await banner().waitFor({ state: 'hidden', timeout: WAIT });
      };
      const result = page.locator('#action-result');
      const attention = page.locator('#session-attention');
      // Deletes and force-release ask first.
      page.on('dialog', (d) => void d.accept());

      // A token without delete or admin (the run's own carries delete, never admin).
      const narrow = await cli(
        ['token', '--tenant', 'local', '--scopes', 'read,prompt,execute'],
        env,
      );
      await signInWith(narrow.stdout.trim());
      const queued = await cli(['prompt', 't2', 's1', 'waits for an agent'], env);
      expect(JSON.parse(queued.stdout)).toMatchObject({
        outcome: 'queued',
        reason: 'no_execution',
      });
      await row('t2', 's1').getByRole('button', { name: 'Session s1' }).click();
      await page.locator('#session-title').filter({ hasText: 'Session s1 · task t2' }).waitFor();
      await attention.filter({ hasText: 'Needs an operator:' }).waitFor();
      expect(await attention.getAttribute('data-kind')).toBe('needs_operator');
      expect(await attention.locator('.attention-message').textContent()).toBe(
        'queued prompts wait for an execution: start one',
      );
      expect(await page.locator('#queue-blocked').textContent()).toBe(
        'Waiting: no agent is running.',
      );
      await shot('10-needs-operator');

      // What the token may not do is refused by the gateway, and the page says why.
      await page.getByRole('button', { name: 'Force-release' }).click();
      await result.filter({ hasText: "the token's scope does not include admin" }).waitFor();
      expect(await result.textContent()).toBe("Not done: the token's scope does not include admin");
      expect(await result.getAttribute('data-outcome')).toBe('refused');
      await page.getByRole('button', { name: 'Delete task t2' }).click();
      await result.filter({ hasText: "the token's scope does not include delete" }).waitFor();

      // Archive: the queue is dropped, the composer says why it takes nothing; unarchive undoes it.
      const t2 = page.locator('[data-task="t2"]');
      await page.getByRole('button', { name: 'Archive task t2' }).click();
      await result.filter({ hasText: 'Archived task t2.' }).waitFor();
      await t2.locator('.task-status').filter({ hasText: 'archived' }).waitFor();
      await page.locator('#queue-empty').waitFor();
      await page
        .locator('#composer-hint')
        .filter({ hasText: 'Unavailable: This task is archived: unarchive it to send prompts.' })
        .waitFor();
      expect(await page.locator('#composer-submit').isDisabled()).toBe(true);
      await shot('11-archived');
      await page.getByRole('button', { name: 'Unarchive task t2' }).click();
      await result.filter({ hasText: 'Unarchived task t2.' }).waitFor();
      await t2.locator('.task-status').waitFor({ state: 'hidden' });

      // An operator's token: force-release a running turn; the session shows it failed, and why.
      const minted = await cli(
        ['token', '--tenant', 'local', '--scopes', 'read,prompt,execute,delete,admin'],
        env,
      );
      await signInWith(minted.stdout.trim());
      await exec('t2', 's1');
      await waitFor(
        async () => (await session('t2', 's1')).activity.state === 'idle',
        'agent ready',
      );
      expect((await cli(['prompt', 't2', 's1', 'a long turn'], env)).code).toBe(0);
      await row('t2', 's1').getByRole('button', { name: 'Session s1' }).click();
      await indicator(row('t2', 's1'), 'Generating').waitFor({ timeout: WAIT });
      await page.getByRole('button', { name: 'Force-release' }).click();
      await result.filter({ hasText: 'Force-released session s1.' }).waitFor();
      await attention.filter({ hasText: 'Failed:' }).waitFor({ timeout: WAIT });
      expect(await attention.locator('.attention-message').textContent()).toMatch(
        /^an operator force-released the session/,
      );
      await shot('12-failed');

      // Reset, then delete, a session of t1.
      await row('t1', 's2').getByRole('button', { name: 'Session s2' }).click();
      await page.getByRole('button', { name: 'Reset' }).click();
      await result.filter({ hasText: 'Reset session s2.' }).waitFor();
      await page.getByRole('button', { name: 'Delete session' }).click();
      await result.filter({ hasText: 'Deleted session s2.' }).waitFor();
      await row('t1', 's2').waitFor({ state: 'detached' });
      await page
        .locator('#session-status')
        .filter({ hasText: 'This session was deleted.' })
        .waitFor();

      // Delete t2: a tombstone stays, with nothing left to do; its id takes no new execution.
      await page.getByRole('button', { name: 'Delete task t2' }).click();
      await result.filter({ hasText: 'Deleted task t2.' }).waitFor();
      await t2.locator('.task-status').filter({ hasText: 'deleted' }).waitFor();
      await t2.locator('.task-note').filter({ hasText: 'tombstone' }).waitFor();
      await t2.locator('.task-actions').waitFor({ state: 'hidden' });
      expect(await t2.locator('[data-session]').count()).toBe(0);
      await shot('13-deleted-task');
      const again = await cli(
        ['exec', 't2', 's1', '--recording', 'demo-claude.jsonl', '--speed', SPEED],
        env,
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('409 conflict: task t2 was deleted');
    },
  );

  story('shows a permission request the agent waits on, and answers it', async () => {
    const result = page.locator('#composer-result');
    // The built-in replay profile asks a person (the default policy); generic-turn's agent asks
    // permission to edit a file in the middle of its turn.
    const r = await cli(
      ['exec', 't3', 's1', '--recording', 'generic-turn.jsonl', '--speed', '0'],
      env,
    );
    expect(r.code).toBe(0);
    await waitFor(async () => (await session('t3', 's1')).activity.state === 'idle', 'agent ready');
    expect((await cli(['prompt', 't3', 's1', 'Fix the bug'], env)).code).toBe(0);
    await row('t3', 's1').getByRole('button', { name: 'Session s1' }).click();
    const asks = page.locator('#permissions');
    await asks.waitFor({ timeout: WAIT });
    expect(await asks.locator('.permission-title').textContent()).toBe('Edit src/a.ts');
    await page
      .locator('#session-attention')
      .filter({ hasText: 'Needs you: the agent asks permission: Edit src/a.ts' })
      .waitFor();
    await row('t3', 's1').locator('.session-needs').filter({ hasText: 'needs you' }).waitFor();
    // The headline says it waits for you, not a spinner.
    await indicator(row('t3', 's1'), 'Waits for you').waitFor();
    await page
      .locator('[data-task="t3"] .task-needs')
      .filter({ hasText: '1 session needs you' })
      .waitFor();
    await shot('14-permission-requested');

    await asks.getByRole('button', { name: 'Allow' }).click();
    await result.filter({ hasText: 'Answered the agent: Allow.' }).waitFor();
    await asks.waitFor({ state: 'hidden' });
    await row('t3', 's1').locator('.session-needs').waitFor({ state: 'hidden' });
    await indicator(row('t3', 's1'), 'Waits for you').waitFor({ state: 'detached' });
    await waitFor(
      async () => (await session('t3', 's1')).activity.state === 'waiting_for_input',
      'the agent went on and ended its turn',
      WAIT,
    );
    await page.locator('#session-attention').waitFor({ state: 'hidden' });
    await shot('15-permission-answered');
  });
});
