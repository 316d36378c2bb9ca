import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../state/state.entities';
import { checkCursor, invalidCursor } from './views/cursor-check';
import { taskSummaryView } from './views/task-view';
import { TaskReaderService } from './writer/task-reader.service';

/** Sessions of the owner read per `GET /sessions` (the newest activity among them is listed first). */
export const MAX_SESSIONS_SCANNED = 1000;
/** Tasks of one session read per listing (its count and last activity are over these). */
export const MAX_TASKS_PER_SESSION_SCANNED = 1000;
/** Store pages read for one page of `GET /sessions/{id}` (a page is then shorter, with a cursor). */
const MAX_SESSION_READS = 20;
const STORE_PAGE = 100;
/** Sessions summarised at once. */
const CONCURRENCY = 8;
/** Length of a session's title: the first user message's opening words. */
export const TITLE_MAX_CHARS = 60;

export interface SessionSummary {
  session_id: string;
  task_count: number;
  created_at: string;
  last_activity_at: string;
  title: string | null;
}

/**
 * The caller's sessions with this agent (`GET /sessions`) and the caller's tasks of this agent in
 * one session (`GET /sessions/{id}`). A session has no record of its own (state.entities.ts): the
 * store lists the owner's session ids (any agent), and each is summarised from its tasks of this
 * agent; sessions holding none are skipped. Bounded: MAX_SESSIONS_SCANNED sessions of
 * MAX_TASKS_PER_SESSION_SCANNED tasks each per call.
 */
@Injectable()
export class SessionListService {
  constructor(private readonly reader: TaskReaderService) {}

  /** Newest activity first; the cursor is the (activity, session id) the last page ended at. */
  async listSessions(agent: AgentDefinition, principal: Principal, limit: number, cursor?: string) {
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const ids = await this.ownerSessions(principal);
    const summaries: (SessionSummary & { first: TaskRecord })[] = [];
    for (let i = 0; i < ids.length; i += CONCURRENCY) {
      const chunk = await Promise.all(ids.slice(i, i + CONCURRENCY).map((id) => this.summarise(agent, principal, id)));
      for (const s of chunk) if (s) summaries.push(s);
    }
    summaries.sort(newestFirst);
    const rest = after ? summaries.filter((s) => newestFirst(s, { last_activity_at: after[0], session_id: after[1] }) > 0) : summaries;
    const page = rest.slice(0, limit);
    const sessions = await Promise.all(page.map(async ({ first, ...s }) => ({ ...s, title: await this.title(first) })));
    const last = page[page.length - 1];
    const next = rest.length > limit ? encodeCursor([last.last_activity_at, last.session_id]) : null;
    return { sessions, next_cursor: next };
  }

  /** The caller's tasks of this agent in the session, oldest first: pages are filled after filtering. */
  async getSession(agent: AgentDefinition, principal: Principal, sessionId: string, limit: number, cursor?: string) {
    if (cursor) checkCursor(cursor);
    const tasks: TaskRecord[] = [];
    let next = cursor;
    for (let reads = 0; tasks.length < limit && reads < MAX_SESSION_READS; reads++) {
      // Never more than the page still needs: the store's cursor then points just after the last task taken.
      const page = await this.reader.sessionTasks(principal, sessionId, { limit: limit - tasks.length, cursor: next });
      tasks.push(...page.items.filter((t) => t.agent === agent.source));
      next = page.nextCursor;
      if (!next) break;
    }
    if (!tasks.length && !cursor && !next) throw new DomainError(ErrorCode.SESSION_NOT_FOUND, `No session ${sessionId}`);
    return { session_id: sessionId, tasks: tasks.map(taskSummaryView), next_cursor: next ?? null };
  }

  private async ownerSessions(principal: Principal): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.reader.ownerSessions(principal, { limit: STORE_PAGE, cursor });
      ids.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor && ids.length < MAX_SESSIONS_SCANNED);
    return [...new Set(ids)].slice(0, MAX_SESSIONS_SCANNED);
  }

  private async summarise(agent: AgentDefinition, principal: Principal, sessionId: string) {
    const tasks: TaskRecord[] = [];
    let cursor: string | undefined;
    let read = 0;
    do {
      const page = await this.reader.sessionTasks(principal, sessionId, { limit: STORE_PAGE, cursor });
      read += page.items.length;
      tasks.push(...page.items.filter((t) => t.agent === agent.source));
      cursor = page.nextCursor;
    } while (cursor && read < MAX_TASKS_PER_SESSION_SCANNED);
    if (!tasks.length) return undefined;
    const first = tasks.reduce((a, b) => (b.createdAt < a.createdAt ? b : a));
    return {
      session_id: sessionId,
      task_count: tasks.length,
      created_at: first.createdAt,
      last_activity_at: tasks.reduce((max, t) => (t.updatedAt > max ? t.updatedAt : max), tasks[0].updatedAt),
      title: null,
      first,
    };
  }

  /** The opening words of the session's first user message (its oldest task's first request). */
  private async title(task: TaskRecord): Promise<string | null> {
    const requests = await this.reader.requests(task);
    return titleOf(requests[0]);
  }
}

export function titleOf(request: RequestRecord | undefined): string | null {
  const user = request?.messages.find((m) => m.role === 'user');
  if (!user || user.role !== 'user') return null;
  const text = user.items
    .filter((i) => i.content_type === 'text')
    .map((i) => i.content)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!text) return null;
  if (text.length <= TITLE_MAX_CHARS) return text;
  const cut = text.slice(0, TITLE_MAX_CHARS + 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut.slice(0, TITLE_MAX_CHARS)).trimEnd()}…`;
}

function newestFirst(a: Pick<SessionSummary, 'last_activity_at' | 'session_id'>, b: Pick<SessionSummary, 'last_activity_at' | 'session_id'>): number {
  if (a.last_activity_at !== b.last_activity_at) return a.last_activity_at > b.last_activity_at ? -1 : 1;
  return a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0;
}

function encodeCursor(position: [string, string]): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

function decodeCursor(cursor: string): [string, string] {
  try {
    const value: unknown = JSON.parse(checkCursor(cursor));
    if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'string')) return value as [string, string];
  } catch {
    // reported below
  }
  throw invalidCursor();
}
