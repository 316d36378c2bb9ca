import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/**
 * A real headless Chromium for the browser tests (CORS, the web console), driven by playwright-core.
 * It is Debian's `chromium` package, not a Playwright download: the machine may have no internet.
 * CI installs it (.ci/run); a missing binary fails the test with a message that says so.
 */

/** TA_TEST_CHROMIUM overrides the path (another distribution's binary, a local build). */
export const CHROMIUM_PATH = process.env.TA_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Offline, quiet, no sandbox (containers): nothing reaches out to Google's services. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context: BrowserContext;
  /** A new tab; its console errors are collected in `consoleErrors`. */
  newPage: () => Promise<Page>;
  /** `console.error` lines and uncaught page errors of every tab, for assertions and failure messages. */
  consoleErrors: string[];
  /** Closes the browser and removes its profile. */
  close: () => Promise<void>;
}

/** Throws a clear error when the browser is not installed, rather than Playwright's long one. */
export function assertChromiumInstalled(path = CHROMIUM_PATH): void {
  if (!existsSync(path)) {
    throw new Error(
      `Chromium is not installed at ${path}: the browser tests need it. Install Debian's package ` +
        `(sudo apt-get install chromium; .ci/run does) or point TA_TEST_CHROMIUM at a Chromium binary.`,
    );
  }
}

/** Launches headless Chromium with a fresh profile (no cache, no stored preflights, no cookies). */
export async function launchBrowser(options: { timeoutMs?: number } = {}): Promise<TestBrowser> {
  assertChromiumInstalled();
  const userDataDir = mkdtempSync(join(tmpdir(), 'ta-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: options.timeoutMs ?? 30_000,
    });
  } catch (e) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw e;
  }
  const consoleErrors: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    context,
    consoleErrors,
    newPage: () => context.newPage(),
    close: async () => {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface PageServer {
  /** `http://127.0.0.1:PORT` (or `http://localhost:PORT`): an origin of its own. */
  origin: string;
  close: () => Promise<void>;
}

/**
 * A tiny web server on another local port, so a page it serves is on another origin than the app:
 * `GET /` (and any path) answers `html`. `host` picks how the origin is written (`127.0.0.1` or
 * `localhost`, two different origins for the browser).
 */
export async function servePage(html: string, host: '127.0.0.1' | 'localhost' = '127.0.0.1'): Promise<PageServer> {
  const sockets = new Set<Socket>();
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
