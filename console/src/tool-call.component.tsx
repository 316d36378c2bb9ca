/** One tool call as it streams: name and arguments, then its result (red unless it succeeded). */
import type { Item } from './conversation';

export function ToolCall({ item: it }: { item: Extract<Item, { kind: 'tool' }> }) {
  return (
    <div class="tool" data-testid="tool-call">
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
}
