/**
 * A turn over AG-UI (`POST /{name}/{version}/ag-ui`) with @ag-ui/client's HttpAgent: threadId is
 * the task id, runId the request id; an interrupt outcome is a pause (interrupt id = pause_id).
 * Loaded only for agents that serve the route (its own chunk).
 */
import { HttpAgent } from '@ag-ui/client';
import { authHeaders } from './auth';
import type { TurnSink } from './conversation';

export async function runAgUi(prefix: string, taskId: string, text: string, messageId: string, sink: TurnSink, signal: AbortSignal): Promise<void> {
  const agent = new HttpAgent({ url: `${prefix}/ag-ui`, headers: authHeaders(), threadId: taskId });
  agent.messages = [{ id: messageId, role: 'user', content: text }];
  const abortController = new AbortController();
  signal.addEventListener('abort', () => abortController.abort(), { once: true });
  let runId: string | undefined;
  const names = new Map<string, string>();
  await agent.runAgent(
    { abortController },
    {
      onEvent: ({ event }) => {
        const e = event as any;
        switch (e.type) {
          case 'RUN_STARTED':
            runId = e.runId;
            sink.ids({ taskId: e.threadId, requestId: e.runId });
            break;
          case 'TEXT_MESSAGE_CONTENT':
            sink.text(runId, e.delta);
            break;
          case 'TOOL_CALL_START':
            names.set(e.toolCallId, e.toolCallName);
            sink.toolCall(runId, e.toolCallId, e.toolCallName, '');
            break;
          case 'TOOL_CALL_ARGS':
            sink.toolArgs(e.toolCallId, e.delta);
            break;
          case 'TOOL_CALL_RESULT':
            sink.toolResult(e.toolCallId, e.content);
            break;
          case 'RUN_ERROR':
            sink.notice(`${e.code ?? 'ERROR'}: ${e.message}`, 'error');
            break;
          case 'RUN_FINISHED': {
            const interrupts = e.outcome?.type === 'interrupt' ? (e.outcome.interrupts ?? []) : [];
            if (interrupts.length) {
              sink.paused({
                requestId: e.runId ?? runId,
                pauseId: interrupts[0].id,
                plan: false,
                expiresAt: interrupts[0].expiresAt,
                calls: interrupts.map((i: any) => ({
                  id: i.toolCallId,
                  name: names.get(i.toolCallId) ?? i.toolCallId,
                  arguments: '',
                  approval_reason: i.reason,
                })),
              });
            }
            break;
          }
        }
      },
    },
  );
}
