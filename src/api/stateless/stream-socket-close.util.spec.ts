import { CloseCode, closeCodeFor, closeReason } from './stream-socket-close.util';

describe('closeCodeFor', () => {
  it.each([
    [422, CloseCode.INVALID_PAYLOAD],
    [401, CloseCode.POLICY_VIOLATION],
    [408, CloseCode.POLICY_VIOLATION],
    [415, CloseCode.INVALID_PAYLOAD],
    [413, CloseCode.MESSAGE_TOO_BIG],
    [429, CloseCode.TRY_AGAIN_LATER],
    [503, CloseCode.TRY_AGAIN_LATER],
    [502, CloseCode.INTERNAL_ERROR],
    [504, CloseCode.INTERNAL_ERROR],
    [500, CloseCode.INTERNAL_ERROR],
  ])('status %d closes with %d', (status, code) => {
    expect(closeCodeFor(status)).toBe(code);
  });
});

describe('closeReason', () => {
  it('keeps a reason that fits', () => {
    expect(closeReason('VALIDATION_FAILED: chat_history.0.role: bad')).toBe('VALIDATION_FAILED: chat_history.0.role: bad');
    const exact = 'x'.repeat(123);
    expect(closeReason(exact)).toBe(exact);
  });

  it('cuts a long reason to 123 bytes, ending with an ellipsis', () => {
    const cut = closeReason('y'.repeat(500));
    expect(Buffer.byteLength(cut)).toBe(123);
    expect(cut.endsWith('…')).toBe(true);
  });

  it('never splits a multi-byte character', () => {
    const cut = closeReason('é'.repeat(100)); // 200 bytes
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(123);
    expect(cut).toBe(`${'é'.repeat(60)}…`);
    expect(Buffer.from(cut).toString('utf8')).toBe(cut);
  });
});
