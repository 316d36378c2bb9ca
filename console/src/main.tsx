/**
 * The web console (docs/console.md): pick an agent, chat with live streaming, watch tool calls,
 * approve, reject or refine paused calls (with the pause's webhook status), cancel, edit and rerun,
 * browse sessions, reattach after a reload, read a task's timeline and plans.
 * This file only composes the page: each panel is its own component, and the state and actions
 * are in hooks by concern: the shown task (use-task-view.hook.ts), the running turn it owns
 * (use-turn.hook.ts), approvals, refinements and edits (use-approvals.hook.ts), the timeline
 * (use-timeline.hook.ts). State that must survive a reload lives in the URL hash and
 * sessionStorage (reload.state.ts).
 */
import { render } from 'preact';
import { AgentPicker } from './agent-picker.component';
import { ApprovalsPanel } from './approvals-panel.component';
import { AuthBar } from './auth-bar.component';
import { Composer } from './composer.component';
import { ConversationLog } from './conversation-log.component';
import { SessionsPanel } from './sessions-panel.component';
import { TimelinePanel } from './timeline-panel.component';
import { useApprovals } from './use-approvals.hook';
import { useTaskView } from './use-task-view.hook';
import { useTimeline } from './use-timeline.hook';
import './style.css';

function App() {
  const c = useTaskView();
  const { config, agent, taskId, pending, turn } = c;
  const { running } = turn;
  const approvals = useApprovals(c, turn);
  const timeline = useTimeline(agent, taskId, running);

  if (c.fatal) return <p class="error">Console failed to start: {c.fatal}</p>;
  if (!config) return <p class="muted">Loading…</p>;

  return (
    <div class={timeline.open ? 'layout with-timeline' : 'layout'}>
      <header>
        <strong>teal-agent-server</strong>
        <AgentPicker agents={config.agents} agent={agent} onPick={c.pick} />
        <button data-testid="new-chat" onClick={() => c.newChat()} disabled={running}>
          New chat
        </button>
        {agent?.stateful && (
          <button data-testid="timeline-toggle" onClick={() => timeline.setOpen(!timeline.open)} aria-pressed={timeline.open}>
            Timeline
          </button>
        )}
        <AuthBar config={config} note={c.authNote} />
      </header>
      <aside>
        {agent?.description && <p class="muted">{agent.description}</p>}
        {taskId && (
          <p class="muted small" data-testid="task-id">
            task {taskId}
          </p>
        )}
        {c.sessions && (
          <SessionsPanel
            sessions={c.sessions}
            openSession={c.openSession}
            onShowSession={(id) => agent && c.showSession(agent, id)}
            onOpenTask={(id) => agent && c.openTask(agent, id, true)}
          />
        )}
      </aside>
      <main>
        <ConversationLog
          items={c.items}
          running={running}
          stateful={agent?.stateful}
          paused={!!pending}
          editing={approvals.editing}
          onEdit={approvals.setEditing}
          onRerun={approvals.rerun}
        />
        {pending && (
          <ApprovalsPanel
            pending={pending}
            decisions={approvals.decisions}
            setDecisions={approvals.setDecisions}
            running={running}
            onSubmit={approvals.decide}
            webhooks={c.webhookLines}
            refine={
              agent?.stateful
                ? { text: approvals.refineText, setText: approvals.setRefineText, onRefine: () => void approvals.refine(), note: approvals.refineNote }
                : undefined
            }
          />
        )}
        <Composer agent={agent} draft={turn.draft} onDraft={turn.setDraft} running={running} paused={!!pending} onSend={turn.send} onCancel={turn.cancel} />
      </main>
      {timeline.open && agent?.stateful && <TimelinePanel timeline={timeline} />}
    </div>
  );
}

render(<App />, document.getElementById('app')!);
