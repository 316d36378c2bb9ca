import type { BaseEvent } from '@ag-ui/core';
import type { EventEncoder } from '@ag-ui/encoder';
import type { Response } from 'express';
import { AG_UI_PROTO_MEDIA_TYPE, prefersProtobuf } from './event-encoding';

/**
 * One AG-UI event stream over an Express response, encoded by the official `@ag-ui/encoder`:
 * server-sent events, or AG-UI protobuf when the `Accept` header prefers it by q-value
 * (event-encoding.ts; not the encoder's negotiation, which takes `*\/*` for protobuf). Owns the 200
 * headers, keepalive comments in the silences (SSE only: protobuf frames have no comment) and the
 * signal that fires when the client goes away.
 */
export class AgUiStream {
  private readonly encoder: EventEncoder;
  private readonly abortController = new AbortController();
  private keepalive?: NodeJS.Timeout;
  private ended = false;

  constructor(
    private readonly res: Response,
    accept: string | undefined,
    private readonly keepaliveMs: number,
  ) {
    // Loaded on the first AG-UI run, not at boot: the encoder brings protobuf (~120 modules).
    const { EventEncoder } = require('@ag-ui/encoder') as typeof import('@ag-ui/encoder');
    this.encoder = new EventEncoder(prefersProtobuf(accept) ? { accept: AG_UI_PROTO_MEDIA_TYPE } : {});
    res.on('close', () => {
      this.stopKeepalive();
      if (!this.ended) this.abortController.abort(new Error('client disconnected'));
      this.ended = true;
    });
  }

  get signal(): AbortSignal {
    return this.abortController.signal;
  }

  get isSse(): boolean {
    return this.encoder.getContentType().startsWith('text/event-stream');
  }

  send(event: BaseEvent): void {
    if (this.ended) return;
    if (!this.res.headersSent) this.open();
    this.res.write(this.encoder.encodeBinary({ timestamp: Date.now(), ...event }));
    this.restartKeepalive();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopKeepalive();
    if (!this.res.headersSent) this.open();
    this.res.end();
  }

  private open(): void {
    this.res.status(200);
    this.res.setHeader('Content-Type', this.encoder.getContentType());
    this.res.setHeader('Cache-Control', 'no-cache');
    this.res.setHeader('Connection', 'keep-alive');
    this.res.setHeader('X-Accel-Buffering', 'no');
    this.res.setHeader('X-Content-Type-Options', 'nosniff');
    this.res.flushHeaders();
  }

  private restartKeepalive(): void {
    this.stopKeepalive();
    if (this.keepaliveMs <= 0 || !this.isSse) return;
    this.keepalive = setInterval(() => {
      if (!this.ended) this.res.write(': keepalive\n\n');
    }, this.keepaliveMs);
    this.keepalive.unref();
  }

  private stopKeepalive(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
  }
}
