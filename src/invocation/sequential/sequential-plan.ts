import { AgentDefinition } from '../../agents/config/agent-definition';
import { AgentSpecConfig, SequentialTaskConfig } from '../../agents/config/agent.schema';
import { InstructionTemplate } from '../../agents/sequential/instruction-template';

export interface SequentialStep {
  task: SequentialTaskConfig;
  agent: AgentSpecConfig;
  instructions: InstructionTemplate;
}

/** A Sequential agent's tasks, in `task_no` order, with their instruction templates compiled. */
export class SequentialPlan {
  private constructor(readonly steps: SequentialStep[]) {}

  static compile(def: AgentDefinition): SequentialPlan {
    const seq = def.sequential;
    if (!seq) throw new Error(`${def.source} is not a Sequential agent`);
    return new SequentialPlan(
      seq.tasks.map((task) => ({
        task,
        agent: seq.agents.get(task.agent)!,
        instructions: InstructionTemplate.compile(task.instructions),
      })),
    );
  }
}
