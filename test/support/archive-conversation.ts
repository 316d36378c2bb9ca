import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from 'pg';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { eventsOfTask } from '../../src/archive/archive-events';
import type { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply } from './fake-openai.server';
import { waitFor } from './faults';
import { postJson, request } from './http';
import { writeAgentDir } from './test-app';

/**
 * The audit archive's conversation (issue 23), shared by the archive's store and fault tests: the
 * agent, its plugin, the turns (a plan approved, one rejected, one refined, one left to expire) spread over
 * replicas, the events they leave, and reads of the archive's `events` table and of the live store.
 */
export const ARCHIVE_PLUGIN = `
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'read', description: 'Reads a note', parameters: id, risk: 'read_only', handler: ({ id }) => 'note ' + id },
  { name: 'edit', description: 'Edits a note', parameters: id, risk: 'write_low_risk', handler: ({ id }) => 'edited ' + id },
  { name: 'wipe', description: 'Deletes a note', parameters: id, handler: ({ id }) => { throw new Error('cannot wipe ' + id); } },
] }];
`;
/** Seconds a plan waits for its decision: long enough for a decision through DynamoDB Local on a busy machine, short for the one left to expire. */
export const APPROVAL_TTL_S = 4;
export const ARCHIVE_AGENT = `
apiVersion: tealagents/v1alpha1
name: Planner
version: 1
description: Archive e2e
spec:
  governance:
    autonomy_level: L1
    approval_ttl_seconds: ${APPROVAL_TTL_S}
    on_paused: refine
  agent:
    name: default
    model: gpt-test
    system_prompt: Plan first.
    plugins: [Notes]
`;

/** A fresh agent directory: the Planner and its Notes plugin. */
export function archiveAgentDir(): string {
  const dir = writeAgentDir({ 'planner.yaml': ARCHIVE_AGENT });
  writeFileSync(join(dir, 'custom_plugins.js'), ARCHIVE_PLUGIN);
  return dir;
}

export const toolCall = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

/** The events of each request of the conversation below, in timeline order. */
export const CONVERSATION_REQUESTS = [
  [
    ...['request_accepted', 'model_call', 'plan_proposed', 'decision'],
    ...['tool_call_started', 'tool_call_started', 'tool_call_started', 'tool_call_completed', 'tool_call_completed', 'tool_call_failed'],
    ...['model_call', 'request_completed'],
  ],
  ['request_accepted', 'model_call', 'plan_proposed', 'decision', 'request_canceled'],
  [
    ...['request_accepted', 'model_call', 'plan_proposed', 'plan_refined'],
    ...['model_call', 'tool_call_started', 'tool_call_completed', 'model_call', 'request_completed'],
  ],
  ['request_accepted', 'model_call', 'plan_proposed', 'approval_expired', 'request_canceled'],
];
/** The plans' statuses the conversation leaves, in order. */
export const CONVERSATION_PLANS = ['completed', 'rejected', 'refined', 'expired'];
export const CONVERSATION_EVENTS = CONVERSATION_REQUESTS.flat();

/** The types of a timeline's rows, request by request (in the timeline's order of requests), each request's sorted: what they are, whatever their order within it. */
export function typesByRequest(rows: { request_id: string | null; type: string }[]): string[][] {
  const groups: string[][] = [];
  let last: string | null | undefined;
  for (const r of rows) {
    if (r.request_id !== last || !groups.length) groups.push([]);
    groups.at(-1)!.push(r.type);
    last = r.request_id;
  }
  return groups.map((g) => g.sort());
}

export const say = (base: string, text: string, extra: Record<string, unknown> = {}) =>
  postJson(`${base}/Planner/1`, { items: [{ content_type: 'text', content: text }], ...extra });
export const resume = (base: string, requestId: string, body: unknown) => postJson(`${base}/Planner/1/tealagents/v1alpha1/resume/${requestId}`, body);

/**
 * The conversation, its turns alternating between the replicas at `a` and `b` (base URLs): a plan of
 * three calls approved (read and edit run, wipe fails), a risky call rejected, one refined by a new
 * message while it waits (on_paused: refine: the model plans again and reads instead), another left to expire
 * (APPROVAL_TTL_S; a read after it expires it). Answers the task's id.
 */
