import type { Tool } from '@ag-ui/core';
import type { LlmToolSpec } from '../../llm/llm-client.port';
import { invalid } from './new-turn';

/** The tool names model APIs accept (OpenAI's rule). */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `RunAgentInput.tools`: the client-side tools the model may call on this run, as the model sees
 * them. The client runs them: a run whose model calls one finishes with its TOOL_CALL_* events and
 * `outcome.pendingToolCallIds`, and the next run brings the results as `tool` messages.
 */
export function clientToolsOf(tools: Tool[]): LlmToolSpec[] {
  return tools.map((t, i) => {
    if (typeof t?.name !== 'string' || !TOOL_NAME.test(t.name)) throw invalid(`tools[${i}].name`, 'a tool name must be 1 to 64 letters, digits, "_" or "-"');
    const parameters = t.parameters && typeof t.parameters === 'object' ? (t.parameters as Record<string, unknown>) : { type: 'object', properties: {} };
    return { name: t.name, description: typeof t.description === 'string' ? t.description : '', parameters };
  });
}
