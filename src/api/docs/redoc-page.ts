import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The one ReDoc file the page needs: the standalone bundle of the installed `redoc` package. */
export const REDOC_SCRIPT = 'redoc.standalone.js';

let bundle: Buffer | undefined;
/** Read once: it is about 1 MB and never changes while the process runs. */
export function redocBundle(): Buffer {
  bundle ??= readFileSync(join(require.resolve('redoc/package.json'), '..', 'bundles', REDOC_SCRIPT));
  return bundle;
}

/**
 * The page's policy allows nothing from another origin. The bundle itself would fetch the Redocly
 * logo for its sidebar footer from cdn.redoc.ly; the browser refuses it and ReDoc hides the image,
 * so the docs work the same offline or behind an egress firewall. Styles are inline (styled
 * components) and search runs in a worker made from a blob: URL, hence those two allowances.
 */
export const REDOC_CSP = [
  "default-src 'self'",
  "script-src 'self' blob:",
  "worker-src 'self' blob:",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
].join('; ');

/**
 * `GET /{name}/{version}/redoc`, as FastAPI serves it upstream, with local assets only. The bundle
 * initialises itself from the `<redoc spec-url>` element, so the page needs no inline script.
 */
export function redocPage(prefix: string, title: string): string {
  const [p, t] = [escapeHtml(prefix), escapeHtml(title)];
  return `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${t}</title>
<style>body { margin: 0; padding: 0; }</style></head>
<body><redoc spec-url="${p}/openapi.json"></redoc>
<script src="${p}/redoc/${REDOC_SCRIPT}"></script>
</body></html>`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
