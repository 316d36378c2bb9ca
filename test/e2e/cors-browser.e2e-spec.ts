import { launchBrowser, PageServer, servePage, TestBrowser } from '../support/browser';
import { AGENTS } from '../support/cors-agents';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * CORS in a real browser: a page served by another local origin `fetch`es the agent with
 * `Authorization` and `Content-Type: application/json` (so Chromium sends a real preflight) and reads
 * the answer, its exposed headers, a problem+json error and an event stream; a page on an origin
 * TA_CORS_ORIGINS does not list cannot. The header-level checks are in cors.e2e-spec.ts.
 */

jest.setTimeout(60_000);

const PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>cors test page</title></head><body>a web app</body></html>';

interface FetchOutcome {
  ok: boolean;
  status?: number;
  body?: unknown;
  text?: string;
  requestId?: string | null;
  retryAfter?: string | null;
  error?: string;
}

/** Runs in the page: a cross-origin fetch as a web app makes it. */
async function pageFetch(args: {
  url: string;
  method: string;
  body?: unknown;
  read: 'json' | 'text';
  headers?: Record<string, string>;
}): Promise<FetchOutcome> {
  try {
    const res = await fetch(args.url, {
      method: args.method,
      headers: { Authorization: 'Bearer not-needed-in-dev-mode', 'Content-Type': 'application/json', ...args.headers },
      body: args.body === undefined ? undefined : JSON.stringify(args.body),
    });
    const text = await res.text();
    return {
      ok: true,
      status: res.status,
      text,
      body: args.read === 'json' ? JSON.parse(text) : undefined,
      requestId: res.headers.get('X-Request-Id'),
      retryAfter: res.headers.get('Retry-After'),
    };
  } catch (e) {
    return { ok: false, error: String(e) };
  }
}

describe('CORS in a real browser (Chromium)', () => {
  let allowedPage: PageServer;
  let otherPage: PageServer;
  let t: TestApp;
  let browser: TestBrowser;

  beforeAll(async () => {
    allowedPage = await servePage(PAGE);
    otherPage = await servePage(PAGE);
    t = await startTestApp({ agents: AGENTS, env: { TA_CORS_ORIGINS: allowedPage.origin, TA_LOG_LEVEL: 'silent' } });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await allowedPage?.close();
    await otherPage?.close();
  });

  it('lets a page on a listed origin call the agent and read the JSON and the exposed headers', async () => {
    const page = await browser.newPage();
    await page.goto(allowedPage.origin);
    const out = await page.evaluate(pageFetch, {
      url: `${t.url}/Echo/0.1`,
      method: 'POST',
      body: { chat_history: [{ role: 'user', content: 'hello from the browser' }] },
      read: 'json' as const,
    });
    expect(out).toEqual(expect.objectContaining({ ok: true, status: 200 }));
    expect(out.body).toEqual(expect.objectContaining({ source: 'Echo:0.1', output_raw: 'hello from the browser' }));
    expect(out.requestId).toMatch(/^[0-9a-f-]{36}$/);

    // A stateful task, a follow-on, the task (GET with Authorization: preflighted), an error, a stream.
    const created = await page.evaluate(pageFetch, {
      url: `${t.url}/Assistant/0.1`,
      method: 'POST',
      body: { items: [{ content_type: 'text', content: 'first' }] },
      read: 'json' as const,
    });
    const taskId = (created.body as { task_id: string }).task_id;
    expect(created).toEqual(expect.objectContaining({ ok: true, status: 200 }));
    const task = await page.evaluate(pageFetch, { url: `${t.url}/Assistant/0.1/tasks/${taskId}`, method: 'GET', read: 'json' as const });
    expect(task).toEqual(expect.objectContaining({ ok: true, status: 200 }));
    expect((task.body as { task_id: string }).task_id).toBe(taskId);

    const problem = await page.evaluate(pageFetch, { url: `${t.url}/Assistant/0.1/tasks/${taskId}/cancel`, method: 'POST', read: 'json' as const });
    expect(problem).toEqual(expect.objectContaining({ ok: true, status: 409 }));
    expect(problem.body).toEqual(expect.objectContaining({ code: 'TASK_NOT_RUNNING', status: 409 }));

    const stream = await page.evaluate(pageFetch, {
      url: `${t.url}/Assistant/0.1/sse`,
      method: 'POST',
      body: { task_id: taskId, items: [{ content_type: 'text', content: 'streamed' }] },
      read: 'text' as const,
    });
    expect(stream).toEqual(expect.objectContaining({ ok: true, status: 200 }));
    expect(stream.text).toContain('event: final-response');

    // Last-Event-ID passes the preflight (the server reads it: this one is not an id of the API).
    const badResume = await page.evaluate(pageFetch, {
      url: `${t.url}/Assistant/0.1/sse`,
      method: 'POST',
      body: { task_id: taskId, items: [{ content_type: 'text', content: 'again' }] },
      read: 'json' as const,
      headers: { 'Last-Event-ID': 'not-an-event-id' },
    });
    expect(badResume).toEqual(expect.objectContaining({ ok: true, status: 422 }));
    expect(badResume.body).toEqual(expect.objectContaining({ code: 'VALIDATION_FAILED', errors: [expect.objectContaining({ field: 'Last-Event-ID' })] }));
    // (Chromium logs the 409 and the 422 as failed loads; nothing about CORS.)
    expect(browser.consoleErrors.filter((e) => /CORS|Access-Control/i.test(e))).toEqual([]);
    await page.close();
  });

  it('keeps the answer from a page on an origin TA_CORS_ORIGINS does not list', async () => {
    const page = await browser.newPage();
    await page.goto(otherPage.origin);
    const out = await page.evaluate(pageFetch, {
      url: `${t.url}/Echo/0.1`,
      method: 'POST',
      body: { chat_history: [{ role: 'user', content: 'hi' }] },
      read: 'json' as const,
    });
    expect(out).toEqual({ ok: false, error: expect.stringMatching(/TypeError: Failed to fetch/) });
    // Chromium says why on the page's console.
    expect(browser.consoleErrors.join('\n')).toMatch(/blocked by CORS policy/);
    await page.close();
  });
});
