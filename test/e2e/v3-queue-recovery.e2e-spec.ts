/**
 * A follow-on queued behind a request whose replica dies (kill -9) is not lost: once the dead
 * request's lease lapses, the replica that accepted the queued request (watching it) closes the
 * dead one as abandoned and runs the queued one; its waiting stream delivers the answer with no
 * further client action. The dying replica is a real server process on the same Redis.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { freePort, testRedisUrl } from '../support/services';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text, v3Client } from '../support/v3-client';

const AGENT = v3Agent('Recover', {
  description: 'Agent whose queued follow-ons survive a dead replica',
  systemPrompt: null,
  concurrency: { on_busy: 'enqueue' },
});
const ROOT = join(__dirname, '..', '..');

describe('a queued follow-on when the replica ahead of it dies', () => {
  let llm: FakeOpenAi;
  let child: ChildProcess | undefined;
  let t: TestApp | undefined;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await t?.close();
    await llm?.close();
  });

  it('runs on the live replica once the dead lease lapses, and its stream delivers the answer', async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh
    const dir = writeAgentDir({ 'recover.yaml': AGENT });
    const port = await freePort();
    const common = {
      TA_AUTH_MODE: 'dev',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: testRedisUrl(),
      TA_TASK_LEASE_MS: '1500',
    };
    child = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], {
      env: { PATH: process.env.PATH ?? '', TA_HOST: '127.0.0.1', TA_LOG_LEVEL: 'warn', ...common },
      stdio: 'ignore',
    });
    const doomedBase = `http://127.0.0.1:${port}/Recover/1`;
    for (let i = 0; i < 200; i++) {
      if ((await request(`${doomedBase}/health/live`).catch(() => undefined))?.status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t = await startTestApp({ configPath: dir, env: common });

    llm.script(reply.text('first answer'), reply.hang());
    const created = await v3Client(doomedBase).say('first');
    expect(created.status).toBe(200);
    const taskId = created.body.task_id;
    const doomed = v3Client(doomedBase)
      .say('dies with its process', { task_id: taskId })
      .catch((e: unknown) => e);
    await llm.waitForRequest(1);

    const queued = await openSse(`${t.url}/Recover/1/sse`, { task_id: taskId, items: [text('queued behind it')] });
    await queued.readUntil((so) => so.includes('event: queued'));
    llm.script(reply.text('recovered answer'));
    child.kill('SIGKILL');
    await doomed;

    const events = parseSse(await queued.readAll()).filter((e) => e.event);
    expect(events[0]!.event).toBe('queued');
    expect(events.at(-1)!.event).toBe('final-response');
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ status: 'Completed', content: { output: 'recovered answer' } });
    const task = await v3Client(`${t.url}/Recover/1`).task(taskId);
    expect(task.body.requests.map((r: { status: string; reason: string | null }) => [r.status, r.reason])).toEqual([
      ['Completed', null],
      ['Failed', 'abandoned'],
      ['Completed', null],
    ]);
    expect(task.body.requests[1].error.code).toBe('ABANDONED');
  }, 30_000);
});
