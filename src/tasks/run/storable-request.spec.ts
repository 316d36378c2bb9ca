import type { RequestRecord } from '../../state/state.entities';
import { ErrorCode } from '../../common/errors/error-code';
import { assertStorable } from './storable-request';

const record = (text: string): RequestRecord => ({
  requestId: 'r',
  taskId: 't',
  sessionId: 's',
  tenantId: 'x',
  ownerId: 'o',
  seq: 0,
  status: 'Running',
  toolCalls: [],
  messages: [{ id: 'm', role: 'user', items: [{ content_type: 'text', content: text }], created_at: '2026-01-01T00:00:00.000Z' }],
  tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
});

describe('assertStorable', () => {
  it('lets any record through a store without a limit', () => {
    const big = record('x'.repeat(100_000));
    expect(assertStorable(undefined, big)).toBe(big);
  });

  it('measures the stored JSON in bytes (multi-byte characters and escapes count), refusing with PAYLOAD_TOO_LARGE past the limit', () => {
    const size = Buffer.byteLength(JSON.stringify(record('✓"')));
    expect(() => assertStorable(size, record('✓"'))).not.toThrow();
    expect(() => assertStorable(size - 1, record('✓"'))).toThrow(expect.objectContaining({ code: ErrorCode.PAYLOAD_TOO_LARGE }));
  });
});
