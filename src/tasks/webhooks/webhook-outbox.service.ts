import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { AGENTS, ENV_CONFIG, LOGGER, TELEMETRY } from '../../app.tokens';
import type { EnvConfig } from '../../config/env.config';
import { TaskRecord, WebhookDelivery } from '../../state/state.entities';
import type { Telemetry } from '../../telemetry/telemetry';
import { AttemptOutcome, claimDeliveries, dueDeliveries, isWaiting, settleDelivery } from '../lifecycle/outbox';
import { Change, TaskState } from '../lifecycle/transition';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';
import { KeyedSemaphore } from '../../common/concurrency/keyed-semaphore.util';
import { deliverWebhookAttempt } from './webhook-delivery.client';
import { deliveriesOf, destinationsOf, eventsOf } from './webhook-events';
import { webhookPayload } from './webhook-payload';
import { nextWebhookAttemptAt } from './webhook-retry.policy';

/**
 * How long an attempt's claim keeps its delivery from other replicas (its `dueAt` moves this far
 * ahead): 3 attempts' time (TA_WEBHOOK_TIMEOUT_MS) and a second, so a delivery is sent twice only
 * when its replica died or stalled that long. A new delivery is claimed so by the commit that writes it.
 */
export function deliveryClaimMs(timeoutMs: number): number {
  return 3 * timeoutMs + 1000;
}
/** Attempts under way at once in this process (and at most 4 per receiving origin: KeyedSemaphore). */
const MAX_IN_FLIGHT = 32;
/** Deliveries waiting here for a slot; past it, the lease sweep sends them once their claim lapses. */
const MAX_QUEUED = 10_000;
/** Ids this process planned whose commit it has not seen (a commit that failed leaves them): the oldest go. */
const MAX_PLANNED = 10_000;

const RUNNING = { status: 'Running' } as const;

interface Job {
  tenantId: string;
  taskId: string;
  delivery: WebhookDelivery;
}

/**
 * The webhook outbox (docs/webhooks.md, "Delivery"). Each commit that ends a request, pauses it or
 * lets its pause expire gets, in the same commit, one delivery per event and receiver on its task's
 * header (TaskWriterService.planOutbox): stored exactly when the transition is, so a replica killed
 * right after the commit loses nothing. The replica that committed sends it at once; its `dueAt` is
 * the end of that claim, and the header lists the task in the lease index then (wakeAt), so if the
 * replica died any replica's lease sweep finds it, claims it (a compare-and-set) and sends it.
 *
 * An attempt reads the request, builds the payload, signs it and POSTs it (webhook-delivery.client.ts:
 * the SSRF guard, no redirects, a 10 s deadline); its outcome is one more commit on the task:
 * delivered (kept a while for the task's view), failed (due again per the retry schedule, honouring
 * Retry-After), or dead once TA_WEBHOOK_RETRY_HOURS have passed. At least once, with the same
 * `webhook-id` on every attempt of one event. Nothing of this runs, and a commit carries nothing
 * more, unless an agent this app serves has `spec.webhooks`.
 */
