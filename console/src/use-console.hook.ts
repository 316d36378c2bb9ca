/**
 * The console's state and actions: boot from the URL, run turns (send, approve, edit and rerun,
 * cancel), and reattach to a running request after a reload. Components only render what this
 * returns; every request to the service starts here or in the hooks it composes.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { AgentInfo, api, ConsoleConfig, getSse, newId, postSse } from './api';
import { msalToken } from './auth';
import { Decision, RUNNING } from './console.types';
import { applyV3Event, Item, itemsFromTask, Pending, TurnSink } from './conversation';
import { liveKey, readHash, writeHash } from './reload.state';
import { turnSink } from './turn.sink';
import { useServiceRoutes } from './use-service-routes.hook';
import { useSessions } from './use-sessions.hook';

export function useConsole() {
  const [config, setConfig] = useState<ConsoleConfig>();
  const [fatal, setFatal] = useState<string>();
  const [agent, setAgent] = useState<AgentInfo>();
  const [taskId, setTaskId] = useState<string>();
  const [sessionId, setSessionId] = useState<string>();
  const [items, setItems] = useState<Item[]>([]);
  const [pending, setPending] = useState<Pending>();
  const [decisions, setDecisions] = useState<Record<string, Decision>>({});
  const [running, setRunning] = useState(false);
  const [draft, setDraft] = useState('');
  const [editing, setEditing] = useState<{ requestId: string; text: string }>();
  const [authNote, setAuthNote] = useState('');
  const abort = useRef<AbortController | undefined>(undefined);
  const lastEvent = useRef<string | undefined>(undefined);
  const { listedRoutes, servesAgUi } = useServiceRoutes();

  // Boot: the config, MSAL's redirect answer, then the agent and task the URL names.
  useEffect(() => {
    (async () => {
      const cfg = await api<ConsoleConfig>('/console/config.json');
      setConfig(cfg);
      if (cfg.msal) await msalToken(cfg.msal).catch((e) => setAuthNote(`Sign-in failed: ${e.message}`));
      const h = readHash();
      const chosen = cfg.agents.find((a) => a.prefix === h.agent) ?? cfg.agents.find((a) => a.stateful) ?? cfg.agents[0];
      if (!chosen) return;
      setAgent(chosen);
      if (h.task && chosen.stateful) await openTask(chosen, h.task, true);
      else writeHash(chosen.prefix);
    })().catch((e) => setFatal(String(e.message ?? e)));
  }, []);

  // While a request runs, the view and the last event id survive a reload (reattachTo). A layout
  // effect, so they are saved in the same task that shows an event: a reload right after it is
  // seen keeps it (useEffect ran a frame later, and a reload in between lost the last events).
  useLayoutEffect(() => {
    if (running && taskId && lastEvent.current) sessionStorage.setItem(liveKey(taskId), JSON.stringify({ lastEvent: lastEvent.current, items }));
  }, [items, running, taskId]);

  const { sessions, openSession, showSession, closeSession } = useSessions(agent, taskId, setAuthNote);

  function pick(a: AgentInfo): void {
    abort.current?.abort();
    setAgent(a);
    newChat(a);
  }

  function newChat(a = agent): void {
    setTaskId(undefined);
    setSessionId(undefined);
    setItems([]);
    setPending(undefined);
    setEditing(undefined);
    closeSession();
    if (a) writeHash(a.prefix);
  }

  /** Shows a stored task; when `reattach` and a request of it still runs, follows it live. */
  async function openTask(a: AgentInfo, id: string, reattach: boolean): Promise<void> {
    let task: any;
    try {
      task = await api(`${a.prefix}/tasks/${encodeURIComponent(id)}`);
    } catch (e) {
      setItems([{ kind: 'notice', key: 'open', text: `Task ${id}: ${(e as Error).message}`, tone: 'error' }]);
      writeHash(a.prefix);
      return;
    }
    setTaskId(id);
    setSessionId(task.session_id);
    writeHash(a.prefix, id);
    show(task);
    const live = (task.requests ?? []).find((r: any) => r.request_id === task.running_request_id || RUNNING.has(r.status));
    if (reattach && live) await reattachTo(a, id, live.seq);
  }

  function show(task: any): void {
    const view = itemsFromTask(task);
    setItems(view.items);
    setPending(view.pending);
    setDecisions({});
  }

  async function refresh(a: AgentInfo, id: string): Promise<void> {
    try {
      show(await api(`${a.prefix}/tasks/${encodeURIComponent(id)}`));
    } catch {
      /* the streamed view stays */
    }
  }

  /** Runs one streamed exchange; afterwards the stored task is the truth (ids for edits, results). */
  async function run(a: AgentInfo, id: string | undefined, go: (s: TurnSink, signal: AbortSignal) => Promise<void>): Promise<void> {
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    const s = turnSink({ setItems, setTaskId, setSessionId, setPending, setDecisions, lastEvent });
    lastEvent.current = undefined;
    try {
      await go(s, controller.signal);
    } catch (e) {
      if (!controller.signal.aborted) s.notice((e as Error).message, 'error');
    } finally {
      if (abort.current === controller) {
        abort.current = undefined;
        if (id) sessionStorage.removeItem(liveKey(id));
        setRunning(false);
        if (a.stateful && id && !controller.signal.aborted) await refresh(a, id);
      }
    }
  }

  async function send(): Promise<void> {
    const a = agent;
    const text = draft.trim();
    if (!a || !text || running) return;
    setDraft('');
    if (!a.stateful) return sendStateless(a, text);
    const id = taskId ?? newId();
    setTaskId(id);
    writeHash(a.prefix, id);
    setItems((xs) => [...xs, { kind: 'user', key: `live:${newId()}`, text }]);
    const viaAgUi = await servesAgUi(a);
    await run(a, id, async (s, signal) => {
      if (viaAgUi) {
        // Loaded on first use: the AG-UI client is most of the console's code.
        const { runAgUi } = await import('./agui');
        return runAgUi(a.prefix, id, text, newId(), s, signal);
      }
      const body = { task_id: id, ...(sessionId ? { session_id: sessionId } : {}), items: [{ content_type: 'text', content: text }] };
      return postSse(`${a.prefix}/sse`, body, (e) => applyV3Event(e, s), signal);
    });
  }

  async function sendStateless(a: AgentInfo, text: string): Promise<void> {
    const history = items.filter((x) => x.kind === 'user' || x.kind === 'assistant') as Extract<Item, { text: string }>[];
    const chat_history = [...history.map((x) => ({ role: x.kind, content: x.text })), { role: 'user', content: text }];
    setItems((xs) => [...xs, { kind: 'user', key: `live:${newId()}`, text }]);
    await run(a, undefined, (s, signal) =>
      postSse(`${a.prefix}/sse`, { ...(sessionId ? { session_id: sessionId } : {}), chat_history }, (e) => {
        if (e.data.session_id) setSessionId(e.data.session_id);
        if (e.event === 'partial-response') s.text(undefined, String(e.data.output_partial ?? ''));
        else if (e.event === 'error') s.notice(`${e.data.code}: ${e.data.detail ?? e.data.title}`, 'error');
      }, signal),
    );
  }

  async function reattachTo(a: AgentInfo, id: string, seq: number): Promise<void> {
    // This tab saw part of the request: show what it saw, then what came after. Otherwise the stored
    // task, then the request's events after its first (a stream id names the last event seen).
    const saved = JSON.parse(sessionStorage.getItem(liveKey(id)) ?? 'null') as { lastEvent: string; items: Item[] } | null;
    const mine = saved?.lastEvent.startsWith(`${seq}-`);
    const last = mine ? saved!.lastEvent : `${seq}-0`;
    const notice: Item = { kind: 'notice', key: `live:${newId()}`, text: 'Reattached to the running request', tone: 'info' };
    setItems((xs) => [...(mine ? saved!.items : xs), notice]);
    // The task's own stream (GET /tasks/{task_id}/stream), where served, replays the running request
    // from its first event; otherwise the v3 stream's reconnect (POST /sse with Last-Event-ID).
    const taskStream = (await listedRoutes(a))?.some((r) => r.method === 'GET' && r.path === `${a.prefix}/tasks/{task_id}/stream`);
    await run(a, id, async (s, signal) => {
      try {
        if (taskStream) {
          await getSse(`${a.prefix}/tasks/${encodeURIComponent(id)}/stream`, (e) => applyV3Event(e, s), signal, mine ? { 'last-event-id': last } : {});
        } else {
          await postSse(`${a.prefix}/sse`, { task_id: id, items: [{ content_type: 'text', content: '(reconnect)' }] }, (e) => applyV3Event(e, s), signal, { 'last-event-id': last });
        }
      } catch {
        if (signal.aborted) return;
        // No replay here (another replica's request, or a restart): follow the stored task.
        for (;;) {
          await new Promise((r) => setTimeout(r, 1000));
          if (signal.aborted) return;
          const task = await api<any>(`${a.prefix}/tasks/${encodeURIComponent(id)}`);
          if (!task.running_request_id && !task.requests.some((r: any) => RUNNING.has(r.status))) return;
        }
      }
    });
  }

  async function cancel(): Promise<void> {
    if (!agent || !taskId) return;
    try {
      await api(`${agent.prefix}/tasks/${encodeURIComponent(taskId)}/cancel`, { method: 'POST', body: {} });
    } catch (e) {
      setItems((xs) => [...xs, { kind: 'notice', key: `live:${newId()}`, text: `Cancel: ${(e as Error).message}`, tone: 'error' }]);
    }
  }

  async function decide(): Promise<void> {
    const a = agent;
    const p = pending;
    if (!a || !p || !taskId) return;
    const body = {
      pause_id: p.pauseId,
      decisions: p.calls.map((c) => ({
        tool_call_id: c.id,
        approved: decisions[c.id]?.approved === true,
        ...(decisions[c.id]?.reason ? { reason: decisions[c.id].reason } : {}),
      })),
    };
    setPending(undefined);
    const id = taskId;
    await run(a, id, (s, signal) => postSse(`${a.prefix}/tealagents/v1alpha1/resume/${encodeURIComponent(p.requestId)}/sse`, body, (e) => applyV3Event(e, s), signal));
  }

  async function rerun(): Promise<void> {
    const a = agent;
    const e = editing;
    if (!a || !e || !taskId || !e.text.trim()) return;
    setEditing(undefined);
    const id = taskId;
    setItems((xs) => {
      const at = xs.findIndex((x) => x.kind === 'user' && x.requestId === e.requestId);
      return [...(at < 0 ? xs : xs.slice(0, at)), { kind: 'user', key: `live:${newId()}`, text: e.text.trim() }];
    });
    await run(a, id, (s, signal) =>
      postSse(`${a.prefix}/tasks/${encodeURIComponent(id)}/requests/${encodeURIComponent(e.requestId)}/edit/sse`, { items: [{ content_type: 'text', content: e.text.trim() }] }, (ev) => applyV3Event(ev, s), signal),
    );
  }

  return {
    config,
    fatal,
    agent,
    taskId,
    items,
    pending,
    decisions,
    setDecisions,
    running,
    draft,
    setDraft,
    editing,
    setEditing,
    sessions,
    openSession,
    authNote,
    pick,
    newChat,
    showSession,
    openTask,
    send,
    cancel,
    decide,
    rerun,
  };
}

export type ConsoleState = ReturnType<typeof useConsole>;
