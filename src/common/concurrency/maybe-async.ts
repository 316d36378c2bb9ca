/** A value now, or a promise of it: what a step returns when it can often answer without I/O. */
export type MaybeAsync<T> = T | Promise<T>;

/**
 * `next(value)` at once when `value` is no promise, else once it resolves; `failed` handles the
 * promise's rejection (a step that answered at once threw, if at all, before this). A chain of
 * such steps answers synchronously when every step can: no promise, no microtask (the guard's
 * authentication of a token it knows, issue 27).
 */
export function thenOrNow<T, R>(value: MaybeAsync<T>, next: (value: T) => R, failed: (err: unknown) => never): MaybeAsync<R> {
  if (!(value instanceof Promise)) return next(value);
  return value.then(next, failed);
}
