/** The header's agent choice; picking one aborts any running turn and starts a new chat. */
import type { AgentInfo } from './api';

export function AgentPicker({ agents, agent, onPick }: { agents: AgentInfo[]; agent: AgentInfo | undefined; onPick: (a: AgentInfo) => void }) {
  return (
    <select
      data-testid="agent"
      value={agent?.prefix}
      onChange={(e) => {
        const a = agents.find((x) => x.prefix === (e.target as HTMLSelectElement).value);
        if (a) onPick(a);
      }}
    >
      {agents.map((a) => (
        <option value={a.prefix}>
          {a.name} {a.version} ({a.api_version})
        </option>
      ))}
    </select>
  );
}
