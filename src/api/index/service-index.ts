import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../package-root';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { buildOpenApi } from '../docs/openapi.builder';

/** One route of an agent, as listed by `GET /`. */
export interface IndexRoute {
  method: string;
  path: string;
  summary: string;
}

export interface IndexAgent {
  name: string;
  version: string;
  /** The YAML `apiVersion` (`skagents/v1`, `skagents/v2alpha1`, `tealagents/v1alpha1`). */
  api_version: string;
  /** The YAML `kind` (skagents/v1: Chat, Agent or Sequential; read by no other apiVersion), null when absent. */
  kind: string | null;
  /** tealagents/v1alpha1: tasks are stored and followed on by `task_id`. */
  stateful: boolean;
  description: string;
  path: string;
  /** `a2a_card`: the agent's A2A card, when TA_FRONT_DOORS serves A2A (docs/a2a.md). */
  links: { openapi: string; docs: string; redoc: string; health: string; a2a_card?: string };
  routes: IndexRoute[];
}

/** The body of `GET /` (docs/api.md, Service index). */
export interface ServiceIndex {
  service: string;
  version: string;
  /** The web console's path, or null when TA_CONSOLE=false. */
  console: string | null;
  agents: IndexAgent[];
}

export interface ServiceIndexOptions {
  /** Where the web console is served, or null when it is off. */
  consolePath: string | null;
  /** A2A is served (TA_FRONT_DOORS): each agent links its card. */
  a2a?: boolean;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * What this process serves, built once at boot. The routes are the paths of each agent's own
 * OpenAPI document (so a route added there is listed here), plus the WebSocket `/stream` of
 * v1/v2alpha1 agents, which OpenAPI cannot describe.
 */
export function buildServiceIndex(agents: AgentDefinition[], options: ServiceIndexOptions): ServiceIndex {
  return {
    service: 'teal-agent-server',
    version: packageVersion(),
    console: options.consolePath,
    agents: agents.map((a) => ({
      name: a.name,
      version: a.version,
      api_version: a.apiVersion,
      kind: a.module === 'v1' ? a.kind : (a.config.kind ?? null),
      stateful: a.module === 'v3',
      description: a.description,
      path: a.prefix,
      links: {
        openapi: `${a.prefix}/openapi.json`,
        docs: `${a.prefix}/docs`,
        redoc: `${a.prefix}/redoc`,
        health: `${a.prefix}/health`,
        ...(options.a2a ? { a2a_card: `${a.prefix}/.well-known/agent-card.json` } : {}),
      },
      routes: routesOf(a),
    })),
  };
}

function routesOf(agent: AgentDefinition): IndexRoute[] {
  const paths = (buildOpenApi(agent).paths ?? {}) as Record<string, Record<string, { summary?: string }>>;
  const routes: IndexRoute[] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const m of METHODS) if (item[m]) routes.push({ method: m.toUpperCase(), path, summary: item[m].summary ?? '' });
  }
  if (agent.module !== 'v3')
    routes.push({ method: 'GET', path: `${agent.prefix}/stream`, summary: 'WebSocket (deprecated): the input as the first message, then the partial texts' });
  return routes;
}

let version: string | undefined;
function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}

/** No script and nothing from elsewhere: only the inline style below. */
export const SERVICE_INDEX_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The same index as a page, for a browser (`Accept: text/html`). */
export function serviceIndexHtml(index: ServiceIndex): string {
  const link = (href: string, text = href) => `<a href="${esc(href)}">${esc(text)}</a>`;
  const agents = index.agents
    .map(
      (a) => `<section>
<h2>${esc(a.name)} <small>${esc(a.version)}</small></h2>
<p class="meta"><code>${esc(a.api_version)}</code> · ${a.kind ? `${esc(a.kind)} · ` : ''}${a.stateful ? 'stateful (tasks)' : 'stateless'} · ${link(a.path)}</p>
<p>${esc(a.description)}</p>
<p>${link(a.links.docs, 'Swagger UI')} · ${link(a.links.redoc, 'ReDoc')} · ${link(a.links.openapi, 'openapi.json')} · ${link(a.links.health, 'health')}</p>
<table><thead><tr><th>method</th><th>route</th><th></th></tr></thead><tbody>
${a.routes.map((r) => `<tr><td>${esc(r.method)}</td><td><code>${esc(r.path)}</code></td><td>${esc(r.summary)}</td></tr>`).join('\n')}
</tbody></table>
</section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(index.service)}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1b1f23}
h1 small,h2 small{color:#57606a;font-weight:normal}section{border-top:1px solid #d0d7de;margin-top:1.5rem}
.meta{color:#57606a}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.2rem .5rem;border-bottom:1px solid #eaeef2;vertical-align:top}
code{font-size:13px}
</style></head>
<body>
<h1>${esc(index.service)} <small>${esc(index.version)}</small></h1>
<p>${index.agents.length} agent${index.agents.length === 1 ? '' : 's'}${index.console ? ` · ${link(index.console, 'web console')}` : ''} · this index as JSON: <code>curl -H 'Accept: application/json' …/</code></p>
${agents}
</body></html>
`;
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
