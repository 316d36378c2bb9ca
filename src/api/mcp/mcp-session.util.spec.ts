import { sessionElicits, sessionIdFor } from './mcp-session.util';

describe('MCP session ids', () => {
  it.each([
    [{ capabilities: { elicitation: {} } }, true],
    [{ capabilities: { elicitation: { form: {} } } }, true],
    [{ capabilities: { elicitation: { form: {}, url: {} } } }, true],
    [{ capabilities: { elicitation: { url: {} } } }, false],
    [{ capabilities: {} }, false],
    [undefined, false],
  ])('initialize params %j: the session elicits %s', (params, elicits) => {
    const id = sessionIdFor(params);
    expect(id).toMatch(/^[0-9a-f-]{36}(\.elicit)?$/);
    expect(sessionElicits(id)).toBe(elicits);
  });

  it('no session id, no elicitation', () => expect(sessionElicits(undefined)).toBe(false));
});
