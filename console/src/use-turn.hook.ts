/**
 * The running turn (the composer's side of the page): send a message (v3 stream, AG-UI, or a
 * stateless agent's chat), follow a running request again after a reload, cancel. One turn runs at
 * a time; its events go into the shown task (use-task-view.hook.ts), which is read back from the
 * store when it ends.
 */
import type { Dispatch, StateUpdater } from 'preact/hooks';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { AgentInfo, api, newId, postSse } from './api';
import { applyV3Event, Item, Pending, TurnSink } from './conversation';
import { liveKey, writeHash } from './reload.state';
import { followTaskStream } from './task-stream';
import { turnSink } from './turn.sink';
import { useServiceRoutes } from './use-service-routes.hook';

/** What a turn reads of the shown task and writes into it. */
export interface TurnView {
  agent: AgentInfo | undefined;
  taskId: string | undefined;
  sessionId: string | undefined;
  items: Item[];
  setItems: Dispatch<StateUpdater<Item[]>>;
  setTaskId: Dispatch<StateUpdater<string | undefined>>;
  setSessionId: Dispatch<StateUpdater<string | undefined>>;
  setPending: Dispatch<StateUpdater<Pending | undefined>>;
  /** Shows the stored task again: after a turn it is the truth (ids for edits, results). */
  refresh: (a: AgentInfo, id: string) => Promise<void>;
}

/** What a reload needs to pick up a running request where this tab left it. */
interface LiveView {
  lastEvent: string;
  items: Item[];
}

export function useTurn(view: TurnView) {
  const { agent, taskId, sessionId, items, setItems, setTaskId, setSessionId, setPending, refresh } = view;
  const [running, setRunning] = useState(false);
  const [draft, setDraft] = useState('');
  const abort = useRef<AbortController | undefined>(undefined);
  const lastEvent = useRef<string | undefined>(undefined);
  const { servesAgUi } = useServiceRoutes();

  // While a request runs, the view and the last event id survive a reload (reattachTo). A layout
  // effect, so they are saved in the same task that shows an event: a reload right after it is
  // seen keeps it (useEffect ran a frame later, and a reload in between lost the last events).
  useLayoutEffect(() => {
    if (running && taskId && lastEvent.current)
      sessionStorage.setItem(liveKey(taskId), JSON.stringify({ lastEvent: lastEvent.current, items } satisfies LiveView));
  }, [items, running, taskId]);

  /** Stops following the running turn (the request itself runs on: see cancel). */
  function stop(): void {
    abort.current?.abort();
  }

  /** Runs one streamed exchange; afterwards the stored task is the truth (ids for edits, results). */
  async function run(a: AgentInfo, id: string | undefined, go: (s: TurnSink, signal: AbortSignal) => Promise<void>): Promise<void> {
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    const s = turnSink({ setItems, setTaskId, setSessionId, setPending, lastEvent });
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
      postSse(
        `${a.prefix}/sse`,
        { ...(sessionId ? { session_id: sessionId } : {}), chat_history },
        (e) => {
          if (e.data.session_id) setSessionId(e.data.session_id);
          if (e.event === 'partial-response') s.text(undefined, String(e.data.output_partial ?? ''));
          else if (e.event === 'error') s.notice(`${e.data.code}: ${e.data.detail ?? e.data.title}`, 'error');
        },
        signal,
      ),
    );
  }

  /**
   * Follows request `seq` of the task again, on the task's stream. This tab saw part of it: show
   * what it saw, then what came after its last event id. Otherwise the stored task (already shown),
   * then the request's events from its first.
   */
  async function reattachTo(a: AgentInfo, id: string, seq: number): Promise<void> {
    const saved = JSON.parse(sessionStorage.getItem(liveKey(id)) ?? 'null') as LiveView | null;
    const mine = saved?.lastEvent.startsWith(`${seq}-`) ? saved : undefined;
    const notice: Item = { kind: 'notice', key: `live:${newId()}`, text: 'Reattached to the running request', tone: 'info' };
    setItems((xs) => [...(mine ? mine.items : xs), notice]);
    await run(a, id, (s, signal) => followTaskStream(`${a.prefix}/tasks/${encodeURIComponent(id)}/stream`, mine?.lastEvent, s, signal));
  }

  async function cancel(): Promise<void> {
    if (!agent || !taskId) return;
    try {
      await api(`${agent.prefix}/tasks/${encodeURIComponent(taskId)}/cancel`, { method: 'POST', body: {} });
    } catch (e) {
      setItems((xs) => [...xs, { kind: 'notice', key: `live:${newId()}`, text: `Cancel: ${(e as Error).message}`, tone: 'error' }]);
    }
  }

  return { running, draft, setDraft, run, send, reattachTo, cancel, stop };
}

export type Turn = ReturnType<typeof useTurn>;
