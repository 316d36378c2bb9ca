import { NestApplicationOptions, StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express/adapters/express-adapter.js';
import type { Express, Response } from 'express';
import { expressHttpServer } from './express-server';

/** What Express's `res.json` sends as the type of a JSON answer (`mime.contentType('application/json')`). */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Nest's Express adapter, with the answer every JSON route gives (a plain object, 2xx-5xx, no type
 * set yet) written at once: the JSON, its type and length, `res.end`. Express's `res.json` writes
 * the same bytes and headers, but on the way it looks the type up in mime-db, then parses and
 * formats it again to add the charset (`res.send`, setCharset), and reads five app settings: ~5 KB
 * of a turn's allocations and a few % of its CPU, on every answer (issue 27).
 *
 * Anything else goes to Nest's own `reply` (and so to Express): a body that is not a plain object
 * (a string, a Buffer, a StreamableFile, an Error), a type already set (problem+json, text), a
 * status without a body (204, 205, 304), a HEAD request, a response with an ETag or Last-Modified
 * header (Express answers 304 to a fresh request), and any app that configured Express's JSON
 * (`json replacer`, `json spaces`, `json escape`) or ETags (`etag`, off in app.factory.ts).
 */
export class JsonReplyExpressAdapter extends ExpressAdapter {
  /**
   * Also: the HTTP server's requests and responses are made with the app's prototypes
   * (express-server.ts says why). With options that need Nest's own server (HTTPS, the 503 while
   * closing, tracked connections: none is used here), Nest makes it.
   */
  override initHttpServer(options: NestApplicationOptions): void {
    if (options?.httpsOptions || options?.return503OnClosing || options?.forceCloseConnections) return super.initHttpServer(options);
    this.httpServer = expressHttpServer(this.getInstance<Express>());
  }

  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    if (!this.writesAtOnce(response, body, statusCode)) return super.reply(response, body, statusCode);
    const json = JSON.stringify(body);
    // `toJSON` may give undefined: Express then sends no body; so does Nest's path.
    if (json === undefined) return super.reply(response, body, statusCode);
    if (statusCode !== undefined) response.statusCode = statusCode;
    response.setHeader('Content-Type', JSON_TYPE);
    // As Express: a short string's byte length is counted, a long one is encoded once and sent as bytes.
    if (json.length < 1000) {
      response.setHeader('Content-Length', Buffer.byteLength(json));
      response.end(json, 'utf8');
    } else {
      const bytes = Buffer.from(json);
      response.setHeader('Content-Length', bytes.length);
      response.end(bytes);
    }
    return response;
  }

  private writesAtOnce(response: Response, body: unknown, statusCode: number | undefined): boolean {
    if (body === null || typeof body !== 'object' || body instanceof StreamableFile || body instanceof Error || ArrayBuffer.isView(body)) return false;
    const status = statusCode ?? response.statusCode;
    if (!Number.isInteger(status) || status < 200 || status > 599 || status === 204 || status === 205 || status === 304) return false;
    if (response.req.method === 'HEAD') return false;
    if (response.getHeader('Content-Type') !== undefined || response.getHeader('Transfer-Encoding') !== undefined) return false;
    if (response.getHeader('ETag') !== undefined || response.getHeader('Last-Modified') !== undefined) return false;
    const app = response.app;
    return (
      typeof app.get('etag fn') !== 'function' && app.get('json replacer') === undefined && app.get('json spaces') === undefined && !app.get('json escape')
    );
  }
}
