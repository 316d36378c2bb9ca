/** Helpers of the fault tests (a store stopped, stalled or cut): bounded waits and timed failures. */

/** Retries `fn` (an assertion or a call) every 50 ms until it resolves; past `timeoutMs`, its last error. */
export async function waitFor(fn: () => Promise<unknown>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fn();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Runs the calls in parallel (each is bounded on its own) and times each; a call that resolves is an error naming `down` (what should have failed it). */
export async function outcomesOf(calls: Record<string, () => Promise<unknown>>, down: string) {
  return Promise.all(
    Object.entries(calls).map(async ([name, call]) => {
      const started = Date.now();
      const error = await call().then(
        () => new Error(`${name} resolved with ${down} down`),
        (e: unknown) => e,
      );
      return { name, error, ms: Date.now() - started };
    }),
  );
}
