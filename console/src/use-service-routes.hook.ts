/**
 * Whether the service runs an agent's turns over AG-UI, from its routes as the service index
 * (`GET /`) lists them. Both are looked up once per page and cached. (Reattaching needs no lookup:
 * every v3 agent serves its tasks' stream, use-turn.hook.ts.)
 */
import { useRef } from 'preact/hooks';
import { AgentInfo, api } from './api';
import { authHeaders } from './auth';
import type { ServiceIndex } from './console.types';
import { transportParam } from './reload.state';

export function useServiceRoutes() {
  const index = useRef<Promise<ServiceIndex | undefined>>(undefined);
  const agUi = useRef(new Map<string, boolean>());

  /** The agent's routes as the service index (`GET /`) lists them, or undefined without an index. */
  async function listedRoutes(a: AgentInfo): Promise<{ method: string; path: string }[] | undefined> {
    index.current ??= api<ServiceIndex>('/').catch(() => undefined);
    return (await index.current)?.agents?.find((x) => x.path === a.prefix)?.routes;
  }

  /**
   * Whether to run turns over AG-UI: `?transport=ag-ui|sse` decides; else the service index
   * (`GET /`) listing the agent's `/ag-ui` route; without an index, a probe (404: not served).
   */
  async function servesAgUi(a: AgentInfo): Promise<boolean> {
    if (transportParam) return transportParam === 'ag-ui';
    const known = agUi.current.get(a.prefix);
    if (known !== undefined) return known;
    let served: boolean;
    const listed = await listedRoutes(a);
    if (listed) served = listed.some((r) => r.path === `${a.prefix}/ag-ui`);
    else {
      // An invalid run input is refused by a served route (4xx) and 404 where there is none.
      const res = await fetch(`${a.prefix}/ag-ui`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders() }, body: '{}' }).catch(
        () => undefined,
      );
      served = !!res && res.status !== 404 && res.status !== 405;
    }
    agUi.current.set(a.prefix, served);
    return served;
  }

  return { servesAgUi };
}
