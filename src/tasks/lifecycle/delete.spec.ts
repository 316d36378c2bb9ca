import { TaskRecord } from '../../state/state.entities';
import { markDeleting } from './delete';

const NOW = 1_800_000_000_000;

const task = (over: Partial<TaskRecord> = {}): TaskRecord => ({
  taskId: 't',
  sessionId: 's',
  tenantId: 'ten',
  ownerId: 'o',
  agent: 'A:1',
  status: 'Running',
  version: 7,
  requestCount: 3,
  lastEventSeq: 4,
  metadata: { k: 'v' },
  createdAt: 'c',
  updatedAt: 'u',
  ...over,
});

describe('lifecycle: markDeleting', () => {
  it('reads no request and marks the header, dropping the lease, the queued follow-on and a pending cancel', () => {
    const t = markDeleting();
    const before = task({ lease: { requestId: 'r2', expiresAt: NOW + 500 }, queued: 'r3', cancelRequested: 'r2', expiresAt: 'e' });
    expect(t.reads === 'all' ? 'all' : t.reads(before)).toEqual([]);

    const change = t.apply({ task: before, requests: [] }, NOW);

    expect(change).toEqual({
      task: { ...task({ expiresAt: 'e' }), deletingAt: new Date(NOW).toISOString(), updatedAt: new Date(NOW).toISOString() },
      requests: [],
      result: undefined,
    });
  });

  it('applies to a task in any state (deleting is never refused)', () => {
    for (const status of ['Running', 'Paused', 'Completed', 'Failed', 'Canceled'] as const) {
      expect(markDeleting().apply({ task: task({ status }), requests: [] }, NOW)).toHaveProperty('task.deletingAt');
    }
  });
});
