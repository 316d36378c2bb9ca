/** Folds a running turn's events, whichever protocol carries them, into the console's state. */
import type { Dispatch, StateUpdater } from 'preact/hooks';
import { newId } from './api';
import type { Item, Pending, TurnSink } from './conversation';

type ToolItem = Extract<Item, { kind: 'tool' }>;

/** The latest call with this id (an offline model numbers calls per turn, so ids repeat across requests). */
function updateTool(xs: Item[], id: string, f: (t: ToolItem) => ToolItem): Item[] {
  for (let i = xs.length - 1; i >= 0; i--) {
    const x = xs[i]!;
    if (x.kind === 'tool' && x.id === id) return [...xs.slice(0, i), f(x), ...xs.slice(i + 1)];
  }
  return xs;
}

/** The state setters a turn writes to; `lastEvent` is a ref so a reload can resume after it. */
export interface TurnTargets {
  setItems: Dispatch<StateUpdater<Item[]>>;
  setTaskId: Dispatch<StateUpdater<string | undefined>>;
  setSessionId: Dispatch<StateUpdater<string | undefined>>;
  setPending: Dispatch<StateUpdater<Pending | undefined>>;
  lastEvent: { current: string | undefined };
}

/** A sink that folds a turn's events into the shown conversation. */
export function turnSink(t: TurnTargets): TurnSink {
  const { setItems, setTaskId, setSessionId, setPending, lastEvent } = t;
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
    // A new pause starts with no decisions (use-approvals.hook.ts).
    paused: (p) => setPending(p),
    notice: (text, tone = 'info') => append({ kind: 'notice', key: `live:${newId()}`, text, tone }),
    eventId: (id) => {
      lastEvent.current = id;
    },
  };
}
