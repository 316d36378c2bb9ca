/** The message box: Enter sends, Shift+Enter breaks the line; while a stateful turn runs, Send becomes Cancel. */
import type { AgentInfo } from './api';

interface Props {
  agent: AgentInfo | undefined;
  draft: string;
  onDraft: (text: string) => void;
  running: boolean;
  /** A pause waits for decisions: Send stays off until they are submitted. */
  paused: boolean;
  onSend: () => Promise<void>;
  onCancel: () => void;
}

export function Composer({ agent, draft, onDraft, running, paused, onSend, onCancel }: Props) {
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void onSend();
      }}
    >
      <textarea
        data-testid="input"
        placeholder={agent ? `Message ${agent.name}` : 'No agent'}
        value={draft}
        onInput={(e) => onDraft((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            void onSend();
          }
        }}
      />
      {running && agent?.stateful ? (
        <button type="button" data-testid="cancel" onClick={onCancel}>
          Cancel
        </button>
      ) : (
        <button type="submit" data-testid="send" disabled={!agent || paused}>
          Send
        </button>
      )}
    </form>
  );
}