@Injectable()
export class WebhookOutboxService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** The v3 agents with webhooks, by `name:version`. */
  private readonly agents: Map<string, AgentDefinition>;
  private readonly planned = new Set<string>();
  private readonly queue: Job[] = [];
  private inFlight = 0;
  private readonly limiter = new KeyedSemaphore();
  private readonly closed = new AbortController();
  private readonly allowPrivate: boolean;
  private readonly retryHours: number;
  private readonly timeoutMs: number;
  private readonly claimMs: number;

  constructor(
    private readonly writer: TaskWriterService,
    private readonly reader: TaskReaderService,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(AGENTS) agents: AgentDefinition[],
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(TELEMETRY) private readonly telemetry?: Telemetry,
  ) {
    this.agents = new Map(agents.filter((a) => a.module === 'v3' && a.webhooks.length > 0).map((a) => [a.source, a]));
    this.allowPrivate = env.webhooks.allowPrivate;
    this.retryHours = env.webhooks.retryHours;
    this.timeoutMs = env.webhooks.timeoutMs;
    this.claimMs = deliveryClaimMs(this.timeoutMs);
  }

  /** Whether any agent of this app has webhooks (else nothing here runs). */
  get enabled(): boolean {
    return this.agents.size > 0;
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.writer.planOutbox((_tenantId, state, change, now) => this.plan(state, change, now));
    this.writer.onCommit((tenantId, task) => this.committed(tenantId, task));
  }

  onApplicationShutdown(): void {
    this.closed.abort();
    this.queue.length = 0;
  }

  /** The lease sweep's part: a task listed for its due deliveries has them claimed here, then sent. */
  async sendDue(task: TaskRecord): Promise<void> {
    const agent = this.agents.get(task.agent);
    if (!agent || this.closed.signal.aborted || !dueDeliveries(task, this.writer.now()).length) return;
    const access = { tenantId: task.tenantId, taskId: task.taskId, agentSource: agent.source };
    const { result } = await this.writer.update(access, claimDeliveries(undefined, this.claimMs));
    for (const delivery of result) this.enqueue({ tenantId: task.tenantId, taskId: task.taskId, delivery });
  }

  /** The deliveries a change reports: its requests' events, for every receiver that asked for them. */
  private plan(state: TaskState, change: Change<unknown>, now: number): WebhookDelivery[] {
    const agent = this.agents.get(state.task.agent);
    if (!agent || !change.requests.length) return [];
    const out: WebhookDelivery[] = [];
    for (const after of change.requests) {
      // As read; else the lease holder, which is Running (the runner's own writes read no request).
      const before = state.requests.find((r) => r.requestId === after.requestId) ?? (after.requestId === state.task.lease?.requestId ? RUNNING : undefined);
      // A request the transition did not read, and did not create: nothing known to compare with.
      if (!before && after.seq < state.task.requestCount) continue;
      const events = eventsOf(before, after);
      if (events.length) out.push(...deliveriesOf(state.task.taskId, events, destinationsOf(agent.webhooks, after), now, now + this.claimMs));
    }
    for (const d of out) this.remember(d.id);
    return out;
  }

  private remember(id: string): void {
    this.planned.add(id);
    if (this.planned.size > MAX_PLANNED) this.planned.delete(this.planned.values().next().value!);
  }

  /** After a commit of this replica: the deliveries it planned for it are sent now. */
  private committed(tenantId: string, task: TaskRecord): void {
    for (const delivery of task.outbox ?? []) {
      if (this.planned.delete(delivery.id) && isWaiting(delivery)) this.enqueue({ tenantId, taskId: task.taskId, delivery });
    }
  }

  private enqueue(job: Job): void {
    if (this.closed.signal.aborted) return;
    // Left for the lease sweep, which finds it once its claim lapses.
    if (this.queue.length >= MAX_QUEUED) return;
    this.queue.push(job);
    this.drain();
  }

  private drain(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length) {
      const job = this.queue.shift()!;
      this.inFlight++;
      void this.attempt(job)
        .catch((err: unknown) =>
          this.logger.warn({ err, task_id: job.taskId, webhook_id: job.delivery.id }, 'webhook delivery could not be recorded; the sweep retries it'),
        )
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }

  /** One attempt, and its outcome recorded on the task. */
  private async attempt({ tenantId, taskId, delivery }: Job): Promise<void> {
    const task = await this.reader.current({ tenantId, taskId });
    const agent = task && this.agents.get(task.agent);
    if (!task || !agent) return; // the task is gone, and its deliveries with it
    const request = await this.reader.request(task, delivery.requestId);
    const target = agent.webhooks.find((t) => t.secret.env === delivery.secretEnv);
    let outcome: AttemptOutcome;
    if (!request || !target) {
      outcome = { ok: false, error: request ? `no webhook of the agent is signed with ${delivery.secretEnv} any more` : 'the request no longer exists' };
    } else {
      const body = JSON.stringify(webhookPayload(agent, task, request, delivery));
      const result = await deliverWebhookAttempt({
        url: delivery.url,
        secret: target.secret,
        id: delivery.id,
        body,
        allowPrivate: this.allowPrivate,
        timeoutMs: this.timeoutMs,
        limiter: this.limiter,
        signal: this.closed.signal,
      });
      const now = this.writer.now();
      // An address the SSRF guard refuses is not tried again: fix the config, then redeliver.
      const retryAt =
        result.ok || result.refused
          ? undefined
          : nextWebhookAttemptAt(
              { attempt: delivery.attempts + 1, createdAt: delivery.retryFrom ?? delivery.createdAt, now, retryAfterMs: result.retryAfterMs },
              { retryHours: this.retryHours },
            );
      outcome = { ok: result.ok, status: result.status, error: result.error, retryAt };
    }
    if (this.closed.signal.aborted) return; // stopping: the claim lapses and another replica sends it
    const { result: settled } = await this.writer.update({ tenantId, taskId, agentSource: agent.source }, settleDelivery(delivery.id, outcome));
    const kind = outcome.ok ? 'delivered' : settled?.dead ? 'dead' : 'failed';
    const lag = outcome.ok ? Math.max(0, (this.writer.now() - delivery.createdAt) / 1000) : undefined;
    this.telemetry?.recordWebhookAttempt(delivery.event, kind, lag);
    const ids = { task_id: taskId, request_id: delivery.requestId, webhook_id: delivery.id, event: delivery.event, attempt: delivery.attempts + 1 };
    if (kind === 'delivered') this.logger.debug({ ...ids, status: outcome.status }, 'webhook delivered');
    else
      this.logger.warn(
        { ...ids, status: outcome.status, error: outcome.error, next_attempt_at: settled?.dead ? null : outcome.retryAt },
        `webhook delivery ${kind}`,
      );
  }
}
