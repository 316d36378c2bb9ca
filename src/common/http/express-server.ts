import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Express } from 'express';

/**
 * The HTTP server for an Express app whose requests and responses are born with the app's
 * prototypes (`app.request`, `app.response`), through node:http's `IncomingMessage` and
 * `ServerResponse` options.
 *
 * Why: Express gives each request and response its app's prototypes with `Object.setPrototypeOf`
 * (application.js, `app.handle`). Changing an object's prototype after it was made is V8's slow
 * path (a new hidden class for the object, ~2.5 % of a v3 turn's profile for the two; issue 27);
 * setting the prototype it already has returns at once. Nothing else changes: the objects are made
 * by Node's own constructors (`Reflect.construct`), are still `instanceof` IncomingMessage and
 * ServerResponse, and a request another app serves (a reloaded config's, src/config-reload) gets
 * that app's prototypes from Express as before.
 */
export function expressHttpServer(app: Express): Server {
  function ExpressRequest(this: unknown, socket: unknown): IncomingMessage {
    return Reflect.construct(IncomingMessage, [socket], ExpressRequest) as IncomingMessage;
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: unknown, req: IncomingMessage, options?: unknown): ServerResponse {
    return Reflect.construct(ServerResponse, [req, options], ExpressResponse) as ServerResponse;
  }
  ExpressResponse.prototype = app.response;
  return createServer(
    { IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage, ServerResponse: ExpressResponse as unknown as typeof ServerResponse },
    app,
  );
}
