import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { ArchiveEvent } from './archive-event';

/**
 * A task's timeline order (archive-events.ts): by request (`seq`; task-level events after the
 * requests), then the event's causal place in its request (`ord`), then the id. Not by time: times
 * come from more than one clock. One order for the events derived from the live records and the
 * archive's rows, so the two merge.
 */
export type TimelineKey = [seq: number, ord: number, eventId: string];

export function timelineKey(e: Pick<ArchiveEvent, 'seq' | 'ord' | 'eventId'>): TimelineKey {
  return [e.seq, e.ord, e.eventId];
}

export function compareTimeline(a: TimelineKey, b: TimelineKey): number {
  return a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

/** The opaque cursor after `key` (base64url JSON). */
export function encodeTimelineCursor(key: TimelineKey): string {
  return Buffer.from(JSON.stringify(['t', ...key])).toString('base64url');
}

/** The key a timeline cursor stands after; 422 INVALID_CURSOR for anything else. */
export function decodeTimelineCursor(cursor: string): TimelineKey {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 4 && v[0] === 't' && Number.isInteger(v[1]) && Number.isInteger(v[2]) && typeof v[3] === 'string') {
      return [v[1] as number, v[2] as number, v[3]];
    }
  } catch {
    // not JSON: refused below
  }
  throw new DomainError(ErrorCode.INVALID_CURSOR, 'The cursor is not one this timeline issued');
}
