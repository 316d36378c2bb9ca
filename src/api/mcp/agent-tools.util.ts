import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { McpCall, McpToolsService } from './mcp-tools.service';

/** Ids the caller may choose (task, session): as the REST routes take them. */
const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * The agent's tools on a per-request McpServer: `send_message` for every agent; `get_task` and
 * `decide` for stateful (v3) agents, whose turns are kept. Arguments are checked by the SDK against
 * these schemas (a bad one is a tool error naming it). `callOf` makes the call's context from the
 * request's abort signal and JSON-RPC id (an elicitation goes out on that request's stream).
 */
export function registerAgentTools(
  server: McpServer,
  agent: AgentDefinition,
  tools: McpToolsService,
  callOf: (signal: AbortSignal, requestId: string | number) => McpCall,
): void {
  const { z } = require('zod') as typeof import('zod');
  const stateful = agent.module === 'v3';
  const about = agent.description ? ` (${agent.description})` : '';
  const taskId = z.string().regex(CLIENT_ID, 'letters, digits, -, _, ., : (1 to 128)');
  server.registerTool(
    'send_message',
    {
      title: `Message ${agent.name}`,
      description: stateful
        ? `Sends a message to the agent ${agent.name} ${agent.version}${about} and returns its answer. Without task_id a new task (conversation) starts; with the task_id of an earlier answer the agent continues that conversation. A tool call that needs approval pauses the task: the result then names the pending calls and the pause_id for decide.`
        : `Sends a message to the agent ${agent.name} ${agent.version}${about} and returns its answer. The agent keeps nothing between calls.`,
      inputSchema: {
        text: z.string().min(1).describe('The message'),
        ...(stateful ? { task_id: taskId.optional().describe('Continue this task (from an earlier result); a new id starts a task under it') } : {}),
        session_id: z.string().regex(CLIENT_ID).optional().describe('Group tasks under a session id of your choosing'),
      },
      annotations: { openWorldHint: true },
    },
    (args, extra) => tools.sendMessage(callOf(extra.signal, extra.requestId), args as { text: string; task_id?: string; session_id?: string }),
  );
  if (!stateful) return;
  server.registerTool(
    'get_task',
    {
      title: 'Read a task',
      description: `The task with every request, its messages, tool calls and any pending approval (as GET ${agent.prefix}/tasks/{task_id}).`,
      inputSchema: { task_id: taskId.describe('The task_id of a send_message result') },
      annotations: { readOnlyHint: true },
    },
    (args, extra) => tools.getTask(callOf(extra.signal, extra.requestId), args),
  );
  server.registerTool(
    'decide',
    {
      title: 'Approve or reject a pause',
      description:
        'Approves or rejects the pending tool calls of a paused task (the task_id and pause_id of a Paused result), then the agent goes on; the result is as send_message answers it.',
      inputSchema: {
        task_id: taskId,
        pause_id: z.string().regex(UUID, 'a pause_id of a Paused result'),
        action: z.enum(['approve', 'reject']),
        reason: z.string().max(2000).optional().describe('Why (kept with the decision)'),
      },
      annotations: { destructiveHint: true, openWorldHint: true },
    },
    (args, extra) => tools.decide(callOf(extra.signal, extra.requestId), { ...args, pause_id: args.pause_id.toLowerCase() }),
  );
}
