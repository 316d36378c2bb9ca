/**
 * The web console (docs/console.md) in a real headless Chromium (Debian's, driven by
 * playwright-core): it loads from the app at /console, streams an answer, shows a tool call and
 * its approval, cancels a slow call, reattaches to a running request after a reload, shows a task's
 * timeline and plans, and refines a paused plan. Only the
 * offline model runs (local/echo with `/tool` lines). Screenshots go to test-artifacts/console/.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchBrowser, TestBrowser } from '../support/browser';
import { ensureConsoleBuilt } from '../support/console-browser';
import { artifactDir } from '../support/test-artifacts';
import { postJson, request } from '../support/http';
import { DEFAULT_AUDIENCE, DEFAULT_TENANT, entraEnv, startOidcIssuer } from '../support/oidc-issuer';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

// A real browser on a shared machine: each step may wait for the page (15 s per wait, below).
jest.setTimeout(30_000);

const DESK = `
apiVersion: tealagents/v1alpha1
name: Desk
version: 1
description: Console e2e desk
spec:
  governance:
    autonomy_level: L1
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
    plugins: [Desk]
`;

// The same desk, but a message sent while a pause waits refines the plan (issue 23).
const PLANNER = `
apiVersion: tealagents/v1alpha1
name: Planner
version: 1
description: Console e2e planner
spec:
  governance:
    autonomy_level: L1
    on_paused: refine
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
    plugins: [Desk]
`;

const ECHO = `
apiVersion: skagents/v2alpha1
name: Parrot
version: 0.1
description: Stateless echo
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Repeat.
`;

// `wait` runs at once (read_only), ends early when the request is canceled, and as if its time were
// up when the test has seen what it waits for (finishWaits: the app runs in this process); `file` needs approval.
const DESK_PLUGIN = `
exports.plugins = [{ name: 'Desk', description: 'Console test tools', tools: [
  { name: 'wait', description: 'Waits ms milliseconds', risk: 'read_only',
    parameters: { type: 'object', properties: { ms: { type: 'number' } }, required: ['ms'], additionalProperties: false },
    handler: ({ ms }, { signal }) => new Promise((resolve, reject) => {
      const waits = (globalThis.__consoleWaits ??= new Set());
      const done = () => { clearTimeout(t); waits.delete(done); resolve('waited ' + ms); };
      const t = setTimeout(done, ms);
      waits.add(done);
      signal?.addEventListener('abort', () => { clearTimeout(t); waits.delete(done); reject(new Error('aborted')); });
    }) },
  { name: 'file', description: 'Files a document', risk: 'write_high_risk',
    parameters: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'], additionalProperties: false },
    handler: ({ title }) => 'filed ' + title },
] }];
`;

// Turns run over the v3 stream (`POST /sse`) or AG-UI (`POST /ag-ui`); approvals, cancel, edit and
// reattach use the v3 routes either way.
/** Ends every `wait` call under way now, as if its time were up (its result says the time it was given). */
const finishWaits = () => [...((globalThis as { __consoleWaits?: Set<() => void> }).__consoleWaits ?? [])].forEach((done) => done());

