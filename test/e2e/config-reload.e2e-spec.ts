import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { openSse } from '../support/sse-reader';
import { modelInput, v3Client } from '../support/v3-client';
import { streamSocket, wsUrl } from '../support/ws-client';

/**
 * Hot reload of the agent configs (docs/configuration.md, "Reloading agents"), on the real command
 * (`teal-agent-server serve` over dist/) with a real model server (the fake OpenAI one), editing
 * the real config directory. What a request ran on is read where it shows: the system prompt the
 * model server received.
 */

const chat = (name: string, prompt: string) => `apiVersion: skagents/v1
kind: Chat
service_name: ${name}
version: 1.0
input_type: BaseMultiModalInput
spec:
  agent:
    name: default
    model: gpt-4o
    system_prompt: ${prompt}
`;

const stateful = (prompt: string) => `apiVersion: tealagents/v1alpha1
name: Tasks
version: 0.1
spec:
  agent:
    name: default
    model: gpt-4o
    system_prompt: ${prompt}
`;

/** Valid YAML, but `kind` is not one the schema knows: a `file:line: field: message` problem. */
const BROKEN = chat('ChatBot', 'You are broken.').replace('kind: Chat', 'kind: Chatty');

const HISTORY = { chat_history: [{ role: 'user', content: 'hi' }] };
const reloaded = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('config reloaded:');

jest.setTimeout(60_000);
beforeAll(ensureBuilt, 150_000);

