/** The conversation: user and assistant turns, tool calls and notices, and a marker while a turn runs. */
import type { Item } from './conversation';
import { ToolCall } from './tool-call.component';
import { Editing, UserMessage } from './user-message.component';

interface Props {
  items: Item[];
  running: boolean;
  stateful: boolean | undefined;
  /** A pause waits for decisions (user turns offer no edit meanwhile). */
  paused: boolean;
  editing: Editing | undefined;
  onEdit: (e: Editing | undefined) => void;
  onRerun: () => void;
}

export function ConversationLog({ items, running, stateful, paused, editing, onEdit, onRerun }: Props) {
  return (
    <div class="log" data-testid="log">
      {items.map((it) => {
        if (it.kind === 'user')
          return <UserMessage key={it.key} item={it} editing={editing} stateful={stateful} busy={running || paused} onEdit={onEdit} onRerun={onRerun} />;
        if (it.kind === 'assistant')
          return (
            <div class="msg assistant" data-testid="assistant-message" key={it.key}>
              {it.text}
            </div>
          );
        if (it.kind === 'tool') return <ToolCall key={it.key} item={it} />;
        return (
          <div class={`notice ${it.tone}`} data-testid="notice" key={it.key}>
            {it.text}
          </div>
        );
      })}
      {running && (
        <div class="muted small" data-testid="running">
          working…
        </div>
      )}
    </div>
  );
}
