import type { RequestRecord, StoredMessage } from '../../state/state.entities';
import { requestRecord } from '../lifecycle/lifecycle.fixtures';
import { conversationOf, summaryOf } from './task-history';

const at = '2026-01-01T00:00:00.000Z';
const u = (text: string): StoredMessage => ({ id: `u-${text}`, role: 'user', items: [{ content_type: 'text', content: text }], created_at: at });
const a = (text: string): StoredMessage => ({ id: `a-${text}`, role: 'assistant', content: text, created_at: at });
/** A stored request (frozen, as the in-memory store and the task cache hand them out), completed unless said otherwise. */
const req = (seq: number, extra: Partial<RequestRecord> = {}): RequestRecord =>
  Object.freeze(requestRecord(seq, 'Completed', { messages: [u(`q${seq}`), a(`a${seq}`)], ...extra }));

/** `r` behind a proxy that counts the reads of its properties into `reads`. */
function counted(r: RequestRecord, reads: { n: number }): RequestRecord {
  return new Proxy(r, {
    get(target, key, receiver) {
      reads.n++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

const texts = (s: { replay: readonly { content?: unknown }[]; replayLength: number }) =>
  s.replay.slice(0, s.replayLength).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

describe("summaryOf (a follow-on's earlier requests, kept per task)", () => {
  it('extends the kept summary by the requests added since, without reading the earlier ones again', () => {
    const reads = { n: 0 };
    const earlier = Array.from({ length: 50 }, (_, i) => counted(req(i), reads));
    const first = summaryOf(earlier, true);
    expect(first.replayLength).toBe(100);
    const readsOfFirst = reads.n;
    expect(readsOfFirst).toBeGreaterThan(0);

    const next = [...earlier, req(50)];
    const second = summaryOf(next, true);
    // The 50 earlier requests were compared by reference only: not one property of them was read.
    expect(reads.n).toBe(readsOfFirst);
    expect(second.replayLength).toBe(102);
    expect(texts(second)).toEqual(texts(summaryOf(next, false)));
    // The first summary still reads as it did: its own first 100 messages.
    expect(texts(first)).toEqual(texts(summaryOf(earlier, false)));
    // The same requests again: the kept summary itself.
    expect(summaryOf(next, true)).toBe(second);
  });

  it('sums up afresh when an earlier request is not the same object (a history read afresh, a task created again)', () => {
    const earlier = [req(0), req(1), req(2)];
    summaryOf(earlier, true);
    const changed = [earlier[0]!, req(1, { messages: [u('other'), a('answer')] }), earlier[2]!, req(3)];
    expect(texts(summaryOf(changed, true))).toEqual(['q0', 'a0', 'other', 'answer', 'q2', 'a2', 'q3', 'a3']);
  });

  it('reads each summary to its own length when another one went on from the same requests', () => {
    const earlier = [req(0), req(1)];
    const kept = summaryOf(earlier, true);
    // Extended by a request that is not frozen: the result is not kept, the kept one stays.
    const open = summaryOf([...earlier, { ...req(7, { messages: [u('open'), a('open answer')] }) }], true);
    expect(texts(open)).toEqual(['q0', 'a0', 'q1', 'a1', 'open', 'open answer']);
    expect(texts(kept)).toEqual(['q0', 'a0', 'q1', 'a1']);
    // Extended again from the kept one, by another request: the request not kept is not in it.
    expect(texts(summaryOf([...earlier, req(2)], true))).toEqual(['q0', 'a0', 'q1', 'a1', 'q2', 'a2']);
    expect(texts(open)).toEqual(['q0', 'a0', 'q1', 'a1', 'open', 'open answer']);
  });

  it('keeps nothing for requests that are not frozen (they could change)', () => {
    const reads = { n: 0 };
    const open = (seq: number) => counted({ ...req(seq) }, reads);
    const earlier = [open(0), open(1)];
    summaryOf(earlier, true);
    const before = reads.n;
    summaryOf([...earlier, req(2)], true);
    expect(reads.n).toBeGreaterThan(before);
  });

  it('replays completed requests only, and carries the latest user context and whether an edit is among them', () => {
    const earlier = [
      req(0, { userContext: { team: 'a' } }),
      req(1, { status: 'Failed' }),
      req(2, { userContext: { team: 'b' } }),
      req(3, { status: 'Canceled' }),
    ];
    const s = summaryOf(earlier, true);
    expect(texts(s)).toEqual(['q0', 'a0', 'q2', 'a2']);
    expect(s.userContext).toEqual({ team: 'b' });
    expect(s.edited).toBe(false);
    const edited = summaryOf([...earlier, req(4, { edits: { requestId: 'r2', seq: 2 } })], true);
    expect(edited.edited).toBe(true);
    expect(edited.userContext).toEqual({ team: 'b' });
  });
});

describe('conversationOf', () => {
  it('is the user context, the replayed history, then the current request', () => {
    const earlier = summaryOf([req(0, { userContext: { team: 'a' } })], true);
    const current = req(1, { status: 'Running', messages: [u('now')] });
    const conversation = conversationOf(earlier, current);
    expect(conversation.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'user']);
    expect(JSON.stringify(conversation[0])).toContain('team: a');
    // The current request's own user context wins.
    expect(JSON.stringify(conversationOf(earlier, { ...current, userContext: { team: 'z' } })[0])).toContain('team: z');
  });
});
