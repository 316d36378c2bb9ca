import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { openSse, parseSse } from '../support/sse-reader';
import { TestApp } from '../support/test-app';
import { text } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Slow
version: 1
description: Agent on a slow model
spec:
  agent:
    name: default
    model: gpt-test
`;

describe('v3 SSE while the model is slow', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'slow.yaml': AGENT }, env: { TA_SSE_KEEPALIVE_MS: '100' } });
    ({ llm, t } = app);
  });
  afterAll(() => app.close());

  it('sends `: keepalive` comments until the model answers, then the events with their ids', async () => {
    let release!: () => void;
    llm.script(reply.chunks(['late ', 'answer'], { until: new Promise<void>((r) => (release = r)) }));
    const stream = await openSse(`${t.url}/Slow/1/sse`, { items: [text('take your time')] });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('cache-control')).toBe('no-cache');
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    await stream.readUntil((so) => so.split(': keepalive\n\n').length > 3); // at least three keepalives
    release();
    const events = parseSse(await stream.readAll());
    const named = events.filter((e) => e.event);
    expect(named.map((e) => e.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
    expect(named.map((e) => e.id)).toEqual(['0-0', '0-1', '0-2']);
    expect(JSON.parse(named[2]!.data).content.output).toBe('late answer');
    const firstEvent = events.findIndex((e) => e.event);
    expect(events.slice(0, firstEvent).every((e) => e.comment === 'keepalive')).toBe(true);
  });
});
