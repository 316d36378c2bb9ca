/**
 * v1/v2 agents shared by the stateless stream tests (POST /sse and the WebSocket /stream): one Chat
 * with user context, one v2alpha1 agent and one two-task Sequential, all on the fake model.
 */
export const CHAT_V1 = `
apiVersion: skagents/v1
kind: Chat
description: A v1 chat agent
service_name: ChatBot
version: 1.0
input_type: BaseMultiModalInputWithUserContext
spec:
  agent:
    name: default
    model: gpt-4o
    system_prompt: You are terse.
`;

export const AGENT_V2 = `
apiVersion: skagents/v2alpha1
name: HelperV2
version: 0.2
spec:
  agent:
    name: default
    model: gpt-4o
`;

export const SEQUENTIAL_V1 = `
apiVersion: skagents/v1
kind: Sequential
description: Plan, then answer
service_name: Planner
version: 0.1
input_type: BaseInputWithUserContext
spec:
  agents:
    - name: default
      model: gpt-4o
      system_prompt: You plan.
  tasks:
    - name: restate
      task_no: 1
      instructions: Restate for {{user_context["city"]}}.
      agent: default
    - name: answer
      task_no: 2
      instructions: "Answer using: {{_restate}}"
      agent: default
`;
