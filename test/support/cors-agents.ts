import { ECHO_ASSISTANT } from './v3-agents';

/** The two agents of the CORS tests (over HTTP and in a browser): one stateless, one stateful, on local/echo. */
export const AGENTS = {
  'echo.yaml': `apiVersion: skagents/v2alpha1
kind: Agent
name: Echo
version: 0.1
spec:
  agent:
    name: default
    model: local/echo
`,
  'assistant.yaml': ECHO_ASSISTANT,
};
