import { DomainError } from '../../../common/errors/domain-error';
import { StateCorruptError, StateStoreUnavailableError } from '../../state.errors';
import { RedisUnsentError } from './redis-wire';

/** Server replies that mean "Redis cannot serve now", as opposed to a bug in our commands. */
const TRANSIENT_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|CLUSTERDOWN|TRYAGAIN|NOREPLICAS|MISCONF|NOSCRIPT)\b/;

/**
 * Maps what the wire (redis-wire.ts) throws to the contract's errors: a key of the wrong type is
 * corrupt state; connection, timeout and not-connected errors mean unavailable (a command never
 * written, RedisUnsentError, certainly did not run: `unsent`). Other server replies, and our own
 * bugs, stay as they are (a 500, not a retryable 503).
 */
export function toStateError(err: unknown, key: string): unknown {
  if (err instanceof DomainError || err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return err;
  const e = err as { name?: string; message?: string };
  const message = e?.message ?? String(err);
  if (e?.name === 'ReplyError') {
    if (message.startsWith('WRONGTYPE')) return new StateCorruptError(key, err);
    if (!TRANSIENT_REPLIES.test(message)) return err;
  }
  return new StateStoreUnavailableError(`Redis is unavailable: ${message}`, err, err instanceof RedisUnsentError);
}

/** Runs a MULTI/pipeline result through the same mapping: the wire reports per-command errors inline. */
export function resultsOf(results: [Error | null, unknown][] | null, key: string): unknown[] {
  if (!results) throw new StateStoreUnavailableError('Redis transaction was aborted');
  for (const [err] of results) if (err) throw toStateError(err, key);
  return results.map(([, value]) => value);
}
