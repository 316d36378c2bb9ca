/**
 * State that must survive a reload: the agent and task live in the URL hash (so a link reopens
 * them), the running request's view and last event id in sessionStorage (so a reload reattaches).
 */

/** What a reload needs to pick up a running request where the page left it: the view and the last event id. */
export const liveKey = (taskId: string) => `ta.console.live.${taskId}`;

export function readHash(): { agent?: string; task?: string } {
  const p = new URLSearchParams(location.hash.slice(1));
  return { agent: p.get('agent') ?? undefined, task: p.get('task') ?? undefined };
}

export function writeHash(agent: string, task?: string): void {
  const p = new URLSearchParams({ agent, ...(task ? { task } : {}) });
  history.replaceState(null, '', `#${p}`);
}

/** `?transport=ag-ui|sse` forces the turn protocol (tests and debugging); absent, the console detects it. */
export const transportParam = new URLSearchParams(location.search).get('transport');

/** `?timeline_page=N` sets the timeline's page size (tests and debugging; default 50, the server allows up to 1000). */
export const timelinePageParam = Math.min(1000, Math.max(1, Number(new URLSearchParams(location.search).get('timeline_page')) || 50));
