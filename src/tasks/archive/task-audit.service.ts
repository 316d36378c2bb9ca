import { Inject, Injectable, Optional } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ARCHIVE, ENV_CONFIG } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { ArchiveEvent } from '../../archive/archive-event';
import { eventsOfTask } from '../../archive/archive-events';
import type { ArchivePort } from '../../archive/archive.port';
import { PlanView, plansOf } from '../../archive/plans';
import { compareTimeline, decodeTimelineCursor, encodeTimelineCursor, TimelineKey, timelineKey } from '../../archive/timeline';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { TaskReaderService } from '../writer/task-reader.service';

/** The most events a task's plans are folded from (a task with more lists the plans of its first ones). */
const MAX_PLAN_EVENTS = 20_000;

/** An event as the API shows it (`GET …/tasks/{id}/events`, `GET /audit/events`). */
export interface EventView {
  event_id: string;
  type: string;
  at: string;
  tenant_id: string;
  owner_id: string;
  session_id: string;
  task_id: string;
  request_id: string | null;
  agent_name: string;
  agent_version: string;
  seq: number;
  payload: Record<string, unknown>;
  /** When the task left the live store (its deletion); null while it lives. */
  archived_at: string | null;
}

export interface EventPage {
  events: EventView[];
  next_cursor: string | null;
}

/**
 * A task's timeline and plans (issue 23), for its owner and for the tenant's auditors (the app role
 * TA_AUDIT_ROLE), whether the task is live or gone from the live store:
 * - live: the events derived from its records now (so a read right after a turn has that turn)
 *   merged with the archive's rows (which also hold a deleted earlier task of the same id);
 * - deleted (or expired): the archive's rows, when TA_ARCHIVE_URL is set.
 * Another tenant's task, another owner's (for a caller who is no auditor) and another agent's are
 * 404, as everywhere in the v3 API.
 */
@Injectable()
export class TaskAuditService {
  private readonly auditRole: string;
  private readonly maxPayloadBytes: number;

  constructor(
    private readonly reader: TaskReaderService,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Optional() @Inject(ARCHIVE) private readonly archive?: ArchivePort | null,
  ) {
    this.auditRole = env.roles.audit;
    this.maxPayloadBytes = env.archive?.maxPayloadBytes ?? 64 * 1024;
  }

  isAuditor(roles: readonly string[]): boolean {
    return roles.includes(this.auditRole);
  }

  /** One page of the task's timeline, in timeline order (src/archive/timeline.ts). */
  async timeline(
    agent: AgentDefinition,
    principal: Principal,
    roles: readonly string[],
    taskId: string,
    page: { limit: number; cursor?: string },
  ): Promise<EventPage> {
    const after = page.cursor === undefined ? undefined : decodeTimelineCursor(page.cursor);
    const live = await this.readable(agent, principal, roles, taskId);
    const archived = this.archive ? (await this.archive.taskTimeline(principal.tenantId, taskId, { limit: page.limit + 1, after })).items : [];
    const merged = merge(live, archived, after);
    const events = merged.slice(0, page.limit);
    return { events: events.map(eventView), next_cursor: merged.length > page.limit ? encodeTimelineCursor(timelineKey(events.at(-1)!)) : null };
  }

  /** The task's plans (src/archive/plans.ts), from the same events as its timeline: the live records read once, the archive page by page. */
  async plans(agent: AgentDefinition, principal: Principal, roles: readonly string[], taskId: string): Promise<{ plans: PlanView[] }> {
    const live = await this.readable(agent, principal, roles, taskId);
    const archived: ArchiveEvent[] = [];
    for (let after: TimelineKey | undefined; this.archive && archived.length < MAX_PLAN_EVENTS;) {
      const page = await this.archive.taskTimeline(principal.tenantId, taskId, { limit: 1000, after });
      archived.push(...page.items);
      if (!page.nextCursor || !page.items.length) break;
      after = timelineKey(page.items.at(-1)!);
    }
    return { plans: plansOf(merge(live, archived, undefined).slice(0, MAX_PLAN_EVENTS)) };
  }

  /** The live task's events; [] when it is gone but the archive keeps it for this caller; 404 otherwise. */
  private async readable(agent: AgentDefinition, principal: Principal, roles: readonly string[], taskId: string): Promise<ArchiveEvent[]> {
    const live = await this.liveEvents(agent, principal, roles, taskId);
    if (live) return live;
    await this.checkArchived(agent, principal, roles, taskId);
    return [];
  }

  /** The live task's events derived from its records; undefined when it is not live (or not the caller's to read). */
  private async liveEvents(agent: AgentDefinition, principal: Principal, roles: readonly string[], taskId: string): Promise<ArchiveEvent[] | undefined> {
    const access = {
      tenantId: principal.tenantId,
      taskId,
      agentSource: agent.source,
      ...(this.isAuditor(roles) ? {} : { ownerId: principal.ownerId }),
      foreign: 'not-found' as const,
    };
    try {
      const { task, requests } = await this.reader.task(access, 'all');
      return eventsOfTask(task, requests, this.maxPayloadBytes);
    } catch (err) {
      if (err instanceof DomainError && err.code === ErrorCode.TASK_NOT_FOUND) return undefined;
      throw err;
    }
  }

  /** A task gone from the live store: readable when the archive holds it as this agent's, and the caller's (or the caller audits). */
  private async checkArchived(agent: AgentDefinition, principal: Principal, roles: readonly string[], taskId: string): Promise<void> {
    const info = this.archive ? await this.archive.taskInfo(principal.tenantId, taskId) : undefined;
    if (!info || info.agent !== agent.source || (!this.isAuditor(roles) && info.ownerId !== principal.ownerId)) {
      throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${taskId}`);
    }
  }
}

export function eventView(e: ArchiveEvent & { archivedAt?: string }): EventView {
  return {
    event_id: e.eventId,
    type: e.type,
    at: e.at,
    tenant_id: e.tenantId,
    owner_id: e.ownerId,
    session_id: e.sessionId,
    task_id: e.taskId,
    request_id: e.requestId ?? null,
    agent_name: e.agentName,
    agent_version: e.agentVersion,
    seq: e.seq,
    payload: e.payload,
    archived_at: e.archivedAt ?? null,
  };
}

/** The live task's events (after `after`) and the archive's rows merged by id (the archive's row wins: it has archived_at), in timeline order. */
function merge(
  live: ArchiveEvent[],
  archived: (ArchiveEvent & { archivedAt?: string })[],
  after: TimelineKey | undefined,
): (ArchiveEvent & { archivedAt?: string })[] {
  const byId = new Map<string, ArchiveEvent & { archivedAt?: string }>();
  for (const e of live) if (!after || compareTimeline(timelineKey(e), after) > 0) byId.set(e.eventId, e);
  for (const e of archived) byId.set(e.eventId, e);
  return [...byId.values()].sort((a, b) => compareTimeline(timelineKey(a), timelineKey(b)));
}
