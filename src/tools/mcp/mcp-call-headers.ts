import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Per-call HTTP headers for MCP requests over a shared connection. The SDK sets headers per
 * transport, not per request; the transport's `fetch` reads the headers of the call being made
 * from here instead (the SDK sends a request within its caller's async context). This is how the
 * caller's identity (`user_id_header`, `tenant_id_header`) and token (`forward_token`) reach the MCP server on each
 * call, and never on another user's call.
 */
const current = new AsyncLocalStorage<Record<string, string>>();

export function withCallHeaders<T>(headers: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  return current.run(headers, fn);
}

/** Runs `fn` outside any call (connecting, listing tools): no caller's headers leak into it. */
export function withoutCallHeaders<T>(fn: () => Promise<T>): Promise<T> {
  return current.exit(fn);
}

export function fetchWithCallHeaders(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const extra = current.getStore();
    if (!extra || !Object.keys(extra).length) return base(input, init);
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(extra)) headers.set(k, v);
    return base(input, { ...init, headers });
  };
}
