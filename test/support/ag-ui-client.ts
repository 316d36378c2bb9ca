import { HttpAgent } from '@ag-ui/client';
import type { BaseEvent, Message, ResumeEntry, Tool } from '@ag-ui/core';
import { randomUUID } from 'node:crypto';
import { realmSafeFetch } from './fake-openai.server';

export interface AgUiRun {
  events: BaseEvent[];
  /** The event types in order, a run of TEXT_MESSAGE_CONTENT counted once (how a model splits its text is its own). */
  types: string[];
  /** What `runAgent` threw (an HTTP error or a protocol violation), if anything. */
  error?: Error & { status?: number; payload?: unknown };
}

/** The official `@ag-ui/client` HttpAgent on an agent's `/ag-ui` route, as a browser would use it. */
export function agUiAgent(url: string, options: { threadId?: string; headers?: Record<string, string>; messages?: Message[] } = {}): HttpAgent {
  return new HttpAgent({ url, threadId: options.threadId, headers: options.headers, initialMessages: options.messages, fetch: realmSafeFetch });
}

/** One run: adds `say` as a user message (if given), runs, and records every event the client applied. */
export async function runOnce(
  agent: HttpAgent,
  o: { say?: string; runId?: string; resume?: ResumeEntry[]; tools?: Tool[]; forwardedProps?: unknown } = {},
): Promise<AgUiRun> {
  if (o.say !== undefined) agent.addMessage({ id: randomUUID(), role: 'user', content: o.say });
  const events: BaseEvent[] = [];
  let error: AgUiRun['error'];
  try {
    await agent.runAgent(
      { runId: o.runId, resume: o.resume, tools: o.tools, forwardedProps: o.forwardedProps },
      { onEvent: ({ event }) => void events.push(event) },
    );
  } catch (err) {
    error = err as AgUiRun['error'];
  }
  const types = events.map((e) => e.type as string).filter((type, i, all) => !(type === 'TEXT_MESSAGE_CONTENT' && all[i - 1] === type));
  return { events, types, error };
}

/** The events of one type. */
export function ofType<T = Record<string, unknown>>(run: AgUiRun, type: string): T[] {
  return run.events.filter((e) => e.type === type) as T[];
}