export async function planConversation(llm: FakeOpenAi, a: string, b: string): Promise<string> {
  const ok = (res: { status: number; body: { status?: string } }, status: string) => {
    if (res.status !== 200 || res.body.status !== status) throw new Error(`expected 200 ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  };
  llm.script(
    reply.toolCalls([toolCall('a1', 'Notes-read', { id: 'x' }), toolCall('a2', 'Notes-edit', { id: 'x' }), toolCall('a3', 'Notes-wipe', { id: 'x' })]),
    reply.text('done, mostly'),
  );
  const first = await say(a, 'tidy note x');
  ok(first, 'Paused');
  const taskId = first.body.task_id as string;
  ok(await resume(b, first.body.request_id, { action: 'approve' }), 'Completed');

  llm.script(reply.toolCalls([toolCall('b1', 'Notes-wipe', { id: 'y' })]));
  const second = await say(b, 'wipe y', { task_id: taskId });
  ok(second, 'Paused');
  const rejected = await resume(a, second.body.request_id, { action: 'reject', reason: 'keep y' });
  if (rejected.status !== 200) throw new Error(`reject: ${rejected.status} ${JSON.stringify(rejected.body)}`);

  llm.script(reply.toolCalls([toolCall('d1', 'Notes-wipe', { id: 'w' })]), reply.toolCalls([toolCall('d2', 'Notes-read', { id: 'w' })]), reply.text('read w'));
  const fourth = await say(b, 'wipe w', { task_id: taskId });
  ok(fourth, 'Paused');
  const refined = await say(a, 'no, only read w', { task_id: taskId });
  ok(refined, 'Completed');
  if (refined.body.request_id !== fourth.body.request_id) throw new Error('the refined plan ran as a new request');

  llm.script(reply.toolCalls([toolCall('c1', 'Notes-wipe', { id: 'z' })]));
  const third = await say(a, 'wipe z', { task_id: taskId });
  ok(third, 'Paused');
  await new Promise((r) => setTimeout(r, APPROVAL_TTL_S * 1000));
  await waitFor(async () => {
    const read = await request(`${b}/Planner/1/tasks/${taskId}`);
    if (read.body.status !== 'Canceled') throw new Error(`expected the expired pause Canceled, got ${JSON.stringify(read.body.status)}`);
  }, 10_000);
  return taskId;
}

/**
 * The event types of a timeline with each run of tool-call events in one order (started, completed,
 * failed): tools of one plan run side by side, and their starts and ends, stamped to the
 * millisecond, interleave as their timing has it. Everything else keeps its place.
 */
export function settled(types: string[]): string[] {
  const rank = (t: string) => ['tool_call_started', 'tool_call_completed', 'tool_call_failed'].indexOf(t);
  const out: string[] = [];
  let run: string[] = [];
  for (const t of [...types, '']) {
    if (rank(t) >= 0) run.push(t);
    else {
      out.push(...run.sort((x, y) => rank(x) - rank(y)));
      run = [];
      if (t) out.push(t);
    }
  }
  return out;
}

/** Each tool call's start comes before its end in a timeline of events (ids `…/{type}/{tool_call_id}`). */
export function startsBeforeEnds(events: { event_id: string; type: string }[]): void {
  const started = new Set<string>();
  for (const e of events) {
    const id = e.event_id.slice(e.event_id.lastIndexOf('/') + 1);
    if (e.type === 'tool_call_started') started.add(id);
    else if ((e.type === 'tool_call_completed' || e.type === 'tool_call_failed') && !started.has(id)) throw new Error(`${e.event_id} before its start`);
  }
}

export interface ArchivedRow {
  event_id: string;
  type: string;
  request_id: string | null;
  payload: Record<string, unknown>;
  archived_at: Date | null;
}

/** A task's rows in the archive's `events` table, in timeline order (seq, ord, event_id: src/archive/timeline.ts). */
export async function archivedRows(db: Client, schema: string, taskId: string): Promise<ArchivedRow[]> {
  const sql = `SELECT event_id, type, request_id, payload, archived_at FROM ${schema}.events WHERE task_id = $1 ORDER BY seq, ord, event_id`;
  return (await db.query<ArchivedRow>(sql, [taskId])).rows;
}

/** The events the live store's records of a task derive (src/archive/archive-events.ts), as the archiver derives them. */
export async function liveEvents(store: StateStore, taskId: string, tenantId = DEV_TENANT_ID) {
  const task = await store.getTask(tenantId, taskId);
  if (!task) throw new Error(`no live task ${taskId}`);
  return eventsOfTask(task, await store.listRequests(tenantId, taskId), 64 * 1024);
}