describe('config reload', () => {
  let fake: FakeOpenAi;
  beforeAll(async () => (fake = await startFakeOpenAi()));
  afterAll(() => fake.close());

  /** Asks ChatBot once; returns the system prompt the model received. */
  async function promptOf(url: string): Promise<string> {
    const before = fake.requests.length;
    fake.script(reply.text('ok'));
    const res = await request(`${url}/ChatBot/1.0`, { body: HISTORY });
    expect(res.status).toBe(200);
    return fake.requests[before]!.body.messages[0].content as string;
  }

  function serve(dir: string, env: Record<string, string> = {}): CliRun {
    return runCli(['serve', dir, '--port', '0'], { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info', TA_BASE_URL: fake.baseURL, TA_API_KEY: 'sk-reload', ...env });
  }

  describe('with TA_CONFIG_WATCH=true', () => {
    let dir: string;
    let run: CliRun;
    let url: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ta-reload-'));
      writeFileSync(join(dir, 'chat.yaml'), chat('ChatBot', 'You are OLD.'));
      run = serve(dir, { TA_CONFIG_WATCH: 'true' });
      url = `http://127.0.0.1:${await run.listening()}`;
    });
    afterAll(async () => {
      await run.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('serves an added agent without a restart', async () => {
      expect((await request(`${url}/Extra/1.0/openapi.json`)).status).toBe(404);
      writeFileSync(join(dir, 'extra.yaml'), chat('Extra', 'You are extra.'));
      const line = await run.waitForLog(reloaded);
      expect(line.msg).toBe('config reloaded: added /Extra/1.0, changed none, removed none');
      const doc = await request(`${url}/Extra/1.0/openapi.json`);
      expect(doc.status).toBe(200);
      expect(Object.keys(doc.body.paths)).toContain('/Extra/1.0');
      const index = await request(`${url}/`);
      expect(JSON.stringify(index.body)).toContain('/Extra/1.0');
    });

    it('finishes a running stream on the old config and serves the next request on the new one', async () => {
      let release!: () => void;
      const gate = new Promise<void>((ok) => (release = ok));
      const first = fake.requests.length;
      fake.script(reply.chunks(['still ', 'old'], { until: gate }));
      // The headers come with the first event, which the gated model holds back.
      const sse = openSse(`${url}/ChatBot/1.0/sse`, HISTORY);
      expect((await fake.waitForRequest(first)).body.messages[0].content).toBe('You are OLD.');

      const from = run.logs().length;
      writeFileSync(join(dir, 'chat.yaml'), chat('ChatBot', 'You are NEW.'));
      await run.waitForLog((l) => reloaded(l) && String(l.msg).includes('changed /ChatBot/1.0'), { from });
      // The replaced app (and its MCP connections, had it any) stays open while the stream runs...
      const closed = (l: Record<string, unknown>) => l.msg === 'config reload: the replaced config is closed';
      await new Promise((r) => setTimeout(r, 700));
      expect(run.logs().slice(from).some(closed)).toBe(false);
      release();
      const text = await (await sse).readAll();
      expect(text).toContain('event: final-response');
      expect(text).toContain('still old');
      // ...and closes once it ended.
      await run.waitForLog(closed, { from });
      expect(await promptOf(url)).toBe('You are NEW.');
    });

    it('refuses a broken edit with the boot messages, keeps serving the last good config, then applies the fix', async () => {
      const brokenDir = mkdtempSync(join(tmpdir(), 'ta-broken-'));
      writeFileSync(join(brokenDir, 'chat.yaml'), BROKEN);
      const boot = runCli(['serve', brokenDir], { TA_AUTH_MODE: 'dev' });
      expect((await boot.exited).code).toBe(1);
      const bootProblem = boot
        .stderr()
        .split('\n')
        .find((l) => l.includes('chat.yaml:2'))!;
      expect(bootProblem).toMatch(/chat\.yaml:2: kind: /);
      rmSync(brokenDir, { recursive: true, force: true });

      writeFileSync(join(dir, 'chat.yaml'), BROKEN);
      const refused = await run.waitForLog((l) => String(l.msg).startsWith('config reload refused'));
      expect(refused.level).toBe('error');
      // The same line as at boot, but naming this directory's file.
      expect(refused.msg).toContain(bootProblem.trim().replace(brokenDir, dir));
      expect(await promptOf(url)).toBe('You are NEW.');

      const from = run.logs().length;
      writeFileSync(join(dir, 'chat.yaml'), chat('ChatBot', 'You are FIXED.'));
      await run.waitForLog((l) => reloaded(l) && String(l.msg).includes('changed /ChatBot/1.0'), { from });
      expect(await promptOf(url)).toBe('You are FIXED.');
    });

    it('carries a v3 task over to the changed config: the follow-on runs on the new one, with the history', async () => {
      writeFileSync(join(dir, 'tasks.yaml'), stateful('Tasks OLD.'));
      await run.waitForLog((l) => reloaded(l) && String(l.msg).includes('added /Tasks/0.1'));
      const api = v3Client(`${url}/Tasks/0.1`);
      fake.script(reply.text('first answer'));
      const first = await api.say('one');
      expect(first.status).toBe(200);

      const from = run.logs().length;
      writeFileSync(join(dir, 'tasks.yaml'), stateful('Tasks NEW.'));
      await run.waitForLog((l) => reloaded(l) && String(l.msg).includes('changed /Tasks/0.1'), { from });
      const index = fake.requests.length;
      fake.script(reply.text('second answer'));
      expect((await api.say('two', { task_id: first.body.task_id })).status).toBe(200);
      expect(modelInput(fake.requests[index]!.body)).toEqual([
        ['system', 'Tasks NEW.'],
        ['user', 'one'],
        ['assistant', 'first answer'],
        ['user', 'two'],
      ]);
    });

    it('answers a removed agent as an unknown one (404)', async () => {
      rmSync(join(dir, 'extra.yaml'));
      await run.waitForLog((l) => reloaded(l) && String(l.msg).includes('removed /Extra/1.0'));
      const removed = await request(`${url}/Extra/1.0`, { body: HISTORY });
      const unknown = await request(`${url}/Never/1.0`, { body: HISTORY });
      expect(removed.status).toBe(404);
      expect({ ...removed.body, instance: undefined, request_id: undefined }).toEqual({ ...unknown.body, instance: undefined, request_id: undefined });
    });
  });

  it('without TA_CONFIG_WATCH, applies an edit only on SIGHUP', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-reload-'));
    writeFileSync(join(dir, 'chat.yaml'), chat('ChatBot', 'You are OLD.'));
    const run = serve(dir);
    try {
      const url = `http://127.0.0.1:${await run.listening()}`;
      writeFileSync(join(dir, 'chat.yaml'), chat('ChatBot', 'You are NEW.'));
      // Several debounce windows: a watcher, were there one, would have reloaded by now.
      await new Promise((r) => setTimeout(r, 1500));
      expect(await promptOf(url)).toBe('You are OLD.');
      expect(run.logs().some(reloaded)).toBe(false);

      run.child.kill('SIGHUP');
      expect((await run.waitForLog(reloaded)).msg).toBe('config reloaded: added none, changed /ChatBot/1.0, removed none');
      expect(await promptOf(url)).toBe('You are NEW.');
      // WebSocket upgrades (`/stream`) follow the reloaded config too.
      const index = fake.requests.length;
      fake.script(reply.chunks(['by ', 'socket']));
      const out = await streamSocket(`${wsUrl(url)}/ChatBot/1.0/stream`, JSON.stringify(HISTORY));
      expect(out.frames).toEqual(['by ', 'socket']);
      expect(fake.requests[index]!.body.messages[0].content).toBe('You are NEW.');
      expect(run.child.exitCode).toBeNull();
      // The booted app closes the reloaded one with it: a drained shutdown still exits 0.
      run.child.kill('SIGTERM');
      expect((await run.exited).code).toBe(0);
    } finally {
      await run.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
