/**
 * An image item is an inline data: URI of a type the models accept (png, jpeg, gif, webp) whose
 * base64 decodes: anything else is 422 naming the item, before the model is called — on the
 * stateless routes, on v3 tasks and on AG-UI runs.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { postJson } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const V3 = `
apiVersion: tealagents/v1alpha1
name: Looker
version: 1
description: Looks at images
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`;

const bad: [string, string, RegExp][] = [
  ['base64 that does not decode', 'data:image/png;base64,%%%%', /not valid base64/],
  ['base64 of a wrong length', 'data:image/png;base64,iVBORw0KGgo', /not valid base64/],
  ['padding in the middle', 'data:image/png;base64,iV==BORw', /not valid base64/],
  ['no data', 'data:image/png;base64,', /not valid base64/],
  [
    'an SVG',
    'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=',
    /media type must be one of image\/png, image\/jpeg, image\/gif, image\/webp \(got "image\/svg\+xml"\)/,
  ],
  ['a TIFF', 'data:image/tiff;base64,AAAA', /media type must be one of/],
];

describe('image items', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents') });
  });
  afterAll(() => t?.close());

  it.each(bad)('stateless: %s is 422 naming the item', async (_name, content, message) => {
    const res = await postJson(`${t.url}/EchoAgent/0.1`, {
      chat_history: [
        {
          role: 'user',
          items: [
            { content_type: 'text', content: 'look' },
            { content_type: 'image', content },
          ],
        },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([{ field: 'chat_history.0.items.1.content', message: expect.stringMatching(message) }]);
  });

  it.each(['png', 'jpeg', 'gif', 'webp', 'PNG'])('stateless: takes an image/%s item', async (type) => {
    const res = await postJson(`${t.url}/EchoAgent/0.1`, {
      chat_history: [{ role: 'user', items: [{ content_type: 'image', content: PNG.replace('image/png', `image/${type}`) }] }],
    });
    expect(res.status).toBe(200);
  });
});

describe('image items on v3 and AG-UI', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'looker.yaml': V3 } });
  });
  afterAll(() => t?.close());

  it.each(bad)('v3: %s is 422 naming the item', async (_name, content, message) => {
    const res = await postJson(`${t.url}/Looker/1`, { items: [{ content_type: 'image', content }] });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: 'items.0.content', message: expect.stringMatching(message) }]);
  });

  it.each([
    ['base64 that does not decode', 'image/png', '%%%%', /not valid base64/],
    ['an SVG', 'image/svg+xml', 'PHN2Zz48L3N2Zz4=', /media type must be one of/],
  ])('AG-UI: %s is refused naming the content part (a lone RUN_ERROR, as every AG-UI refusal)', async (_name, mimeType, value, message) => {
    const content = [{ type: 'image', source: { type: 'data', value, mimeType } }];
    const body = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: 'm1', role: 'user', content }], tools: [], context: [], state: {} };
    const res = await postJson(`${t.url}/Looker/1/ag-ui`, body, { accept: 'text/event-stream' });
    const events = res.text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
    expect(events).toEqual([expect.objectContaining({ type: 'RUN_ERROR', code: 'VALIDATION_FAILED', message: expect.stringMatching(message) })]);
    expect(events[0].message).toContain('messages[0].content[0]');
  });

  it('v3: takes a PNG', async () => {
    const res = await postJson(`${t.url}/Looker/1`, { items: [{ content_type: 'image', content: PNG }] });
    expect(res.status).toBe(200);
  });
});