describe.each([['sse'], ['ag-ui']])('the web console in headless Chromium (turns over %s)', (transport) => {
  let app: TestApp;
  let browser: TestBrowser;
  let page: Page;
  const shots = artifactDir(`console/${transport}`);

  beforeAll(async () => {
    ensureConsoleBuilt();
    const dir = writeAgentDir({ 'desk.yaml': DESK, 'parrot.yaml': ECHO, 'planner.yaml': PLANNER });
    writeFileSync(join(dir, 'custom_plugins.js'), DESK_PLUGIN);
    app = await startTestApp({ configPath: dir, env: { TA_LOG_LEVEL: 'warn' } });
    browser = await launchBrowser();
    page = await browser.newPage();
    page.setDefaultTimeout(15_000);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const send = async (text: string) => {
    await page.getByTestId('input').fill(text);
    await page.getByTestId('send').click();
  };

  it('loads from /console with a strict policy, lists the agents, and streams an answer', async () => {
    // Timeline pages of 5 events, so a short conversation takes several ("more").
    const res = await page.goto(`${app.url}/console?transport=${transport}&timeline_page=5`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    // The options come from /console/config.json after the first render: wait for them, then read.
    await page.getByTestId('agent').locator('option').nth(2).waitFor({ state: 'attached' });
    await expect(page.getByTestId('agent').locator('option').allTextContents()).resolves.toEqual([
      'Desk 1 (tealagents/v1alpha1)',
      'Parrot 0.1 (skagents/v2alpha1)',
      'Planner 1 (tealagents/v1alpha1)',
    ]);
    // The answer arrives as a stream of events (word by word from the offline model).
    const streamed = page.waitForResponse((r) => r.url() === `${app.url}/Desk/1/${transport}`);
    await send('hello from the browser');
    expect((await streamed).headers()['content-type']).toContain('text/event-stream');
    await page.getByTestId('assistant-message').filter({ hasText: 'hello from the browser' }).waitFor();
    await page.getByTestId('running').waitFor({ state: 'detached' });
    // The stored task now backs the view: the user turn can be edited.
    await page.getByTestId('edit').first().waitFor();
    expect(await page.getByTestId('task-id').textContent()).toMatch(/^task [0-9a-f-]{36}$/);
    await shot('1-streamed-answer');
    expect(browser.consoleErrors).toEqual([]);
  });

  it('shows tool calls that need approval, approves one and rejects the other with a reason, and shows the results', async () => {
    await send('/tool Desk-file {"title": "q3 report"}\n/tool Desk-file {"title": "draft"}');
    const calls = page.getByTestId('pending-call');
    // The calls are shown as soon as they are known; their arguments may follow a moment later.
    await calls.filter({ hasText: '"draft"' }).waitFor();
    expect(await calls.allTextContents()).toEqual([expect.stringContaining('"q3 report"'), expect.stringContaining('"draft"')]);
    await shot('2-approval-pending');
    await calls.nth(0).getByTestId('approve').check();
    await calls.nth(1).getByTestId('reject').check();
    await calls.nth(1).getByTestId('reason').fill('not final yet');
    await page.getByTestId('submit-decisions').click();
    await page.getByTestId('tool-result').filter({ hasText: 'filed q3 report' }).waitFor();
    await page.getByTestId('approvals').waitFor({ state: 'detached' });
    await page.getByTestId('running').waitFor({ state: 'detached' });
    await page.getByTestId('assistant-message').filter({ hasText: 'filed q3 report' }).waitFor();
    await shot('3-decided-results');
    // The decisions, and the rejection's reason, are stored with the request.
    const taskId = (await page.getByTestId('task-id').textContent())!.replace('task ', '');
    const task = await request(`${app.url}/Desk/1/tasks/${taskId}`);
    const decided = task.body.requests.at(-1).approvals[0];
    expect(decided).toMatchObject({ approved: [expect.any(String)], rejected: [expect.any(String)] });
    expect(Object.values(decided.reasons)).toEqual(['not final yet']);
  });

  it("shows the task's timeline (a page at a time) and its plan with its status", async () => {
    await page.getByTestId('timeline-toggle').click();
    const events = page.getByTestId('event');
    await events.nth(4).waitFor();
    expect(await events.count()).toBe(5);
    // 3 events for the first request, 8 for the second: three pages of 5.
    await page.getByTestId('timeline-more').click();
    await events.nth(9).waitFor();
    await page.getByTestId('timeline-more').click();
    await events.nth(10).waitFor();
    await page.getByTestId('timeline-more').waitFor({ state: 'detached' });
    // Timeline order is (request, time, kind): a model call may share its millisecond with the result before it.
    const types = await events.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-type')));
    expect(types.slice(0, 6)).toEqual(['request_accepted', 'model_call', 'request_completed', 'request_accepted', 'model_call', 'plan_proposed']);
    expect(types.slice(6).sort()).toEqual(['decision', 'model_call', 'request_completed', 'tool_call_completed', 'tool_call_started']);
    expect(types.at(-1)).toBe('request_completed');
    const line = (type: string) => page.locator(`[data-testid="event"][data-type="${type}"]`).first().getByTestId('event-summary').textContent();
    expect(await line('request_accepted')).toBe('hello from the browser');
    expect(await line('model_call')).toMatch(/^local\/echo · \d+ tokens · \d+ ms · stop$/);
    expect(await line('plan_proposed')).toBe('2 steps · max risk write_high_risk · Desk-file, Desk-file');
    expect(await line('decision')).toBe('approve · 1 approved · 1 rejected · “not final yet”');
    expect(await line('tool_call_completed')).toMatch(/^Desk-file → ok · \d+ ms · filed q3 report$/);
    // One pause, one approved call that ran: its plan completed.
    expect(await page.getByTestId('plan-status').allTextContents()).toEqual(['completed']);
    await shot('3b-timeline');
    await page.getByTestId('timeline-toggle').click();
    await page.getByTestId('timeline').waitFor({ state: 'detached' });
  });

  it('cancels a slow tool call', async () => {
    await send('/tool Desk-wait {"ms": 20000}');
    await page.getByTestId('tool-call').filter({ hasText: 'Desk-wait' }).waitFor();
    await page.getByTestId('cancel').click();
    await page.getByTestId('notice').filter({ hasText: 'Canceled' }).first().waitFor();
    await page.getByTestId('running').waitFor({ state: 'detached', timeout: 5_000 });
    await shot('4-canceled');
    const taskId = (await page.getByTestId('task-id').textContent())!.replace('task ', '');
    const task = await request(`${app.url}/Desk/1/tasks/${taskId}`);
    expect(task.body.requests.at(-1).status).toBe('Canceled');
  });

  it('reattaches to a running request after a reload and shows how it ends', async () => {
    await send('/tool Desk-wait {"ms": 2500}');
    await page.getByTestId('tool-call').filter({ hasText: '"ms": 2500' }).last().waitFor();
    const taskId = (await page.getByTestId('task-id').textContent())!.replace('task ', '');
    await page.reload();
    await page.getByTestId('notice').filter({ hasText: 'Reattached' }).waitFor();
    expect(await page.getByTestId('task-id').textContent()).toBe(`task ${taskId}`);
    // Over the v3 stream the tab kept the last event id: the running call is shown as it was seen.
    if (transport === 'sse') expect(await page.getByTestId('tool-call').filter({ hasText: '"ms": 2500' }).count()).toBe(1);
    await shot('5-reattached');
    finishWaits(); // reattached while it ran: it may end now
    await page.getByTestId('tool-result').filter({ hasText: 'waited 2500' }).last().waitFor({ timeout: 10_000 });
    await page.getByTestId('assistant-message').filter({ hasText: 'waited 2500' }).waitFor();
    await page.getByTestId('running').waitFor({ state: 'detached' });
    await shot('6-reattached-finished');
  });

  it('edits a past message and reruns from it', async () => {
    await page.getByTestId('edit').first().click();
    await page.getByTestId('edit-text').fill('hello again, edited');
    await page.getByTestId('rerun').click();
    await page.getByTestId('assistant-message').filter({ hasText: 'hello again, edited' }).waitFor();
    await page.getByTestId('running').waitFor({ state: 'detached' });
    // The edit replaced the first turn and everything after it.
    expect(await page.getByTestId('user-message').locator('span').allTextContents()).toEqual(['hello again, edited']);
    await shot('7-edited');
  });

  it("lists the caller's sessions and opens a task from one", async () => {
    await page.getByTestId('sessions').waitFor(); // GET /sessions is served: the panel must show
    await page.getByTestId('new-chat').click();
    await page.getByTestId('session').first().click();
    await page.getByTestId('task').first().click();
    await page.getByTestId('user-message').first().waitFor();
    await shot('8-session-task');
  });

  it('chats with a stateless agent too', async () => {
    await page.getByTestId('agent').selectOption('/Parrot/0.1');
    await send('stateless hello');
    await page.getByTestId('assistant-message').filter({ hasText: 'stateless hello' }).waitFor();
    expect(browser.consoleErrors).toEqual([]);
  });

  it('follows a request it did not start from a new tab on the task stream, and reads it again after a lost connection', async () => {
    // Started by another client: the new tab has no view or event id saved, so it shows the stored
    // task, then the request's events from its first.
    const taskId = randomUUID();
    const turn = postJson(`${app.url}/Desk/1`, { task_id: taskId, items: [{ content_type: 'text', content: '/tool Desk-wait {"ms": 4000}' }] });
    for (let i = 0; (await request(`${app.url}/Desk/1/tasks/${taskId}`)).body?.status !== 'Running'; i++) {
      if (i > 100) throw new Error('the turn never ran');
      await new Promise((r) => setTimeout(r, 50));
    }
    const tab = await browser.newPage();
    tab.setDefaultTimeout(15_000);
    const reattaches: string[] = [];
    tab.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (path === `/Desk/1/tasks/${taskId}/stream` || path === '/Desk/1/sse') reattaches.push(`${r.method()} ${path} ${r.headers()['last-event-id'] ?? '-'}`);
    });
    // The first read of the stream breaks off: the page reads it again, as an EventSource would.
    let cut = false;
    await tab.route(`**/Desk/1/tasks/${taskId}/stream`, (route) => {
      if (cut) return route.continue();
      cut = true;
      return route.abort('connectionreset');
    });
    const errorsBefore = browser.consoleErrors.length;
    await tab.goto(`${app.url}/console?transport=${transport}#agent=/Desk/1&task=${taskId}`);
    await tab.getByTestId('notice').filter({ hasText: 'Reattached' }).waitFor();
    // Read again after the cut while it ran: it may end now.
    for (let i = 0; reattaches.length < 2; i++) {
      if (i > 200) throw new Error(`the stream was not read again: ${reattaches.join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    finishWaits();
    await tab.getByTestId('tool-result').filter({ hasText: 'waited 4000' }).last().waitFor({ timeout: 10_000 });
    await tab.getByTestId('assistant-message').filter({ hasText: 'waited 4000' }).waitFor();
    await tab.getByTestId('running').waitFor({ state: 'detached' });
    await tab.screenshot({ path: join(shots, '9-new-tab-reattached.png'), fullPage: true });
    expect((await turn).status).toBe(200);
    // One way back, the task's stream, both times from the first event (none was seen before the cut).
    expect(reattaches).toEqual([`GET /Desk/1/tasks/${taskId}/stream -`, `GET /Desk/1/tasks/${taskId}/stream -`]);
    // The cut connection is the only error the tab logged.
    expect(browser.consoleErrors.splice(errorsBefore).filter((e) => !e.includes('ERR_CONNECTION_RESET'))).toEqual([]);
    await tab.close();
  });

  // A refinement is a message on the v3 stream whichever protocol runs turns: once is enough (defined for the v3 stream only, not skipped for AG-UI).
  if (transport === 'sse')
    it('refines a paused plan: refused by an agent without on_paused: refine, planned again by one with it', async () => {
      // Desk keeps the default (reject): the message is refused with 409 TASK_PAUSED and the pause stays.
      await page.getByTestId('agent').selectOption('/Desk/1');
      await send('/tool Desk-file {"title": "memo"}');
      await page.getByTestId('pending-call').filter({ hasText: '"memo"' }).waitFor();
      await page.getByTestId('refine-text').fill('file it tomorrow');
      const refused = page.waitForResponse((r) => r.url() === `${app.url}/Desk/1/sse` && r.request().method() === 'POST');
      await page.getByTestId('refine').click();
      expect((await refused).status()).toBe(409);
      await page.getByTestId('refine-note').filter({ hasText: 'Refine is not enabled for this agent' }).waitFor();
      await page.getByTestId('pending-call').filter({ hasText: '"memo"' }).waitFor();
      expect(await page.getByTestId('refine-text').inputValue()).toBe('file it tomorrow');
      await shot('10-refine-refused');

      // Planner refines: the waiting call is rejected as refined and the model plans again, here a new call to approve.
      await page.getByTestId('agent').selectOption('/Planner/1');
      await send('/tool Desk-file {"title": "memo"}');
      await page.getByTestId('pending-call').filter({ hasText: '"memo"' }).waitFor();
      await page.getByTestId('refine-text').fill('/tool Desk-file {"title": "memo v2"}');
      await page.getByTestId('refine').click();
      await page.getByTestId('pending-call').filter({ hasText: '"memo v2"' }).waitFor();
      await page.getByTestId('running').waitFor({ state: 'detached' });
      expect(await page.getByTestId('refine-note').count()).toBe(0);
      await page.getByTestId('timeline-toggle').click();
      await page.locator('[data-testid="event"][data-type="plan_refined"]').waitFor();
      expect(await page.getByTestId('plan-status').allTextContents()).toEqual(['refined', 'proposed']);
      await shot('11-refined');
      await page.getByTestId('timeline-toggle').click();
      expect(browser.consoleErrors.filter((e) => !e.includes('409'))).toEqual([]);
    });
});

describe('the console in Entra mode', () => {
  it('offers MSAL sign-in when TA_CONSOLE_CLIENT_ID is set, and chats with a pasted bearer token', async () => {
    ensureConsoleBuilt();
    const issuer = await startOidcIssuer();
    const dir = writeAgentDir({ 'desk.yaml': DESK });
    writeFileSync(join(dir, 'custom_plugins.js'), DESK_PLUGIN);
    const app = await startTestApp({
      configPath: dir,
      env: entraEnv(issuer, { TA_CONSOLE_CLIENT_ID: '0a0a0a0a-0000-4000-8000-00000000c0de', TA_LOG_LEVEL: 'warn' }),
    });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(15_000);
      const res = await page.goto(`${app.url}/console`);
      expect(res?.headers()['content-security-policy']).toContain(`connect-src 'self' ${issuer.origin}; frame-src ${issuer.origin}`);
      const config = await request(`${app.url}/console/config.json`);
      expect(config.body.msal).toEqual({
        client_id: '0a0a0a0a-0000-4000-8000-00000000c0de',
        authority: `${issuer.origin}/${DEFAULT_TENANT}`,
        scopes: [`${DEFAULT_AUDIENCE}/.default`],
      });
      await page.getByTestId('sign-in').waitFor();
      // No token: the API refuses, and the page says so.
      await page.getByTestId('input').fill('who am i');
      await page.getByTestId('send').click();
      await page
        .getByTestId('notice')
        .filter({ hasText: /401|token|Unauthorized/i })
        .first()
        .waitFor();
      await page.getByTestId('token').fill(await issuer.mint());
      await page.getByTestId('token').press('Tab');
      await page.getByTestId('new-chat').click();
      await page.getByTestId('input').fill('hello with a token');
      await page.getByTestId('send').click();
      await page.getByTestId('assistant-message').filter({ hasText: 'hello with a token' }).waitFor();
      await page.screenshot({ path: join(artifactDir('console/entra'), '1-token-chat.png'), fullPage: true });
      expect(browser.consoleErrors.filter((e) => !e.includes('401'))).toEqual([]);
    } finally {
      await browser.close();
      await app.close();
      await issuer.close();
    }
  }, 60_000);
});

describe('the console switched off', () => {
  it('TA_CONSOLE=false serves no /console route', async () => {
    const app = await startTestApp({ agents: { 'parrot.yaml': ECHO }, env: { TA_CONSOLE: 'false' } });
    try {
      expect((await request(`${app.url}/console`)).status).toBe(404);
      expect((await request(`${app.url}/console/config.json`)).status).toBe(404);
    } finally {
      await app.close();
    }
  });
});
