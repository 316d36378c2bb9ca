/**
 * The shown task (the conversation log's side of the page) and how the page gets to one: boot from
 * the URL (the agent and task it names, following a request that still runs), pick an agent, start
 * a new chat, open a stored task. It owns the conversation the page shows and the turn that writes
 * into it (use-turn.hook.ts); the sessions browser's data comes from use-sessions.hook.ts.
 */
import { useEffect, useState } from 'preact/hooks';
import { AgentInfo, api, ConsoleConfig } from './api';
import { msalToken } from './auth';
import { RUNNING, TaskView } from './console.types';
import { Item, itemsFromTask, Pending } from './conversation';
import { readHash, writeHash } from './reload.state';
import { useSessions } from './use-sessions.hook';
import { useTurn } from './use-turn.hook';
import { useWebhookStatus } from './use-webhook-status.hook';

export function useTaskView() {
  const [config, setConfig] = useState<ConsoleConfig>();
  const [fatal, setFatal] = useState<string>();
  const [authNote, setAuthNote] = useState('');
  const [agent, setAgent] = useState<AgentInfo>();
  const [taskId, setTaskId] = useState<string>();
  const [sessionId, setSessionId] = useState<string>();
  const [items, setItems] = useState<Item[]>([]);
  const [pending, setPending] = useState<Pending>();
  const turn = useTurn({ agent, taskId, sessionId, items, setItems, setTaskId, setSessionId, setPending, refresh });
  const webhooks = useWebhookStatus(agent, taskId, pending, turn.running);

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

  const { sessions, openSession, showSession, closeSession } = useSessions(agent, taskId, setAuthNote);

  function pick(a: AgentInfo): void {
    turn.stop();
    setAgent(a);
    newChat(a);
  }

  function newChat(a = agent): void {
    setTaskId(undefined);
    setSessionId(undefined);
    setItems([]);
    setPending(undefined);
    closeSession();
    if (a) writeHash(a.prefix);
  }

  /** Shows a stored task; when `reattach` and a request of it still runs, follows it live. */
  async function openTask(a: AgentInfo, id: string, reattach: boolean): Promise<void> {
    let task: TaskView;
    try {
      task = await api<TaskView>(`${a.prefix}/tasks/${encodeURIComponent(id)}`);
    } catch (e) {
      setItems([{ kind: 'notice', key: 'open', text: `Task ${id}: ${(e as Error).message}`, tone: 'error' }]);
      writeHash(a.prefix);
      return;
    }
    setTaskId(id);
    setSessionId(task.session_id);
    writeHash(a.prefix, id);
    show(task);
    const live = (task.requests ?? []).find((r) => r.request_id === task.running_request_id || RUNNING.has(r.status));
    if (reattach && live) await turn.reattachTo(a, id, live.seq);
  }

  function show(task: TaskView): void {
    const view = itemsFromTask(task);
    setItems(view.items);
    setPending(view.pending);
    webhooks.seen(task);
  }

  async function refresh(a: AgentInfo, id: string): Promise<void> {
    try {
      show(await api<TaskView>(`${a.prefix}/tasks/${encodeURIComponent(id)}`));
    } catch {
      /* the streamed view stays */
    }
  }

  return {
    config,
    fatal,
    authNote,
    agent,
    taskId,
    items,
    setItems,
    pending,
    setPending,
    webhookLines: webhooks.lines,
    sessions,
    openSession,
    showSession,
    pick,
    newChat,
    openTask,
    turn,
  };
}

export type TaskViewState = ReturnType<typeof useTaskView>;
