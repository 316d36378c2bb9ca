import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { AGENTS, ENV_CONFIG, LOGGER } from '../../app.tokens';
import { ShutdownStateService } from '../../common/shutdown/shutdown-state.service';
import type { EnvConfig } from '../../config/env.config';
import { LeaseEntry } from '../../state/state-store';
import { recoverLapsed } from '../lifecycle/admit';
import { RequestRunnerService } from './request-runner.service';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';
import { WebhookOutboxService } from '../webhooks/webhook-outbox.service';
import { leaseActive } from '../lifecycle/lease';
import { expirePause, pauseDue } from '../lifecycle/cancel';

/** Tasks one pass takes at most from the lease index (each: a read, and at most one write). */
export const LEASE_SWEEP_BATCH = 16;
/** The pause before the next page when a pass left more lapsed leases behind (a backlog). */
const BACKLOG_PAUSE_MS = 100;

/**
 * Closes the leases of processes that died (docs/api.md, "Leases and clocks"), so their requests
 * end and the follow-ons queued behind them run without anyone touching the task. Every
 * `TA_LEASE_SWEEP_MS` (jittered to 75–100 % of it, so replicas' passes spread out) a pass takes
 * the next page of at most LEASE_SWEEP_BATCH tasks whose lease lapsed (StateStore.listLapsedLeases,
 * across tenants) and recovers each through the task writer with the same transition a follow-on
 * or a watcher applies (`recoverLapsed`): the dead request is stored Failed `abandoned`, and a
 * waiting follow-on takes the lease and runs here. Each replica sweeps; the compare-and-set lets
 * exactly one of them close a request, the others find nothing left to do. A pass that leaves more
 * behind is followed by the next page after BACKLOG_PAUSE_MS; the cursor goes round the index, so
 * tasks this replica leaves (an agent it does not serve) hold nobody else up.
 *
 * The index also lists a paused task whose approval TTL ran out (expired here, as a read of it
 * would: src/tasks/lifecycle/cancel.ts) and a task whose webhook delivery is due (its claim lapsed: the replica that
 * committed it died, or it waits for a retry): the pass hands those to the outbox
 * (src/tasks/webhooks/webhook-outbox.service.ts), which claims and sends them.
 *
 * A store error ends the pass (logged); the next pass tries again. A draining replica takes
 * nothing over. The timer never keeps the process alive and stops when the app closes (or when
 * a config reload retires this app: src/reload/agent-generations.ts).
 */
@Injectable()
export class LeaseSweeperService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly intervalMs: number;
  /** The v3 agents this app serves, by `name:version` (a task names its agent so). */
  private readonly agents: Map<string, AgentDefinition>;
  private timer?: NodeJS.Timeout;
  private cursor?: string;
  private stopped = false;

  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly runner: RequestRunnerService,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(AGENTS) agents: AgentDefinition[],
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly outbox: WebhookOutboxService,
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {
    this.intervalMs = env.state.leaseSweepMs;
    this.agents = new Map(agents.filter((a) => a.module === 'v3').map((a) => [a.source, a]));
  }

  onApplicationBootstrap(): void {
    if (this.intervalMs > 0 && this.agents.size > 0) this.schedule(this.jittered());
  }

  onModuleDestroy(): void {
    this.stop();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One pass (exposed for tests): the next page of lapsed leases, each recovered. */
  async sweep(): Promise<{ listed: number; more: boolean }> {
    const page = await this.reader.lapsedLeases({ limit: LEASE_SWEEP_BATCH, cursor: this.cursor });
    this.cursor = page.nextCursor;
    await Promise.all(page.items.map((entry) => this.recover(entry)));
    return { listed: page.items.length, more: page.nextCursor !== undefined };
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pass(), delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    let more = false;
    if (!this.shutdown?.draining) {
      try {
        ({ more } = await this.sweep());
      } catch (err) {
        if (!this.stopped) this.logger.warn({ err }, 'lease sweep failed; trying again on the next pass');
      }
    }
    this.schedule(more ? BACKLOG_PAUSE_MS : this.jittered());
  }

  private jittered(): number {
    return Math.round(this.intervalMs * (0.75 + Math.random() * 0.25));
  }

  /** Recovers one task whose lease lapsed, if this app serves its agent (else its replicas will). */
  private async recover(entry: LeaseEntry): Promise<void> {
    const ids = { task_id: entry.taskId };
    try {
      const task = await this.reader.current(entry);
      const agent = task && this.agents.get(task.agent);
      if (!task || !agent || this.stopped || this.shutdown?.draining) return;
      const access = { tenantId: entry.tenantId, taskId: entry.taskId, agentSource: agent.source };
      // A pause past its approval TTL, with nobody reading the task: expired now (its events, its archive record).
      if (pauseDue(task, this.writer.now())) {
        await this.writer.update(access, expirePause(this.writer.timing));
        this.logger.info({ ...ids }, 'lease sweep: expired a pause past its approval TTL');
        return;
      }
      // Listed for its webhook deliveries (wakeAt), or for them as well: sent from here.
      if (this.outbox.enabled) await this.outbox.sendDue(task);
      if (!task.lease || leaseActive(task, this.writer.now())) return;
      const { result } = await this.writer.update(access, recoverLapsed(this.writer.timing));
      if (result.kind === 'none') return;
      const next = result.kind === 'run' ? result.run.request.requestId : null;
      this.logger.info({ ...ids, lapsed_request_id: task.lease.requestId, next_request_id: next }, 'lease sweep: recovered a task from a lapsed lease');
      if (result.kind === 'run') this.runner.runInBackground(agent, result.run);
    } catch (err) {
      if (!this.stopped) this.logger.warn({ err, ...ids }, 'lease sweep could not recover a task; trying again on the next pass');
    }
  }
}
