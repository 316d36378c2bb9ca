import 'reflect-metadata';
import type { Request } from 'express';
import type { AgentDefinition } from './config/agent-definition';
import { AgentOfRequest, agentOfRoute, AgentRoute } from './agent-route.metadata';

describe('agentOfRoute', () => {
  const a = { source: 'A:1' } as AgentDefinition;
  const b = { source: 'B:1' } as AgentDefinition;
  const req = (model?: string) => ({ body: { model } }) as unknown as Request;

  it("is a class's AgentRoute, else what its AgentOfRequest picks from the request, else undefined", () => {
    @AgentRoute(a)
    class Own {}
    @AgentOfRequest((r) => ((r.body as { model?: string }).model === 'B' ? b : undefined))
    class Named {}
    class None {}
    expect(agentOfRoute(Own, req())).toBe(a);
    expect(agentOfRoute(Named, req('B'))).toBe(b);
    expect(agentOfRoute(Named, req('C'))).toBeUndefined();
    expect(agentOfRoute(None, req('B'))).toBeUndefined();
  });

  it("reads a class's metadata once, and asks its picker on every request", () => {
    const pick = jest.fn((r: Request) => ((r.body as { model?: string }).model === 'B' ? b : undefined));
    @AgentOfRequest(pick)
    class Named {}
    const read = jest.spyOn(Reflect, 'getMetadata');
    for (let i = 0; i < 5; i++) expect(agentOfRoute(Named, req('B'))).toBe(b);
    expect(read.mock.calls.length).toBe(2); // AgentRoute and AgentOfRequest, the first time only
    expect(pick).toHaveBeenCalledTimes(5);
    read.mockRestore();
  });
});
