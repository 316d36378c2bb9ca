/** A user turn; on a stateful agent, while idle, it can be edited and rerun (replacing what followed). */
import type { Item } from './conversation';

type UserItem = Extract<Item, { kind: 'user' }>;
export type Editing = { requestId: string; text: string };

interface Props {
  item: UserItem;
  editing: Editing | undefined;
  /** Edits need a stored request to replace, so only stateful agents offer them. */
  stateful: boolean | undefined;
  /** A turn runs or a pause waits: no edit link until it is over. */
  busy: boolean;
  onEdit: (e: Editing | undefined) => void;
  onRerun: () => void;
}

export function UserMessage({ item: it, editing, stateful, busy, onEdit, onRerun }: Props) {
  return (
    <div class="msg user" data-testid="user-message">
      {editing && editing.requestId === it.requestId ? (
        <div class="edit">
          <textarea data-testid="edit-text" value={editing.text} onInput={(e) => onEdit({ ...editing, text: (e.target as HTMLTextAreaElement).value })} />
          <button data-testid="rerun" onClick={onRerun}>
            Rerun
          </button>
          <button onClick={() => onEdit(undefined)}>Cancel</button>
        </div>
      ) : (
        <>
          <span>{it.text}</span>
          {stateful && it.requestId && !busy && (
            <button class="link small" data-testid="edit" onClick={() => onEdit({ requestId: it.requestId!, text: it.text })}>
              edit
            </button>
          )}
        </>
      )}
    </div>
  );
}
