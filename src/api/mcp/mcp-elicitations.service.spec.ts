import { elicitationTarget, McpElicitationsService } from './mcp-elicitations.service';

describe('MCP elicitation waiters', () => {
  const alice = { tenantId: 't', ownerId: 'alice' };
  const bob = { tenantId: 't', ownerId: 'bob' };
  const target = { requestId: '7f1c2a9e-0000-4000-8000-000000000001', pauseId: '0f0e0d0c-0000-4000-8000-000000000002' };

  it('an answer reaches the waiting call of the caller who was asked, once; its id names the pause', async () => {
    const waiters = new McpElicitationsService();
    const { id, answer } = waiters.open(alice, target);
    expect(elicitationTarget(id)).toEqual(target);
    expect(waiters.deliver(bob, id, { action: 'accept' })).toBe(false);
    expect(waiters.deliver(alice, id, { action: 'accept' })).toBe(true);
    expect(waiters.deliver(alice, id, { action: 'accept' })).toBe(false);
    await expect(answer).resolves.toEqual({ action: 'accept' });
  });

  it('a closed waiter answers nothing and takes no answer', async () => {
    const waiters = new McpElicitationsService();
    const { id, answer, close } = waiters.open(alice, target);
    close();
    await expect(answer).resolves.toBeUndefined();
    expect(waiters.deliver(alice, id, {})).toBe(false);
  });

  it.each([1, 'x', 'ta-decide.', 'ta-decide.only-one'])('%j is no elicitation of ours', (id) => expect(elicitationTarget(id)).toBeUndefined());
});
