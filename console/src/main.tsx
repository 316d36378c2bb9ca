/**
 * The web console (docs/console.md): pick an agent, chat with live streaming, watch tool calls,
 * approve or reject paused calls, cancel, edit and rerun, browse sessions, reattach after a reload.
 * State that must survive a reload (agent, task, last event id) lives in the URL hash and
 * sessionStorage.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { AgentInfo, api, ApiError, ConsoleConfig, getSse, newId, postSse } from './api';
import { authHeaders, currentDevUser, currentToken, msalSignIn, msalToken, setDevUser, setToken } from './auth';
import { applyV3Event, Item, itemsFromTask, Pending, TurnSink } from './conversation';
import './style.css';

interface SessionRow {
  session_id: string;
  task_count: number;
  last_activity_at: string;
  title: string | null;
}
interface TaskRow {
  task_id: string;
  status: string;
  request_count: number;
  updated_at: string;
}
interface ServiceIndex {
  agents?: { path: string; routes?: { method: string; path: string }[] }[];
}
interface Decision {
  approved: boolean | null;
  reason: string;
}

const RUNNING = new Set(['Running', 'Queued']);
/** What a reload needs to pick up a running request where the page left it: the view and the last event id. */
const liveKey = (taskId: string) => `ta.console.live.${taskId}`;

function readHash(): { agent?: string; task?: string } {
  const p = new URLSearchParams(location.hash.slice(1));
  return { agent: p.get('agent') ?? undefined, task: p.get('task') ?? undefined };
}
function writeHash(agent: string, task?: string): void {
  const p = new URLSearchParams({ agent, ...(task ? { task } : {}) });
  history.replaceState(null, '', `#${p}`);
}
const transportParam = new URLSearchParams(location.search).get('transport');

type ToolItem = Extract<Item, { kind: 'tool' }>;
/** The latest call with this id (an offline model numbers calls per turn, so ids repeat across requests). */
function updateTool(xs: Item[], id: string, f: (t: ToolItem) => ToolItem): Item[] {
  for (let i = xs.length - 1; i >= 0; i--) {
    const x = xs[i]!;
    if (x.kind === 'tool' && x.id === id) return [...xs.slice(0, i), f(x), ...xs.slice(i + 1)];
  }
  return xs;
}

