import { MAX_EVENT_BYTES, SseDataParser, SseEventTooLongError } from './sse-data.parser';

describe('SseDataParser', () => {
  it('returns the data of the events each chunk completes, however the text is split', () => {
    const p = new SseDataParser();
    expect(p.push('data: one\n\n: a comment\nevent: x\nid: 7\nda')).toEqual(['one']);
    expect(p.push('ta: tw')).toEqual([]);
    expect(p.push('o\r\n\r\ndata:three\ndata: lines\n\ndata: 4\n\n')).toEqual(['two', 'three\nlines', '4']);
    expect(p.done).toBe(false);
  });

  it('stops at [DONE]: nothing after it, even in the same chunk', () => {
    const p = new SseDataParser();
    expect(p.push('data: {"a":1}\n\ndata: [DONE]\n\ndata: after\n\n')).toEqual(['{"a":1}']);
    expect(p.done).toBe(true);
    expect(p.push('data: more\n\n')).toEqual([]);
    expect(p.end()).toBeUndefined();
  });

  it('end(): an event without its blank line is delivered, a line without its newline is not', () => {
    const p = new SseDataParser();
    expect(p.push('data: last\n')).toEqual([]);
    expect(p.end()).toBe('last');
    const q = new SseDataParser();
    expect(q.push('data: cut')).toEqual([]);
    expect(q.end()).toBeUndefined();
  });

  it('refuses a line or an event longer than the limit', () => {
    const long = 'x'.repeat(MAX_EVENT_BYTES / 2 + 1);
    const line = new SseDataParser();
    line.push(long);
    expect(() => line.push(long)).toThrow(SseEventTooLongError);
    const event = new SseDataParser();
    event.push(`data: ${long}\n`);
    expect(() => event.push(`data: ${long}\n`)).toThrow(/An event exceeded/);
  });
});
