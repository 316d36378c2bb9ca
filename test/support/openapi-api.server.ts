import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text as readText } from 'node:stream/consumers';

export interface RecordedApiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization?: string;
  body?: unknown;
}

export interface OpenApiTestApi {
  url: string;
  /** The OpenAPI 3 document describing the API (its `servers` point at `url`). */
  document: Record<string, unknown>;
  requests: RecordedApiRequest[];
  /** The next `n` requests answer 503 (the API is "overloaded"). */
  failNext: (n: number) => void;
  stop: () => Promise<void>;
}

/**
 * A real local HTTP API behind an OpenAPI document, for remote plugins: a small inventory.
 * `GET /items/{id}`, `GET /items?q=`, `POST /items` (JSON body), `GET /whoami` (echoes whether
 * an Authorization header came).
 */
export async function startOpenApiTestApi(): Promise<OpenApiTestApi> {
  const items = new Map<string, { id: string; name: string; stock: number }>([
    ['1', { id: '1', name: 'hammer', stock: 3 }],
    ['2', { id: '2', name: 'saw', stock: 0 }],
  ]);
  const requests: RecordedApiRequest[] = [];
  let failing = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://api');
      const raw = await readText(req);
      const body = raw ? JSON.parse(raw) : undefined;
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        authorization: req.headers.authorization,
        body,
      });
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (failing > 0) {
        failing--;
        return send(503, { error: 'overloaded' });
      }
      const item = /^\/items\/([^/]+)$/.exec(url.pathname);
      if (req.method === 'GET' && item) {
        const found = items.get(decodeURIComponent(item[1]!));
        return found ? send(200, found) : send(404, { error: `no item ${item[1]}` });
      }
      if (req.method === 'GET' && url.pathname === '/items') {
        const q = url.searchParams.get('q') ?? '';
        return send(
          200,
          [...items.values()].filter((i) => i.name.includes(q)),
        );
      }
      if (req.method === 'POST' && url.pathname === '/items') {
        const id = String(items.size + 1);
        const created = { id, name: String(body?.name), stock: Number(body?.stock ?? 0) };
        items.set(id, created);
        return send(201, created);
      }
      if (req.method === 'GET' && url.pathname === '/whoami') return send(200, { authorization: req.headers.authorization ?? null });
      send(404, { error: 'no route' });
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    document: inventoryDocument(url),
    requests,
    failNext: (n) => void (failing = n),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes the document and a remote plugin catalog naming it; returns the catalog's path. */
export function writeRemoteCatalog(plugins: { plugin_name: string; document: unknown; server_url?: string; forward_token?: boolean }[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-remote-'));
  const lines = ['remote_plugins:'];
  for (const p of plugins) {
    writeFileSync(join(dir, `${p.plugin_name}.json`), JSON.stringify(p.document));
    lines.push(`  - plugin_name: ${p.plugin_name}`, `    openapi_json_path: ./${p.plugin_name}.json`);
    if (p.server_url) lines.push(`    server_url: ${p.server_url}`);
    if (p.forward_token) lines.push('    forward_token: true');
  }
  const catalog = join(dir, 'remote-plugin-catalog.yaml');
  writeFileSync(catalog, lines.join('\n') + '\n');
  return catalog;
}

function inventoryDocument(url: string): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: { title: 'Inventory', version: '1.0.0' },
    servers: [{ url }],
    paths: {
      '/items/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Item id' }],
        get: {
          operationId: 'get_item',
          summary: 'One item by id',
          responses: { 200: { description: 'the item', content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
        },
      },
      '/items': {
        get: {
          operationId: 'search_items',
          summary: 'Items whose name contains q',
          parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }],
          responses: { 200: { description: 'items' } },
        },
        post: {
          operationId: 'add_item',
          summary: 'Add an item',
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewItem' } } } },
          responses: { 201: { description: 'created' } },
        },
      },
      '/whoami': { get: { operationId: 'whoami', summary: 'Who is calling', responses: { 200: { description: 'caller' } } } },
    },
    components: {
      schemas: {
        Item: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, stock: { type: 'integer' } } },
        NewItem: {
          type: 'object',
          properties: { name: { type: 'string' }, stock: { type: 'integer', minimum: 0 } },
          required: ['name'],
          additionalProperties: false,
        },
      },
    },
  };
}
