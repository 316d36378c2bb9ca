/**
 * A pause's webhook status (issue 24, item 5): the task view lists each request's deliveries
 * (docs/api.md), and the console shows those of a pending approval in its approvals panel
 * (docs/console.md), in a real headless Chromium, against a real HTTP receiver on 127.0.0.1 that is
 * down, then up. An agent without webhooks shows neither. Only the offline model runs (local/echo
 * with `/tool` lines).
 */
import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchBrowser, TestBrowser } from '../support/browser';
import { ensureConsoleBuilt } from '../support/console-browser';
import { artifactDir } from '../support/test-artifacts';
import { waitFor } from '../support/faults';
import { postJson, request } from '../support/http';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

jest.setTimeout(20_000);

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ADMIN = { 'x-dev-roles': 'Agents.Admin' };

const agent = (name: string, webhooks: string) => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
spec:
  governance:
    autonomy_level: L1
${webhooks}
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
    plugins: [Desk]
`;

// `file` needs approval (write_high_risk under L1): every call of it pauses the request.
const DESK_PLUGIN = `
exports.plugins = [{ name: 'Desk', description: 'Console test tools', tools: [
  { name: 'file', description: 'Files a document', risk: 'write_high_risk',
    parameters: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'], additionalProperties: false },
    handler: ({ title }) => 'filed ' + title },
] }];
`;
const fileIt = (title: string) => ({ items: [{ content_type: 'text', content: `/tool Desk-file {"title": "${title}"}` }] });

/** A receiver that answers 503 while `down`, 200 otherwise, and counts what it was sent by request id. */
async function startReceiver() {
  const state = { down: false, got: [] as { id: string; requestId: string; type: string }[] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      state.got.push({ id: String(req.headers['webhook-id']), requestId: body.data.request_id, type: body.type });
      res.writeHead(state.down ? 503 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { url, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("a pending approval's webhook status", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let app: TestApp;
  let browser: TestBrowser;
  let page: Page;
  const shots = artifactDir('console/webhooks');
  const task = async (prefix: string, taskId: string) => (await request(`${app.url}${prefix}/tasks/${taskId}`)).body;

  beforeAll(async () => {
    ensureConsoleBuilt();
    process.env.HOOK_SECRET = SECRET;
    receiver = await startReceiver();
    const hooked = agent('Hooked', `  webhooks:\n    - url: ${receiver.url}\n      events: [approval.required]\n      secret_env: HOOK_SECRET`);
    const dir = writeAgentDir({ 'hooked.yaml': hooked, 'plain.yaml': agent('Plain', ''), 'custom_plugins.js': DESK_PLUGIN });
    app = await startTestApp({ configPath: dir, env: { TA_LOG_LEVEL: 'warn', TA_WEBHOOK_ALLOW_PRIVATE: 'true', TA_LEASE_SWEEP_MS: '200' } });
    browser = await launchBrowser();
    page = await browser.newPage();
    page.setDefaultTimeout(12_000);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await receiver?.close();
    delete process.env.HOOK_SECRET;
  });

  it("the task view lists the paused request's approval.required delivery, delivered once the receiver took it; an agent without webhooks shows no webhooks key", async () => {
    const paused = await postJson(`${app.url}/Hooked/1`, fileIt('q3'));
    expect(paused.body.status).toBe('Paused');
    const { task_id: taskId, request_id: requestId } = paused.body;
    // The receiver answers before the attempt's outcome is stored: wait for the stored one.
    let webhooks: Record<string, unknown>[] = [];
    await waitFor(async () => {
      webhooks = (await task('/Hooked/1', taskId)).requests[0].webhooks;
      expect(webhooks).toEqual([expect.objectContaining({ status: 'delivered' })]);
    });
    expect(receiver.state.got.filter((g) => g.requestId === requestId)).toEqual([{ id: webhooks[0]!.id, requestId, type: 'approval.required' }]);
    expect(webhooks[0]).toEqual({
      id: expect.stringMatching(/^msg_/),
      event: 'approval.required',
      pause_id: paused.body.content.pause_id,
      url: receiver.url,
      status: 'delivered',
      attempts: 1,
      last_attempt_at: expect.any(String),
      last_status: 200,
      last_error: null,
      next_attempt_at: null,
    });

    const plain = await postJson(`${app.url}/Plain/1`, fileIt('q3'));
    expect(plain.body.status).toBe('Paused');
    expect((await task('/Plain/1', plain.body.task_id)).requests[0]).not.toHaveProperty('webhooks');
  });

  it('the console shows the status beside the pending calls: retrying while the receiver is down, delivered once it took it; nothing for an agent without webhooks', async () => {
    receiver.state.down = true;
    await page.goto(`${app.url}/console#agent=/Hooked/1`);
    await page.getByTestId('input').fill('/tool Desk-file {"title": "q4"}');
    await page.getByTestId('send').click();
    await page.getByTestId('pending-call').waitFor();
    const status = page.getByTestId('webhook-status');
    await status.filter({ hasText: /^Webhook: retrying \(attempt \d+, last 503\)$/ }).waitFor();
    await page.screenshot({ path: join(shots, '1-retrying.png'), fullPage: true });

    // A choice made meanwhile survives the status's re-reads (they touch the status only).
    await page.getByTestId('approve').check();
    // Up again: an admin's redelivery sends it now rather than at its next retry (up to 10 s away).
    receiver.state.down = false;
    const taskId = (await page.getByTestId('task-id').textContent())!.replace('task ', '');
    const [delivery] = (await task('/Hooked/1', taskId)).requests[0].webhooks;
    const again = await request(`${app.url}/admin/webhooks/deliveries/${delivery.id}/redeliver`, { method: 'POST', headers: ADMIN });
    expect(again.status).toBe(202);
    await status.filter({ hasText: 'Webhook: delivered (200)' }).waitFor();
    expect(await status.count()).toBe(1);
    expect(await page.getByTestId('approve').isChecked()).toBe(true);
    await page.screenshot({ path: join(shots, '2-delivered.png'), fullPage: true });

    // The same pause of an agent without webhooks: the panel, and no status line.
    await page.getByTestId('agent').selectOption({ label: 'Plain 1 (tealagents/v1alpha1)' });
    await page.getByTestId('input').fill('/tool Desk-file {"title": "q5"}');
    // The status comes from the task read back at the turn's end: once that is shown, none is there.
    const readBack = page.waitForResponse((r) => r.request().method() === 'GET' && r.url().startsWith(`${app.url}/Plain/1/tasks/`));
    await page.getByTestId('send').click();
    await page.getByTestId('pending-call').waitFor();
    await readBack;
    await page.waitForTimeout(300);
    expect(await status.count()).toBe(0);
    await page.getByTestId('approvals').waitFor();
    expect(browser.consoleErrors).toEqual([]);
  });
});