function App() {
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
  const [sessions, setSessions] = useState<SessionRow[] | null>(null);
  const [openSession, setOpenSession] = useState<{ id: string; tasks: TaskRow[] }>();
  const [authNote, setAuthNote] = useState('');
  const abort = useRef<AbortController | undefined>(undefined);
  const lastEvent = useRef<string | undefined>(undefined);
  const agUi = useRef(new Map<string, boolean>());
  const index = useRef<Promise<ServiceIndex | undefined>>(undefined);

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

  // While a request runs, the view and the last event id survive a reload (reattachTo).
  useEffect(() => {
    if (running && taskId && lastEvent.current) sessionStorage.setItem(liveKey(taskId), JSON.stringify({ lastEvent: lastEvent.current, items }));
  }, [items, running, taskId]);

  useEffect(() => {
    if (agent?.stateful) void loadSessions(agent);
    else setSessions(null);
  }, [agent, taskId]);

  async function loadSessions(a: AgentInfo): Promise<void> {
    try {
      const page = await api<{ sessions: SessionRow[] }>(`${a.prefix}/sessions?limit=20`);
      setSessions(page.sessions);
    } catch (e) {
      // The listing is newer than the rest of v3: without it (404) the panel is hidden.
      setSessions(null);
      if (!(e instanceof ApiError && e.status === 404)) setAuthNote(String((e as Error).message));
    }
  }

  async function showSession(a: AgentInfo, id: string): Promise<void> {
    const page = await api<{ tasks: TaskRow[] }>(`${a.prefix}/sessions/${encodeURIComponent(id)}?limit=50`);
    setOpenSession({ id, tasks: page.tasks });
  }

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
    setOpenSession(undefined);
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

  /** A sink that folds a turn's events into the shown conversation. */
  function sink(): TurnSink {
    const append = (it: Item) => setItems((xs) => [...xs, it]);
    return {
      ids: (ids) => {
        if (ids.taskId) setTaskId(ids.taskId);
        if (ids.sessionId) setSessionId(ids.sessionId);
      },
      text: (requestId, delta) => {
        if (!delta) return;
        setItems((xs) => {
          const last = xs[xs.length - 1];
          if (last?.kind === 'assistant' && last.key.startsWith('live:')) return [...xs.slice(0, -1), { ...last, text: last.text + delta }];
          return [...xs, { kind: 'assistant', key: `live:${newId()}`, text: delta, requestId }];
        });
      },
      toolCall: (requestId, id, name, args) => append({ kind: 'tool', key: `live:${id}`, id, name, args, requestId }),
      toolArgs: (id, delta) => setItems((xs) => updateTool(xs, id, (t) => ({ ...t, args: t.args + delta }))),
      toolResult: (id, result, outcome, name, requestId) =>
        setItems((xs) => {
          const next = updateTool(xs, id, (t) => ({ ...t, result, outcome }));
          return next !== xs ? next : [...xs, { kind: 'tool', key: `live:${newId()}`, id, name: name ?? id, args: '', result, outcome, requestId }];
        }),
      paused: (p) => {
        setPending(p);
        setDecisions({});
      },
      notice: (text, tone = 'info') => append({ kind: 'notice', key: `live:${newId()}`, text, tone }),
      eventId: (id) => {
        lastEvent.current = id;
      },
    };
  }

  /** Runs one streamed exchange; afterwards the stored task is the truth (ids for edits, results). */
  async function run(a: AgentInfo, id: string | undefined, go: (s: TurnSink, signal: AbortSignal) => Promise<void>): Promise<void> {
    const controller = new AbortController();
    abort.current = controller;
    setRunning(true);
    const s = sink();
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

  /**
   * Whether to run turns over AG-UI: `?transport=ag-ui|sse` decides; else the service index
   * (`GET /`) listing the agent's `/ag-ui` route; without an index, a probe (404: not served).
   */
  /** The agent's routes as the service index (`GET /`) lists them, or undefined without an index. */
  async function listedRoutes(a: AgentInfo): Promise<{ method: string; path: string }[] | undefined> {
    index.current ??= api<ServiceIndex>('/').catch(() => undefined);
    return (await index.current)?.agents?.find((x) => x.path === a.prefix)?.routes;
  }

  async function servesAgUi(a: AgentInfo): Promise<boolean> {
    if (transportParam) return transportParam === 'ag-ui';
    const known = agUi.current.get(a.prefix);
    if (known !== undefined) return known;
    let served = false;
    const listed = await listedRoutes(a);
    if (listed) served = listed.some((r) => r.path === `${a.prefix}/ag-ui`);
    else {
      // An invalid run input is refused by a served route (4xx) and 404 where there is none.
      const res = await fetch(`${a.prefix}/ag-ui`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders() }, body: '{}' }).catch(() => undefined);
      served = !!res && res.status !== 404 && res.status !== 405;
    }
    agUi.current.set(a.prefix, served);
    return served;
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
      } catch (e) {
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

  if (fatal) return <p class="error">Console failed to start: {fatal}</p>;
  if (!config) return <p class="muted">Loading…</p>;
  const allDecided = pending ? pending.calls.every((c) => decisions[c.id]?.approved !== undefined && decisions[c.id]?.approved !== null) : false;

  return (
    <div class="layout">
      <header>
        <strong>teal-agent-server</strong>
        <select
          data-testid="agent"
          value={agent?.prefix}
          onChange={(e) => {
            const a = config.agents.find((x) => x.prefix === (e.target as HTMLSelectElement).value);
            if (a) pick(a);
          }}
        >
          {config.agents.map((a) => (
            <option value={a.prefix}>
              {a.name} {a.version} ({a.api_version})
            </option>
          ))}
        </select>
        <button data-testid="new-chat" onClick={() => newChat()} disabled={running}>
          New chat
        </button>
        <AuthBar config={config} note={authNote} />
      </header>
      <aside>
        {agent?.description && <p class="muted">{agent.description}</p>}
        {taskId && (
          <p class="muted small" data-testid="task-id">
            task {taskId}
          </p>
        )}
        {sessions && (
          <section data-testid="sessions">
            <h3>Sessions</h3>
            {sessions.length === 0 && <p class="muted small">None yet</p>}
            {sessions.map((s) => (
              <div>
                <button class="link" data-testid="session" onClick={() => agent && showSession(agent, s.session_id)}>
                  {s.title ?? s.session_id.slice(0, 8)}
                </button>
                <span class="muted small"> · {s.task_count} task{s.task_count === 1 ? '' : 's'}</span>
                {openSession?.id === s.session_id && (
                  <ul>
                    {openSession.tasks.map((t) => (
                      <li>
                        <button class="link" data-testid="task" onClick={() => agent && openTask(agent, t.task_id, true)}>
                          {t.task_id.slice(0, 8)}
                        </button>{' '}
                        <span class="muted small">
                          {t.status}, {t.request_count} request{t.request_count === 1 ? '' : 's'}
                        </span>
                      </li>
                    ))}
                  </ul>
                )}
              </div>
            ))}
          </section>
        )}
      </aside>
      <main>
        <div class="log" data-testid="log">
          {items.map((it) => {
            if (it.kind === 'user')
              return (
                <div class="msg user" data-testid="user-message" key={it.key}>
                  {editing && editing.requestId === it.requestId ? (
                    <div class="edit">
                      <textarea data-testid="edit-text" value={editing.text} onInput={(e) => setEditing({ ...editing, text: (e.target as HTMLTextAreaElement).value })} />
                      <button data-testid="rerun" onClick={rerun}>
                        Rerun
                      </button>
                      <button onClick={() => setEditing(undefined)}>Cancel</button>
                    </div>
                  ) : (
                    <>
                      <span>{it.text}</span>
                      {agent?.stateful && it.requestId && !running && !pending && (
                        <button class="link small" data-testid="edit" onClick={() => setEditing({ requestId: it.requestId!, text: it.text })}>
                          edit
                        </button>
                      )}
                    </>
                  )}
                </div>
              );
            if (it.kind === 'assistant')
              return (
                <div class="msg assistant" data-testid="assistant-message" key={it.key}>
                  {it.text}
                </div>
              );
            if (it.kind === 'tool')
              return (
                <div class="tool" data-testid="tool-call" key={it.key}>
                  <code>
                    {it.name}({it.args})
                  </code>
                  {it.result === undefined ? (
                    <span class="muted"> … </span>
                  ) : (
                    <div class={it.outcome && it.outcome !== 'ok' && it.outcome !== 'success' ? 'error' : ''} data-testid="tool-result">
                      → {it.result}
                    </div>
                  )}
                </div>
              );
            return (
              <div class={`notice ${it.tone}`} data-testid="notice" key={it.key}>
                {it.text}
              </div>
            );
          })}
          {running && <div class="muted small" data-testid="running">working…</div>}
        </div>
        {pending && (
          <section class="approvals" data-testid="approvals">
            <h3>{pending.plan ? 'Approve this plan' : 'Approval required'}</h3>
            {pending.calls.map((c) => {
              const d = decisions[c.id] ?? { approved: null, reason: '' };
              const set = (patch: Partial<Decision>) => setDecisions((ds) => ({ ...ds, [c.id]: { ...d, ...patch } }));
              return (
                <div class="call" data-testid="pending-call">
                  <code>
                    {c.name}({c.arguments})
                  </code>
                  {c.risk && <span class="muted small"> {c.risk}</span>}
                  <div>
                    <label>
                      <input type="radio" data-testid="approve" checked={d.approved === true} onChange={() => set({ approved: true })} /> approve
                    </label>
                    <label>
                      <input type="radio" data-testid="reject" checked={d.approved === false} onChange={() => set({ approved: false })} /> reject
                    </label>
                    <input data-testid="reason" placeholder="reason (optional)" value={d.reason} onInput={(e) => set({ reason: (e.target as HTMLInputElement).value })} />
                  </div>
                </div>
              );
            })}
            <button data-testid="submit-decisions" disabled={!allDecided || running} onClick={decide}>
              Submit decisions
            </button>
          </section>
        )}
        <form
          class="composer"
          onSubmit={(e) => {
            e.preventDefault();
            void send();
          }}
        >
          <textarea
            data-testid="input"
            placeholder={agent ? `Message ${agent.name}` : 'No agent'}
            value={draft}
            onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                void send();
              }
            }}
          />
          {running && agent?.stateful ? (
            <button type="button" data-testid="cancel" onClick={cancel}>
              Cancel
            </button>
          ) : (
            <button type="submit" data-testid="send" disabled={!agent || !!pending}>
              Send
            </button>
          )}
        </form>
      </main>
    </div>
  );
}

function AuthBar({ config, note }: { config: ConsoleConfig; note: string }) {
  const [token, setTokenText] = useState(currentToken());
  const [user, setUser] = useState(currentDevUser());
  if (config.auth_mode === 'dev')
    return (
      <span class="auth">
        <span class="muted small">dev auth, user</span>
        <input data-testid="dev-user" placeholder="(default)" value={user} onChange={(e) => setDevUser((e.target as HTMLInputElement).value)} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
        {note && <span class="error small">{note}</span>}
      </span>
    );
  return (
    <span class="auth">
      {config.msal && (
        <button data-testid="sign-in" onClick={() => msalSignIn(config.msal!)}>
          Sign in
        </button>
      )}
      <input
        data-testid="token"
        type="password"
        placeholder="paste a bearer token"
        value={token}
        onInput={(e) => setTokenText((e.target as HTMLInputElement).value)}
        onChange={(e) => setToken((e.target as HTMLInputElement).value)}
      />
      <span class="muted small">{currentToken() ? 'token set' : 'no token'}</span>
      {note && <span class="error small">{note}</span>}
    </span>
  );
}

render(<App />, document.getElementById('app')!);
